//! What the shape probes (`shapes`, `key_blocks`) read with: the finding a probe returns
//! (`Found`), bounded walks and the byte classes they stop at, and the prefix a quoted, commented
//! or diffed line repeats on each line of a credential that runs over several (`LinePrefix`).
//!
//! A finding has two spans: its `value`, the bytes that name it (judged, fingerprinted), and its
//! `whole`, what redaction replaces: the value and whatever of the credential continues it (a
//! PEM key's body and END line, the lines of a PuTTY file, the wrapped lines of base64, a token's
//! characters past what the judgement read). Fingerprints stay on the value, so an operator's
//! acknowledgements keep naming what they named.

use super::rules::RuleId;
use std::ops::Range;

pub struct Found {
    pub rule: RuleId,
    /// The bytes that name the credential: judged and fingerprinted.
    pub value: Range<usize>,
    /// The bytes redaction replaces: `value` and what continues it.
    pub whole: Range<usize>,
}

impl Found {
    pub fn new(rule: RuleId, value: Range<usize>) -> Found {
        Found { rule, whole: value.clone(), value }
    }

    pub fn widened(rule: RuleId, value: Range<usize>, end: usize) -> Found {
        Found { rule, whole: value.start..end.max(value.end), value }
    }
}

pub fn walk(b: &[u8], from: usize, max: usize, ok: impl Fn(u8) -> bool) -> usize {
    let mut i = from;
    while i < b.len() && i - from < max && ok(b[i]) {
        i += 1;
    }
    i
}

pub fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// The bytes of standard base64, as a table: the multi-line walks read whole key bodies.
const BASE64_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        table[i] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=');
        i += 1;
    }
    table
};

pub fn is_base64(c: u8) -> bool {
    BASE64_BYTES[usize::from(c)]
}

/// The most a line's prefix holds (`-`, `> `, `// `, ` * `): a quote, comment or diff marker.
const MAX_PREFIX: usize = 8;

/// What a multi-line credential's first line has before it on its line, repeated on each of its
/// lines: a unified diff's `-`/`+`/` ` marker, a Markdown quote (`> `), a comment (`# `, `// `,
/// ` * `, `; `). Empty when that line has anything else before it (`key: "-----BEGIN…`).
#[derive(Clone, Copy)]
pub struct LinePrefix<'a> {
    /// The prefix without its spaces and tabs (they are skipped at each line start anyway).
    marks: &'a [u8],
    /// A diff's one-byte marker: each following line may be removed, added or context.
    diff: bool,
}

fn prefix_byte(c: u8) -> bool {
    matches!(c, b'-' | b'+' | b'>' | b'#' | b'/' | b'*' | b';' | b'!' | b' ' | b'\t')
}

impl<'a> LinePrefix<'a> {
    pub const NONE: LinePrefix<'static> = LinePrefix { marks: &[], diff: false };

    /// The prefix of the line holding `at`: the bytes from its start (after a newline, an escaped
    /// one, or the text's start) to `at`, when there are at most `MAX_PREFIX` of them and all are
    /// quote, comment or diff bytes.
    pub fn of(b: &'a [u8], at: usize) -> LinePrefix<'a> {
        LinePrefix::opening(b, at).unwrap_or(LinePrefix::NONE)
    }

    /// `of`, or `None` when the bytes before `at` on its line are not a prefix.
    pub fn opening(b: &'a [u8], at: usize) -> Option<LinePrefix<'a>> {
        let mut start = at;
        while start > 0 && at - start < MAX_PREFIX && prefix_byte(b[start - 1]) {
            start -= 1;
        }
        let line_start = start == 0
            || matches!(b[start - 1], b'\n' | b'\r')
            || (start >= 2 && b[start - 2] == b'\\' && matches!(b[start - 1], b'n' | b'r'));
        let raw = &b[start..at];
        line_start.then(|| LinePrefix { marks: raw.trim_ascii(), diff: matches!(raw, b"-" | b"+" | b" ") })
    }

    /// Where a line's text starts after its prefix, from `i` (its first byte after indentation):
    /// the same marks (or, in a diff, any one of `-`, `+`) and the spaces and tabs after them;
    /// `i` when the line does not carry them.
    pub fn strip(self, b: &[u8], i: usize) -> usize {
        let marked = if self.diff {
            matches!(b.get(i), Some(b'-' | b'+')).then_some(i + 1)
        } else if !self.marks.is_empty() && b[i.min(b.len())..].starts_with(self.marks) {
            Some(i + self.marks.len())
        } else {
            None
        };
        marked.map_or(i, |j| walk(b, j, MAX_PREFIX, |c| c == b' ' || c == b'\t'))
    }

    /// `strip`, unless the line's text at `i` is an END marker (a diff's context line
    /// ` -----END`, whose first `-` is the marker's own).
    pub fn text_at(self, b: &[u8], i: usize) -> usize {
        let j = self.strip(b, i);
        if j != i && !b[j..].starts_with(b"-----END") && b[i..].starts_with(b"-----END") { i } else { j }
    }
}
