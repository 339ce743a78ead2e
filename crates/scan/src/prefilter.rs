//! The anchor search's candidate filter in the component: a Teddy-style nibble test on wasm
//! SIMD128 that skips ordinary text sixteen bytes at a time.
//!
//! Why it exists: aho-corasick's own Teddy is built for x86-64 and aarch64 only and steps aside
//! past 64 patterns (the scanner has over a hundred anchors), so inside the component the
//! anchor DFA read every byte, about three times slower than the same DFA natively. Here the
//! anchors are grouped into sixteen buckets (two passes of eight); a bucket's tables say, per
//! byte of the first four, which low and which high nibbles its anchors have there. A position
//! passes when some bucket accepts all four bytes; only there are the anchors that start with
//! that byte compared (`longest_at`), which also spares the component building the DFA.
//!
//! Never misses: every byte an anchor has at one of its first four positions is in its
//! bucket's tables, and positions past an anchor's end accept anything (`tests` compare the
//! candidates' matches with aho-corasick's `find_iter` on every kind of text). How many others
//! pass depends on the buckets: anchors are placed to keep each bucket's acceptance rare under
//! a rough model of Markdown prose, which lets about one position in a hundred through.
//!
//! Owns: the bucket layout, the nibble tables, the candidate walk and the exact match at a
//! candidate. Knows nothing of rules: the lint's command words use it too.

use std::ops::ControlFlow;

/// Bytes of each anchor the tables test: the scanner's shortest anchors are two bytes, most
/// are four or more.
const WIDTH: usize = 4;
/// Lanes per block, and the bytes past a block's start that one block reads.
const LANES: usize = 16;
const READS: usize = LANES + WIDTH - 1;

/// The nibble tables of sixteen buckets: `lo[pass][j][n]` has bit `k` set when bucket
/// `8 * pass + k` has an anchor whose byte `j` has low nibble `n` (or is shorter than `j + 1`);
/// `hi` the same for high nibbles.
type NibbleTables = [[[u8; LANES]; WIDTH]; 2];

/// The candidate filter over a set of literal patterns, and their exact match at a candidate.
pub struct Teddy {
    tables: Tables,
    patterns: Vec<Vec<u8>>,
    exact: Exact,
}

/// The exact match at a candidate, for a few word operations: on anchor-dense text (a line of
/// `&sig=` or `secret` over and over) this runs at nearly every position the filter passes, and
/// walking a per-byte list with a `memcmp` per pattern was a quarter of the scan.
struct Exact {
    /// `pairs[first << 8 | second]`: 1 + the index in `groups` of the patterns that start with
    /// those two bytes, longest first; 0 for none. Most candidates stop at this one load.
    pairs: Vec<u16>,
    groups: Vec<Vec<usize>>,
    /// Per byte, the one-byte pattern that is it, if any (tried after every longer one).
    singles: Vec<Option<usize>>,
    /// Per pattern: its first eight bytes as a little-endian word (zero past its end), the mask
    /// of those bytes, and its length; a longer pattern's tail is compared after the word.
    words: Vec<(u64, u64, usize)>,
}

impl Exact {
    fn new(patterns: &[&[u8]]) -> Exact {
        let mut pairs = vec![0u16; 1 << 16];
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut singles = vec![None; 256];
        for (i, p) in patterns.iter().enumerate() {
            match p {
                [] => {}
                [only] => singles[usize::from(*only)] = singles[usize::from(*only)].or(Some(i)),
                [first, second, ..] => {
                    let slot = &mut pairs[usize::from(*first) << 8 | usize::from(*second)];
                    if *slot == 0 {
                        groups.push(Vec::new());
                        *slot = u16::try_from(groups.len()).unwrap_or_else(|_| panic!("over 65,535 anchor pairs"));
                    }
                    groups[usize::from(*slot) - 1].push(i);
                }
            }
        }
        for group in &mut groups {
            // Longest first, and the first listed among equals (as the per-byte lists had it).
            group.sort_by_key(|&i| std::cmp::Reverse(patterns[i].len()));
        }
        let words = patterns
            .iter()
            .map(|p| {
                let n = p.len().min(8);
                let mut word = [0u8; 8];
                word[..n].copy_from_slice(&p[..n]);
                let mask = if n == 8 { u64::MAX } else { (1u64 << (8 * n)) - 1 };
                (u64::from_le_bytes(word), mask, p.len())
            })
            .collect();
        Exact { pairs, groups, singles, words }
    }
}

