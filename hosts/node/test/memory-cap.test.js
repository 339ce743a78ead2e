// The memory limit of an instance (memory-cap.js): the module's memory gets a maximum, a grow
// past it fails, and through the real component the guest traps and the instance is replaced
// (as host-test/tests/guards.rs for the Rust host).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../test-support/tmp.js';
import { capMemory, PAGE_BYTES } from '../src/memory-cap.js';
import { loadPlugin, userContext, GEN } from '../src/host.js';

const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const TYPES = [0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f]; // (i32) -> i32
const FUNCS = [0x03, 0x02, 0x01, 0x00];
// exports "mem" (memory 0) and "grow" (func 0)
const EXPORTS = [0x07, 0x0e, 0x02, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x04, 0x67, 0x72, 0x6f, 0x77, 0x00, 0x00];
const CODE = [0x0a, 0x08, 0x01, 0x06, 0x00, 0x20, 0x00, 0x40, 0x00, 0x0b]; // memory.grow (local.get 0)

/** A module whose one memory has the given limits bytes (flags, min[, max]). */
const moduleWith = (limits) => Uint8Array.from([...HEADER, ...TYPES, ...FUNCS, 0x05, limits.length + 1, 0x01, ...limits, ...EXPORTS, ...CODE]);

const instance = (bytes) => new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;

test('a memory without a maximum gets one: a grow past it returns -1', () => {
  const bytes = moduleWith([0x00, 0x01]);
  assert.equal(instance(bytes).grow(1000), 1, 'unlimited before');
  const capped = capMemory(bytes, 4);
  assert.deepEqual([...capped], [...moduleWith([0x01, 0x01, 0x04])]);
  const { grow, mem } = instance(capped);
  assert.equal(grow(4), -1);
  assert.equal(grow(3), 1);
  assert.equal(mem.buffer.byteLength, 4 * PAGE_BYTES);
  assert.equal(grow(1), -1);
  assert.equal(grow(0), 4);
});

test('a larger maximum is lowered, a smaller one kept', () => {
  assert.deepEqual([...capMemory(moduleWith([0x01, 0x01, 0x80, 0x01]), 4)], [...moduleWith([0x01, 0x01, 0x04])]); // 128 → 4
  const small = moduleWith([0x01, 0x01, 0x02]);
  assert.deepEqual([...capMemory(small, 4)], [...small]);
  assert.equal(instance(capMemory(small, 4)).grow(2), -1);
});

test('the section size is re-encoded and every other byte is kept', () => {
  // 1024 pages (64 MiB) needs two LEB128 bytes, 2^16 pages three: the section grows.
  for (const pages of [1024, 65536]) {
    const bytes = moduleWith([0x00, 0x01]);
    const capped = capMemory(bytes, pages);
    const at = HEADER.length + TYPES.length + FUNCS.length;
    assert.deepEqual([...capped.subarray(0, at)], [...bytes.subarray(0, at)]);
    assert.deepEqual([...capped.subarray(capped.length - EXPORTS.length - CODE.length)], [...EXPORTS, ...CODE]);
    const { grow } = instance(capped);
    assert.equal(grow(pages - 1), 1);
    if (pages < 65536) assert.equal(grow(1), -1);
  }
});

test('no memory section, or an imported memory, is left as it is; a memory already past the limit is refused', () => {
  const noMemory = Uint8Array.from([...HEADER, ...TYPES]);
  assert.equal(capMemory(noMemory, 4), noMemory);
  // (import "env" "mem" (memory 1))
  const imported = Uint8Array.from([...HEADER, 0x02, 0x0c, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x01]);
  new WebAssembly.Module(imported);
  assert.equal(capMemory(imported, 4), imported);
  assert.throws(() => capMemory(moduleWith([0x00, 0x08]), 4), /starts at 524288 bytes, past the 262144 byte limit/);
  assert.throws(() => capMemory(Uint8Array.from([0, 0x61, 0x73, 0x6d, 0x0d, 0, 1, 0]), 4), /not a core wasm module/);
  assert.throws(() => capMemory(moduleWith([0x10, 0x01]), 4), /not understood/);
});

test('the plugin\'s own module gets the limit: 64 MiB by default', () => {
  const core = readFileSync(path.join(GEN, 'self-evolve.core.wasm'));
  const mem = WebAssembly.Module.exports(new WebAssembly.Module(core)).find((e) => e.kind === 'memory');
  assert.ok(mem, 'the core module defines and exports its memory');
  const capped = capMemory(core, (64 << 20) / PAGE_BYTES);
  assert.equal(capped.length, core.length + 2, 'only the maximum (1024: two LEB128 bytes) was added');
  new WebAssembly.Module(capped);
});

test('a plugin that grows past its memory limit traps, the instance is replaced, and the next call works', async () => {
  const home = tempDir('se-mem-');
  const fs = { userSkills: path.join(home, 'skills'), state: path.join(home, 'state') };
  const plugin = await loadPlugin({ fs, limits: { memoryBytes: 8 << 20 }, logLevel: 'error' });
  assert.ok(plugin.init('{"review":{"turnInterval":7}}', ['tools', 'commands']).ok);
  const ctx = userContext('s1');
  // 12 MiB of arguments: under the host's 24 MiB bound, past the 8 MiB the instance may hold.
  const big = JSON.stringify({ action: 'create', name: 'x', description: 'd', content: 'x'.repeat(12 << 20) });
  assert.throws(() => plugin.toolsCall(ctx, 'skill_manage', big), /^Error: plugin export `tools.call` trapped: .*; the instance was replaced$/);
  assert.ok(plugin.toolsCall(ctx, 'skill_manage', '{"action":"list"}').ok);
  assert.equal(JSON.parse(plugin.command(ctx, 'review status --json').value).turnInterval, 7, 'the last good configuration');
  // The default limit (64 MiB) holds the same call.
  const roomy = await loadPlugin({ fs, logLevel: 'error' });
  assert.ok(roomy.init('{}', ['tools']).ok);
  const r = roomy.toolsCall(ctx, 'skill_manage', big);
  assert.equal(r.ok, false, 'refused by the plugin (too large), not a trap');
  await assert.rejects(loadPlugin({ fs, limits: { memoryBytes: 1000 } }), /limits.memoryBytes/);
});
