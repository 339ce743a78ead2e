// Outside strings as keys, and exceptions at the import boundary: a session called
// `__proto__` is a session like any other, and no capability's JS exception reaches the guest.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { loadPlugin, userContext, ManualClock } from '../src/host.js';
import { importTable } from '../src/imports.js';
import { HttpCap } from '../src/http.js';
import { ScriptedProvider } from '../src/subagent.js';

const SERVICES = ['tools', 'commands', 'system-prompt', 'agents', 'subagents'];

test('sessions called __proto__ and constructor work like any other, through the plugin', async () => {
  const home = tempDir('se-proto-');
  const p = await loadPlugin({
    fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state'), defaultProject: path.join(home, 'project', '.dsh', 'skills') },
    clock: new ManualClock(1767225600000),
    logLevel: 'error',
  });
  assert.ok(p.init('{}', SERVICES).ok);
  for (const session of ['__proto__', 'constructor']) {
    const name = `${session.replace(/_/g, '')}-skill`;
    const made = p.toolsCall(userContext(session), 'skill_manage', JSON.stringify({ action: 'create', name, description: 'Made for a session. Use when testing.', body: 'x\n' }));
    assert.ok(made.ok, made.error);
    assert.ok(existsSync(path.join(home, 'skills', name, 'SKILL.md')));
    const listed = p.toolsCall(userContext(session), 'skill_manage', JSON.stringify({ action: 'list' }));
    assert.ok(listed.ok, listed.error);
    assert.ok(Array.isArray(p.turnEnd(userContext(session), 'completed')));
  }
});

test('http endpoints are a Map: `constructor` and `__proto__` are unknown endpoints', () => {
  const http = new HttpCap({ gate: { url: 'http://127.0.0.1:9' } });
  for (const name of ['constructor', '__proto__', 'toString']) {
    assert.equal(http.hasEndpoint(name), false, name);
    assert.equal(http.hasCredential(name), false, name);
    assert.throws(() => http.post({ endpoint: name, path: '/x', headers: [], body: new Uint8Array(), timeoutMs: 10 }), { tag: 'denied' });
  }
});

test('a JS exception in any capability reaches the guest as the typed error its WIT declares', () => {
  const boom = () => { throw new Error('boom'); };
  const logged = [];
  const fs = new Proxy({}, { get: () => boom });
  const provider = new ScriptedProvider({ now: () => 0 });
  provider.start = boom;
  provider.restrictTools = () => { throw 'no activation `x`'; }; // already typed: passes as is
  provider.abort = boom;
  const http = { post: boom, hasEndpoint: boom, hasCredential: boom };
  const t = importTable({ fs, http, provider, clock: { now: () => 0 }, log: (level, m) => logged.push([level, m]) });
  const F = t['self-evolve:plugin/fs'];
  const root = { tag: 'state' };
  for (const [name, args] of [['read', ['a']], ['write', ['a', new Uint8Array(), 'truncate']], ['rename', ['a', 'b']], ['removeFile', ['a']],
    ['removeDir', ['a']], ['createDirAll', ['a']], ['listDir', ['']], ['stat', ['a']]]) {
    assert.throws(() => F[name](root, ...args), (e) => { assert.deepStrictEqual(e, { tag: 'io', val: 'boom' }); return true; }, name);
  }
  assert.deepEqual(F.statMany(root, ['a', 'b']), [{ tag: 'err', val: { tag: 'io', val: 'boom' } }, { tag: 'err', val: { tag: 'io', val: 'boom' } }]);
  assert.equal(F.hasRoot(root), false);
  const H = t['self-evolve:plugin/http'];
  assert.throws(() => H.post({}), (e) => { assert.deepStrictEqual(e, { tag: 'network', val: 'boom' }); return true; });
  assert.equal(H.hasEndpoint('gate'), false);
  assert.equal(H.hasCredential('gate'), false);
  const A = t['self-evolve:plugin/subagent'];
  assert.throws(() => A.start({}), (e) => e === 'boom');
  assert.throws(() => A.restrictTools('x', []), (e) => e === 'no activation `x`');
  assert.equal(A.abort('x'), undefined);
  // Typed errors pass through unchanged.
  const typedFs = new Proxy({}, { get: () => () => { throw { tag: 'not-found' }; } });
  assert.throws(() => importTable({ fs: typedFs, http, provider, clock: { now: () => 0 }, log: () => {} })['self-evolve:plugin/fs'].read(root, 'a'),
    (e) => { assert.deepStrictEqual(e, { tag: 'not-found' }); return true; });
  assert.deepEqual(logged.map(([level]) => level), ['warn', 'warn', 'warn', 'warn']);
});

test('a provider that throws a JS error refuses the review; the plugin keeps running', async () => {
  const home = tempDir('se-provider-');
  const clock = new ManualClock(1767225600000);
  const provider = new ScriptedProvider(clock);
  provider.start = () => { throw new Error('provider down'); };
  const p = await loadPlugin({ fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') }, clock, provider, logLevel: 'error' });
  assert.ok(p.init('{}', SERVICES).ok);
  const r = p.command(userContext('s1'), 'review now --json');
  assert.ok(r.ok, r.error);
  const decisions = JSON.parse(r.value).decisions;
  assert.ok(JSON.stringify(decisions).includes('provider down'), JSON.stringify(decisions));
  assert.equal(p.toolsList()[0].name, 'skill_manage');
});