/// The first eight bytes of `rest` as a little-endian word, zeros past its end.
#[inline(always)]
fn head_word(rest: &[u8]) -> u64 {
    match rest.get(..8).and_then(|h| <[u8; 8]>::try_from(h).ok()) {
        Some(h) => u64::from_le_bytes(h),
        None => {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(word)
        }
    }
}

impl Teddy {
    pub fn new(patterns: &[&[u8]]) -> Teddy {
        let (mut lo, mut hi): (NibbleTables, NibbleTables) = ([[[0; LANES]; WIDTH]; 2], [[[0; LANES]; WIDTH]; 2]);
        for (bucket, members) in assign_buckets(patterns).iter().enumerate() {
            let (pass, bit) = (bucket / 8, 1u8 << (bucket % 8));
            for pattern in members {
                for j in 0..WIDTH {
                    match pattern.get(j) {
                        Some(&b) => {
                            lo[pass][j][usize::from(b & 0x0F)] |= bit;
                            hi[pass][j][usize::from(b >> 4)] |= bit;
                        }
                        None => {
                            for n in 0..LANES {
                                lo[pass][j][n] |= bit;
                                hi[pass][j][n] |= bit;
                            }
                        }
                    }
                }
            }
        }
        Teddy {
            tables: Tables::new(&lo, &hi),
            patterns: patterns.iter().map(|p| p.to_vec()).collect(),
            exact: Exact::new(patterns),
        }
    }

    /// The longest pattern starting exactly at `pos`, as (pattern index, end): at a candidate
    /// this is what an anchored leftmost-longest search finds, for the cost of comparing the
    /// few patterns that share the two bytes there, a word each.
    pub fn longest_at(&self, hay: &[u8], pos: usize) -> Option<(usize, usize)> {
        let rest = hay.get(pos..)?;
        let (&first, second) = (rest.first()?, rest.get(1));
        let exact = &self.exact;
        if let Some(&second) = second {
            let group = exact.pairs[usize::from(first) << 8 | usize::from(second)];
            if group != 0 {
                let head = head_word(rest);
                for &i in &exact.groups[usize::from(group) - 1] {
                    let (word, mask, len) = exact.words[i];
                    if head & mask == word && len <= rest.len() && (len <= 8 || rest.starts_with(&self.patterns[i])) {
                        return Some((i, pos + len));
                    }
                }
            }
        }
        exact.singles[usize::from(first)].map(|i| (i, pos + 1))
    }

