//! Private keys written as blocks of lines: PEM blocks (`-----BEGIN … PRIVATE KEY-----` through
//! its END line, plain, and base64-encoded as a kubeconfig or `base64` writes them) and the rest of
//! a PuTTY key file after its first line. A block's value is its first line (what the fingerprint
//! was always taken from); its whole runs through its last line, read across raw and escaped line
//! breaks (a key in a JSON string) and the prefix each of its lines repeats (`LinePrefix`: a
//! diff's marker, a quote, a comment). Every walk is bounded by `MAX_BLOCK`.

use super::judge;
use super::rules::RuleId;
use super::shape_reading::{Found, LinePrefix, is_base64, walk};

/// The most a multi-line credential's walk reads (a PEM key's lines, a PuTTY file): far more
/// than any key holds (an RSA-8192 PEM is 6 KB), and a bound.
const MAX_BLOCK: usize = 1 << 20;

/// Where `needle` first occurs in `hay`: a byte test per position, a compare only where the
/// first byte matches (a compare per position was most of a PEM header's cost).
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let last = hay.len().checked_sub(needle.len())?;
    (0..=last).find(|&i| hay[i] == first && &hay[i + 1..i + needle.len()] == rest)
}

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
