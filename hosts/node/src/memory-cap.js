// The memory limit of an instance. V8 has no resource limiter like wasmtime's, and the plugin's
// core module declares its memory without a maximum, so it could grow to 4 GiB inside the host
// process. Instead the module's bytes get a maximum before they are compiled: a `memory.grow`
// past it returns -1, the guest's allocator then traps, and host.js replaces the instance, as the
// Rust host does at its limiter (`Limits { memory_bytes }`, 64 MiB by default).

export const PAGE_BYTES = 65536;

/** Unsigned LEB128 at `at`: [value, the offset after it]. */
function readLeb(bytes, at) {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (at >= bytes.length) throw new Error('wasm module: truncated LEB128');
    const b = bytes[at++];
    value += (b & 0x7f) * scale;
    if (!(b & 0x80)) return [value, at];
    scale *= 128;
  }
  throw new Error('wasm module: LEB128 too long');
}

function leb(value) {
  const out = [];
  do {
    let b = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) b |= 0x80;
    out.push(b);
  } while (value > 0);
  return out;
}

const MEMORY_SECTION = 5;
const HAS_MAX = 0x01;
const KNOWN_FLAGS = 0x07; // has-max, shared, memory64

/**
 * The core module `bytes` with every memory it defines limited to at most `maxPages` pages
 * (64 KiB each). A memory without a maximum gets this one, a larger maximum is lowered, a smaller
 * one is kept. Everything but the memory section is left byte for byte; an imported memory is
 * left as declared (it is limited where it is defined). A memory whose initial size is already
 * past the limit is an error, as wasmtime's limiter refuses it at instantiation.
 * @param {Uint8Array} bytes
 * @param {number} maxPages
 * @returns {Uint8Array}
 */
export function capMemory(bytes, maxPages) {
  if (!Number.isSafeInteger(maxPages) || maxPages < 0) throw new RangeError(`maxPages must be a whole number, not ${maxPages}`);
  const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  if (bytes.length < 8 || header.some((b, i) => bytes[i] !== b)) throw new Error('not a core wasm module (version 1)');
  const parts = [];
  let copiedTo = 0;
  let at = 8;
  while (at < bytes.length) {
    const sectionStart = at;
    const id = bytes[at++];
    const [size, contentStart] = readLeb(bytes, at);
    const end = contentStart + size;
    if (end > bytes.length) throw new Error('wasm module: a section runs past the end');
    if (id === MEMORY_SECTION) {
      let [count, p] = readLeb(bytes, contentStart);
      const content = leb(count);
      for (let i = 0; i < count; i++) {
        const flags = bytes[p++];
        if (flags & ~KNOWN_FLAGS) throw new Error(`wasm module: memory limits with flags 0x${flags.toString(16)} are not understood`);
        const minStart = p;
        let min;
        [min, p] = readLeb(bytes, p);
        const minBytes = bytes.subarray(minStart, p);
        let max = maxPages;
        if (flags & HAS_MAX) {
          let declared;
          [declared, p] = readLeb(bytes, p);
          max = Math.min(declared, maxPages);
        }
        if (min > max) throw new Error(`the module's memory starts at ${min * PAGE_BYTES} bytes, past the ${maxPages * PAGE_BYTES} byte limit`);
        content.push(flags | HAS_MAX, ...minBytes, ...leb(max));
      }
      if (p !== end) throw new Error('wasm module: the memory section has trailing bytes');
      parts.push(bytes.subarray(copiedTo, sectionStart), Uint8Array.from([id, ...leb(content.length), ...content]));
      copiedTo = end;
    }
    at = end;
  }
  if (copiedTo === 0) return bytes;
  parts.push(bytes.subarray(copiedTo));
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let o = 0;
  for (const part of parts) { out.set(part, o); o += part.length; }
  return out;
}
