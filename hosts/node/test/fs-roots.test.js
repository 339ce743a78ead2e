// Where the fs capability's roots are: user and state roots fixed to their real paths when it
// is made, project roots once per session and only inside their project, a state root that
// is a file answered with typed errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, readdirSync, symlinkSync, unlinkSync, renameSync, realpathSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { FsCap } from '../src/fs.js';

const U = { tag: 'user-skills' };
const S = { tag: 'state' };
const project = (session) => ({ tag: 'project-skills', val: session });
const text = (s) => new TextEncoder().encode(s);
const tree = (dir) => readdirSync(dir, { recursive: true }).sort();

test('user and state roots are their real paths, fixed when the capability is made', () => {
  const base = tempDir('se-roots-');
  mkdirSync(path.join(base, 'real-user'));
  mkdirSync(path.join(base, 'other'));
  symlinkSync(path.join(base, 'real-user'), path.join(base, 'user-link'));
  const cap = new FsCap({ userSkills: path.join(base, 'user-link'), state: path.join(base, 'state') });
  assert.deepEqual(cap.describeRoots(), { userSkills: realpathSync(path.join(base, 'real-user')), state: null });
  // The configured link now points elsewhere: the root stays where it was resolved.
  unlinkSync(path.join(base, 'user-link'));
  symlinkSync(path.join(base, 'other'), path.join(base, 'user-link'));
  cap.write(U, 'a/SKILL.md', text('here'), 'create-new');
  assert.equal(readFileSync(path.join(base, 'real-user', 'a', 'SKILL.md'), 'utf8'), 'here');
  assert.deepEqual(tree(path.join(base, 'other')), []);
  // A missing root is resolved when first created.
  cap.write(S, 'ledger.json', text('{}'), 'create-new');
  assert.deepEqual(cap.describeRoots(), { userSkills: realpathSync(path.join(base, 'real-user')), state: realpathSync(path.join(base, 'state')) });
});

test('a project skills folder linked outside its project is not mapped, with one warning', () => {
  const base = tempDir('se-proj-');
  const proj = path.join(base, 'proj');
  const outside = path.join(base, 'outside');
  mkdirSync(path.join(proj, '.git'), { recursive: true });
  mkdirSync(path.join(proj, '.dsh'));
  mkdirSync(path.join(outside, 'skills', 'x'), { recursive: true });
  writeFileSync(path.join(outside, 'skills', 'x', 'SKILL.md'), 'outside');
  symlinkSync(path.join(outside, 'skills'), path.join(proj, '.dsh', 'skills'));
  const good = path.join(base, 'good');
  mkdirSync(path.join(good, '.dsh'), { recursive: true });
  const before = tree(base);
  const warnings = [];
  const configured = path.join(proj, '.dsh', 'skills');
  const cap = new FsCap({ projects: { s1: configured, s2: path.join(good, '.dsh', 'skills') }, onWarn: (m) => warnings.push(m) });
  assert.equal(cap.hasRoot(project('s1')), false);
  assert.throws(() => cap.read(project('s1'), 'x/SKILL.md'), { tag: 'not-permitted' });
  assert.throws(() => cap.write(project('s1'), 'x/SKILL.md', text('w'), 'truncate'), { tag: 'not-permitted' });
  assert.throws(() => cap.listDir(project('s1'), ''), { tag: 'not-permitted' });
  assert.deepEqual(tree(base), before);
  assert.equal(readFileSync(path.join(outside, 'skills', 'x', 'SKILL.md'), 'utf8'), 'outside');
  assert.deepEqual(warnings, [`project skills folder ${configured} resolves to ${realpathSync(path.join(outside, 'skills'))}, outside the project ${realpathSync(proj)}; running without a project root`]);
  // A skills folder not made yet is mapped, and made inside its project on the first write.
  assert.equal(cap.hasRoot(project('s2')), true);
  cap.write(project('s2'), 'y/SKILL.md', text('in'), 'create-new');
  assert.equal(readFileSync(path.join(good, '.dsh', 'skills', 'y', 'SKILL.md'), 'utf8'), 'in');
  // Resolved once: the folder swapped for a link to the outside later leads nowhere new.
  renameSync(path.join(good, '.dsh', 'skills'), path.join(good, '.dsh', 'moved'));
  symlinkSync(path.join(outside, 'skills'), path.join(good, '.dsh', 'skills'));
  try { cap.write(project('s2'), 'x/SKILL.md', text('w'), 'truncate'); } catch (e) { assert.equal(typeof e.tag, 'string'); }
  assert.equal(readFileSync(path.join(outside, 'skills', 'x', 'SKILL.md'), 'utf8'), 'outside');
  assert.equal(warnings.length, 1);
});

