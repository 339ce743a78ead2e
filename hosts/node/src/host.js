// The Node host: instantiates the jco-transpiled component with the five capabilities in
// JavaScript, and wraps its exports. Mirrors host-test's `Plugin` (same decision lines).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import { FsCap } from './fs.js';
import { importTable } from './imports.js';
import { HttpCap } from './http.js';
import { capMemory, PAGE_BYTES } from './memory-cap.js';
import { ScriptedProvider } from './subagent.js';
import { toolLine } from './lines.js';
import { u64 } from './time.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const GEN = path.join(here, '..', 'gen');

/** A clock that moves only when told; its time is a u64 BigInt (see time.js: `u64`). */
export class ManualClock {
  constructor(startMs) { this.ms = u64(startMs); }
  now() { return this.ms; }
  set(ms) { this.ms = u64(ms); }
}

export class SystemClock {
  now() { return Date.now(); }
}

const LEVELS = ['debug', 'info', 'warn', 'error'];

/** Per instance: linear memory at most this many bytes (the Rust host's `Limits::default()`). */
export const DEFAULT_MEMORY_BYTES = 64 * 1024 * 1024;

/**
 * @param {{fs?: object, endpoints?: object, clock?: {now(): number | bigint}, provider?: ScriptedProvider,
 *          logLevel?: string, onLog?: (level: string, message: string) => void, gen?: string,
 *          limits?: {memoryBytes?: number}}} options
 */
export async function loadPlugin(options = {}) {
  const gen = options.gen || GEN;
  const memoryBytes = options.limits?.memoryBytes ?? DEFAULT_MEMORY_BYTES;
  if (!Number.isSafeInteger(memoryBytes) || memoryBytes < PAGE_BYTES) {
    throw new RangeError(`limits.memoryBytes must be a whole number of bytes, at least ${PAGE_BYTES}: ${memoryBytes}`);
  }
  const { instantiate } = await import(path.join(gen, 'self-evolve.js'));
  const clock = options.clock || new SystemClock();
  const minLevel = LEVELS.indexOf(options.logLevel || 'warn');
  const logs = [];
  const log = (level, message) => {
    logs.push([level, message]);
    if (options.onLog) options.onLog(level, message);
    else if (LEVELS.indexOf(level) >= minLevel) process.stderr.write(`self-evolve[${level}]: ${message}\n`);
  };
  const fsConfig = options.fs || {};
  // The fs capability's own warnings (hard links, a project root linked elsewhere) go where the plugin's go.
  const onWarn = (message) => { log('warn', message); if (fsConfig.onWarn) fsConfig.onWarn(message); };
  const fsCap = new FsCap({ ...fsConfig, onWarn }, options.faults || {});
  const http = new HttpCap(options.endpoints || {});
  const provider = options.provider || new ScriptedProvider(clock);
  const imports = importTable({ fs: fsCap, http, provider, clock, log });
  // Compiled once: replacing a trapped instance only instantiates again. Each memory gets a
  // maximum of memoryBytes (memory-cap.js): a grow past it fails, the guest traps, and the
  // instance is replaced (`call`).
  const modules = new Map();
  const maxPages = Math.floor(memoryBytes / PAGE_BYTES);
  const getCoreModule = (file) => {
    if (!modules.has(file)) modules.set(file, new WebAssembly.Module(capMemory(readFileSync(path.join(gen, file)), maxPages)));
    return modules.get(file);
  };
  return new Plugin(() => instantiate(getCoreModule, imports), { fs: fsCap, http, provider, clock, logs });
}

// jco throws a WIT error payload (a `result`'s err) as an Error with an own `payload`; any
// other exception out of an export is a trap or worse.
const isWitError = (e) => Boolean(e) && Object.hasOwn(e, 'payload');

/** Calls an export whose WIT result is `result<T, E>`: `{ok: true, value}` or `{ok: false, error}`. */
function result(fn) {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (isWitError(e)) return { ok: false, error: e.payload };
    throw e;
  }
}

export class Plugin {
  constructor(instantiate, caps) {
    this.instantiate = instantiate;
    this.exports = instantiate();
    this.caps = caps;
    this.lastInit = null; // {configJson, services} of the last init that succeeded
  }

  // A trapped instance refuses every later call ("cannot enter component instance"); a call
  // that failed half-way may have left the guest's memory inconsistent even when it did not
  // trap. Either way the instance is replaced by a fresh one, set up with the last good
  // configuration, and only the failing call reports the failure.
  call(name, fn) {
    try {
      return fn(this.exports);
    } catch (e) {
      if (isWitError(e)) throw e;
      const why = e instanceof Error ? e.message : String(e);
      try {
        this.fresh();
      } catch (again) {
        throw new Error(`plugin export \`${name}\` trapped: ${why}; replacing the instance failed: ${again instanceof Error ? again.message : String(again)}`, { cause: e });
      }
      throw new Error(`plugin export \`${name}\` trapped: ${why}; the instance was replaced`, { cause: e });
    }
  }

