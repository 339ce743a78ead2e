//! Credentials recognised by the shape around them rather than a prefix of their own: URL
//! userinfo, `.netrc` entries, `.pgpass` lines, `mysql -p…`, `Authorization:` headers, JWTs
//! (decoded to tell the jwt.io sample from a real one) and Azure SAS URLs. Each probe reads a
//! bounded window from its anchor and returns the value's span and where its examination ended.
//! The private keys written as blocks of lines (PEM, PuTTY) are `key_blocks`; what both read
//! with, and the finding's two spans, are `shape_reading`.

use super::judge;
use super::keyed;
use super::rules::RuleId;
use super::shape_reading::{Found, LinePrefix, is_base64, is_space, walk};
use std::ops::Range;

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
