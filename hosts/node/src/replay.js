#!/usr/bin/env node
// Replays a recorded session (DESIGN.md "Replay format") through the component in Node, with
// a manual clock and a scripted reviewer; the same semantics and decision lines as
// `self-evolve replay --json`. With `restartEachEvent` (`--restart-each-event`) a fresh instance
// is started before every event after the first, as a process per event (hooks) would: the
// decisions must be the same (session state lives in the state root).
import { openSync, readSync, closeSync, mkdirSync, realpathSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import { loadPlugin, ManualClock } from './host.js';
import { ScriptedProvider } from './subagent.js';
import { toolLine, commandLine, reviewLoopRefusedLine, visibleJson } from './lines.js';
import { isU64Number, saturatingAdd, U64_MAX } from './time.js';

export const EPOCH_MS = 1767225600000;
// A replay is one process serving its sessions for its whole run: it holds them in memory
// ('session-owner'), each event made durable by one append to the session's journal.
export const SERVICES = ['tools', 'commands', 'system-prompt', 'agents', 'subagents', 'session-owner', 'session-batch'];
const TYPES = new Set(['config', 'user', 'assistant', 'tool', 'call', 'turn-end', 'reviewer', 'command', 'review-loop']);

/** The longest line a replay may hold (its config line is the largest legitimate one). */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** A replay is read whole (and checked) before it runs; this bounds what that may hold. */
export const MAX_REPLAY_BYTES = 256 * 1024 * 1024;
const CHUNK_BYTES = 64 * 1024;

/**
 * The lines of `file` as bytes (without '\n', nor a '\r' before it), read in fixed chunks so
 * that `/dev/zero` or an endless pipe cannot grow memory without bound: a line past `maxLine`
 * bytes is refused, named by its number. Yields `[lineNumber, bytes]`; a last line without a
 * newline counts, an empty input has none. The bytes may share the read buffer: use them before
 * asking for the next line.
 */
export function* readLines(file, maxLine = MAX_LINE_BYTES) {
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let parts = []; // the current line so far, copied out of `chunk`
    let length = 0;
    let number = 1;
    let any = false; // bytes seen since the last newline
    for (;;) {
      let n;
      try {
        n = readSync(fd, chunk, 0, CHUNK_BYTES, null);
      } catch (e) {
        // A non-blocking descriptor (a pipe shared with the parent): wait for it.
        if (e.code === 'EAGAIN') { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10); continue; }
        throw e;
      }
      if (n === 0) break;
      const view = chunk.subarray(0, n);
      let at = 0;
      while (at < n) {
        const nl = view.indexOf(10, at);
        const end = nl === -1 ? n : nl;
        if (length + (end - at) > maxLine) throw new Error(`${file}:${number}: a line longer than ${maxLine} bytes (is this the right file?)`);
        if (end === n) {
          parts.push(Buffer.from(view.subarray(at)));
          length += n - at;
          any = true;
          break;
        }
        let line = parts.length ? Buffer.concat([...parts, view.subarray(at, end)]) : view.subarray(at, end);
        if (line.length && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
        yield [number++, line];
        parts = [];
        length = 0;
        any = false;
        at = end + 1;
      }
    }
    if (any) yield [number, Buffer.concat(parts)];
  } finally {
    closeSync(fd);
  }
}

const NOT_AN_EVENT = 'not a replay event (see DESIGN.md, "Replay format")';

/** Reads and checks the whole file first: a bad line is reported with its number, before anything runs. */
export function readEvents(file) {
  const events = [];
  const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  let total = 0;
  for (const [i, bytes] of readLines(file)) {
    total += bytes.length + 1;
    if (total > MAX_REPLAY_BYTES) throw new Error(`${file}:${i}: the replay passes ${MAX_REPLAY_BYTES} bytes; split it`);
    let line;
    try { line = utf8.decode(bytes); } catch { throw new Error(`${file}:${i}: not UTF-8 text`); }
    if (!line.trim()) continue;
    let event;
    try { event = JSON.parse(line); } catch { throw new Error(`${file}:${i}: ${NOT_AN_EVENT}`); }
    // Times are u64 milliseconds (as for the Rust host); u64::MAX itself parses as 2^64.
    if (event === null || typeof event !== 'object' || !TYPES.has(event.type) || !isU64Number(event.t)
      || (event.type === 'reviewer' && event.delayMs !== undefined && !isU64Number(event.delayMs))) {
      throw new Error(`${file}:${i}: ${NOT_AN_EVENT}`);
    }
    if (event.type === 'config' && events.length) throw new Error(`${file}:${i}: a config line may only come first`);
    if (events.length && event.t < events[events.length - 1].t) throw new Error(`${file}:${i}: t goes backwards`);
    events.push(event);
  }
  return events;
}