  /** A new instance over the same capabilities, set up with the last good configuration. */
  fresh() {
    this.exports = this.instantiate();
    if (this.lastInit) this.exports.lifecycle.init(this.lastInit.configJson, this.lastInit.services);
  }

  /**
   * Replaces the instance as a new process would (a process per event, e.g. hooks): nothing the
   * old one held in memory survives; the host state (fs roots, clock, provider, endpoints) does.
   */
  restart() {
    // As a process that ends cleanly: the sessions it held go back to the state root first
    // (a broken instance cannot; the next process to need them folds their journals).
    if (this.lastInit) { try { this.handBack(); } catch { /* as above */ } }
    try {
      this.fresh();
    } catch (e) {
      // As the Rust host's `Plugin::restart`: a refused re-init is a failure, not a warning.
      const why = isWitError(e) ? `re-init: config key \`${e.payload.key}\`: ${e.payload.message}`
        : e instanceof Error ? e.message : String(e);
      throw new Error(`restarting the instance failed: ${why}`, { cause: e });
    }
  }

  init(configJson, services) {
    const r = result(() => this.call('lifecycle.init', (x) => x.lifecycle.init(configJson, services)));
    if (r.ok) this.lastInit = { configJson, services: [...services] };
    return r;
  }

  toolsList() { return this.call('tools.list', (x) => x.tools.list()); }
  toolsCall(ctx, name, argsJson) {
    // Bounded before it enters the instance: copying it in would cost the instance's memory.
    const bytes = Buffer.byteLength(argsJson);
    if (bytes > MAX_ARGS_BYTES) return { ok: false, error: tooLargeArguments(bytes) };
    return result(() => this.call('tools.call', (x) => x.tools.call(ctx, name, argsJson)));
  }
  // Event texts are observations, never refused: longer ones are clipped before they enter the
  // instance (the plugin keeps a few hundred characters of each; copying 40 MB in would cost
  // the instance's memory).
  userMessage(ctx, text, human) {
    const t = clipEventText(text);
    return this.call('events.user-message', (x) => x.events.userMessage(ctx, t, human));
  }
  assistantMessage(ctx, text) {
    const t = clipEventText(text);
    return this.call('events.assistant-message', (x) => x.events.assistantMessage(ctx, t));
  }
  toolResult(ctx, event) {
    const e = { ...event, argsJson: clipEventText(event.argsJson), output: clipEventText(event.output) };
    return this.call('events.tool-result', (x) => x.events.toolResult(ctx, e));
  }
  turnEnd(ctx, status) { return this.call('events.turn-end', (x) => x.events.turnEnd(ctx, status)); }
  activationEnd(outcome) { return this.call('events.activation-end', (x) => x.events.activationEnd(outcome)); }
  tick() { return this.call('events.tick', (x) => x.events.tick()); }
  // Hands every session held in memory back to the state root (`sessions.hand-back`): call it
  // before letting a 'session-owner' or 'session-batch' instance go.
  handBack() { this.call('sessions.hand-back', (x) => x.sessions.handBack()); }
  command(ctx, args) {
    const bytes = Buffer.byteLength(args);
    if (bytes > MAX_COMMAND_BYTES) return { ok: false, error: tooLargeCommand(bytes) };
    return result(() => this.call('command.run', (x) => x.command.run(ctx, args)));
  }
  guidance() { return this.call('guidance.section', (x) => x.guidance.section()); }
  // The skills an agent may be served (the `catalog` export; what `self-evolve mcp` serves).
  // Names and paths past their bounds never enter the instance.
  catalogSkills(ctx, offset, limit) {
    return result(() => this.call('catalog.skills', (x) => x.catalog.skills(ctx, offset, limit)));
  }
  catalogGet(ctx, name) {
    const bytes = Buffer.byteLength(name);
    if (bytes > MAX_CATALOG_NAME) return { ok: false, error: tooLargeField('name', bytes, MAX_CATALOG_NAME) };
    return result(() => this.call('catalog.get', (x) => x.catalog.get(ctx, name)));
  }
  catalogRead(ctx, name, path) {
    const nameBytes = Buffer.byteLength(name);
    if (nameBytes > MAX_CATALOG_NAME) return { ok: false, error: tooLargeField('name', nameBytes, MAX_CATALOG_NAME) };
    const pathBytes = Buffer.byteLength(path);
    if (pathBytes > MAX_CATALOG_PATH) return { ok: false, error: tooLargeField('path', pathBytes, MAX_CATALOG_PATH) };
    return result(() => this.call('catalog.read', (x) => x.catalog.read(ctx, name, path)));
  }
  // The review loop (seed 003). `request` is the WIT record in jco's shape (camelCase fields,
  // `independence` a `{tag, val}` variant, u64 as BigInt); decisions are JSON lines.
  reviewLoopBegin(ctx, request) { return result(() => this.call('review-loop.begin', (x) => x.reviewLoop.begin(ctx, request))); }
  reviewLoopCommands(run, results) { return result(() => this.call('review-loop.commands', (x) => x.reviewLoop.commands(run, results))); }
  reviewLoopSpend(activation, input, output) {
    return this.call('review-loop.spend', (x) => x.reviewLoop.spend(activation, BigInt(input), BigInt(output)));
  }
  reviewLoopStatus(session) { return this.call('review-loop.status', (x) => x.reviewLoop.status(session)); }

