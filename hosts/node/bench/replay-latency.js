// Per-event replay latency, Node host vs Rust host, on the same generated session.
// Usage: npm run build && cargo build --release -p self-evolve && node bench/replay-latency.js [EVENTS]
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readEvents, replay } from '../src/replay.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const n = Number(process.argv[2] || 40000);
const dir = mkdtempSync(path.join(tmpdir(), 'se-bench-'));
const file = path.join(dir, 'session.jsonl');
const lines = [];
for (let i = 0, t = 0; i < n / 4; i++) {
  const s = `s${i % 20}`;
  t += 1000;
  lines.push(JSON.stringify({ t, type: 'user', session: s, text: `step ${i}: run the tests again`, human: true }));
  lines.push(JSON.stringify({ t, type: 'tool', session: s, tool: 'bash', args: { cmd: 'pnpm test' }, ok: true, output: '212 passed' }));
  lines.push(JSON.stringify({ t, type: 'assistant', session: s, text: 'All 212 tests pass.' }));
  lines.push(JSON.stringify({ t, type: 'turn-end', session: s, status: 'completed', origin: 'user', depth: 0 }));
}
writeFileSync(file, `${lines.join('\n')}\n`);

const events = readEvents(file);
let started = process.hrtime.bigint();
const out = await replay(events, { home: mkdtempSync(path.join(dir, 'node-')) });
const nodeNs = Number(process.hrtime.bigint() - started);

const cli = [path.join(root, 'target/release/self-evolve'), path.join(root, 'target/debug/self-evolve')].find(existsSync);
if (!cli) throw new Error('build the Rust CLI first: cargo build --release -p self-evolve');
// Warm the Rust host's compile cache first: the figure is per-event cost, not compile time.
spawnSync(cli, ['--wasm', path.join(root, 'dist/self-evolve.wasm'), 'inspect']);
started = process.hrtime.bigint();
const rust = spawnSync(cli, ['--wasm', path.join(root, 'dist/self-evolve.wasm'), 'replay', file, '--json', '--home', mkdtempSync(path.join(dir, 'rust-'))], { maxBuffer: 1 << 30 });
const rustNs = Number(process.hrtime.bigint() - started);
if (rust.status !== 0) throw new Error(String(rust.stderr));
const same = rust.stdout.toString() === `${out.join('\n')}\n`;

const us = (ns) => (ns / events.length / 1000).toFixed(2);
console.log(`${events.length} events, ${out.length} decision lines, identical output: ${same}`);
console.log(`node host   ${us(nodeNs)} µs/event  (${(nodeNs / 1e6).toFixed(0)} ms, in process)`);
console.log(`rust host   ${us(rustNs)} µs/event  (${(rustNs / 1e6).toFixed(0)} ms, ${path.basename(path.dirname(cli))} CLI incl. start-up)`);
console.log(`ratio node/rust: ${(nodeNs / rustNs).toFixed(2)}x`);