    /// Calls `at` with every position of `hay` where a pattern may start, in increasing order.
    /// `at` answers where to go on from (a match's end: positions inside it are skipped), or
    /// stops the walk.
    pub fn candidates(&self, hay: &[u8], mut at: impl FnMut(usize) -> ControlFlow<(), usize>) {
        let mut masks = [0u16; BLOCKS];
        let mut start = 0;
        'chunks: while let Some(chunk_start) = self.next_chunk(hay, start, &mut masks) {
            let chunk_end = chunk_start + BLOCKS * LANES;
            start = chunk_end;
            let mut k = 0;
            while k < BLOCKS {
                let block_start = chunk_start + k * LANES;
                let mut mask = masks[k];
                k += 1;
                while mask != 0 {
                    let pos = block_start + mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    if pos >= hay.len() {
                        return;
                    }
                    match at(pos) {
                        ControlFlow::Break(()) => return,
                        ControlFlow::Continue(resume) if resume >= chunk_end => {
                            start = resume;
                            continue 'chunks;
                        }
                        // On in a later block of this chunk, from its lane at `resume`.
                        ControlFlow::Continue(resume) if resume >= block_start + LANES => {
                            k = (resume - chunk_start) / LANES;
                            masks[k] &= lanes_from(resume - chunk_start - k * LANES);
                            break;
                        }
                        // Lanes before `resume` lie inside what was just matched.
                        ControlFlow::Continue(resume) => mask &= lanes_from(resume.max(pos + 1) - block_start),
                    }
                }
            }
        }
    }

    /// From `start` on, the first block of sixteen positions with a candidate and the blocks
    /// after it: the chunk's start, and in `masks` each block's lanes (bit `i` for the block's
    /// position `i`; blocks past the text have none). Never inlined: it is the hot loop, built
    /// with this crate's speed settings whatever crate calls `candidates` (the plugin's own code
    /// is built for size). A chunk at a time, so that on text dense with anchors the tables
    /// are set up once per `BLOCKS` blocks, not once per candidate.
    #[inline(never)]
    fn next_chunk(&self, hay: &[u8], mut start: usize, masks: &mut [u16; BLOCKS]) -> Option<usize> {
        let mut padded = [0u8; READS];
        let first = loop {
            if start >= hay.len() {
                return None;
            }
            let mask = self.tables.block(block_at(hay, start, &mut padded));
            if mask != 0 {
                break mask;
            }
            start += LANES;
        };
        masks[0] = first;
        for (k, mask) in masks.iter_mut().enumerate().skip(1) {
            let block_start = start + k * LANES;
            *mask =
                if block_start < hay.len() { self.tables.block(block_at(hay, block_start, &mut padded)) } else { 0 };
        }
        Some(start)
    }
}

/// Blocks a chunk of candidates holds (`Teddy::next_chunk`).
const BLOCKS: usize = 8;

/// The lanes of a block from lane `from` on (none from 16 on).
fn lanes_from(from: usize) -> u16 {
    u32::try_from(from).ok().and_then(|n| (!0u16).checked_shl(n)).unwrap_or(0)
}

/// The `READS` bytes from `start`: read in place, or for the last bytes copied into `padded`
/// after zeros. A pattern that fits still has its real bytes there: the padding only meets a
/// pattern's positions past its end (which accept anything) or patterns that cannot fit.
#[inline(always)]
fn block_at<'a>(hay: &'a [u8], start: usize, padded: &'a mut [u8; READS]) -> &'a [u8; READS] {
    match hay.get(start..start + READS).and_then(|w| w.try_into().ok()) {
        Some(window) => window,
        None => {
            let rest = &hay[start..];
            *padded = [0u8; READS];
            padded[..rest.len()].copy_from_slice(rest);
            padded
        }
    }
}

/// The tables in the form one block's test uses: vectors on wasm SIMD128, arrays elsewhere
/// (the scalar form runs the same test lane by lane, for the native tests).
struct Tables {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    v: [[(core::arch::wasm32::v128, core::arch::wasm32::v128); WIDTH]; 2],
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    t: [[([u8; LANES], [u8; LANES]); WIDTH]; 2],
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
impl Tables {
    fn new(lo: &NibbleTables, hi: &NibbleTables) -> Tables {
        use core::arch::wasm32::u8x16;
        let vector = |b: &[u8; LANES]| {
            u8x16(b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        };
        Tables { v: core::array::from_fn(|p| core::array::from_fn(|j| (vector(&lo[p][j]), vector(&hi[p][j])))) }
    }

    /// Bit `i` set when some bucket accepts the four bytes from `block[i]`.
    #[inline(always)]
    fn block(&self, block: &[u8; READS]) -> u16 {
        use core::arch::wasm32::*;
        let low = u8x16_splat(0x0F);
        let mut pass = [u8x16_splat(0xFF); 2];
        for j in 0..WIDTH {
            // SAFETY: `block` holds READS = LANES + WIDTH - 1 bytes, so the 16 bytes from `j`
            // (j < WIDTH) are inside it; v128.load takes any alignment.
            let bytes = unsafe { v128_load(block.as_ptr().add(j).cast::<v128>()) };
            let (lo, hi) = (v128_and(bytes, low), u8x16_shr(bytes, 4));
            for (p, acc) in pass.iter_mut().enumerate() {
                let (lo_table, hi_table) = self.v[p][j];
                *acc = v128_and(*acc, v128_and(u8x16_swizzle(lo_table, lo), u8x16_swizzle(hi_table, hi)));
            }
        }
        u8x16_bitmask(u8x16_ne(v128_or(pass[0], pass[1]), u8x16_splat(0)))
    }
}

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
impl Tables {
    fn new(lo: &NibbleTables, hi: &NibbleTables) -> Tables {
        Tables { t: core::array::from_fn(|p| core::array::from_fn(|j| (lo[p][j], hi[p][j]))) }
    }

