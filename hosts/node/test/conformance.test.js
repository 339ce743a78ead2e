// The conformance suite, Node side: every scenario in tests/conformance/ replayed through the
// same dist/self-evolve.wasm must print exactly the `.expected` lines the Rust host prints, and
// again with a fresh instance before every event (a process per event, as hooks run it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEvents, replay, serveGateReplies } from '../src/replay.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'tests', 'conformance');
const scenarios = readdirSync(dir).filter((f) => f.endsWith('.jsonl')).sort();

test('the suite holds the four scenario families', () => {
  assert.ok(scenarios.length >= 4, scenarios.join(', '));
});

/** Replays `file` (with its scripted gate, if any) and checks its lines against `.expected`. */
async function conforms(file, options = {}) {
  const full = path.join(dir, file);
  const gateFile = full.replace(/\.jsonl$/, '.gate.json');
  const gate = existsSync(gateFile) ? await serveGateReplies(gateFile) : null;
  try {
    const lines = await replay(readEvents(full), { ...options, home: tempDir('se-conf-'), gateUrl: gate?.url });
    const expected = readFileSync(full.replace(/\.jsonl$/, '.expected'), 'utf8').split('\n').filter(Boolean);
    assert.equal(lines.length, expected.length, 'line count');
    lines.forEach((line, i) => assert.equal(line, expected[i], `line ${i + 1}`));
  } finally {
    gate?.stop();
  }
}

for (const file of scenarios) {
  test(`conformance: ${file}`, () => conforms(file));
}

// Review loops (seed 003) are driven by a host's workflow engine inside one long-lived process;
// their runs are not session state, so they are not replayed one process per event.
const restartable = scenarios.filter((f) => !f.startsWith('review-loop'));

test('the session scenarios are all replayed with restarts', () => {
  assert.ok(restartable.length >= 4, restartable.join(', '));
});

for (const file of restartable) {
  test(`conformance, a fresh instance per event: ${file}`, () => conforms(file, { restartEachEvent: true }));
}