/** Starts the scripted gate in its own process; resolves to {url, stop}. */
export function serveGateReplies(file, recordFile) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const args = [path.join(here, 'gate-server.js'), file, ...(recordFile ? [recordFile] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve({ url: `http://127.0.0.1:${String(d).trim()}`, stop: () => child.kill('SIGTERM') }));
    child.once('error', reject);
  });
}

/** A replay `review-loop` line as the WIT request in jco's shape (see the Rust replay). */
function reviewLoopRequest(e) {
  const ind = e.independence;
  let independence = { tag: 'independent' };
  if (ind && Array.isArray(ind.selfAuthored)) independence = { tag: 'self-authored', val: ind.selfAuthored };
  else if (ind && typeof ind.unverified === 'string') independence = { tag: 'unverified', val: ind.unverified };
  return {
    mode: e.mode ?? 'code',
    artifact: e.artifact,
    artifactSha: undefined,
    files: e.files ?? [],
    documents: (e.documents ?? []).map((d) => ({ path: d.path, text: d.text })),
    repo: e.repo ?? '',
    branch: e.branch ?? '',
    commit: e.commit ?? undefined,
    uncommitted: e.uncommitted ?? false,
    maxIter: e.maxIter ?? undefined,
    tokenCeiling: e.tokenCeiling === undefined ? undefined : BigInt(e.tokenCeiling),
    independence,
    selfReviewAck: e.ack ?? undefined,
    auto: e.auto ?? false,
    commands: e.commands ? e.commands.map((c) => ({ name: c.name, exitCode: c.exitCode, stderrTail: c.stderrTail ?? '' })) : undefined,
    disabledLenses: e.disabledLenses ?? [],
  };
}

const ctxFor = (session, origin = 'user', depth = 0) => ({ session, agent: 'main', origin: origin === 'subagent' ? 'subagent' : 'user', depth, cwd: '' });

/**
 * @param {object[]} events
 * @param {{home: string, startMs?: number | bigint, gateUrl?: string, gateKeyEnv?: string,
 *          restartEachEvent?: boolean, onLine?: (line: string) => void}} options
 * @returns {Promise<string[]>} the decision lines
 */
export async function replay(events, options) {
  const start = options.startMs ?? EPOCH_MS;
  const clock = new ManualClock(start);
  const provider = new ScriptedProvider(clock);
  const endpoints = options.gateUrl ? { gate: { url: options.gateUrl, credentialEnv: options.gateKeyEnv } } : {};
  const home = options.home;
  const plugin = await loadPlugin({
    fs: { userSkills: path.join(home, 'skills'), state: path.join(home, 'self-evolve'), defaultProject: path.join(home, 'project', '.dsh', 'skills') },
    endpoints,
    clock,
    provider,
    logLevel: 'warn',
  });
  const config = events[0]?.type === 'config' ? JSON.stringify(events[0].config) : '{}';
  const init = plugin.init(config, SERVICES);
  if (!init.ok) throw new Error(`config key \`${init.error.key}\`: ${init.error.message}`);
  const out = [];
  const emit = (lines) => { for (const l of lines) { out.push(l); if (options.onLine) options.onLine(l); } };
  // Whatever happened: the sessions held in memory (a batch keeps state ahead of its journals)
  // go back to the home before the instance does, as the Rust replay does. A run that failed
  // reports its own error, not the hand-back's.
  try {
    runEvents(plugin, events, start, clock, provider, options, emit);
  } catch (e) {
    try { plugin.handBack(); } catch { /* the run's error is the one to see */ }
    throw e;
  }
  plugin.handBack();
  return out;
}

