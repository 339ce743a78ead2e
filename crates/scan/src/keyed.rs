//! Credentials found by the name they are assigned to: `API_KEY=…`, `"client_secret": "…"`,
//! `password: …`, `--token …`, docker's `"auth": "…"`, npm's `_authToken=…`. A keyword hit is
//! widened to the whole key, the key is classified by its last word, and the value (one line,
//! never across a line break) is judged for its kind. Every walk is bounded.

use super::judge;
use super::rules::RuleId;
use std::ops::Range;

const MAX_KEY: usize = 96;
const MAX_VALUE: usize = 4096;

pub struct Assignment {
    pub key: Range<usize>,
    /// What is judged and fingerprinted.
    pub value: Range<usize>,
    /// What redaction replaces: the value, and in a quoted value the rest after an escaped quote
    /// (`"abc\"def"`), which the value has always stopped at.
    pub whole: Range<usize>,
}

/// A table of the bytes `member` accepts, built at compile time: the walks over keys and
/// values run at every keyword, and a load is cheaper than the comparisons in the component.
macro_rules! byte_table {
    (|$b:ident| $member:expr) => {{
        let mut table = [false; 256];
        let mut i = 0;
        while i < 256 {
            let $b = i as u8;
            table[i] = $member;
            i += 1;
        }
        table
    }};
}

const KEY_BYTES: [bool; 256] = byte_table!(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));

/// Bytes that end an unquoted value.
const VALUE_ENDS: [bool; 256] = byte_table!(|b| matches!(
    b,
    b' ' | b'\t' | b'\r' | b'\n' | b'"' | b'\'' | b'`' | b',' | b';' | b'&' | b'(' | b')' | b'[' | b']'
));

fn is_key_byte(b: u8) -> bool {
    KEY_BYTES[usize::from(b)]
}

fn ends_value(b: u8) -> bool {
    VALUE_ENDS[usize::from(b)]
}

/// The key around the keyword at `at` and the value assigned to it, if the bytes there read as
/// an assignment, and where examination ended (keyword hits before it are covered). `floor` is
/// where the previous examination ended: never walked back past.
pub fn parse(b: &[u8], at: usize, floor: usize) -> (usize, Option<Assignment>) {
    let mut reach = at;
    let found = assignment(b, at, floor, &mut reach);
    (reach, found)
}

