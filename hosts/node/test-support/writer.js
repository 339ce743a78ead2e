#!/usr/bin/env node
// One writer process of test/many-writers.test.js: loads the plugin over a home it shares with
// other processes (Node workers and Rust replays), waits for the go file, then creates its own
// skills, tries to create the contested ones, and appends unique notes to those with view then
// patch, retrying on `conflict`. Prints `ready` once loaded, then one JSON report at the end:
// every success it saw, the conflicts it retried, and any answer it did not expect.
//
//   node test-support/writer.js '{"home":…,"id":"n1","go":…,"own":5,"shared":4,"patches":20}'
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadPlugin, userContext } from '../src/host.js';

const SERVICES = ['tools', 'commands', 'system-prompt', 'agents', 'subagents'];
const TRIES = 50;
const GO_WAIT_MS = 120_000;

export const createArgs = (name) => ({
  action: 'create',
  name,
  description: `Procedure ${name} for the stress test. Use when testing ${name}.`,
  body: '# Steps\n\n1. Do it.\n\n## Notes\n',
});
// Two-digit numbers: the plugin's duplicate check drops one-character terms, so `shared-0` and
// `shared-1` would be one skill to it (similarity 1.00, refused even at duplicateThreshold 1.0).
export const own = (id, i) => `${id}-own-${String(i).padStart(2, '0')}`;
export const shared = (k) => `shared-${String(k).padStart(2, '0')}`;
export const noteLine = (worker, j) => `- note ${worker} ${j}`;
export const patchArgs = (name, note) => ({ action: 'patch', name, old_string: '## Notes\n', new_string: `## Notes\n${note}\n` });

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

async function main(spec) {
  const { home, id, go } = spec;
  const logs = [];
  let doing = 'loading'; // the call in progress, to name it in what the plugin logs
  const plugin = await loadPlugin({
    fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'self-evolve') },
    // clock: the system clock (the default): locks age by it.
    onLog: (level, message) => { if (level !== 'debug' && level !== 'info') logs.push(`${level} during ${doing}: ${message}`); },
  });
  const init = plugin.init('{"duplicateThreshold": 1.0}', SERVICES);
  if (!init.ok) throw new Error(`init: ${JSON.stringify(init.error)}`);
  const ctx = userContext(`s-${id}`);
  process.stdout.write('ready\n');

  const waitedFrom = Date.now();
  while (!existsSync(go)) {
    if (Date.now() - waitedFrom > GO_WAIT_MS) throw new Error('no go file');
    sleep(1);
  }

  const report = { id, created: [], exists: [], notes: [], conflicts: 0, notRead: 0, notYet: 0, calls: 0, unexpected: [], warned: [], logs, startMs: Date.now(), endMs: 0 };
  const call = (args) => {
    report.calls += 1;
    doing = `call ${report.calls} (${args.action} ${args.name}${args.new_string ? ` ${JSON.stringify(args.new_string.split('\n')[1])}` : ''})`;
    const r = plugin.toolsCall(ctx, 'skill_manage', JSON.stringify(args));
    const answer = r.ok ? { ok: true, v: JSON.parse(r.value) } : { ok: false, v: JSON.parse(r.error) };
    if (answer.ok && answer.v.warnings?.length) report.warned.push({ what: `${args.action} ${args.name}`, answer: answer.v });
    return answer;
  };
  const unexpected = (what, r) => report.unexpected.push({ what, answer: r.v });

  const create = (name, contested) => {
    for (let i = 0; i < TRIES; i++) {
      const r = call(createArgs(name));
      if (r.ok && r.v.status === 'written') { report.created.push(name); return; }
      if (!r.ok && r.v.code === 'conflict') { report.conflicts += 1; continue; }
      if (contested && !r.ok && r.v.code === 'exists') { report.exists.push(name); return; }
      unexpected(`create ${name}`, r);
      return;
    }
    unexpected(`create ${name}`, { v: `still conflicting after ${TRIES} tries` });
  };

  for (let k = 0; k < spec.shared; k++) create(shared(k), true);
  for (let i = 0; i < spec.own; i++) create(own(id, i), false);

  const offset = Number(id.replace(/\D/g, '')) || 0;
  for (let j = 0; j < spec.patches; j++) {
    const name = shared((j + offset) % spec.shared);
    const note = noteLine(id, j);
    let done = false;
    let failed = false;
    for (let i = 0; i < TRIES && !done && !failed; i++) {
      const view = call({ action: 'view', name });
      if (!view.ok) {
        if (view.v.code === 'not-found') { report.notYet += 1; sleep(2); continue; } // not created yet
        if (view.v.code === 'conflict') { report.conflicts += 1; continue; }
        unexpected(`view ${name}`, view);
        failed = true;
        continue;
      }
      const r = call(patchArgs(name, note));
      if (r.ok && r.v.status === 'written') { report.notes.push([name, note]); done = true; }
      else if (!r.ok && r.v.code === 'conflict') report.conflicts += 1;
      else if (!r.ok && r.v.code === 'not-read') report.notRead += 1;
      else { unexpected(`patch ${name} ${note}`, r); failed = true; }
    }
    if (!done && !failed) unexpected(`patch ${name} ${note}`, { v: `not written after ${TRIES} tries` });
  }
  report.endMs = Date.now();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(JSON.parse(process.argv[2])).catch((e) => {
    process.stderr.write(`writer: ${e.stack || e}\n`);
    process.exitCode = 1;
  });
}
