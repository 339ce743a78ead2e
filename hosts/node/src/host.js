// The Node host: instantiates the jco-transpiled component with the five capabilities in
// JavaScript, and wraps its exports. Mirrors host-test's `Plugin` (same decision lines).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as path from 'node:path';
import { FsCap } from './fs.js';
import { HttpCap } from './http.js';
import { ScriptedProvider } from './subagent.js';
import { toolLine } from './lines.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const GEN = path.join(here, '..', 'gen');

/** A clock that moves only when told. */
export class ManualClock {
  constructor(startMs) { this.ms = startMs; }
  now() { return this.ms; }
  set(ms) { this.ms = ms; }
}

export class SystemClock {
  now() { return Date.now(); }
}

const LEVELS = ['debug', 'info', 'warn', 'error'];

/**
 * @param {{fs?: object, endpoints?: object, clock?: {now(): number}, provider?: ScriptedProvider,
 *          logLevel?: string, onLog?: (level: string, message: string) => void, gen?: string}} options
 */
export async function loadPlugin(options = {}) {
  const gen = options.gen || GEN;
  const { instantiate } = await import(path.join(gen, 'self-evolve.js'));
  const clock = options.clock || new SystemClock();
  const fsCap = new FsCap(options.fs || {}, options.faults || {});
  const http = new HttpCap(options.endpoints || {});
  const provider = options.provider || new ScriptedProvider(clock);
  const minLevel = LEVELS.indexOf(options.logLevel || 'warn');
  const logs = [];
  const imports = {
    'self-evolve:plugin/fs@0.1.0': {
      read: (r, p) => fsCap.read(r, p),
      write: (r, p, d, m) => fsCap.write(r, p, d, m),
      rename: (r, a, b) => fsCap.rename(r, a, b),
      removeFile: (r, p) => fsCap.removeFile(r, p),
      removeDir: (r, p) => fsCap.removeDir(r, p),
      createDirAll: (r, p) => fsCap.createDirAll(r, p),
      listDir: (r, p) => fsCap.listDir(r, p),
      stat: (r, p) => fsCap.stat(r, p),
      statMany: (r, ps) => fsCap.statMany(r, ps),
      hasRoot: (r) => fsCap.hasRoot(r),
    },
    'self-evolve:plugin/http@0.1.0': {
      post: (req) => http.post(req),
      hasEndpoint: (e) => http.hasEndpoint(e),
      hasCredential: (e) => http.hasCredential(e),
    },
    'self-evolve:plugin/subagent@0.1.0': {
      start: (spec) => provider.start(spec),
      restrictTools: (id, tools) => provider.restrictTools(id, tools),
      abort: (id) => provider.abort(id),
    },
    'self-evolve:plugin/clock@0.1.0': { nowMs: () => BigInt(clock.now()) },
    'self-evolve:plugin/log@0.1.0': {
      log: (level, message) => {
        logs.push([level, message]);
        if (options.onLog) options.onLog(level, message);
        else if (LEVELS.indexOf(level) >= minLevel) process.stderr.write(`self-evolve[${level}]: ${message}\n`);
      },
    },
    'self-evolve:plugin/types@0.1.0': {},
  };
  // jco looks imports up by interface name without the version.
  for (const key of Object.keys(imports)) imports[key.replace(/@[^@]*$/, '')] = imports[key];
  const getCoreModule = (file) => new WebAssembly.Module(readFileSync(path.join(gen, file)));
  const exports = instantiate(getCoreModule, imports);
  return new Plugin(exports, { fs: fsCap, http, provider, clock, logs });
}

/** Calls an export whose WIT result is `result<T, E>`: `{ok: true, value}` or `{ok: false, error}`. */
function result(fn) {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (e && Object.hasOwn(e, 'payload')) return { ok: false, error: e.payload };
    throw e;
  }
}

export class Plugin {
  constructor(exports, caps) {
    this.exports = exports;
    this.caps = caps;
  }

  init(configJson, services) { return result(() => this.exports.lifecycle.init(configJson, services)); }
  toolsList() { return this.exports.tools.list(); }
  toolsCall(ctx, name, argsJson) { return result(() => this.exports.tools.call(ctx, name, argsJson)); }
  userMessage(ctx, text, human) { return this.exports.events.userMessage(ctx, text, human); }
  assistantMessage(ctx, text) { return this.exports.events.assistantMessage(ctx, text); }
  toolResult(ctx, event) { return this.exports.events.toolResult(ctx, event); }
  turnEnd(ctx, status) { return this.exports.events.turnEnd(ctx, status); }
  activationEnd(outcome) { return this.exports.events.activationEnd(outcome); }
  tick() { return this.exports.events.tick(); }
  command(ctx, args) { return result(() => this.exports.command.run(ctx, args)); }
  guidance() { return this.exports.guidance.section(); }
  // The review loop (seed 003). `request` is the WIT record in jco's shape (camelCase fields,
  // `independence` a `{tag, val}` variant, u64 as BigInt); decisions are JSON lines.
  reviewLoopBegin(ctx, request) { return result(() => this.exports.reviewLoop.begin(ctx, request)); }
  reviewLoopCommands(run, results) { return result(() => this.exports.reviewLoop.commands(run, results)); }
  reviewLoopSpend(activation, input, output) { return this.exports.reviewLoop.spend(activation, BigInt(input), BigInt(output)); }
  reviewLoopStatus(session) { return this.exports.reviewLoop.status(session); }

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

export function userContext(session) {
  return { session, agent: 'main', origin: 'user', depth: 0, cwd: '' };
}
