// For the race test: swaps a folder for a symlink to another folder and back, as fast as it can,
// until killed or until its deadline passes (so a crashed test cannot leave it running).
// Usage: node swap-folder.js DIR TARGET MS. Prints "ready" once started.
import { renameSync, symlinkSync, rmSync, writeSync } from 'node:fs';

const [dir, target, ms] = process.argv.slice(2);
const away = `${dir}.away`;
const link = `${dir}.link`;
const deadline = Date.now() + Number(ms);
// The symlink is made once and renamed in and out: a rename is quicker than making a
// symlink, so the folder turns into the symlink within one short step.
symlinkSync(target, link);
// The test's own writes race these steps (it may recreate DIR while it is away); a failed step
// is skipped and the next round repairs the folder.
const quietly = (fn) => { try { fn(); } catch { /* see above */ } };
writeSync(1, 'ready\n');
while (Date.now() < deadline) {
  quietly(() => renameSync(dir, away));
  quietly(() => renameSync(link, dir)); // the symlink in
  quietly(() => renameSync(dir, link)); // and out again
  try {
    renameSync(away, dir);
  } catch {
    quietly(() => renameSync(dir, link)); // the symlink, if it is still in
    quietly(() => rmSync(dir, { recursive: true, force: true })); // a folder the test made meanwhile
    quietly(() => renameSync(away, dir));
  }
}
