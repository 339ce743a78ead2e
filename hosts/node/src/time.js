// Times in milliseconds as the plugin takes them (WIT u64): whole, 0..=u64::MAX, and added with
// saturation, as the Rust host does. JSON numbers past 2^53 are already rounded (u64::MAX parses
// as 2^64), so the arithmetic is on BigInts and the clock never leaves the u64 range.

export const U64_MAX = 18446744073709551615n;

/** `ms` (a number or a BigInt) as a u64 BigInt: a fraction dropped, clamped to 0..=u64::MAX. */
export function u64(ms) {
  if (typeof ms === 'bigint') return ms < 0n ? 0n : ms > U64_MAX ? U64_MAX : ms;
  if (typeof ms !== 'number' || Number.isNaN(ms)) throw new TypeError(`not a time in milliseconds: ${String(ms)}`);
  if (ms <= 0) return 0n;
  if (ms >= 2 ** 64) return U64_MAX;
  return BigInt(Math.floor(ms));
}

/** `a + b` as u64s, stopping at u64::MAX (Rust's `saturating_add`). */
export function saturatingAdd(a, b) {
  return u64(u64(a) + u64(b));
}

/** Whether `n` (a parsed JSON number) can be a u64: whole and 0..=2^64 (u64::MAX parses as 2^64). */
export function isU64Number(n) {
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 2 ** 64;
}