    fn block(&self, block: &[u8; READS]) -> u16 {
        let mut mask = 0u16;
        for lane in 0..LANES {
            let mut acc = 0xFFFFu16;
            for j in 0..WIDTH {
                let b = block[lane + j];
                let per_pass = |p: usize| {
                    let (lo, hi) = &self.t[p][j];
                    u16::from(lo[usize::from(b & 0x0F)] & hi[usize::from(b >> 4)]) << (8 * p)
                };
                acc &= per_pass(0) | per_pass(1);
            }
            if acc != 0 {
                mask |= 1 << lane;
            }
        }
        mask
    }
}

/// Sixteen buckets of patterns. Patterns alike in their first bytes (`pass`, `PASS`, `Pass`)
/// go together; each group goes where it adds least to its bucket's chance of accepting a
/// position of prose, the groups most likely to accept first.
fn assign_buckets<'p>(patterns: &[&'p [u8]]) -> Vec<Vec<&'p [u8]>> {
    let weights = Weights::new();
    let mut groups: Vec<Group<'p>> = Vec::new();
    for &p in patterns {
        let key: Vec<u8> = p.iter().take(WIDTH).map(u8::to_ascii_lowercase).collect();
        let at = match groups.iter().position(|g| g.key == key) {
            Some(at) => at,
            None => {
                groups.push(Group { key, members: Vec::new(), masks: Masks::default() });
                groups.len() - 1
            }
        };
        groups[at].members.push(p);
        groups[at].masks.add(p);
    }
    // Each group's acceptance once, not at every comparison of the sort.
    let mut ranked: Vec<(f64, Group<'p>)> = groups.into_iter().map(|g| (g.masks.acceptance(&weights), g)).collect();
    ranked.sort_by(|(a, ga), (b, gb)| b.total_cmp(a).then_with(|| ga.key.cmp(&gb.key)));
    let mut buckets: Vec<Group<'p>> = (0..16).map(|_| Group::default()).collect();
    // Each bucket's acceptance now, kept as groups join it (an empty bucket accepts nothing).
    let mut accepts = [0.0f64; 16];
    for (_, group) in ranked {
        let cost = |k: usize| buckets[k].masks.union(&group.masks).acceptance(&weights) - accepts[k];
        let mut best = (0, cost(0));
        for k in 1..buckets.len() {
            let c = cost(k);
            if c < best.1 {
                best = (k, c);
            }
        }
        let bucket = &mut buckets[best.0];
        bucket.masks = bucket.masks.union(&group.masks);
        accepts[best.0] = bucket.masks.acceptance(&weights);
        bucket.members.extend(group.members);
    }
    buckets.into_iter().map(|b| b.members).collect()
}

/// `nibble_weights` summed ahead for `Masks::acceptance`: `sums[h][half][byte]` is the weight
/// of the nibble pairs `(h, l)` for every low nibble `l` whose bit is set in `byte`, the low
/// (`half` 0) or high (1) eight bits of a low-nibble mask. Building a prefilter costs a few
/// thousand additions instead of a million (it happens at every process start).
struct Weights {
    sums: [[[f64; 256]; 2]; 16],
}

