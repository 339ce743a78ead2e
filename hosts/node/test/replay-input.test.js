// Replay files are operator input: read with bounded memory (a line and the whole file have a
// ceiling, so `/dev/zero` or an endless pipe ends with the line named), refused when not UTF-8,
// and their times saturate at u64::MAX instead of wrapping round or throwing in jco.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../test-support/tmp.js';
import { readEvents, readLines } from '../src/replay.js';
import { importTable } from '../src/imports.js';
import { ManualClock } from '../src/host.js';
import { ScriptedProvider } from '../src/subagent.js';

const REPLAY = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'replay.js');
const MB = 1024 * 1024;
const MAX_LINE_BYTES = 16777216;
const MAX_REPLAY_BYTES = 268435456;
const U64_MAX = 18446744073709551615n;
const KILL_ABOVE = 400 * MB; // a child past this is stopped (the old code read /dev/zero into gigabytes)

const rssOf = (pid) => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0; // gone
  }
};

/** Runs `command args`, watching its resident memory; `{code, stdout, stderr, peak}`. */
function run(command, args, timeoutMs = 60000) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let peak = 0;
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const watch = setInterval(() => {
      peak = Math.max(peak, rssOf(child.pid));
      if (peak > KILL_ABOVE) child.kill('SIGKILL');
    }, 10);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => { clearInterval(watch); clearTimeout(timer); reject(e); });
    child.once('close', (code, signal) => {
      clearInterval(watch);
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, peak });
    });
  });
}

test('a replay of /dev/zero is refused at line 1 without growing memory', async () => {
  const home = path.join(tempDir('se-input-'), 'h');
  const r = await run(process.execPath, [REPLAY, '/dev/zero', '--json', '--home', home]);
  assert.ok(r.peak < 200 * MB, `resident memory reached ${Math.round(r.peak / MB)} MB (signal ${r.signal})`);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `self-evolve-node: /dev/zero:1: a line longer than ${MAX_LINE_BYTES} bytes (is this the right file?)\n`);
  assert.equal(r.stdout, '');
  assert.ok(!existsSync(home), 'nothing ran');
});

test('an endless pipe of blank lines is refused where it passes 256 MiB', async () => {
  const home = path.join(tempDir('se-input-'), 'h');
  const spaces = ' '.repeat(4000); // 4001 bytes a line with its newline
  const r = await run('sh', ['-c', 'yes "$1" | exec "$2" "$3" /dev/stdin --json --home "$4"', 'sh', spaces, process.execPath, REPLAY, home]);
  const line = Math.floor(MAX_REPLAY_BYTES / 4001) + 1;
  assert.ok(r.peak < 200 * MB, `resident memory reached ${Math.round(r.peak / MB)} MB (signal ${r.signal})`);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `self-evolve-node: /dev/stdin:${line}: the replay passes 268435456 bytes; split it\n`);
  assert.ok(!existsSync(home), 'nothing ran');
});

test('a line longer than 16 MiB in a regular file is refused with its number', () => {
  const file = path.join(tempDir('se-input-'), 'long.jsonl');
  writeFileSync(file, `{"t":0,"type":"config","config":{}}\n\n{"t":1,"type":"user","session":"s","text":"${'x'.repeat(MAX_LINE_BYTES)}"}\n`);
  assert.throws(() => readEvents(file), { message: `${file}:3: a line longer than 16777216 bytes (is this the right file?)` });
});

test('a line that is not UTF-8 is refused with its number, before anything runs', async () => {
  const dir = tempDir('se-input-');
  const file = path.join(dir, 'latin1.jsonl');
  writeFileSync(file, Buffer.concat([
    Buffer.from('{"t":0,"type":"config","config":{}}\n{"t":1,"type":"user","session":"s","text":"ok","human":true}\n'),
    Buffer.from('{"t":2,"type":"user","session":"s","text":"caf'), Buffer.from([0xe9]), Buffer.from('","human":true}\n'),
  ]));
  assert.throws(() => readEvents(file), { message: `${file}:3: not UTF-8 text` });
  const r = await run(process.execPath, [REPLAY, file, '--json', '--home', path.join(dir, 'h')]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `self-evolve-node: ${file}:3: not UTF-8 text\n`);
  assert.ok(!existsSync(path.join(dir, 'h')), 'nothing ran');
});

