// Where the Node fs capability once answered differently from the Rust host (host-test/src/caps/fs):
// times before 1970, a refused rename, the errno → fs-error mapping, and O_NOCTTY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readdirSync, utimesSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { FsCap } from '../src/fs.js';
import { toFsError } from '../src/fs-at.js';

const U = { tag: 'user-skills' };
const S = { tag: 'state' };
const FS_JS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'fs.js');

const tree = (dir) => readdirSync(dir, { recursive: true }).sort();

test('a file time before 1970 is 0, never a negative u64', () => {
  const base = tempDir('se-old-');
  const [user, state] = [path.join(base, 'user'), path.join(base, 'state')];
  mkdirSync(path.join(user, 'old'), { recursive: true });
  mkdirSync(state);
  writeFileSync(path.join(user, 'old', 'SKILL.md'), 'x');
  const y1960 = new Date('1960-01-01T00:00:00Z');
  utimesSync(path.join(user, 'old', 'SKILL.md'), y1960, y1960);
  utimesSync(path.join(user, 'old'), y1960, y1960);
  utimesSync(user, y1960, y1960);
  const cap = new FsCap({ userSkills: user, state });
  assert.deepEqual(cap.stat(U, 'old/SKILL.md'), { kind: 'file', size: 1n, modifiedMs: 0n });
  assert.equal(cap.stat(U, 'old').modifiedMs, 0n);
  assert.equal(cap.stat(U, '').modifiedMs, 0n, 'the root itself');
  assert.deepEqual(cap.statMany(U, ['old/SKILL.md']), [{ tag: 'ok', val: { kind: 'file', size: 1n, modifiedMs: 0n } }]);
  // A time after 1970 is kept.
  utimesSync(path.join(user, 'old', 'SKILL.md'), 1767225600, 1767225600);
  assert.equal(cap.stat(U, 'old/SKILL.md').modifiedMs, 1767225600000n);
});

test('a refused rename changes nothing on disk: no folder is made for the destination', () => {
  const base = tempDir('se-rename-');
  const [user, state] = [path.join(base, 'user'), path.join(base, 'state')];
  mkdirSync(path.join(state, 'kept'), { recursive: true });
  mkdirSync(user);
  writeFileSync(path.join(state, 'kept', 'a.json'), '{}');
  const before = tree(state);
  const cap = new FsCap({ userSkills: user, state });
  assert.throws(() => cap.rename(S, 'missing', 'new/deep/dir/x'), (e) => { assert.deepEqual(e, { tag: 'not-found' }); return true; });
  assert.throws(() => cap.rename(S, 'kept/missing.json', 'kept/new/x.json'), (e) => { assert.deepEqual(e, { tag: 'not-found' }); return true; });
  assert.throws(() => cap.rename(S, 'gone/a.json', 'other/b.json'), (e) => { assert.deepEqual(e, { tag: 'not-found' }); return true; });
  assert.deepEqual(tree(state), before);
  assert.equal(existsSync(path.join(state, 'new')), false);
  // An existing source still makes the destination's folders.
  cap.rename(S, 'kept/a.json', 'moved/deep/a.json');
  assert.deepEqual(tree(state), ['kept', 'moved', 'moved/deep', 'moved/deep/a.json']);
});

test('an unmapped errno is io with its name and number only, as in Rust and Python: no host paths', () => {
  const base = tempDir('se-einval-');
  const [user, state] = [path.join(base, 'user'), path.join(base, 'state')];
  mkdirSync(path.join(state, 'a', 'b'), { recursive: true });
  mkdirSync(user);
  const cap = new FsCap({ userSkills: user, state });
  const einval = { tag: 'io', val: 'EINVAL (os error 22)' };
  assert.throws(() => cap.rename(S, 'a', 'a/c'), (e) => { assert.deepEqual(e, einval); return true; });
  assert.throws(() => cap.rename(S, 'a', 'a/b/c'), (e) => { assert.deepEqual(e, einval); return true; });
  assert.deepEqual(tree(state), ['a', 'a/b'], 'nothing moved');
  assert.throws(() => cap.removeDir(S, 'a'), (e) => { assert.deepEqual(e, { tag: 'io', val: 'folder not empty' }); return true; });
});

test('errno → fs-error exactly as the Rust host (open.rs `errno`)', () => {
  const tagOf = (code) => toFsError(Object.assign(new Error(code), { code }));
  assert.deepEqual(tagOf('EROFS'), { tag: 'not-permitted' });
  assert.deepEqual(tagOf('ENAMETOOLONG'), { tag: 'invalid-path' });
  assert.deepEqual(tagOf('EACCES'), { tag: 'not-permitted' });
  assert.deepEqual(tagOf('EPERM'), { tag: 'not-permitted' });
  assert.deepEqual(tagOf('ENOENT'), { tag: 'not-found' });
  assert.deepEqual(tagOf('EEXIST'), { tag: 'already-exists' });
  assert.deepEqual(tagOf('ENOSPC'), { tag: 'no-space' });
  assert.deepEqual(tagOf('EDQUOT'), { tag: 'no-space' });
  for (const code of ['ENOTDIR', 'EISDIR', 'ENXIO']) assert.deepEqual(tagOf(code), { tag: 'wrong-kind' });
  assert.deepEqual(tagOf('ELOOP'), { tag: 'symlink' });
  assert.deepEqual(tagOf('ENOTEMPTY'), { tag: 'io', val: 'folder not empty' });
  assert.equal(tagOf('EIO').tag, 'io');
});

// A session leader with no controlling terminal that opens a terminal without O_NOCTTY makes it
// its controlling terminal. Python makes the pty and starts node in a new session; node opens the
// pty's slave through FsCap (a character device: wrong-kind) and reports its own tty afterwards.
test('files are opened with O_NOCTTY: a terminal never becomes the host\'s controlling terminal', (t) => {
  if (process.platform !== 'linux') return t.skip('Linux only');
  const child = `
    import { FsCap } from ${JSON.stringify(FS_JS)};
    import { readFileSync, mkdtempSync } from 'node:fs';
    const tty = () => readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[4];
    const before = tty();
    const cap = new FsCap({ userSkills: '/dev/pts', state: mkdtempSync('/tmp/se-noctty-') });
    let answer;
    try { cap.read({ tag: 'user-skills' }, process.argv[1]); } catch (e) { answer = e.tag; }
    console.log(JSON.stringify({ before, after: tty(), answer }));`;
  const driver = `
import os, subprocess, sys
master, slave = os.openpty()
name = os.ttyname(slave)
os.close(slave)
out = subprocess.run([sys.argv[1], '--input-type=module', '-e', sys.argv[2], name.split('/')[-1]],
                     start_new_session=True, stdin=subprocess.DEVNULL, capture_output=True, text=True)
sys.stdout.write(out.stdout); sys.stderr.write(out.stderr)
sys.exit(out.returncode)`;
  const r = spawnSync('python3', ['-c', driver, process.execPath, child], { encoding: 'utf8' });
  if (r.error) return t.skip(`no python3: ${r.error.message}`);
  assert.equal(r.status, 0, r.stderr);
  const seen = JSON.parse(r.stdout.trim());
  assert.equal(seen.before, '0', 'the child starts without a controlling terminal');
  assert.equal(seen.answer, 'wrong-kind');
  assert.equal(seen.after, '0', 'opening the pty made it the controlling terminal');
});