impl Weights {
    fn new() -> Weights {
        let w = nibble_weights();
        let mut sums = [[[0.0; 256]; 2]; 16];
        for (h, by_half) in sums.iter_mut().enumerate() {
            for (half, by_byte) in by_half.iter_mut().enumerate() {
                for (byte, sum) in by_byte.iter_mut().enumerate() {
                    *sum = (0..8).filter(|b| byte & (1 << b) != 0).map(|b| w[h][half * 8 + b]).sum();
                }
            }
        }
        Weights { sums }
    }

    /// The share of prose bytes whose high nibble is in `hi` and low nibble in `lo`.
    fn share(&self, hi: u16, lo: u16) -> f64 {
        (0..16)
            .filter(|h| hi & (1 << h) != 0)
            .map(|h| self.sums[h][0][usize::from(lo & 0xFF)] + self.sums[h][1][usize::from(lo >> 8)])
            .sum()
    }
}

/// Patterns that share their first bytes but for case, and what their tables accept.
#[derive(Default)]
struct Group<'p> {
    key: Vec<u8>,
    members: Vec<&'p [u8]>,
    masks: Masks,
}

/// The nibbles a bucket accepts at each tested byte: bit `n` of `lo[j]` for low nibble `n`.
#[derive(Clone, Copy, Default)]
struct Masks {
    lo: [u16; WIDTH],
    hi: [u16; WIDTH],
}

impl Masks {
    fn add(&mut self, pattern: &[u8]) {
        for j in 0..WIDTH {
            match pattern.get(j) {
                Some(&b) => {
                    self.lo[j] |= 1 << (b & 0x0F);
                    self.hi[j] |= 1 << (b >> 4);
                }
                None => (self.lo[j], self.hi[j]) = (0xFFFF, 0xFFFF),
            }
        }
    }

    fn union(&self, other: &Masks) -> Masks {
        Masks {
            lo: core::array::from_fn(|j| self.lo[j] | other.lo[j]),
            hi: core::array::from_fn(|j| self.hi[j] | other.hi[j]),
        }
    }

    /// The chance this bucket accepts a position of prose: per tested byte, the share of
    /// prose bytes its nibbles let through, multiplied.
    fn acceptance(&self, weights: &Weights) -> f64 {
        (0..WIDTH).map(|j| weights.share(self.hi[j], self.lo[j])).product()
    }
}

/// `weights[hi][lo]`: the share of prose bytes with these nibbles (see `prose_weight`).
fn nibble_weights() -> [[f64; 16]; 16] {
    let total: f64 = (0..=255u8).map(prose_weight).sum();
    core::array::from_fn(|h| core::array::from_fn(|l| prose_weight((h * 16 + l) as u8) / total))
}

/// How common a byte is in English Markdown, roughly (letter frequencies of English text;
/// capitals, digits and punctuation far rarer). Only the buckets' layout depends on it.
fn prose_weight(b: u8) -> f64 {
    const LETTERS: [f64; 26] = [
        8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.8, 4.0, 2.4, 6.7, 7.5, 1.9, 0.1, 6.0, 6.3, 9.1, 2.8, 1.0,
        2.4, 0.15, 2.0, 0.07,
    ];
    match b {
        b' ' => 15.0,
        b'a'..=b'z' => LETTERS[usize::from(b - b'a')] * 0.7,
        b'A'..=b'Z' => LETTERS[usize::from(b - b'A')] * 0.035,
        b'0'..=b'9' => 0.5,
        b'\n' => 2.0,
        b'.' | b',' | b'-' | b'_' | b':' | b'/' | b'`' | b'\'' | b'"' | b'(' | b')' | b'[' | b']' | b'#' | b'*'
        | b'=' => 0.5,
        _ => 0.05,
    }
}
