// What the fs capability will open: hard-linked files, special files (FIFOs, sockets,
// devices) and oversized files, each decided on the open handle. Refusals change nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, readFileSync, readdirSync, linkSync, statSync, truncateSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { FsCap } from '../src/fs.js';

const U = { tag: 'user-skills' };
const S = { tag: 'state' };
const P = { tag: 'project-skills', val: 's1' };
const text = (s) => new TextEncoder().encode(s);
const FS_JS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'fs.js');

/** Every entry below dir: name, size and link count (a refusal must leave all three). */
const snapshot = (dir) => readdirSync(dir, { recursive: true }).sort().map((f) => {
  const st = statSync(path.join(dir, f));
  return [f, st.size, st.nlink, st.isFile() ? readFileSync(path.join(dir, f), 'utf8') : null];
});

/** Asserts fn throws exactly `expected` (no other fields). */
function throwsExactly(fn, expected) {
  assert.throws(fn, (e) => { assert.deepStrictEqual(e, expected); return true; });
}

test('hard-linked files are never written, and never read from a skills root', () => {
  const base = tempDir('se-links-');
  const [user, state, project, outside] = ['user', 'state', 'project', 'outside'].map((d) => path.join(base, d));
  const skills = path.join(project, '.dsh', 'skills');
  for (const d of [path.join(user, 'u'), state, path.join(skills, 'p'), path.join(project, '.git'), outside]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(outside, 'secret.txt'), 'secret');
  linkSync(path.join(outside, 'secret.txt'), path.join(user, 'u', 'SKILL.md'));
  linkSync(path.join(outside, 'secret.txt'), path.join(skills, 'p', 'SKILL.md'));
  linkSync(path.join(outside, 'secret.txt'), path.join(state, 'ledger.json'));
  const before = snapshot(base);
  const warnings = [];
  const cap = new FsCap({ userSkills: user, state, projects: { s1: skills }, onWarn: (m) => warnings.push(m) });
  for (const [root, p] of [[U, 'u/SKILL.md'], [P, 'p/SKILL.md'], [S, 'ledger.json']]) {
    for (const mode of ['truncate', 'append']) {
      throwsExactly(() => cap.write(root, p, text('overwritten'), mode), { tag: 'not-permitted' });
    }
  }
  throwsExactly(() => cap.read(U, 'u/SKILL.md'), { tag: 'not-permitted' });
  throwsExactly(() => cap.read(P, 'p/SKILL.md'), { tag: 'not-permitted' });
  // The state root is the plugin's own: a link there is read (never written).
  assert.equal(new TextDecoder().decode(cap.read(S, 'ledger.json')), 'secret');
  assert.deepEqual(snapshot(base), before);
  assert.deepEqual(warnings, [
    'user-skills/u/SKILL.md has 4 hard links; refused',
    'user-skills/u/SKILL.md has 4 hard links; refused',
    'project-skills(s1)/p/SKILL.md has 4 hard links; refused',
    'project-skills(s1)/p/SKILL.md has 4 hard links; refused',
    'state/ledger.json has 4 hard links; refused',
    'state/ledger.json has 4 hard links; refused',
    'user-skills/u/SKILL.md has 4 hard links; refused',
    'project-skills(s1)/p/SKILL.md has 4 hard links; refused',
  ]);
});

// In a child process with a deadline: a host that opens a FIFO by name blocks for ever.
const PROBE = `
import { createServer } from 'node:net';
import { FsCap } from ${JSON.stringify(FS_JS)};
const [user, names] = [process.argv[1], JSON.parse(process.argv[2])];
const server = createServer();
await new Promise((resolve) => server.listen(user + '/sock', resolve));
const cap = new FsCap({ userSkills: user });
const U = { tag: 'user-skills' };
const tag = (fn) => { try { fn(); return 'ok'; } catch (e) { return e.tag ?? String(e); } };
const out = { list: cap.listDir(U, ''), kinds: {} };
for (const n of names) {
  out[n] = [tag(() => cap.read(U, n)), ...['truncate', 'append', 'create-new'].map((m) => tag(() => cap.write(U, n, new Uint8Array([120]), m)))];
  out.kinds[n] = cap.stat(U, n).kind;
}
server.close();
process.stdout.write(JSON.stringify(out));
`;

test('FIFOs, sockets and devices are wrong-kind: never read, written or waited on', (t) => {
  const user = tempDir('se-special-');
  execFileSync('mkfifo', [path.join(user, 'fifo')]);
  const names = ['fifo', 'sock'];
  try {
    execFileSync('mknod', [path.join(user, 'null'), 'c', '1', '3'], { stdio: 'ignore' });
    names.push('null');
  } catch {
    t.diagnostic('mknod not permitted here: no device in this test');
  }
  writeFileSync(path.join(user, 'plain.md'), 'plain');
  writeFileSync(Buffer.concat([Buffer.from(`${user}/`), Buffer.from([0xff, 0x2e, 0x6d, 0x64])]), 'not UTF-8'); // skipped by list-dir
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', PROBE, user, JSON.stringify(names)], { timeout: 20000, encoding: 'utf8' });
  assert.equal(run.signal, null, 'the probe hung on a special file');
  assert.equal(run.status, 0, run.stderr);
  const out = JSON.parse(run.stdout);
  for (const n of names) {
    assert.deepEqual(out[n], ['wrong-kind', 'wrong-kind', 'wrong-kind', 'already-exists'], n);
    assert.equal(out.kinds[n], 'file', n); // the WIT enum has file|dir|symlink only
  }
  assert.deepEqual(out.list, [...names, 'plain.md'].sort().map((n) => [n, 'file']));
  assert.equal(readFileSync(path.join(user, 'plain.md'), 'utf8'), 'plain');
  // (Closing its server removed the socket.)
  assert.equal(readdirSync(user).length, names.filter((n) => n !== 'sock').length + 2);
});

test('reads are bounded: a file over maxReadBytes is refused by its size', () => {
  const user = tempDir('se-bound-');
  writeFileSync(path.join(user, 'ten.md'), '0123456789');
  writeFileSync(path.join(user, 'eleven.md'), '0123456789A');
  const cap = new FsCap({ userSkills: user, maxReadBytes: 10 });
  assert.equal(new TextDecoder().decode(cap.read(U, 'ten.md')), '0123456789');
  throwsExactly(() => cap.read(U, 'eleven.md'), { tag: 'io', val: 'too-large: eleven.md is 11 bytes; the host reads at most 10' });
  // The default bound is 16 MiB (sparse files: nothing is really written).
  mkdirSync(path.join(user, 'big'));
  writeFileSync(path.join(user, 'big', 'at.md'), '');
  truncateSync(path.join(user, 'big', 'at.md'), 16777216);
  writeFileSync(path.join(user, 'big', 'over.md'), '');
  truncateSync(path.join(user, 'big', 'over.md'), 16777217);
  const plain = new FsCap({ userSkills: user });
  assert.equal(plain.read(U, 'big/at.md').length, 16777216);
  throwsExactly(() => plain.read(U, 'big/over.md'), { tag: 'io', val: 'too-large: big/over.md is 16777217 bytes; the host reads at most 16777216' });
});
