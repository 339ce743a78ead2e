// Many writers, one home, several PROCESSES and every host: Node worker processes
// (test-support/writer.js), Python worker processes (hosts/python/tests/support/writer.py, when
// $SELF_EVOLVE_PYTHON names a Python with the package installed; build.sh sets it) and, when it
// is built, the Rust CLI replaying generated scripts, all writing one library at once through
// the same component. A checker then holds every reported
// success against the final disk: no write reported `written` may be missing, each contested
// name has exactly one creator, nothing appears that nobody reported written, the ledger holds
// every skill, and no temp file or lock is left behind. (tests/many_writers.rs in the repo is the
// same proof for threads in one process.)
//
// Starting together: a Node worker waits for a go file. A replay cannot wait (its script is
// fixed and its clock manual), so each replay's script opens with one completed turn under
// `review.gate: "jev"`: the plugin asks the gate endpoint, a server in this test, which holds the
// answer (`no`, so no review starts) until every process is ready. The replay blocks in that
// HTTP call, then runs its writes at the same moment the Node workers start theirs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { createArgs, noteLine, patchArgs, own, shared } from '../test-support/writer.js';

// The usage ledger as every process recorded it: the usage.json snapshot (if any) with the
// records of usage.log and of logs rotated for folding (usage.log.*, unless already folded).
function usage(state) {
  const snapshot = existsSync(path.join(state, 'usage.json'))
    ? JSON.parse(readFileSync(path.join(state, 'usage.json'), 'utf8'))
    : { skills: {} };
  const folded = new Set(snapshot.folded || []);
  const skills = new Map(Object.entries(snapshot.skills || {}));
  const logs = readdirSync(state).filter((n) => n.startsWith('usage.log.') && !folded.has(n)).sort();
  logs.push('usage.log');
  for (const log of logs) {
    if (!existsSync(path.join(state, log))) continue;
    for (const line of readFileSync(path.join(state, log), 'utf8').split('\n')) {
      let v;
      try { v = JSON.parse(line); } catch { continue; }
      if (typeof v?.s !== 'string') continue;
      const entry = skills.get(v.s) || {};
      if (typeof v.u === 'number') { entry.uses = (entry.uses || 0) + 1; entry.lastUsedMs = v.u; }
      else if (typeof v.c === 'number' && entry.createdMs === undefined) entry.createdMs = v.c;
      skills.set(v.s, entry);
    }
  }
  return { skills: Object.fromEntries(skills) };
}

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const WRITER = path.join(ROOT, 'test-support', 'writer.js');
const PY_WRITER = path.resolve(ROOT, '..', 'python', 'tests', 'support', 'writer.py');
const PYTHON = process.env.SELF_EVOLVE_PYTHON;
const CLI = path.resolve(ROOT, '..', '..', 'target', 'debug', 'self-evolve');
const WASM = path.resolve(ROOT, '..', '..', 'dist', 'self-evolve.wasm');

const NODE_WORKERS = 3;
const RUST_WORKERS = 2;
const PY_WORKERS = PYTHON ? 2 : 0;
const SHARED = 4; // shared-00..03: every process tries to create them
const OWN = 5; // per process: n1-own-00.., r1-own-00..
const PATCHES = 20; // notes per Node worker (retried until written)
const RUST_PATCHES = 30; // view + patch pairs per replay (a fixed script: never retried)
const DEADLINE_MS = 100_000;
const GATE_KEY_ENV = 'SELF_EVOLVE_STRESS_GATE_KEY';

/** A child process with its whole stdout and stderr collected. */
function launch(cmd, args, env = process.env) {
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env });
  const p = { child, out: '', err: '', done: false };
  child.stdout.setEncoding('utf8').on('data', (d) => { p.out += d; });
  child.stderr.setEncoding('utf8').on('data', (d) => { p.err += d; });
  p.exited = new Promise((resolve) => child.once('close', (code, signal) => { p.done = true; p.endMs = Date.now(); resolve({ code, signal }); }));
  child.once('error', (e) => { p.err += String(e); });
  return p;
}

/** The gate endpoint: holds every question until `release`, then answers `no` (no review starts). */
async function holdingGate() {
  const held = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => held.push(res));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    held,
    release() {
      for (const res of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ choice: 'no', confidence: 1.0 }));
      }
    },
    close() { server.closeAllConnections(); server.close(); },
  };
}

