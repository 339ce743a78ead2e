// The unmodified component in Node: init, config errors, the tool list and a guarded write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { tempDir } from '../test-support/tmp.js';
import * as path from 'node:path';
import { loadPlugin, userContext, ManualClock } from '../src/host.js';

const SERVICES = ['tools', 'commands', 'system-prompt', 'agents', 'subagents'];

async function plugin() {
  const home = tempDir('se-plugin-');
  const p = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') }, clock: new ManualClock(1767225600000), logLevel: 'error' });
  return { p, home };
}

test('init reports every part; config errors name the key', async () => {
  const { p } = await plugin();
  const report = p.init('{}', SERVICES);
  assert.ok(report.ok);
  assert.deepEqual(report.value.parts.map((x) => x.name), ['skill-manage', 'guidance', 'command', 'review', 'gate', 'curator', 'review-loop']);
  const bad = p.init('{"review":{"turnInterval":0}}', SERVICES);
  assert.equal(bad.ok, false);
  assert.equal(bad.error.key, 'review.turnInterval');
  assert.match(bad.error.message, /between 1 and 10000/);
});

test('tools.list and a guarded write through skill_manage', async () => {
  const { p, home } = await plugin();
  p.init('{}', SERVICES);
  assert.equal(p.toolsList()[0].name, 'skill_manage');
  const ok = p.toolsCall(userContext('s1'), 'skill_manage', JSON.stringify({ action: 'create', name: 'node-skill', description: 'Made from Node. Use when testing.', body: 'x\n' }));
  assert.ok(ok.ok, ok.error);
  assert.ok(existsSync(path.join(home, 'skills', 'node-skill', 'SKILL.md')));
  const refused = p.toolsCall(userContext('s1'), 'skill_manage', JSON.stringify({ action: 'create', name: '../x', description: 'x' }));
  assert.equal(refused.ok, false);
  assert.equal(JSON.parse(refused.error).code, 'invalid-name');
});
