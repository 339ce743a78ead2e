//! Credentials recognised by the shape around them rather than a prefix of their own: URL
//! userinfo, `.netrc` entries, `.pgpass` lines, `mysql -p…`, `Authorization:` headers, PEM
//! blocks (plain and base64-encoded), JWTs (decoded to tell the jwt.io sample from a real one)
//! and Azure SAS URLs, and the rest of a PuTTY key file after its first line. Each probe reads a
//! bounded window from its anchor and returns the value's span and where its examination ended.
//!
//! A finding has two spans: its `value`, the bytes that name it (judged, fingerprinted), and its
//! `whole`, what redaction replaces: the value and whatever of the credential continues it (a
//! PEM key's body and END line, the lines of a PuTTY file, the wrapped lines of base64, a token's
//! characters past what the judgement read). Fingerprints stay on the value, so an operator's
//! acknowledgements keep naming what they named.

use super::judge;
use super::keyed;
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
    fn new(rule: RuleId, value: Range<usize>) -> Found {
        Found { rule, whole: value.clone(), value }
    }

    fn widened(rule: RuleId, value: Range<usize>, end: usize) -> Found {
        Found { rule, whole: value.start..end.max(value.end), value }
    }
}

/// Where `needle` first occurs in `hay`: a byte test per position, a compare only where the
/// first byte matches (a compare per position was most of a PEM header's cost).
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| hay[i] == first && &hay[i + 1..i + needle.len()] == rest)
}