test('lines split on newlines, a carriage return before one dropped; other bad lines keep their messages', () => {
  const dir = tempDir('se-input-');
  const write = (name, text) => { const f = path.join(dir, name); writeFileSync(f, text); return f; };
  const ok = write('crlf.jsonl', '{"t":0,"type":"config","config":{}}\r\n\r\n{"t":5,"type":"user","session":"s","text":"a\\r","human":true}');
  assert.deepEqual(readEvents(ok).map((e) => [e.t, e.type, e.text]), [[0, 'config', undefined], [5, 'user', 'a\r']]);
  assert.deepEqual([...readLines(write('lines', 'a\r\nbc\n\nd'))].map(([n, b]) => [n, String(b)]), [[1, 'a'], [2, 'bc'], [3, ''], [4, 'd']]);
  assert.deepEqual([...readLines(write('empty', ''))], []);
  const NOT = 'not a replay event (see DESIGN.md, "Replay format")';
  const cases = [
    ['{"t":0,"type":"user"}\n{not json', `2: ${NOT}`],
    ['{"t":0,"type":"sing"}', `1: ${NOT}`],
    ['null', `1: ${NOT}`],
    ['{"t":"0","type":"user"}', `1: ${NOT}`],
    ['{"t":1.5,"type":"user"}', `1: ${NOT}`],
    ['{"t":-1,"type":"user"}', `1: ${NOT}`],
    ['{"t":1e30,"type":"user"}', `1: ${NOT}`],
    ['{"t":0,"type":"reviewer","delayMs":-5}', `1: ${NOT}`],
    ['{"t":0,"type":"user"}\n{"t":0,"type":"config","config":{}}', '2: a config line may only come first'],
    ['{"t":10,"type":"user"}\n{"t":9,"type":"user"}', '2: t goes backwards'],
  ];
  cases.forEach(([text, message], i) => {
    const f = write(`bad-${i}.jsonl`, text);
    assert.throws(() => readEvents(f), { message: `${f}:${message}` }, text);
  });
});

test('times at the end of the clock saturate: a replay with t = u64::MAX - 1 and a delay of u64::MAX runs to the end', async () => {
  const dir = tempDir('se-input-');
  const file = path.join(dir, 'late.jsonl');
  writeFileSync(file, [
    '{"t":0,"type":"config","config":{"review":{"turnInterval":1}}}',
    '{"t":0,"type":"reviewer","text":"late","delayMs":18446744073709551615}',
    '{"t":60000,"type":"user","session":"s1","text":"hi","human":true}',
    '{"t":60600,"type":"turn-end","session":"s1","status":"completed","origin":"user","depth":0}',
    '{"t":18446744073709551614,"type":"turn-end","session":"s1","status":"completed","origin":"user","depth":0}',
    '{"t":18446744073709551614,"type":"command","session":"s1","text":"/skills review status"}',
    '',
  ].join('\n'));
  const r = await run(process.execPath, [REPLAY, file, '--json', '--home', path.join(dir, 'h')]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
  // The delayed reviewer never finishes on its own: at the end of the clock it has timed out,
  // and the clock has moved forward (a wrapped clock put the second turn in the cooldown).
  assert.deepEqual(lines.slice(0, -1).map((l) => [l.action, l.activation, l.reason]), [
    ['start', 'act-1', 'due (turns 1/1, tool calls 0/15)'],
    ['abort', 'act-1', 'timed out after 5 min; aborted'],
    ['start', 'act-2', 'due (turns 1/1, tool calls 0/15)'],
    ['end', 'act-2', 'no skill update'],
  ]);
  const status = lines.at(-1);
  assert.equal(status.kind, 'command');
  assert.match(status.output, /cooldownLeftMinutes +0\n/);
  assert.match(status.output, /inFlight +-\n/);
});

test('the clock handed to the plugin is a whole u64, saturated at u64::MAX', () => {
  const nowOf = (now) => importTable({ fs: {}, http: {}, provider: {}, clock: { now: () => now }, log: () => {} })['self-evolve:plugin/clock@0.1.0'].nowMs();
  assert.equal(nowOf(2 ** 64 + 1767225600000), U64_MAX);
  assert.equal(nowOf(18446744073709551615), U64_MAX);
  assert.equal(nowOf(U64_MAX + 5n), U64_MAX);
  assert.equal(nowOf(1767225600000.5), 1767225600000n);
  assert.equal(nowOf(-3), 0n);
  assert.throws(() => nowOf(NaN));
  const clock = new ManualClock(1767225600000);
  clock.set(2 ** 64 * 3);
  assert.equal(clock.now(), U64_MAX);
});

test('a reviewer delay past the end of the clock finishes only if the clock reaches u64::MAX', () => {
  const clock = new ManualClock(1767225600000);
  const provider = new ScriptedProvider(clock);
  provider.push({ text: 'late', delayMs: 18446744073709551615 });
  provider.start({ tools: [], parentSession: 's' });
  assert.deepEqual(provider.takeFinished(2 ** 63), []);
  assert.deepEqual(provider.takeFinished(U64_MAX - 1n), []);
  assert.deepEqual(provider.takeFinished(U64_MAX), [{ id: 'act-1', status: 'completed', text: 'late' }]);
});
