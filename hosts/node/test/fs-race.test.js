// The fs capability opens by handle, never check-then-open: a folder swapped for a symlink
// while the host works through it never leads out of the root. Also the refusal to run
// unconfined where /proc/self/fd is missing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, writeFileSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { FsCap } from '../src/fs.js';

const U = { tag: 'user-skills' };
const SWAPPER = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'test-support', 'swap-folder.js');
const FILE = 'a/b/c/SKILL.md';
const text = (s) => new TextEncoder().encode(s);

/** Every file below dir with its content. */
const snapshot = (dir) => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
  .map((e) => path.join(e.parentPath ?? e.path, e.name)).sort().map((f) => [f, readFileSync(f, 'utf8')]);

test('a folder swapped for a symlink mid-operation never leads out of the root', async () => {
  const base = tempDir('se-race-');
  const user = path.join(base, 'user');
  const outside = path.join(base, 'outside');
  // Deep, so a host that checks each component by name before opening has a wide window.
  mkdirSync(path.join(user, 'skill', 'a', 'b', 'c'), { recursive: true });
  mkdirSync(path.join(outside, 'a', 'b', 'c'), { recursive: true });
  writeFileSync(path.join(user, 'skill', FILE), 'inside');
  writeFileSync(path.join(outside, FILE), 'OUTSIDE');
  const before = snapshot(outside);
  const cap = new FsCap({ userSkills: user });
  const child = spawn(process.execPath, [SWAPPER, path.join(user, 'skill'), outside, '60000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const outcomes = new Map();
  const count = (what) => outcomes.set(what, (outcomes.get(what) ?? 0) + 1);
  try {
    await once(child.stdout, 'data');
    for (let i = 0; i < 1500; i++) {
      try {
        count(new TextDecoder().decode(cap.read(U, `skill/${FILE}`)) === 'OUTSIDE' ? 'read the outside' : 'read inside');
      } catch (e) {
        assert.equal(typeof e.tag, 'string', `a typed error, not ${e}`);
        count(`read ${e.tag}`);
      }
      try {
        cap.write(U, `skill/${FILE}`, text('inside'), i % 2 ? 'truncate' : 'append');
        count('wrote');
      } catch (e) {
        assert.equal(typeof e.tag, 'string', `a typed error, not ${e}`);
        count(`write ${e.tag}`);
      }
    }
  } finally {
    child.kill('SIGKILL');
    await once(child, 'exit');
  }
  const seen = JSON.stringify(Object.fromEntries(outcomes));
  assert.equal(outcomes.get('read the outside') ?? 0, 0, seen);
  assert.deepEqual(snapshot(outside), before, seen);
  // The race really ran: some operations met the symlink and were refused at open time.
  assert.ok((outcomes.get('read symlink') ?? 0) + (outcomes.get('write symlink') ?? 0) > 0, seen);
});

test('without /proc/self/fd the fs capability refuses to start unless told to run unconfined', (t) => {
  const base = tempDir('se-noproc-');
  const user = path.join(base, 'user');
  mkdirSync(user);
  symlinkSync(base, path.join(user, 'escape'));
  const saved = FsCap.procFd;
  FsCap.procFd = path.join(base, 'no-such-proc');
  t.after(() => { FsCap.procFd = saved; });
  assert.throws(() => new FsCap({ userSkills: user }),
    { message: `the fs capability needs ${FsCap.procFd} (Linux) to stay inside its roots; pass {allowUnconfinedFs: true} to run without that guarantee` });
  // Unconfined, it walks by names: still no symlink followed, only not race-safe.
  const cap = new FsCap({ userSkills: user, allowUnconfinedFs: true });
  cap.write(U, 'a/b.md', text('x'), 'create-new');
  assert.equal(new TextDecoder().decode(cap.read(U, 'a/b.md')), 'x');
  assert.throws(() => cap.write(U, 'escape/c.md', text('x'), 'create-new'), { tag: 'symlink' });
  assert.deepEqual(cap.listDir(U, ''), [['a', 'dir'], ['escape', 'symlink']]);
});