/// `reach` is raised to the furthest byte read, so anchors inside what was read are skipped.
fn assignment(b: &[u8], at: usize, floor: usize, reach: &mut usize) -> Option<Assignment> {
    let mut start = at;
    while start > floor && at - start < MAX_KEY && is_key_byte(b[start - 1]) {
        start -= 1;
    }
    let mut end = at;
    while end < b.len() && end - start < MAX_KEY && is_key_byte(b[end]) {
        end += 1;
    }
    *reach = end;
    if end - start >= MAX_KEY {
        return None;
    }
    // Most keys near a keyword name something else (`Authorization`, `token_count`): their
    // ending says so before any value is read.
    if !credential_ending(&b[start..end]) {
        return None;
    }
    let flag = b[start] == b'-';
    let upper = b[start..end].iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_');
    let mut i = end;
    // A quoted key (`"api_key"`, `\"api_key\"` in escaped JSON, `os.environ["API_KEY"]`).
    let quoted_key = start > 0 && matches!(b[start - 1], b'"' | b'\'');
    if b.get(i) == Some(&b'\\') && matches!(b.get(i + 1), Some(b'"')) {
        i += 1;
    }
    if i < b.len() && matches!(b[i], b'"' | b'\'') {
        i += 1;
        if b.get(i) == Some(&b']') {
            i += 1;
        }
    }
    // Aligned assignments (`password          = …`, terraform fmt) put many spaces here.
    let spaces = |i: &mut usize, max: usize| {
        let from = *i;
        while *i < b.len() && *i - from < max && matches!(b[*i], b' ' | b'\t') {
            *i += 1;
        }
        *i - from
    };
    let gap = spaces(&mut i, 64);
    let next_is_quote = matches!(b.get(i), Some(b'"' | b'\''));
    let op = match (b.get(i), b.get(i + 1)) {
        (Some(b':'), Some(b'=')) | (Some(b'='), Some(b'>')) | (Some(b'?'), Some(b'=')) => 2,
        (Some(b'='), Some(b'=')) => return None,
        (Some(b'=' | b':'), _) => 1,
        // `define('DB_PASSWORD', '…')`, `ENV.fetch("API_KEY", "…")`.
        (Some(b','), _) if quoted_key => 1,
        // `--password …`; `#define WIFI_PASSWORD "…"`, Dockerfile `ENV API_KEY "…"`.
        _ if gap > 0 && (flag || (upper && next_is_quote)) => 0,
        _ => {
            // A Kubernetes env entry: `- name: API_KEY` with `value: …` on the next line.
            i = next_line_value(b, start, i)?;
            0
        }
    };
    i += op;
    spaces(&mut i, 8);
    let escaped_quote = b.get(i) == Some(&b'\\') && matches!(b.get(i + 1), Some(b'"'));
    if escaped_quote {
        i += 1;
    }
    // A backtick opens a value too (Markdown inline code), with no space inside.
    let quote = match b.get(i) {
        Some(&q @ (b'"' | b'\'' | b'`')) => {
            i += 1;
            Some(q)
        }
        _ => None,
    };
    let from = i;
    let mut whole_end = None;
    match quote {
        Some(q) => {
            // Credentials hold no spaces: a quoted phrase is prose. `\"` ends escaped JSON.
            while i < b.len() && i - from < MAX_VALUE && b[i] != q && !matches!(b[i], b'\n' | b' ' | b'\t' | b'\\') {
                i += 1;
            }
            *reach = i;
            if b.get(i) != Some(&q) && !(b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&q)) {
                return None;
            }
            // In a string its own quote opened (not `\"`), `\"` is a quote inside the value:
            // the value (as always judged) stops there, the whole runs on to the closing quote.
            if b[i] == b'\\' && !escaped_quote && q != b'`' {
                let mut j = i;
                while j < b.len() && j - from < MAX_VALUE && b[j] != q && !matches!(b[j], b'\n' | b' ' | b'\t') {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                *reach = j.min(b.len());
                whole_end = (b.get(j) == Some(&q)).then_some(j);
            }
        }
        None => {
            while i < b.len() && i - from < MAX_VALUE && !ends_value(b[i]) {
                i += 1;
            }
            *reach = i;
            // `token = get_token()` or `key: items[0]`: code, not a value.
            if matches!(b.get(i), Some(b'(' | b'[')) {
                return None;
            }
        }
    }
    if i == from || i - from >= MAX_VALUE {
        return None;
    }
    // A unified diff's `-` or `+` opening the line (`-_auth=…`) is no part of the key.
    let diff_marker = matches!(b[start], b'-' | b'+')
        && (start == 0 || matches!(b[start - 1], b'\n' | b'\r'))
        && !matches!(b.get(start + 1), Some(b'-' | b'+'))
        && start + 1 < end;
    Some(Assignment { key: start + usize::from(diff_marker)..end, value: from..i, whole: from..whole_end.unwrap_or(i) })
}

/// For a key written as `name: KEY` at the end of its line, where the next line's `value:`
/// starts; `None` for any other layout.
fn next_line_value(b: &[u8], key_start: usize, after_key: usize) -> Option<usize> {
    let before = b[key_start.saturating_sub(16)..key_start].trim_ascii_end();
    let before = before.strip_suffix(b"\"").or(before.strip_suffix(b"'")).unwrap_or(before).trim_ascii_end();
    if !before.ends_with(b"name:") {
        return None;
    }
    let mut i = after_key;
    if b.get(i) == Some(&b'\r') {
        i += 1;
    }
    if b.get(i) != Some(&b'\n') {
        return None;
    }
    i += 1;
    let indent = b[i..].iter().take(32).take_while(|c| matches!(c, b' ' | b'\t')).count();
    i += indent;
    let rest = b.get(i..i + 6)?;
    if &rest[..5] != b"value" {
        return None;
    }
    i += 5;
    i += b[i..].iter().take(4).take_while(|c| matches!(c, b' ' | b'\t')).count();
    (b.get(i) == Some(&b':')).then_some(i + 1)
}

