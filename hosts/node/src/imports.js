// The component's import table. Each capability is wrapped so that only what the WIT declares
// crosses into the guest: a JS exception that escaped a capability would unwind through the
// guest's frames and leave the instance unusable, so it becomes the function's typed error.
import { inspect } from 'node:util';
import { u64 } from './time.js';

const FS_TAGS = new Set(['not-found', 'already-exists', 'not-permitted', 'symlink', 'invalid-path', 'no-space', 'wrong-kind', 'io']);
const HTTP_TAGS = new Set(['timeout', 'denied', 'no-credential', 'network']);
const WITH_TEXT = new Set(['io', 'network']); // the cases that carry a string

const message = (e) => (e instanceof Error ? e.message : typeof e === 'string' ? e : inspect(e));
const variantOf = (tags) => (e) => e !== null && typeof e === 'object' && !(e instanceof Error) && tags.has(e.tag)
  && (!WITH_TEXT.has(e.tag) || typeof e.val === 'string');
const isFsError = variantOf(FS_TAGS);
const isHttpError = variantOf(HTTP_TAGS);

/** fn's typed errors pass through; anything else is thrown as `convert(message)`. */
function typed(fn, isTyped, convert) {
  return (...args) => {
    try { return fn(...args); } catch (e) { throw isTyped(e) ? e : convert(message(e)); }
  };
}

/**
 * @param {{fs: object, http: object, provider: object, clock: {now(): number | bigint},
 *          log: (level: string, message: string) => void}} caps
 */
export function importTable({ fs, http, provider, clock, log }) {
  const fsCall = (name) => typed((...args) => fs[name](...args), isFsError, (m) => ({ tag: 'io', val: m }));
  // Functions the WIT gives no error: answer the safe way and say why in the log.
  const orElse = (what, fn, fallback) => (...args) => {
    try { return fn(...args); } catch (e) { log('warn', `${what} failed: ${message(e)}`); return fallback; }
  };
  const imports = {
    'self-evolve:plugin/fs@0.1.0': {
      read: fsCall('read'),
      write: fsCall('write'),
      rename: fsCall('rename'),
      removeFile: fsCall('removeFile'),
      removeDir: fsCall('removeDir'),
      createDirAll: fsCall('createDirAll'),
      listDir: fsCall('listDir'),
      stat: fsCall('stat'),
      statMany: (root, paths) => {
        try { return fs.statMany(root, paths); } catch (e) { return paths.map(() => ({ tag: 'err', val: { tag: 'io', val: message(e) } })); }
      },
      hasRoot: orElse('fs.has-root', (r) => fs.hasRoot(r), false),
    },
    'self-evolve:plugin/http@0.1.0': {
      post: typed((req) => http.post(req), isHttpError, (m) => ({ tag: 'network', val: m })),
      hasEndpoint: orElse('http.has-endpoint', (e) => http.hasEndpoint(e), false),
      hasCredential: orElse('http.has-credential', (e) => http.hasCredential(e), false),
    },
    'self-evolve:plugin/subagent@0.1.0': {
      start: typed((spec) => provider.start(spec), (e) => typeof e === 'string', (m) => m),
      restrictTools: typed((id, tools) => provider.restrictTools(id, tools), (e) => typeof e === 'string', (m) => m),
      abort: orElse('subagent.abort', (id) => provider.abort(id), undefined),
    },
    // The one import left unguarded: no time is a safe answer, so a broken clock traps the
    // call and the host replaces the instance (host.js). A time past u64::MAX is u64::MAX (jco
    // would wrap it round) and a fraction is dropped (BigInt would throw).
    'self-evolve:plugin/clock@0.1.0': { nowMs: () => u64(clock.now()) },
    'self-evolve:plugin/log@0.1.0': {
      log: (level, text) => {
        try { log(level, text); } catch (e) { process.stderr.write(`self-evolve: the log sink failed: ${message(e)}\n`); }
      },
    },
    'self-evolve:plugin/types@0.1.0': {},
  };
  // jco looks imports up by interface name without the version.
  for (const key of Object.keys(imports)) imports[key.replace(/@[^@]*$/, '')] = imports[key];
  return imports;
}