/** A replay's config: the test's, plus a jev gate asked after the first completed turn. */
const REPLAY_CONFIG = { duplicateThreshold: 1.0, review: { turnInterval: 1, cooldownMinutes: 0, gate: 'jev', jev: { timeoutMs: 60_000 } } };

/** A replay script for Rust process `id`; returns its skill_manage calls in order (one `tool` line each). */
function replayScript(file, id) {
  const calls = [];
  const call = (args) => calls.push(args);
  // Twice each: a first attempt that lost the race (`conflict`) may still win on the second.
  for (let k = 0; k < SHARED; k++) { call(createArgs(shared(k))); call(createArgs(shared(k))); }
  for (let i = 0; i < OWN; i++) call(createArgs(own(id, i)));
  const offset = Number(id.replace(/\D/g, ''));
  for (let j = 0; j < RUST_PATCHES; j++) {
    const name = shared((j + offset) % SHARED);
    call({ action: 'view', name });
    call(patchArgs(name, noteLine(id, j)));
  }
  const barrier = [ // the gate call these make blocks until the test says go
    { t: 1, type: 'user', session: id, text: 'Ready?', human: true },
    { t: 2, type: 'turn-end', session: id, status: 'completed', origin: 'user', depth: 0 },
  ];
  const lines = [{ t: 0, type: 'config', config: REPLAY_CONFIG }, ...barrier,
    // Each replay on its own manual clock from 2026-01-01, 9 s or 13 s a step: their clocks and
    // the live workers' wall clocks disagree by far more than a lock's stale age, while the real
    // time between their steps is milliseconds (a lock is judged on the filesystem's time).
    ...calls.map((args, i) => ({ t: 3 + i * (5_000 + 4_000 * offset), type: 'call', session: id, tool: 'skill_manage', args }))];
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return calls;
}