/// Whether a key ends the way a credential's name ends (`…password`, `…_key`, `…token`,
/// `_auth`, …), read from its last few bytes; `classify` decides the rest.
fn credential_ending(key: &[u8]) -> bool {
    // `DB_PASSWORD_PROD`, `API_KEY_2`: the name ends before an environment or a number.
    let key = match key.iter().rposition(|c| matches!(c, b'_' | b'-' | b'.')) {
        Some(i) if i > 0 && is_suffix_word(&key[i + 1..]) => &key[..i],
        _ => key,
    };
    const ENDINGS: [&[u8]; 15] = [
        b"pass",
        b"passwd",
        b"pwd",
        b"pw",
        b"password",
        b"passphrase",
        b"secret",
        b"token",
        b"key",
        b"keys",
        b"credential",
        b"credentials",
        b"auth",
        b"base",
        b"creds",
    ];
    // Each ending as a number of its bytes, the last byte lowest, and the key's last twelve
    // bytes lowercased the same way: an ending is one masked compare, not a slice compare (a
    // call in the component) per ending at every keyword.
    const fn packed(word: &[u8]) -> u128 {
        let mut value = 0u128;
        let mut i = 0;
        while i < word.len() {
            value = value << 8 | word[i] as u128;
            i += 1;
        }
        value
    }
    const PACKED: [(u128, u128); 15] = {
        let mut table = [(0u128, 0u128); 15];
        let mut k = 0;
        while k < 15 {
            table[k] = (packed(ENDINGS[k]), (1u128 << (8 * ENDINGS[k].len())) - 1);
            k += 1;
        }
        table
    };
    let n = key.len().min(12);
    let tail = key[key.len() - n..].iter().fold(0u128, |v, c| v << 8 | u128::from(c.to_ascii_lowercase()));
    PACKED.iter().zip(ENDINGS).any(|(&(word, mask), e)| e.len() <= n && tail & mask == word)
}

/// A word that follows a credential's name without changing it: a number or an environment.
fn is_suffix_word(word: &[u8]) -> bool {
    const ENVIRONMENTS: &[&[u8]] = &[b"prod", b"dev", b"staging", b"stage", b"test", b"live", b"local", b"new", b"old"];
    (!word.is_empty() && word.iter().all(u8::is_ascii_digit))
        || ENVIRONMENTS.iter().any(|e| word.eq_ignore_ascii_case(e))
}

/// The last three words of a key, lowercased into `buf`: `DB_PASSWORD`, `dbPassword` and
/// `db-password` all end in `["db", "password"]`. No allocation: this runs on every key.
fn last_words<'a>(key: &[u8], buf: &'a mut [u8; MAX_KEY]) -> [Option<&'a [u8]>; 3] {
    let n = key.len().min(MAX_KEY);
    for (d, s) in buf.iter_mut().zip(&key[..n]) {
        *d = s.to_ascii_lowercase();
    }
    // Word boundaries: non-alphanumerics, and lower→upper (camel case) in the original.
    let boundary = |i: usize| i > 0 && key[i].is_ascii_uppercase() && key[i - 1].is_ascii_lowercase();
    let mut ranges: [(usize, usize); 3] = [(0, 0); 3];
    let (mut found, mut end) = (0, n);
    let mut i = n;
    while i > 0 && found < 3 {
        i -= 1;
        if !key[i].is_ascii_alphanumeric() {
            if end > i + 1 {
                ranges[found] = (i + 1, end);
                found += 1;
            }
            end = i;
        } else if boundary(i) {
            ranges[found] = (i, end);
            found += 1;
            end = i;
        }
    }
    if found < 3 && end > 0 && key[..end].iter().all(u8::is_ascii_alphanumeric) {
        ranges[found] = (0, end);
        found += 1;
    }
    let buf: &'a [u8] = buf;
    let word = |k: usize| (k < found).then(|| &buf[ranges[k].0..ranges[k].1]);
    [word(0), word(1), word(2)]
}

/// What kind of credential a key names, judged by its last word (`password_hash` and
/// `token_count` name other things).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Password,
    Secret,
    /// docker `config.json`'s `auth` (base64 of `user:password`).
    DockerAuth,
    /// npm's `_auth` (base64) and `_authToken`.
    Npm,
}