  /** Performs the tool calls of newly started children (as the child), then delivers finished ones. */
  pumpActivations() {
    const lines = [];
    for (const child of this.caps.provider.takeWork()) {
      const ctx = { session: child.parentSession, agent: child.id, origin: 'subagent', depth: 1, cwd: '' };
      for (const call of child.calls) {
        const args = JSON.stringify(call.args ?? null);
        if (!child.allowed.includes(call.tool)) {
          const why = `\`${call.tool}\` is not among the child's tools [${child.allowed.map((t) => JSON.stringify(t)).join(', ')}]`;
          lines.push(toolLine(ctx.session, ctx.agent, call.tool, false, JSON.stringify(why)));
        } else if (call.tool === 'skill') {
          lines.push(...this.toolResult(ctx, { tool: call.tool, argsJson: args, ok: true, output: '' }));
          lines.push(toolLine(ctx.session, ctx.agent, call.tool, true, `loaded ${call.args?.name ?? ''}`));
        } else {
          const r = this.toolsCall(ctx, call.tool, args);
          lines.push(toolLine(ctx.session, ctx.agent, call.tool, r.ok, r.ok ? r.value : r.error));
        }
      }
    }
    for (const done of this.caps.provider.takeFinished(this.caps.clock.now())) {
      lines.push(...this.activationEnd(done));
    }
    return lines;
  }
}

/** The longest event text (message, tool arguments or output) passed into the instance. */
export const MAX_EVENT_TEXT_BYTES = 1024 * 1024;

/** `text` cut to at most MAX_EVENT_TEXT_BYTES of UTF-8, never inside a character. */
export function clipEventText(text) {
  if (typeof text !== 'string' || text.length <= MAX_EVENT_TEXT_BYTES / 4) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_EVENT_TEXT_BYTES) return text;
  let end = MAX_EVENT_TEXT_BYTES;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1;
  return bytes.subarray(0, end).toString('utf8');
}

/** The plugin's own bound on a `/skills` line (`command::MAX_LINE_BYTES`). */
export const MAX_COMMAND_BYTES = 64 * 1024;

/** The plugin's refusal of a longer `/skills` line. */
export function tooLargeCommand(bytes) {
  return `too-large: the /skills line is ${bytes} bytes; the limit is ${MAX_COMMAND_BYTES}; no subcommand takes that much`;
}

/** The plugin's own bound on tool arguments (`library::tool_args::MAX_ARGS_BYTES`). */
export const MAX_ARGS_BYTES = 24 * 1024 * 1024;

/** The plugin's `too-large` refusal for arguments, byte for byte (keys in serde_json's order). */
export function tooLargeArguments(bytes) {
  return JSON.stringify({
    code: 'too-large',
    details: { bytes, field: 'arguments', limit: MAX_ARGS_BYTES },
    hint: 'send a shorter value; put long material in references/ files with write_file',
    message: `\`arguments\` is ${bytes} bytes; the limit for it is ${MAX_ARGS_BYTES}`,
  });
}

/** Catalog arguments past these bounds are refused by the host (as the Rust host does). */
export const MAX_CATALOG_NAME = 256;
export const MAX_CATALOG_PATH = 4096;

/** A `too-large` refusal in the plugin's error shape, byte for byte as the Rust host writes it. */
export function tooLargeField(field, bytes, limit) {
  return JSON.stringify({
    code: 'too-large',
    details: { bytes, field, limit },
    hint: 'list the skills for their names and files',
    message: `\`${field}\` is ${bytes} bytes; the limit for it is ${limit}`,
  });
}

export function userContext(session) {
  return { session, agent: 'main', origin: 'user', depth: 0, cwd: '' };
}
