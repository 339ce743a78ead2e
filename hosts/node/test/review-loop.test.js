// The review loop (seed 003) through the unmodified component in Node: the independence gate
// stops before any child starts, and a code review with scripted lenses ends review-clean.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { loadPlugin, userContext, ManualClock } from '../src/host.js';
import { ScriptedProvider } from '../src/subagent.js';

const DIFF = 'diff --git a/src/lock.rs b/src/lock.rs\n--- a/src/lock.rs\n+++ b/src/lock.rs\n@@ -1,2 +1,3 @@\n fn a() {}\n+fn take_lock(path: &str) -> bool { true }\n fn b() {}\n';

function request(extra = {}) {
  return {
    mode: 'code', artifact: DIFF, artifactSha: undefined, files: ['src/lock.rs'], documents: [],
    repo: '/work/repo', branch: 'feat/locks', commit: '0123456789abcdef', uncommitted: false,
    maxIter: undefined, tokenCeiling: undefined, independence: { tag: 'independent' },
    selfReviewAck: undefined, auto: true, commands: [], disabledLenses: [], ...extra,
  };
}

async function rig() {
  const home = tempDir('se-loop-');
  const clock = new ManualClock(1767225600000);
  const provider = new ScriptedProvider(clock);
  provider.responder = (spec) => ({ text: spec.prompt.startsWith('A reviewer flagged') ? '{"falsified": false}' : '[]' });
  const p = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') }, clock, provider, logLevel: 'error' });
  assert.ok(p.init('{}', ['agents', 'subagents']).ok);
  return { p, home, provider };
}

test('a self-authored session is stopped before any reviewer and writes nothing', async () => {
  const { p, home, provider } = await rig();
  const r = p.reviewLoopBegin(userContext('s1'), request({ auto: false, independence: { tag: 'self-authored', val: ['src/lock.rs'] } }));
  assert.ok(r.ok, r.error);
  const out = JSON.parse(r.value);
  assert.equal(out.outcome, 'stopped');
  assert.match(out.message, /fresh session/);
  assert.equal(provider.activations.length, 0);
  assert.deepEqual(readdirSync(home), []);
});

test('five lenses start at once and a quiet review ends review-clean with its verdict', async () => {
  const { p, provider } = await rig();
  const begun = JSON.parse(p.reviewLoopBegin(userContext('s1'), request()).value);
  assert.equal(begun.outcome, 'dispatched');
  assert.equal(provider.activations.length, 5);
  assert.ok(provider.activations.every((a) => a.spec.provider === 'fresh'));
  const lines = p.pumpActivations().map((l) => JSON.parse(l));
  const end = lines.find((l) => l.outcome);
  assert.equal(end.outcome, 'review-clean');
  assert.match(end.verdict, /^<!-- review-loop-verdict -->\n## 🔬 review-loop verdict — pinned to `0123456789ab`/);
  const refused = p.reviewLoopBegin(userContext('s1'), request({ mode: 'plan' }));
  assert.equal(refused.ok, false);
  assert.equal(JSON.parse(refused.error).code, 'commands-outside-code');
});