fn walk(b: &[u8], from: usize, max: usize, ok: impl Fn(u8) -> bool) -> usize {
    let mut i = from;
    while i < b.len() && i - from < max && ok(b[i]) {
        i += 1;
    }
    i
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Local and documentation hosts, where default credentials are how a tutorial is written.
fn local_host(h: &[u8]) -> bool {
    let is = |s: &[u8]| h.eq_ignore_ascii_case(s);
    let ends = |s: &[u8]| h.len() >= s.len() && h[h.len() - s.len()..].eq_ignore_ascii_case(s);
    is(b"localhost")
        || h.starts_with(b"127.")
        || is(b"0.0.0.0")
        || is(b"[::1]")
        || is(b"host.docker.internal")
        || ends(b".local")
        || ends(b".localhost")
        || ends(b".example")
        || ends(b".test")
        || ends(b"example.com")
        || ends(b"example.org")
        || ends(b"example.net")
        || [&b"host"[..], b"hostname", b"server", b"db", b"database"].iter().any(|w| is(w))
}

/// What a byte is to a URL's authority after the scheme.
#[derive(Clone, Copy)]
enum Authority {
    Text,
    At,
    Colon,
    End,
}

const AUTHORITY: [Authority; 256] = {
    let mut table = [Authority::Text; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = match i as u8 {
            b'@' => Authority::At,
            b':' => Authority::Colon,
            b' ' | b'\t' | b'\r' | b'\n' | b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' => Authority::End,
            _ => Authority::Text,
        };
        i += 1;
    }
    table
};

/// `scheme://user:password@host`: the password, unless it is a placeholder, a reference, the
/// user's own name, or a non-random default on a local or documentation host. The userinfo
/// ends at the authority's last `@` (as URL parsers read it), so a password written with an
/// `@` in it is found whole.
pub fn url_credentials(b: &[u8], at: usize) -> Option<Found> {
    let mut s = at;
    while s > 0 && at - s < 32 && (b[s - 1].is_ascii_alphanumeric() || matches!(b[s - 1], b'+' | b'.' | b'-')) {
        s -= 1;
    }
    if at - s < 2 || !b[s].is_ascii_alphabetic() {
        return None;
    }
    let stop = |c: u8| !is_space(c) && !matches!(c, b':' | b'@' | b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>');
    let user_start = at + 3;
    let user_end = walk(b, user_start, 128, stop);
    if b.get(user_end) != Some(&b':') {
        return None;
    }
    let pass_start = user_end + 1;
    // The rest of the authority in one walk: its first and last `@`, and where the host after
    // the last one ends (at its port or the authority's end).
    let (mut first_at, mut last_at, mut port) = (None, None, None);
    let mut k = pass_start;
    let end = b.len().min(pass_start + 512);
    while k < end {
        match AUTHORITY[usize::from(b[k])] {
            Authority::Text => {}
            Authority::At => (first_at, last_at, port) = (first_at.or(Some(k)), Some(k), None),
            Authority::Colon => port = port.or(last_at.map(|_| k)),
            Authority::End => break,
        }
        k += 1;
    }
    let (first_at, last_at) = (first_at?, last_at?);
    let judged = |pass_end: usize, host_end: usize| {
        let (user, pass) = (&b[user_start..user_end], &b[pass_start..pass_end]);
        pass_end - pass_start <= 256
            && pass.len() >= 3
            && user != pass
            && !judge::is_password_placeholder(pass)
            && !judge::is_reference(pass)
            && !(user.is_empty() && pass.starts_with(b"$"))
            && (!local_host(&b[pass_end + 1..host_end]) || judge::looks_random(pass))
    };
    // The part before the first `@` is judged first (what was always read, and fingerprinted);
    // the password with its `@`s when that part is not one. The userinfo ends at the last `@`.
    let last_host_end = port.unwrap_or(k);
    let value_end = if first_at == last_at {
        judged(first_at, last_host_end).then_some(first_at)
    } else if judged(first_at, walk(b, first_at + 1, 256, |c| stop(c) && c != b'@')) {
        Some(first_at)
    } else {
        judged(last_at, last_host_end).then_some(last_at)
    };
    value_end.map(|end| Found::widened(RuleId::PasswordInUrl, pass_start..end, last_at))
}

/// The next whitespace-separated token from `i` (spaces and newlines both separate in .netrc).
fn token(b: &[u8], i: usize) -> Option<Range<usize>> {
    prefixed_token(b, i, LinePrefix::NONE)
}

/// `token`, where a line it reads onto may open with `prefix` (a diff's `-`, a quote's `> `).
fn prefixed_token(b: &[u8], i: usize, prefix: LinePrefix) -> Option<Range<usize>> {
    let mut start = walk(b, i, 64, is_space);
    if b[i.min(start)..start].iter().any(|&c| matches!(c, b'\n' | b'\r')) {
        start = prefix.strip(b, start);
    }
    let end = walk(b, start, 256, |c| !is_space(c));
    (end > start && end - start < 256).then_some(start..end)
}

/// `.netrc`: `machine HOST [login USER] [password PASS] …`, on one line or several.
/// Returns where examination ended (the next `machine` starts a new examination).
pub fn netrc(b: &[u8], at: usize, _floor: usize) -> (usize, Option<Found>) {
    let prefix = if at > 0 && !is_space(b[at - 1]) { LinePrefix::opening(b, at) } else { Some(LinePrefix::of(b, at)) };
    let Some(prefix) = prefix else { return (at + 7, None) };
    let token = |i: usize| prefixed_token(b, i, prefix);
    let Some(host) = token(at + 7) else { return (at + 7, None) };
    let mut i = host.end;
    let mut user: &[u8] = &[];
    for _ in 0..6 {
        let Some(word) = token(i) else { break };
        let name = &b[word.clone()];
        if !matches!(name, b"login" | b"password" | b"account" | b"port") {
            return (word.start, None);
        }
        let Some(arg) = token(word.end) else { return (word.end, None) };
        i = arg.end;
        match name {
            b"login" => user = &b[arg.clone()],
            b"password" => {
                let pass = &b[arg.clone()];
                let whole = quoted_on(b, arg.clone());
                let found = (pass != user && judge::literal_password(pass, 4))
                    .then(|| Found::widened(RuleId::NetrcPassword, arg.clone(), whole.end));
                return (whole.end, found);
            }
            _ => {}
        }
    }
    (i, None)
}

/// A word that opens a quote it does not close (`"two words"` read as `"two`): through the
/// closing quote on the same line, if there is one within 256 bytes; else the word.
fn quoted_on(b: &[u8], word: Range<usize>) -> Range<usize> {
    let Some(&q) = b.get(word.start).filter(|_| !word.is_empty()) else { return word };
    if !matches!(q, b'"' | b'\'') || (word.len() > 1 && b[word.end - 1] == q) {
        return word;
    }
    let close = walk(b, word.start + 1, 256, |c| c != q && c != b'\n');
    if b.get(close) == Some(&q) { word.start..close + 1 } else { word }
}

/// Where a pgpass password that goes on past a space ends (the entry's word, from `entry_start`,
/// ends at `end`): an entry on a line of its own runs to the line's end, one opened by a quote
/// to its closing quote.
fn rest_of_password(b: &[u8], entry_start: usize, end: usize) -> usize {
    if !matches!(b.get(end), Some(b' ' | b'\t')) {
        return end;
    }
    match entry_start.checked_sub(1).map(|i| b[i]) {
        None | Some(b'\n') => {
            let line = walk(b, end, 256, |c| c != b'\n' && c != b'\r');
            end + b[end..line].trim_ascii_end().len()
        }
        Some(q @ (b'"' | b'\'')) => {
            let close = walk(b, end, 256, |c| c != q && c != b'\n');
            if b.get(close) == Some(&q) { close } else { end }
        }
        _ => end,
    }
}

/// `.pgpass`: `host:port:database:user:password`, a line of its own or a word of a command
/// (`echo '…' >> ~/.pgpass`); the anchor is the port field. `\:` is a colon inside a field. The
/// password's word is judged (and fingerprinted); its whole runs to the end of its line (or
/// quote), spaces and all. Returns where examination ended. Never reads back past `floor`, where the previous examination ended: a word that
/// starts before it was read then, and was too long to be a line of its own.
pub fn pgpass(b: &[u8], at: usize, floor: usize) -> (usize, Option<Found>) {
    let edge = |c: u8| is_space(c) || matches!(c, b'"' | b'\'' | b'`');
    let mut start = at;
    while start > floor && at - start < 256 && !edge(b[start - 1]) {
        start -= 1;
    }
    let end = walk(b, at, 512, |c| !edge(c));
    if start > 0 && !edge(b[start - 1]) || end < b.len() && !edge(b[end]) {
        return (end, None);
    }
    // The four separating colons (`\:` is one inside a field).
    let (mut colons, mut n, mut k) = ([0usize; 4], 0, start);
    while k < end {
        match b[k] {
            b'\\' => k += 2,
            b':' if n == 4 => return (end, None),
            b':' => (colons[n], n, k) = (k, n + 1, k + 1),
            _ => k += 1,
        }
    }
    if n != 4 || colons[0] == start || colons.windows(2).any(|w| w[1] == w[0] + 1) {
        return (end, None);
    }
    let (user, pass) = (&b[colons[2] + 1..colons[3]], &b[colons[3] + 1..end]);
    let whole_end = rest_of_password(b, start, end);
    if pass == user || !judge::literal_password(pass, 4) {
        return (whole_end, None);
    }
    (whole_end, Some(Found::widened(RuleId::PgpassPassword, colons[3] + 1..end, whole_end)))
}

/// `mysql … -pPASSWORD` or `--password=PASSWORD` (also mysqldump, mysqladmin, …). `-p` alone
/// prompts and is fine; `mysql_config … -pthread` is not a mysql command. Returns where
/// examination ended (the line's end).
pub fn mysql(b: &[u8], at: usize, _floor: usize) -> (usize, Option<Found>) {
    if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
        return (at + 5, None);
    }
    let end = walk(b, at, 512, |c| c != b'\n');
    let Some(command) = token(b, at).filter(|w| w.start == at) else { return (end, None) };
    if !matches!(
        &b[command.clone()],
        b"mysql" | b"mysqldump" | b"mysqladmin" | b"mysqlsh" | b"mysqlimport" | b"mysqlcheck"
    ) {
        return (end, None);
    }
    let mut user: &[u8] = &[];
    let mut i = command.end;
    while let Some(word) = token(b, i) {
        if word.start >= end {
            break;
        }
        i = word.end;
        let w = &b[word.start..word.end.min(end)];
        let (value, offset) = if let Some(v) = w.strip_prefix(b"--password=") {
            (v, 11)
        } else if let Some(v) = w.strip_prefix(b"-p").filter(|v| !v.is_empty() && !v.starts_with(b"-")) {
            (v, 2)
        } else {
            if let Some(u) = w.strip_prefix(b"-u").filter(|u| !u.is_empty()) {
                user = u;
            }
            continue;
        };
        let value = value.strip_suffix(b"\r").unwrap_or(value);
        // Quotes around the value are not part of it (an unclosed one is kept: a byte, never
        // half a character, is dropped; what it opens runs on to its close, `-p"two words"`).
        let (value, value_start) = match value {
            [q @ (b'"' | b'\''), inner @ .., last] if last == q => (inner, word.start + offset + 1),
            _ => (value, word.start + offset),
        };
        let whole = quoted_on(b, value_start..value_start + value.len());
        if value != user && judge::literal_password(value, 4) {
            return (
                end,
                Some(Found::widened(
                    RuleId::MysqlCliPassword,
                    value_start..value_start + value.len(),
                    whole.end.min(end),
                )),
            );
        }
    }
    (end, None)
}

/// `Authorization: Bearer|Basic|Token|Bot VALUE` (a header line, a curl `-H`, a JSON field).
/// The value is judged on its token characters; the whole runs on to the header value's end
/// (`Bearer abc%2Fdef` loses all of it).
pub fn authorization(b: &[u8], at: usize) -> Option<Found> {
    let name_end = at + 13;
    if !b.get(at..name_end).is_some_and(|n| n.eq_ignore_ascii_case(b"authorization")) {
        return None;
    }
    let mut i = name_end;
    if matches!(b.get(i), Some(b'"' | b'\'')) {
        i += 1;
    }
    i = walk(b, i, 4, |c| c == b' ' || c == b'\t');
    if b.get(i) != Some(&b':') {
        return None;
    }
    i = walk(b, i + 1, 4, |c| matches!(c, b' ' | b'\t' | b'"' | b'\''));
    let scheme_end = walk(b, i, 16, |c| c.is_ascii_alphabetic());
    let mut scheme = [0u8; 16];
    let scheme = {
        let n = scheme_end - i;
        scheme[..n].copy_from_slice(&b[i..scheme_end]);
        scheme[..n].make_ascii_lowercase();
        &scheme[..n]
    };
    if b.get(scheme_end) != Some(&b' ') {
        return None;
    }
    let value_start = scheme_end + 1;
    let value_end = walk(b, value_start, 2048, |c| c.is_ascii_alphanumeric() || b"._~+/=-".contains(&c));
    let value = &b[value_start..value_end];
    // A JWT is judged by the JWT probe, which can tell the jwt.io sample from a real one.
    if value.len() < 8 || value_end - value_start >= 2048 || value.starts_with(b"eyJ") {
        return None;
    }
    let header_end = walk(b, value_end, 2048, |c| {
        !is_space(c) && !matches!(c, b'"' | b'\'' | b'`' | b'\\' | b',' | b';' | b'<' | b'>')
    });
    let found = |rule| Some(Found::widened(rule, value_start..value_end, header_end));
    match scheme {
        b"basic" => judge::basic_credentials(value).then_some(()).and(found(RuleId::AuthorizationHeader)),
        b"bot" if keyed::discord_shape(value) => found(RuleId::DiscordBotToken),
        b"bearer" | b"token" | b"bot" | b"apikey" => (value.len() >= 16
            && !judge::is_reference(value)
            && !judge::is_placeholder(value)
            && judge::looks_random(value))
        .then_some(())
        .and(found(RuleId::AuthorizationHeader)),
        _ => None,
    }
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

fn is_base64(c: u8) -> bool {
    BASE64_BYTES[usize::from(c)]
}

/// The most a multi-line credential's walk reads (a PEM key's lines, a PuTTY file): far more
/// than any key holds (an RSA-8192 PEM is 6 KB), and a bound.
const MAX_BLOCK: usize = 1 << 20;

/// The line break(s) at `i` and the next line's indentation: a newline (`\r\n`, `\r` too) or its
/// escape in a string (`\n` in JSON, `\\n` in JSON inside a JSON string, and deeper), with the
/// spaces and tabs around it (a YAML block's indentation). Returns where the next line's text
/// starts and how many lines ended there; `(i, 0)` when no line ends at `i`.
fn next_line(b: &[u8], i: usize) -> (usize, usize) {
    let (mut j, mut breaks) = (i, 0);
    for _ in 0..256 {
        match b.get(j) {
            Some(b'\n') => (j, breaks) = (j + 1, breaks + 1),
            // A `\r` ends a line unless a `\n` follows (and ends it).
            Some(b'\r') => (j, breaks) = (j + 1, breaks + usize::from(b.get(j + 1) != Some(&b'\n'))),
            Some(b' ' | b'\t') => j += 1,
            Some(b'\\') => {
                let escaped = walk(b, j, 8, |c| c == b'\\');
                match b.get(escaped) {
                    Some(b'n') => (j, breaks) = (escaped + 1, breaks + 1),
                    Some(b'r') => (j, breaks) = (escaped + 1, breaks + usize::from(b.get(escaped + 1) != Some(&b'\\'))),
                    _ => break,
                }
            }
            _ => break,
        }
    }
    if breaks == 0 { (i, 0) } else { (j, breaks) }
}

/// Whether a line's text ends at `i`: a line break, the end of the text, or the closing quote
/// of the string that holds it.
fn line_ends(b: &[u8], i: usize) -> bool {
    i >= b.len()
        || next_line(b, i).1 > 0
        || matches!(b[i], b'"' | b'\'' | b'`')
        || (b[i] == b'\\' && b.get(i + 1) == Some(&b'"'))
}

/// Where the text of the line from `i` ends (at a newline or an escaped one), if it does within
/// `max` bytes.
fn line_text_end(b: &[u8], i: usize, max: usize) -> Option<usize> {
    let mut j = i;
    while j < b.len() && j - i < max {
        match b[j] {
            b'\n' | b'\r' => return Some(j),
            b'\\' if matches!(b.get(walk(b, j, 8, |c| c == b'\\')), Some(b'n' | b'r')) => return Some(j),
            _ => j += 1,
        }
    }
    (j >= b.len()).then_some(j)
}

/// An RFC 1421 or OpenPGP armor header at `i` (`Proc-Type: 4,ENCRYPTED`, `DEK-Info: …`,
/// `Version: …`): where its text ends. A line holding `-----` is none (so a walk never reads on
/// past another block's BEGIN line).
fn armor_header(b: &[u8], i: usize) -> Option<usize> {
    if !b.get(i)?.is_ascii_alphabetic() {
        return None;
    }
    let name_end = walk(b, i, 32, |c| c.is_ascii_alphanumeric() || c == b'-');
    if b.get(name_end) != Some(&b':') {
        return None;
    }
    let end = line_text_end(b, name_end + 1, 256)?;
    find(&b[name_end..end], b"-----").is_none().then_some(end)
}

/// `-----BEGIN … PRIVATE KEY-----` followed at once by a body: the next line (after a newline
/// or its escape, as in a GCP service-account JSON) is 40+ base64 characters, possibly after
/// armor headers, or an encrypted key's `Proc-Type:` header. A documented `MIIE...` stub, or
/// the header quoted in prose, is not. The value is the BEGIN line (what the fingerprint was
/// always taken from); the whole runs through the END line (see `pem_block`).
pub fn pem(b: &[u8], at: usize) -> Option<Found> {
    let close = at + 10 + find(b.get(at + 10..(at + 84).min(b.len()))?, b"-----")?;
    let header_end = close + 5;
    find(&b[at..close], b"PRIVATE KEY")?;
    let (key, end) = pem_block(b, header_end, LinePrefix::of(b, at));
    key.then(|| Found::widened(RuleId::PrivateKey, at..header_end, end))
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
    const NONE: LinePrefix<'static> = LinePrefix { marks: &[], diff: false };

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
    fn strip(self, b: &[u8], i: usize) -> usize {
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
    fn text_at(self, b: &[u8], i: usize) -> usize {
        let j = self.strip(b, i);
        if j != i && !b[j..].starts_with(b"-----END") && b[i..].starts_with(b"-----END") { i } else { j }
    }
}

/// The lines of a PEM block after its BEGIN line: armor headers (before the body), blank lines
/// (before the body), base64 lines, through the `-----END …-----` marker; without one (a paste
/// cut short, a string closed early), through the last line that reads as body: a blank line,
/// or a line of anything but base64, ends it. Returns whether it reads as a key's and where it
/// ends. Linear over calls: no line it reads through holds `-----BEGIN`.
fn pem_block(b: &[u8], header_end: usize, prefix: LinePrefix) -> (bool, usize) {
    let (mut i, mut end) = (header_end, header_end);
    let (mut key, mut body, mut headers) = (false, false, 0);
    while i - header_end < MAX_BLOCK {
        let (next, breaks) = next_line(b, i);
        if breaks == 0 {
            break;
        }
        i = prefix.text_at(b, next);
        if b[i..].starts_with(b"-----END") {
            if let Some(close) = b.get(i + 8..(i + 84).min(b.len())).and_then(|s| find(s, b"-----")) {
                end = i + 8 + close + 5;
            }
            break;
        }
        if body && breaks > 1 {
            break;
        }
        if !body
            && headers < 16
            && let Some(text_end) = armor_header(b, i)
        {
            key |= headers == 0 && b[i..].starts_with(b"Proc-Type:");
            (headers, i, end) = (headers + 1, text_end, text_end);
            continue;
        }
        let run = walk(b, i, MAX_BLOCK, is_base64);
        let whole_line = line_ends(b, run);
        // A line that stops short (`MIIE...`, a word of prose) is body only where it opens
        // the body, or when it is long.
        if run == i || !(whole_line || !body || run - i >= 16) {
            break;
        }
        key |= !body && run - i >= 40;
        (body, i, end) = (true, run, run);
        if !whole_line {
            break;
        }
    }
    (key, end)
}

/// Base64 of a PEM block (`LS0tLS1CRUdJTi…` is `-----BEGIN`): a private key when its decoded
/// header says so (a certificate's does not). On one line (a kubeconfig's `client-key-data`), or
/// wrapped as `base64` and `openssl base64` write it: lines of one width (40 to 120), the last
/// one no longer, in a YAML block or a JSON string with `\n` escapes. The value is the first
/// line (what the fingerprint was always taken from), the whole every line. Returns where
/// examination ended (the block's end).
pub fn base64_pem(b: &[u8], at: usize) -> (usize, Option<Found>) {
    const MAX: usize = 64 * 1024;
    let first = walk(b, at, MAX, is_base64);
    let width = first - at;
    let prefix = LinePrefix::of(b, at);
    let mut head = [0u8; 96];
    let mut held = width.min(96);
    head[..held].copy_from_slice(&b[at..at + held]);
    let mut end = first;
    if (40..=120).contains(&width) {
        while end - at < MAX {
            let (line, breaks) = next_line(b, end);
            if breaks != 1 {
                break;
            }
            // The line as it is, else after the first line's prefix (a diff's `+` is base64).
            let fits = |next: usize| {
                let run = walk(b, next, width + 1, is_base64);
                (run != next && run - next <= width && line_ends(b, run)).then_some((next, run))
            };
            let Some((next, run)) = fits(line).or_else(|| fits(prefix.strip(b, line))) else { break };
            let more = (run - next).min(96 - held);
            head[held..held + more].copy_from_slice(&b[next..next + more]);
            (held, end) = (held + more, run);
            if run - next < width {
                break;
            }
        }
    }
    let Some(decoded) = judge::base64_decode(&head[..held / 4 * 4]) else { return (end, None) };
    let header_end = decoded.iter().skip(5).position(|&c| c == b'-').map_or(decoded.len(), |i| i + 5);
    let private = decoded[..header_end].windows(11).any(|w| w == b"PRIVATE KEY");
    (end, (private && end - at >= 200).then(|| Found::widened(RuleId::Base64PrivateKey, at..first, end)))
}

/// The header lines of a PuTTY key file after its first (`PuTTY-User-Key-File-N: TYPE`); the
/// last two end the file.
const PUTTY_HEADERS: [&[u8]; 11] = [
    b"Encryption",
    b"Comment",
    b"Public-Lines",
    b"Key-Derivation",
    b"Argon2-Memory",
    b"Argon2-Passes",
    b"Argon2-Parallelism",
    b"Argon2-Salt",
    b"Private-Lines",
    b"Private-MAC",
    b"Private-Hash",
];

/// The end of a PuTTY key file whose first line's key type ends at `from`: the rest of that
/// line, then its header lines (each once) and base64 lines through `Private-MAC:` (v1's
/// `Private-Hash:`); a file cut short ends at its last such line.
pub fn putty_end(b: &[u8], from: usize, prefix: LinePrefix) -> usize {
    let mut end = line_text_end(b, from, 256).unwrap_or(from);
    let (mut i, mut seen) = (end, 0u32);
    while i - from < MAX_BLOCK {
        let (next, breaks) = next_line(b, i);
        if breaks != 1 {
            break;
        }
        let next = prefix.strip(b, next);
        let name_end = walk(b, next, 24, |c| c.is_ascii_alphanumeric() || c == b'-');
        let header = PUTTY_HEADERS.iter().position(|h| *h == &b[next..name_end]);
        if let Some(k) = header.filter(|_| b.get(name_end) == Some(&b':')) {
            let Some(text_end) = line_text_end(b, name_end + 1, 1024).filter(|_| seen & 1 << k == 0) else { break };
            (seen, i, end) = (seen | 1 << k, text_end, text_end);
            if k >= 9 {
                break;
            }
            continue;
        }
        let run = walk(b, next, 4096, is_base64);
        if run == next || !line_ends(b, run) {
            break;
        }
        (i, end) = (run, run);
    }
    end
}

/// `eyJ….eyJ….sig`: a JWT whose header decodes to JSON naming an algorithm, and whose payload
/// is not a documented sample (counting ids such as `"sub":"1234567890"`, `John Doe`, example
/// or demo issuers). Returns where examination ended.
pub fn jwt(b: &[u8], at: usize) -> (usize, Option<Found>) {
    let seg = |from: usize| walk(b, from, 4096, |c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    let h_end = seg(at);
    if b.get(h_end) != Some(&b'.') || h_end - at < 12 {
        return (h_end, None);
    }
    let p_end = seg(h_end + 1);
    if b.get(p_end) != Some(&b'.') || p_end - h_end < 12 || !b[h_end + 1..].starts_with(b"eyJ") {
        return (p_end, None);
    }
    let s_end = seg(p_end + 1);
    if s_end - p_end <= 10 {
        return (s_end, None);
    }
    let (Some(header), Some(payload)) =
        (judge::base64_decode(&b[at..h_end]), judge::base64_decode(&b[h_end + 1..p_end]))
    else {
        return (s_end, None);
    };
    if !header.windows(5).any(|w| w == b"\"alg\"") {
        return (s_end, None);
    }
    let digits: Vec<u8> = payload.iter().copied().filter(u8::is_ascii_digit).collect();
    let marked = |word: &[u8]| payload.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    let sample = judge::longest_sequence(&digits) >= 6
        || [&b"john doe"[..], b"example", b"sample", b"demo", b"your-", b"placeholder"].iter().any(|w| marked(w));
    let found = !sample && judge::random_tail_ok(&b[p_end + 1..s_end]);
    // A signature written in standard base64 (`+`, `/`, `=`) is one run with its URL-safe start.
    if !found {
        return (s_end, None);
    }
    let whole_end = walk(b, s_end, 1024, |c| is_base64(c) || c == b'_' || c == b'-');
    (whole_end, Some(Found::widened(RuleId::Jwt, at..s_end, whole_end)))
}

/// `…?sv=…&sig=SIGNATURE`: an Azure shared access signature (the `sig` of a URL that also
/// carries `sv=` or `se=`). Never reads back past `floor`, where the previous `sig=` was read.
pub fn azure_sas(b: &[u8], at: usize, floor: usize) -> Option<Found> {
    if at == 0 || !matches!(b[at - 1], b'?' | b'&') {
        return None;
    }
    // The query back to its `?` (or to where the previous `sig=` was read), in one walk that
    // also notes `sv=`, `se=` or `sp=` in it: this runs at every `sig=`.
    let (mut q, mut sas) = (at, false);
    while q > floor && at - q < 1024 && !is_space(b[q - 1]) && b[q - 1] != b'?' {
        q -= 1;
        sas |= b[q] == b's' && q + 2 < at && matches!(b[q + 1], b'v' | b'e' | b'p') && b[q + 2] == b'=';
    }
    let start = at + 4;
    let end = walk(b, start, 256, |c| c.is_ascii_alphanumeric() || matches!(c, b'%' | b'+' | b'/' | b'='));
    let sig = &b[start..end];
    (sas && sig.len() >= 30 && !judge::is_placeholder(sig) && judge::shannon_entropy(sig) >= 3.5)
        .then(|| Found::new(RuleId::AzureSasToken, start..end))
}
