// A gate that takes longer than the Rust host's per-call deadline (2 s) to answer, within its
// own timeout, is waited for: the turn gets its gate decision, it is not lost to a trap. The
// Node host gives export calls no deadline of its own (jco runs the component on the calling
// thread; the http import blocks in a child process for at most the request's timeout), so
// this holds here by construction; the test keeps it so (cli/tests/replay.rs and
// hosts/python/tests/test_host.py have the same one).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { readEvents, replay, serveGateReplies } from '../src/replay.js';

test('a slow gate answer within its timeout is not a trap', async () => {
  const dir = tempDir('se-slow-gate-');
  const session = path.join(dir, 'slow.jsonl');
  writeFileSync(session, [
    '{"t":0,"type":"config","config":{"review":{"turnInterval":1,"gate":"jev","jev":{"timeoutMs":3500}}}}',
    '{"t":1000,"type":"user","session":"s1","text":"use pnpm","human":true}',
    '{"t":2000,"type":"turn-end","session":"s1","status":"completed"}',
  ].join('\n') + '\n');
  const replies = path.join(dir, 'replies.json');
  writeFileSync(replies, '[{"status": 200, "delayMs": 2600, "body": {"choice": "no", "confidence": 0.95}}]');
  const gate = await serveGateReplies(replies);
  try {
    const started = Date.now();
    const lines = await replay(readEvents(session), { home: path.join(dir, 'home'), gateUrl: gate.url });
    assert.ok(Date.now() - started >= 2600, 'the gate answer was waited for');
    const gates = lines.map((l) => JSON.parse(l)).filter((d) => d.kind === 'gate');
    assert.deepEqual(gates.map((d) => [d.decision, d.source]), [['skip', 'jev']], lines.join('\n'));
  } finally {
    gate.stop();
  }
});
