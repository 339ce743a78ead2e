// What the replay command prints is read by people in a terminal: every hidden character a
// decision line carries (a bidi override or C1 control in a name an agent sent) is written as a
// JSON escape, the same bytes as `self-evolve replay --json` (host-test/src/text.rs,
// `visible_json`), so a parser reads the same value and a terminal obeys nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { visibleJson } from '../src/lines.js';

const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'replay.js');

test('the replay command prints hidden characters as JSON escapes, as the Rust CLI does', () => {
  const dir = tempDir('replay-output');
  const file = path.join(dir, 'hidden.jsonl');
  writeFileSync(file, `${JSON.stringify({ t: 1000, type: 'call', session: 's1', tool: 'skill_manage', args: { action: 'view', name: 'evil\u202egnp.md\u009b' } })}\n`);
  const out = execFileSync(process.execPath, [REPLAY, file, '--json', '--home', path.join(dir, 'home')], { encoding: 'utf8' });
  // Printed by `self-evolve replay --json` for the same file.
  const rust = '{"kind":"tool","session":"s1","agent":"main","tool":"skill_manage","ok":false,"result":{"code":"invalid-name","details":{"name":"evil\\u202egnp.md\\u009b"},"hint":"use 1–64 lowercase letters, digits and single hyphens, e.g. `deploy-with-docker`","message":"`evil\\u202egnp.md\\u009b` contains `\\u202e`; use only lowercase letters a-z, digits and `-`"}}\n';
  assert.equal(out, rust);
});

test('visibleJson escapes controls, bidi, zero-width and tag characters and keeps the value', () => {
  const value = { a: 'x\u202ey\u007f\u009b\u{e0041}\u200b\t\u001b\u2066 ok é' };
  const json = JSON.stringify(value);
  const shown = visibleJson(json);
  assert.equal(shown, '{"a":"x\\u202ey\\u007f\\u009b\\udb40\\udc41\\u200b\\t\\u001b\\u2066 ok é"}');
  assert.deepEqual(JSON.parse(shown), value);
  assert.equal(visibleJson('{"plain":"text"}'), '{"plain":"text"}');
});

test('inside a reviewer a replay into an existing home is refused and the home left as it was', () => {
  const dir = tempDir('replay-reviewer');
  const file = path.join(dir, 'off.jsonl');
  writeFileSync(file, `${JSON.stringify({ t: 0, type: 'config', config: {} })}\n`);
  const home = path.join(dir, 'home');
  const env = { ...process.env, SELF_EVOLVE_ACTIVATION: 'act-7' };
  const refused = spawnSync(process.execPath, [REPLAY, file, '--json', '--home', home], { encoding: 'utf8', env });
  assert.equal(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /inside reviewer "act-7" \(SELF_EVOLVE_ACTIVATION\).*leave out --home/);
  assert.equal(existsSync(home), false, 'the refused replay made the home');
  // Into a fresh folder of its own it runs.
  const fresh = spawnSync(process.execPath, [REPLAY, file, '--json'], { encoding: 'utf8', env });
  assert.equal(fresh.status, 0, fresh.stderr);
});

// A replay holds its sessions as a batch ('session-batch': busy between events, written every
// 1,024) and hands them back at its end, as the Rust replay does: a generation with every turn,
// no journal left for the next process to fold.
test('a replay hands its sessions back at its end, every turn in the session file', () => {
  const dir = tempDir('replay-hand-back');
  const file = path.join(dir, 'turns.jsonl');
  const lines = [{ t: 0, type: 'config', config: { review: { turnInterval: 10000 } } }];
  for (let i = 0; i < 1500; i++) lines.push({ t: 1000 + i, type: 'turn-end', session: 's1', status: 'completed' });
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  const home = path.join(dir, 'home');
  execFileSync(process.execPath, [REPLAY, file, '--json', '--home', home], { encoding: 'utf8' });
  const sessions = path.join(home, 'self-evolve', 'sessions');
  const files = readdirSync(sessions, { withFileTypes: true }).filter((d) => d.isDirectory() && d.name !== 'in-flight')
    .flatMap((d) => readdirSync(path.join(sessions, d.name)).map((f) => path.join(sessions, d.name, f)));
  assert.deepEqual(files.filter((f) => path.basename(f).startsWith('journal.')), [], 'handed back');
  const generations = files.filter((f) => f.endsWith('.json')).sort();
  assert.equal(JSON.parse(readFileSync(generations.at(-1), 'utf8')).review.turn, 1500);
});