pub fn classify(key: &[u8]) -> Option<KeyKind> {
    if key.eq_ignore_ascii_case(b"_auth")
        || key.eq_ignore_ascii_case(b"_password")
        || key.eq_ignore_ascii_case(b"_authToken")
    {
        return Some(KeyKind::Npm);
    }
    if key.eq_ignore_ascii_case(b"auth") {
        return Some(KeyKind::DockerAuth);
    }
    let mut buf = [0u8; MAX_KEY];
    let [mut last, mut before, mut third] = last_words(key, &mut buf);
    // `DB_PASSWORD_PROD`, `OPENAI_API_KEY_2`: an environment or a number after the name.
    if last.is_some_and(is_suffix_word) && before.is_some() {
        (last, before, third) = (before, third, None);
    }
    let last = last?;
    // `PassWord`, `PassPhrase`, `ApiKey`: one word written in camel case.
    let mut joined = [0u8; 32];
    let last: &[u8] = match before {
        Some(b) if b.len() + last.len() <= 32 => {
            joined[..b.len()].copy_from_slice(b);
            joined[b.len()..b.len() + last.len()].copy_from_slice(last);
            let whole = &joined[..b.len() + last.len()];
            if matches!(whole, b"password" | b"passphrase" | b"apikey" | b"passwd") { whole } else { last }
        }
        _ => last,
    };
    let password = matches!(last, b"password" | b"passwd" | b"pwd" | b"pass" | b"passphrase" | b"pw")
        || last.ends_with(b"password")
        || last.ends_with(b"passwd");
    if password {
        return Some(KeyKind::Password);
    }
    let qualifier = |w: Option<&[u8]>| {
        matches!(
            w,
            Some(
                b"api"
                    | b"access"
                    | b"secret"
                    | b"private"
                    | b"signing"
                    | b"client"
                    | b"master"
                    | b"encryption"
                    | b"app"
                    | b"account"
                    | b"service"
                    | b"auth"
                    | b"session"
                    | b"webhook"
                    | b"deploy"
                    | b"admin"
                    | b"shared"
                    | b"license"
                    | b"consumer"
                    | b"storage"
                    | b"subscription"
                    | b"x"
            )
        )
    };
    let secret =
        matches!(last, b"secret" | b"token" | b"apikey" | b"credential" | b"credentials" | b"creds" | b"secretkey")
            || last.ends_with(b"token")
            || last.ends_with(b"secret")
            || last.ends_with(b"apikey")
            || (matches!(last, b"key" | b"keys") && qualifier(before))
            || (last == b"base" && before == Some(b"key") && third == Some(b"secret"));
    secret.then_some(KeyKind::Secret)
}

/// Which rule, if any, an assignment of `value` to `key` breaks.
pub fn judge(key: &[u8], value: &[u8]) -> Option<RuleId> {
    let kind = classify(key)?;
    let vendor = |name: &[u8]| key.windows(name.len()).any(|w| w.eq_ignore_ascii_case(name));
    match kind {
        KeyKind::DockerAuth => judge::basic_credentials(value).then_some(RuleId::DockerConfigAuth),
        KeyKind::Npm => {
            let ok = if key.eq_ignore_ascii_case(b"_authToken") {
                !judge::is_reference(value) && !judge::is_placeholder(value) && judge::looks_random(value)
            } else {
                judge::basic_credentials(value) || (key.eq_ignore_ascii_case(b"_password") && base64_password(value))
            };
            ok.then_some(RuleId::NpmrcAuth)
        }
        KeyKind::Password => judge::literal_password(value, 6).then_some(RuleId::PasswordField),
        KeyKind::Secret => {
            if judge::is_reference(value) || judge::is_placeholder(value) || judge::is_path(value) {
                return None;
            }
            if vendor(b"mailgun") && mailgun_shape(value) {
                return Some(RuleId::MailgunApiKey);
            }
            if vendor(b"sentry") && value.len() == 64 && value.iter().all(u8::is_ascii_hexdigit) {
                return Some(RuleId::SentryAuthToken);
            }
            if discord_shape(value) {
                return Some(RuleId::DiscordBotToken);
            }
            judge::looks_random(value).then_some(RuleId::GenericSecret)
        }
    }
}

fn base64_password(value: &[u8]) -> bool {
    judge::base64_decode(value).is_some_and(|p| judge::literal_password(&p, 4))
}

/// Mailgun's newer keys: 32 hex, then two groups of 8.
fn mailgun_shape(v: &[u8]) -> bool {
    let parts: Vec<&[u8]> = v.split(|&b| b == b'-').collect();
    parts.len() == 3 && [32, 8, 8].iter().zip(&parts).all(|(n, p)| p.len() == *n && p.iter().all(u8::is_ascii_hexdigit))
}

/// A Discord bot token: base64 of the bot's numeric id (starts with M, N or O), a 6-character
/// timestamp and a 27–38 character HMAC, dot-separated.
pub fn discord_shape(v: &[u8]) -> bool {
    let parts: Vec<&[u8]> = v.split(|&b| b == b'.').collect();
    let class = |p: &[u8]| p.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'));
    parts.len() == 3
        && matches!(parts[0].first(), Some(b'M' | b'N' | b'O'))
        && (23..=26).contains(&parts[0].len())
        && parts[1].len() == 6
        && (27..=38).contains(&parts[2].len())
        && parts.iter().all(|p| class(p))
        && judge::random_tail_ok(parts[2])
}