test('the user library is never also a project', () => {
  const base = tempDir('se-home-');
  const user = path.join(base, 'home', '.dsh', 'skills');
  mkdirSync(user, { recursive: true });
  const warnings = [];
  const cap = new FsCap({ userSkills: user, projects: { same: user, around: path.dirname(user), inside: path.join(user, 'x') }, onWarn: (w) => warnings.push(w) });
  for (const session of ['same', 'around', 'inside']) {
    assert.equal(cap.hasRoot(project(session)), false, session);
    assert.throws(() => cap.write(project(session), 'a.md', text('x'), 'create-new'), { tag: 'not-permitted' });
  }
  assert.deepEqual(tree(path.join(base, 'home')), ['.dsh', path.join('.dsh', 'skills')]);
  assert.ok(warnings.some((w) => w.includes('is the user skills folder')), String(warnings));
});

test('project maps are keyed by any session id, `__proto__` and `constructor` included', () => {
  const base = tempDir('se-keys-');
  mkdirSync(path.join(base, 'p', '.git'), { recursive: true });
  const projects = JSON.parse(`{"__proto__": ${JSON.stringify(path.join(base, 'p', 'skills'))}}`);
  const cap = new FsCap({ projects });
  assert.equal(cap.hasRoot(project('__proto__')), true);
  cap.write(project('__proto__'), 'a.md', text('x'), 'create-new');
  assert.ok(existsSync(path.join(base, 'p', 'skills', 'a.md')));
  for (const session of ['constructor', 'toString', 'hasOwnProperty']) {
    assert.equal(cap.hasRoot(project(session)), false, session);
    assert.throws(() => cap.read(project(session), 'a.md'), { tag: 'not-permitted' });
  }
});

test('a state root that is a regular file answers every operation with a typed error', () => {
  const base = tempDir('se-statefile-');
  const state = path.join(base, 'state');
  writeFileSync(state, 'not a folder');
  const cap = new FsCap({ state });
  const typed = (what, fn) => {
    assert.throws(fn, (e) => {
      assert.ok(!(e instanceof Error) && typeof e.tag === 'string', `${what}: ${e}`);
      return true;
    }, what);
  };
  typed('read', () => cap.read(S, 'a.json'));
  typed('write', () => cap.write(S, 'a.json', text('{}'), 'truncate'));
  typed('write in a folder', () => cap.write(S, 'd/a.json', text('{}'), 'create-new'));
  typed('rename', () => cap.rename(S, 'a.json', 'b.json'));
  typed('remove-file', () => cap.removeFile(S, 'a.json'));
  typed('remove-dir', () => cap.removeDir(S, 'd'));
  typed('create-dir-all', () => cap.createDirAll(S, 'd/e'));
  typed('list-dir', () => cap.listDir(S, ''));
  typed('list-dir d', () => cap.listDir(S, 'd'));
  typed('stat', () => cap.stat(S, ''));
  typed('stat a', () => cap.stat(S, 'a.json'));
  for (const r of cap.statMany(S, ['a.json', ''])) assert.equal(r.tag, 'err');
  assert.equal(readFileSync(state, 'utf8'), 'not a folder');
  assert.deepEqual(readdirSync(base), ['state']);
});