/** What a replay reported, in the shape of a Node worker's report (only `written` counts). */
function rustReport(id, calls, stdout) {
  const lines = stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)).filter((l) => l.kind === 'tool');
  assert.equal(lines.length, calls.length, `${id}: one decision line per call:\n${stdout}`);
  const report = { id, created: [], exists: [], notes: [], conflicts: 0, calls: calls.length, unexpected: [], warned: [] };
  const allowed = { create: ['conflict', 'exists'], view: ['conflict', 'not-found'], patch: ['conflict', 'not-read', 'not-found'] };
  calls.forEach((args, i) => {
    const { ok, result } = lines[i];
    if (ok && result.warnings?.length) report.warned.push({ what: `${args.action} ${args.name} (call ${i + 1})`, answer: result });
    if (ok && result.status === 'written') {
      if (args.action === 'create') report.created.push(args.name);
      else if (args.action === 'patch') report.notes.push([args.name, args.new_string.split('\n')[1]]);
      else report.unexpected.push({ what: `${args.action} ${args.name}`, answer: result });
      return;
    }
    if (ok && args.action === 'view') return;
    if (!ok && result.code === 'conflict') report.conflicts += 1;
    if (!ok && result.code === 'exists') report.exists.push(args.name);
    const fine = !ok && allowed[args.action].includes(result.code) && !(result.code === 'exists' && !args.name.startsWith('shared-'));
    if (!fine) report.unexpected.push({ what: `${args.action} ${args.name} (call ${i + 1})`, answer: result });
  });
  return report;
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true }).map((f) => path.join(dir, String(f)));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('several processes, Node, Rust and Python, write one home at once and lose nothing', { timeout: 150_000 }, async (t) => {
  const began = Date.now();
  const base = tempDir('se-many-writers-');
  const home = path.join(base, 'home');
  const go = path.join(base, 'go'); // outside the home: the debris scan sees only what the plugin made
  const rust = existsSync(CLI);
  if (!rust) t.diagnostic(`the Rust CLI is not built at ${CLI} (\`cargo test\` builds it): no Rust replays`);
  if (!PYTHON) t.diagnostic('SELF_EVOLVE_PYTHON is not set (./build.sh test sets it): no Python workers');

  const procs = [];
  const gate = await holdingGate();
  try {
    if (rust) {
      // A first run compiles the component into wasmtime's cache (seconds, once); the timed
      // replays then load in a fraction of a second, so their manual clocks start close to the go.
      const warm = path.join(base, 'warm.jsonl');
      writeFileSync(warm, `${JSON.stringify({ t: 0, type: 'config', config: {} })}\n`);
      const w = launch(CLI, ['--wasm', WASM, 'replay', warm, '--json', '--home', path.join(base, 'warm')]);
      assert.deepEqual(await w.exited, { code: 0, signal: null }, `the Rust CLI does not run:\n${w.err}`);
    }
    const nodes = [];
    for (let n = 1; n <= NODE_WORKERS; n++) {
      const id = `n${n}`;
      const spec = { home, id, go, own: OWN, shared: SHARED, patches: PATCHES };
      nodes.push({ id, p: launch(process.execPath, [WRITER, JSON.stringify(spec)]) });
    }
    for (let n = 1; n <= PY_WORKERS; n++) {
      const id = `p${n}`;
      const spec = { home, id, go, own: OWN, shared: SHARED, patches: PATCHES };
      nodes.push({ id, p: launch(PYTHON, [PY_WRITER, JSON.stringify(spec)]) });
    }
    procs.push(...nodes.map((x) => x.p));
    const waitFor = async (what, ready) => {
      while (!ready()) {
        const dead = procs.find((p) => p.done);
        if (dead) assert.fail(`a writer ended before the start (waiting for ${what}):\n${dead.out}\n${dead.err}`);
        if (Date.now() - began > DEADLINE_MS) assert.fail(`${what}: not ready in time`);
        await sleep(1);
      }
    };
    await waitFor('the Node and Python workers', () => nodes.every((x) => x.p.out.startsWith('ready\n')));
    const replays = [];
    for (let r = 1; rust && r <= RUST_WORKERS; r++) {
      const id = `r${r}`;
      const file = path.join(base, `${id}.jsonl`);
      const calls = replayScript(file, id);
      const args = ['--wasm', WASM, 'replay', file, '--json', '--home', home, '--gate', gate.url, '--gate-key-env', GATE_KEY_ENV];
      replays.push({ id, calls, p: launch(CLI, args, { ...process.env, [GATE_KEY_ENV]: 'stress-test' }) });
    }
    procs.push(...replays.map((x) => x.p));
    await waitFor('the Rust replays', () => gate.held.length === replays.length);
    const goMs = Date.now();
    writeFileSync(go, 'go\n');
    gate.release();

    const writers = [...nodes, ...replays];
    for (const x of writers) assert.deepEqual(await x.p.exited, { code: 0, signal: null }, `${x.id} failed:\n${x.p.err}`);

    const reports = [
      ...nodes.map((x) => JSON.parse(x.p.out.trim().split('\n').pop())),
      ...replays.map((x) => rustReport(x.id, x.calls, x.p.out)),
    ];
    const warnings = [...nodes.flatMap((x) => JSON.parse(x.p.out.trim().split('\n').pop()).logs.map((l) => `${x.id}: ${l}`)),
      ...replays.flatMap((x) => x.p.err.split('\n').filter((l) => l.trim()).map((l) => `${x.id}: ${l}`))];
    for (const w of warnings) t.diagnostic(`log ${w}`);
    for (const r of reports) for (const w of r.warned) t.diagnostic(`${r.id}: ${w.what} answered with warnings: ${JSON.stringify(w.answer)}`);
    const creators = new Map(); // name -> [process ids]
    const written = new Map(); // note line -> [[name, process id], ...]
    for (const r of reports) {
      for (const name of r.created) creators.set(name, [...(creators.get(name) ?? []), r.id]);
      for (const [name, note] of r.notes) written.set(note, [...(written.get(note) ?? []), [name, r.id]]);
    }
    const sum = (f) => reports.reduce((a, r) => a + f(r), 0);
    const nodeReports = reports.filter((r) => !r.id.startsWith('r'));
    const rustReports = reports.filter((r) => r.id.startsWith('r'));
    const nodeSpan = [Math.min(...nodeReports.map((r) => r.startMs)), Math.max(...nodeReports.map((r) => r.endMs))];
    const calls = (prefix) => sum((r) => (r.id.startsWith(prefix) ? r.calls : 0));
    t.diagnostic(`processes: ${NODE_WORKERS} Node + ${PY_WORKERS} Python${rust ? ` + ${RUST_WORKERS} Rust replays` : ''}; ${sum((r) => r.calls)} skill_manage calls`
      + ` (Node ${calls('n')}, Python ${calls('p')}, Rust ${calls('r')})`);
    t.diagnostic(`written: ${creators.size} creates (${[...Array(SHARED).keys()].map((k) => `${shared(k)} by ${(creators.get(shared(k)) ?? ['nobody']).join(' and ')}`).join(', ')}), ${written.size} patches`
      + `${rust ? ` (Rust: ${sum((r) => (r.id.startsWith('r') ? r.notes.length : 0))} of ${RUST_WORKERS * RUST_PATCHES})` : ''}`);
    t.diagnostic(`conflicts: Node and Python retried ${sum((r) => (r.id.startsWith('r') ? 0 : r.conflicts))} (and ${sum((r) => r.notRead ?? 0)} not-read, ${sum((r) => r.notYet ?? 0)} views before a create)`
      + `${rust ? `; Rust refused ${sum((r) => (r.id.startsWith('r') ? r.conflicts : 0))} (a replay does not retry)` : ''}`);
    t.diagnostic(`timing: ready after ${goMs - began} ms; Node and Python workers wrote from go+${nodeSpan[0] - goMs} to go+${nodeSpan[1] - goMs} ms`
      + `${rust ? `; Rust replays exited at go+${replays.map((x) => x.p.endMs - goMs).join(', go+')} ms` : ''}; ${rustReports.length ? '' : 'no Rust; '}total ${Date.now() - began} ms`);

    // --- the checker, against the final disk ---
    for (const r of reports) assert.deepEqual(r.unexpected, [], `${r.id} got answers it did not expect`);
    for (const [note, where] of written) assert.equal(where.length, 1, `\`${note}\` reported written ${where.length} times`);
    const skills = path.join(home, 'skills');
    const skillFile = (name) => path.join(skills, name, 'SKILL.md');
    for (const [name, who] of creators) {
      assert.equal(who.length, 1, `${name} reported created by ${who.join(', ')}`);
      assert.ok(existsSync(skillFile(name)), `${name}: reported written by ${who[0]}, missing on disk`);
      assert.match(readFileSync(skillFile(name), 'utf8'), new RegExp(`^---\\nname: ${name}\\n`), `${name}: its front matter`);
    }
    for (let k = 0; k < SHARED; k++) assert.ok(creators.has(shared(k)), `${shared(k)}: no creator`);
    for (const x of nodes) {
      const r = reports.find((y) => y.id === x.id);
      assert.equal(r.created.filter((n) => !n.startsWith('shared-')).length, OWN, `${x.id}: every own skill written in the end`);
      assert.equal(r.notes.length, PATCHES, `${x.id}: every note written in the end`);
    }
    for (const [note, [[name, who]]] of written) {
      const text = readFileSync(skillFile(name), 'utf8');
      const count = text.split('\n').filter((l) => l === note).length;
      assert.equal(count, 1, `${name}: \`${note}\` (a patch ${who} reported written) is there ${count} times:\n${text}`);
    }
    // Nothing appears that nobody reported written (a `conflict` says nothing was written).
    const onDisk = readdirSync(skills).filter((n) => !n.startsWith('.'));
    assert.deepEqual(onDisk.sort(), [...creators.keys()].sort(), 'the skills on disk are the ones reported created');
    for (const name of onDisk) {
      const text = readFileSync(skillFile(name), 'utf8');
      for (const line of text.split('\n').filter((l) => l.startsWith('- note '))) {
        assert.ok(written.get(line)?.[0][0] === name, `${name}: \`${line}\` is on disk, yet no process reported it written there:\n${text}`);
      }
    }
    const ledger = usage(path.join(home, 'self-evolve'));
    for (const name of creators.keys()) {
      assert.equal(typeof ledger.skills?.[name]?.createdMs, 'number',
        `the ledger lost ${name} (created by ${creators.get(name)[0]}, reported written; ${skillFile(name)}:\n${readFileSync(skillFile(name), 'utf8')}\nusage.json: ${JSON.stringify(ledger)}`);
    }
    const debris = filesUnder(home).filter((f) => f.endsWith('.self-evolve-tmp') || f.endsWith('.lock'));
    assert.deepEqual(debris, [], 'temp files or locks left behind');
  } finally {
    gate.close();
    for (const p of procs) {
      if (!p.done) { p.child.kill('SIGKILL'); await p.exited; }
    }
  }
});
