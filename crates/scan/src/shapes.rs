//! Credentials recognised by the shape around them rather than a prefix of their own: URL
//! userinfo, `.netrc` entries, `.pgpass` lines, `mysql -p…`, `Authorization:` headers, PEM
//! blocks (plain and base64-encoded), JWTs (decoded to tell the jwt.io sample from a real one)
//! and Azure SAS URLs. Each probe reads a bounded window from its anchor and returns the value's
//! span and where its examination ended.

use super::judge;
use super::keyed;
use super::rules::RuleId;
use std::ops::Range;

pub struct Found {
    pub rule: RuleId,
    pub value: Range<usize>,
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

/// `scheme://user:password@host`: the password, unless it is a placeholder, a reference, the
/// user's own name, or a non-random default on a local or documentation host.
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
    let pass_end = walk(b, pass_start, 256, |c| stop(c) || c == b':');
    if b.get(pass_end) != Some(&b'@') || pass_end == pass_start {
        return None;
    }
    let (user, pass) = (&b[user_start..user_end], &b[pass_start..pass_end]);
    if pass.len() < 3 || user == pass || judge::is_password_placeholder(pass) || judge::is_reference(pass) {
        return None;
    }
    if user.is_empty() && pass.starts_with(b"$") {
        return None;
    }
    let host_end = walk(b, pass_end + 1, 256, |c| stop(c) && c != b'@');
    if local_host(&b[pass_end + 1..host_end]) && !judge::looks_random(pass) {
        return None;
    }
    Some(Found { rule: RuleId::PasswordInUrl, value: pass_start..pass_end })
}

/// The next whitespace-separated token from `i` (spaces and newlines both separate in .netrc).
fn token(b: &[u8], i: usize) -> Option<Range<usize>> {
    let start = walk(b, i, 64, is_space);
    let end = walk(b, start, 256, |c| !is_space(c));
    (end > start && end - start < 256).then_some(start..end)
}

/// `.netrc`: `machine HOST [login USER] [password PASS] …`, on one line or several.
/// Returns where examination ended (the next `machine` starts a new examination).
pub fn netrc(b: &[u8], at: usize, _floor: usize) -> (usize, Option<Found>) {
    if at > 0 && !is_space(b[at - 1]) {
        return (at + 7, None);
    }
    let Some(host) = token(b, at + 7) else { return (at + 7, None) };
    let mut i = host.end;
    let mut user: &[u8] = &[];
    for _ in 0..6 {
        let Some(word) = token(b, i) else { break };
        let name = &b[word.clone()];
        if !matches!(name, b"login" | b"password" | b"account" | b"port") {
            return (word.start, None);
        }
        let Some(arg) = token(b, word.end) else { return (word.end, None) };
        i = arg.end;
        match name {
            b"login" => user = &b[arg.clone()],
            b"password" => {
                let pass = &b[arg.clone()];
                let found = (pass != user && judge::literal_password(pass, 4))
                    .then(|| Found { rule: RuleId::NetrcPassword, value: arg.clone() });
                return (arg.end, found);
            }
            _ => {}
        }
    }
    (i, None)
}

/// `.pgpass`: `host:port:database:user:password`, a line of its own or a word of a command
/// (`echo '…' >> ~/.pgpass`); the anchor is the port field. Returns where examination ended.
/// Never reads back past `floor`, where the previous examination ended: a word that starts
/// before it was read then, and was too long to be a line of its own.
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
    let fields: Vec<&[u8]> = b[start..end].split(|&c| c == b':').collect();
    if fields.len() != 5 || fields[..4].iter().any(|f| f.is_empty()) {
        return (end, None);
    }
    let (user, pass) = (fields[3], fields[4]);
    if pass == user || !judge::literal_password(pass, 4) {
        return (end, None);
    }
    (end, Some(Found { rule: RuleId::PgpassPassword, value: end - pass.len()..end }))
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
        // half a character, is dropped).
        let (value, value_start) = match value {
            [q @ (b'"' | b'\''), inner @ .., last] if last == q => (inner, word.start + offset + 1),
            _ => (value, word.start + offset),
        };
        if value != user && judge::literal_password(value, 4) {
            return (
                end,
                Some(Found { rule: RuleId::MysqlCliPassword, value: value_start..value_start + value.len() }),
            );
        }
    }
    (end, None)
}

/// `Authorization: Bearer|Basic|Token|Bot VALUE` (a header line, a curl `-H`, a JSON field).
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
    let found = |rule| Some(Found { rule, value: value_start..value_end });
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

/// `-----BEGIN … PRIVATE KEY-----` followed at once by a body: the next line (after a newline
/// or a `\n` escape, as in a GCP service-account JSON) is 40+ base64 characters, or an encrypted
/// key's `Proc-Type:` header. A documented `MIIE...` stub, or the header quoted in prose, is not.
pub fn pem(b: &[u8], at: usize) -> Option<Found> {
    let close = at + 10 + find(b.get(at + 10..(at + 84).min(b.len()))?, b"-----")?;
    let header_end = close + 5;
    find(&b[at..close], b"PRIVATE KEY")?;
    // The line break (and the indentation of a YAML block) before the body.
    let mut i = header_end;
    let mut broke = false;
    for _ in 0..40 {
        match (b.get(i), b.get(i + 1)) {
            (Some(b'\r' | b'\n'), _) => (i, broke) = (i + 1, true),
            (Some(b' ' | b'\t'), _) if broke => i += 1,
            (Some(b'\\'), Some(b'n' | b'r')) => (i, broke) = (i + 2, true),
            _ => break,
        }
    }
    if !broke {
        return None;
    }
    let body = walk(b, i, 40, |c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
    (body - i >= 40 || b[i..].starts_with(b"Proc-Type:"))
        .then_some(Found { rule: RuleId::PrivateKey, value: at..header_end })
}

/// Base64 of a PEM block (`LS0tLS1CRUdJTi…` is `-----BEGIN`): a private key when its decoded
/// header says so (a certificate's does not). Returns where examination ended (the run's end).
pub fn base64_pem(b: &[u8], at: usize) -> (usize, Option<Found>) {
    let end = walk(b, at, 64 * 1024, |c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
    let head = &b[at..(at + 96).min(end)];
    let Some(decoded) = judge::base64_decode(&head[..head.len() / 4 * 4]) else { return (end, None) };
    let header_end = decoded.iter().skip(5).position(|&c| c == b'-').map_or(decoded.len(), |i| i + 5);
    let private = decoded[..header_end].windows(11).any(|w| w == b"PRIVATE KEY");
    (end, (private && end - at >= 200).then_some(Found { rule: RuleId::Base64PrivateKey, value: at..end }))
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
    (s_end, found.then_some(Found { rule: RuleId::Jwt, value: at..s_end }))
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
        .then_some(Found { rule: RuleId::AzureSasToken, value: start..end })
}