function runEvents(plugin, events, start, clock, provider, options, emit) {
  for (const [i, e] of events.entries()) {
    clock.set(saturatingAdd(start, e.t));
    // A new instance over the same host state (fs roots, clock, the provider and its queued
    // scripts, endpoints), set up with the same config and services: as the Rust replay does.
    if (options.restartEachEvent && i > 0) plugin.restart();
    emit(plugin.tick());
    emit(plugin.pumpActivations());
    const ctx = ctxFor(e.session);
    switch (e.type) {
      case 'config': break;
      case 'user': emit(plugin.userMessage(ctx, e.text, e.human ?? true)); break;
      case 'assistant': emit(plugin.assistantMessage(ctx, e.text)); break;
      case 'tool':
        emit(plugin.toolResult(ctx, { tool: e.tool, argsJson: JSON.stringify(e.args ?? null), ok: e.ok ?? true, output: e.output ?? '' }));
        break;
      case 'call': {
        if (e.agent) ctx.agent = e.agent;
        const r = plugin.toolsCall(ctx, e.tool, JSON.stringify(e.args ?? null));
        emit([toolLine(e.session, ctx.agent, e.tool, r.ok, r.ok ? r.value : r.error)]);
        break;
      }
      case 'turn-end': {
        const status = e.status === 'completed' ? 'completed' : e.status === 'aborted' ? 'aborted' : 'failed';
        emit(plugin.turnEnd(ctxFor(e.session, e.origin ?? 'user', e.depth ?? 0), status));
        emit(plugin.pumpActivations());
        break;
      }
      case 'reviewer': provider.push({ calls: e.calls, text: e.text, delayMs: e.delayMs }); break;
      case 'review-loop': {
        const r = plugin.reviewLoopBegin(ctx, reviewLoopRequest(e));
        emit([r.ok ? r.value : reviewLoopRefusedLine(e.session, r.error)]);
        // Lens replies start falsifiers, which finish on a later pump: run them all now.
        for (let more = plugin.pumpActivations(); more.length; more = plugin.pumpActivations()) emit(more);
        break;
      }
      case 'command': {
        const trimmed = e.text.trim();
        const args = (trimmed.startsWith('/skills') ? trimmed.slice('/skills'.length) : e.text).trim();
        const r = plugin.command(ctx, args);
        emit([commandLine(e.session, e.text, r.ok, r.ok ? r.value : r.error)]);
        break;
      }
      default: break;
    }
  }
}

/** `--start`: `now` or whole milliseconds up to u64::MAX (as the Rust CLI); unset: EPOCH_MS. */
function startMs(arg) {
  if (arg === undefined) return undefined;
  if (arg === 'now') return Date.now();
  const ms = /^\+?[0-9]+$/.test(arg) ? BigInt(arg) : -1n;
  if (ms < 0n || ms > U64_MAX) throw new Error(`--start: expected \`now\` or milliseconds, found \`${arg}\``);
  return ms;
}

async function main(argv) {
  const args = { json: false };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--json') args.json = true;
    else if (a === '--home') args.home = argv[++i];
    else if (a === '--gate-replies') args.gateReplies = argv[++i];
    else if (a === '--start') args.start = argv[++i];
    else if (a === '--restart-each-event') args.restartEachEvent = true;
    else rest.push(a);
  }
  if (rest.length !== 1) {
    process.stderr.write('usage: self-evolve-node FILE.jsonl [--json] [--home DIR] [--gate-replies FILE] [--start MS] [--restart-each-event]\n');
    return 2;
  }
  // A replay acts as the operator on its home, with the file's own config: inside a live
  // reviewer it may only replay into a fresh home of its own (as the Rust and Python CLIs).
  const activation = process.env.SELF_EVOLVE_ACTIVATION;
  if (activation && args.home) {
    throw new Error(`this runs inside reviewer ${visibleJson(JSON.stringify(activation))} (SELF_EVOLVE_ACTIVATION): a replay into an existing home acts as the operator, so it is refused here; leave out --home to replay into a fresh folder`);
  }
  const events = readEvents(rest[0]);
  const start = startMs(args.start);
  const home = args.home || path.join(process.env.TMPDIR || '/tmp', `self-evolve-node-${process.pid}`);
  mkdirSync(home, { recursive: true });
  const gate = args.gateReplies ? await serveGateReplies(args.gateReplies) : null;
  try {
    await replay(events, {
      home,
      startMs: start,
      gateUrl: gate?.url,
      restartEachEvent: args.restartEachEvent,
      onLine: (l) => process.stdout.write(`${visibleJson(l)}\n`),
    });
  } finally {
    gate?.stop();
  }
  return 0;
}

/** Whether this file is the program node runs: also through npm's bin link (a symlink to it). */
function isMain() {
  if (!process.argv[1]) return false;
  try { return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url)); } catch { return false; }
}

if (isMain()) {
  main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => { process.stderr.write(`self-evolve-node: ${e.message}\n`); process.exitCode = 1; });
}
