//! The credential scanner, run before every write and on every text the plugin stores or shows.
//!
//! One pass of an Aho-Corasick automaton finds anchors: token prefixes (`ghp_`, `AKIA`, …),
//! credential words in key names (`password`, `token`, `key`, …) and shape markers (`://`,
//! `-----BEGIN`, `machine`, `:5432:`). Each anchor hands its position to its probes, which read a
//! bounded window from there and judge the value with context (key name, placeholder shape,
//! entropy, example markers; see `judge`). Linear in the text: a token must start after a byte
//! that cannot be part of it, so a run of token characters is examined once; keyword and line
//! probes remember where they stopped and skip anchors inside what they already read.
//!
//! A finding has a value, the bytes that name it (judged, and fingerprinted for an operator's
//! acknowledgement), and a whole, the bytes redaction replaces: a PEM key's value is its BEGIN
//! line, its whole the block through the END line; a PuTTY file's value is its first line, its
//! whole the file. Those two are fingerprinted on their whole: every RSA key shares a BEGIN line.
//!
//! Owns: the rule table (`rules`), the probes (`keyed`, `shapes`, `key_blocks`, which read with
//! `shape_reading`), the judgements (`judge`), and the public API (`scan_secrets`,
//! `redact_secrets`, `fingerprint`), and the list of characters that hide text from a person
//! (`hides_text`), which the plugin and the host both render escaped. Depends on nothing of the
//! plugin: the plugin's `library::scan` adapts its findings.

mod hidden;
mod judge;
mod key_blocks;
mod keyed;
mod prefilter;
mod rules;
mod shape_reading;
mod shapes;
mod words;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
pub use hidden::hides_text;
pub use prefilter::Teddy as Prefilter;
use prefilter::Teddy;
use regex::bytes::Regex;
pub use rules::RuleId;
use rules::{KEYWORDS, MAX_TOKEN, TOKEN_RULES};
use std::ops::{ControlFlow, Range};
use std::sync::OnceLock;

/// A scan stops after this many findings: enough to refuse and to show where; a file made of
/// keys costs no more to refuse than one with a few.
pub const MAX_SECRET_FINDINGS: usize = 100;

/// What an anchor hands its position to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    Token(usize),
    Keyed,
    Authorization,
    Url,
    Netrc,
    Pgpass,
    Mysql,
    Pem,
    Base64Pem,
    Jwt,
    Sas,
}

/// Whether literal searches go through `Prefilter` (the component, on wasm SIMD128) rather than
/// through aho-corasick's or regex's own search (native builds, where nothing but tests and
/// benchmarks runs the scanner).
pub const FILTERED: bool = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));

struct Scanner {
    /// The anchors' automata for `find_iter`, where not `FILTERED` (and in tests, which compare
    /// the two searches).
    anchors: Option<Anchors>,
    /// The candidate filter, where `FILTERED` (and in tests).
    teddy: Option<Teddy>,
    /// Per anchor pattern, the probes it triggers.
    probes: Vec<Vec<Probe>>,
    /// Per token rule, its pattern anchored at the token's start.
    tokens: Vec<OnceLock<Regex>>,
}

/// The anchors as Aho-Corasick automata, each built on first use: a short text (a prompt a hook
/// redacts, a log line) is searched with the NFA, which builds in a fraction of the DFA's time
/// (the DFA was a tenth of a hook process); a long one with the DFA, which searches faster. Both
/// find the same matches (leftmost-longest over the same patterns).
struct Anchors {
    patterns: Vec<String>,
    nfa: OnceLock<AhoCorasick>,
    dfa: OnceLock<AhoCorasick>,
}

/// Texts at least this long are searched with the DFA.
const DFA_FROM_BYTES: usize = 64 << 10;

impl Anchors {
    fn for_text(&self, len: usize) -> &AhoCorasick {
        let (cell, kind) = if len >= DFA_FROM_BYTES {
            (&self.dfa, AhoCorasickKind::DFA)
        } else {
            (&self.nfa, AhoCorasickKind::ContiguousNFA)
        };
        cell.get_or_init(|| {
            // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .kind(Some(kind))
                .build(&self.patterns)
                .unwrap_or_else(|e| panic!("scanner anchors: {e}"))
        })
    }
}

/// Every anchor the automaton searches for, and per anchor the probes it triggers.
fn anchor_table() -> (Vec<String>, Vec<Vec<Probe>>) {
    let mut patterns: Vec<String> = Vec::new();
    let mut probes: Vec<Vec<Probe>> = Vec::new();
    let mut add = |pattern: String, probe: Probe| match patterns.iter().position(|p| *p == pattern) {
        Some(i) => probes[i].push(probe),
        None => {
            patterns.push(pattern);
            probes.push(vec![probe]);
        }
    };
    for (i, rule) in TOKEN_RULES.iter().enumerate() {
        for anchor in rule.anchors {
            add((*anchor).to_string(), Probe::Token(i));
            // `key-id: …` is read by the mailgun rule's anchor; the key rule still needs it.
            if KEYWORDS.iter().any(|k| anchor.to_ascii_lowercase().starts_with(k)) {
                add((*anchor).to_string(), Probe::Keyed);
            }
        }
    }
    for word in KEYWORDS {
        let capitalised = format!("{}{}", word[..1].to_ascii_uppercase(), &word[1..]);
        for spelling in [word.to_string(), word.to_ascii_uppercase(), capitalised] {
            add(spelling.clone(), Probe::Keyed);
            if *word == "auth" {
                add(spelling, Probe::Authorization);
            }
        }
    }
    for (anchor, probe) in [
        ("://", Probe::Url),
        ("machine", Probe::Netrc),
        ("mysql", Probe::Mysql),
        (":5432:", Probe::Pgpass),
        (":5433:", Probe::Pgpass),
        (":6432:", Probe::Pgpass),
        (":*:", Probe::Pgpass),
        ("-----BEGIN", Probe::Pem),
        ("LS0tLS1CRUdJTi", Probe::Base64Pem),
        ("eyJ", Probe::Jwt),
        ("sig=", Probe::Sas),
    ] {
        add(anchor.to_string(), probe);
    }
    (patterns, probes)
}

fn scanner() -> &'static Scanner {
    static SCANNER: OnceLock<Scanner> = OnceLock::new();
    SCANNER.get_or_init(|| {
        let (patterns, probes) = anchor_table();
        // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
        let anchors = (cfg!(test) || !FILTERED).then(|| Anchors {
            patterns: patterns.clone(),
            nfa: OnceLock::new(),
            dfa: OnceLock::new(),
        });
        // Compiled on a rule's first candidate: most texts (and every log line) reach few rules,
        // and compiling all of them up front cost every fresh process its start-up time.
        let tokens = TOKEN_RULES.iter().map(|_| OnceLock::new()).collect();
        let teddy = (cfg!(test) || FILTERED).then(|| {
            let bytes: Vec<&[u8]> = patterns.iter().map(|p| p.as_bytes()).collect();
            Teddy::new(&bytes)
        });
        Scanner { anchors, teddy, probes, tokens }
    })
}

/// Every anchor in `b` as `find_iter` yields them (leftmost-longest, not overlapping), as
/// (start, pattern), until `found` says stop.
fn each_anchor(s: &Scanner, b: &[u8], mut found: impl FnMut(usize, usize) -> ControlFlow<()>) {
    match (&s.teddy, &s.anchors) {
        (Some(teddy), _) if FILTERED => filtered_anchors(teddy, b, found),
        // Never where `FILTERED` (a constant): the component then carries no automaton code.
        (_, Some(anchors)) if !FILTERED || cfg!(test) => {
            for m in anchors.for_text(b.len()).find_iter(b) {
                if found(m.start(), m.pattern().as_usize()).is_break() {
                    return;
                }
            }
        }
        // `scanner` builds the DFA wherever it does not build the filter: a scan that found no
        // anchors here would pass every credential.
        _ => unreachable!("the scanner was built without an anchor search"),
    }
}

/// `each_anchor` through the prefilter: at each candidate position the longest anchor there, if
/// any, and the walk goes on from its end, as `find_iter` does (leftmost-longest).
fn filtered_anchors(teddy: &Teddy, b: &[u8], mut found: impl FnMut(usize, usize) -> ControlFlow<()>) {
    teddy.candidates(b, |pos| match teddy.longest_at(b, pos) {
        Some((pattern, end)) => {
            found(pos, pattern)?;
            ControlFlow::Continue(end)
        }
        None => ControlFlow::Continue(pos + 1),
    });
}

/// A credential found by `scan_secrets`: never the value, only where it is and what names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    /// 1-based line in the scanned text.
    pub line: usize,
    /// What was found, with the value redacted (`AKIA… 20 characters, redacted`).
    pub message: String,
    /// `rule@hash` of the value (see `fingerprint`): what an operator's acknowledgement names.
    pub fingerprint: String,
}

/// One credential found: its rule and where it lies in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub rule: RuleId,
    /// The bytes that name it: judged, fingerprinted, and where its line is counted.
    pub value: Range<usize>,
    /// The bytes redaction replaces: `value` and whatever of the credential continues it (a PEM
    /// key's body and END line, a PuTTY file's lines, wrapped base64). Never narrower.
    pub whole: Range<usize>,
}

impl From<shape_reading::Found> for Hit {
    fn from(f: shape_reading::Found) -> Hit {
        Hit { rule: f.rule, value: f.value, whole: f.whole }
    }
}

/// Bytes a token may be made of: a token only starts after a byte outside this set.
fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+' | b'~')
}

/// Whether a token may not start at `start`: a token byte before it, unless that byte is a
/// unified diff's `-` or `+` marker opening the line (`-ghp_…`, `+sk-ant-…`); inside a word
/// (`foo-ghp_…`) it stays joined.
fn joined(b: &[u8], start: usize) -> bool {
    start > 0
        && token_byte(b[start - 1])
        && !(matches!(b[start - 1], b'-' | b'+') && (start == 1 || matches!(b[start - 2], b'\n' | b'\r')))
}

/// A probe that reads to the end of its entry and says where it stopped; it never reads back
/// past where the previous call of its kind stopped (the third argument).
type LineProbe = fn(&[u8], usize, usize) -> (usize, Option<shape_reading::Found>);

/// Where each kind of probe stopped reading: anchors before it were covered.
struct Covered {
    keyed: usize,
    netrc: usize,
    pgpass: usize,
    mysql: usize,
    jwt: usize,
    base64_pem: usize,
    sas: usize,
    /// Per token rule: a rule whose characters include `/` or `=` can start after either, so
    /// its anchors inside a run it already read are skipped.
    tokens: Vec<usize>,
}

impl Covered {
    fn new() -> Covered {
        Covered {
            keyed: 0,
            netrc: 0,
            pgpass: 0,
            mysql: 0,
            jwt: 0,
            base64_pem: 0,
            sas: 0,
            tokens: vec![0; TOKEN_RULES.len()],
        }
    }
}

/// Calls `found` for each credential in `text`, in order of position, until it says stop.
pub fn each_secret(text: &str, mut found: impl FnMut(Hit) -> ControlFlow<()>) {
    let s = scanner();
    let b = text.as_bytes();
    let mut covered = Covered::new();
    each_anchor(s, b, |at, pattern| {
        for &probe in &s.probes[pattern] {
            let hit = match probe {
                Probe::Token(i) => {
                    if at < covered.tokens[i] {
                        continue;
                    }
                    let (reach, hit) = token(s, b, at, i);
                    covered.tokens[i] = reach;
                    hit
                }
                Probe::Keyed => {
                    if at < covered.keyed {
                        continue;
                    }
                    let (examined_to, assignment) = keyed::parse(b, at, covered.keyed);
                    covered.keyed = covered.keyed.max(examined_to).max(at + 1);
                    assignment.and_then(|a| {
                        keyed::judge(&b[a.key.clone()], &b[a.value.clone()]).map(|rule| Hit {
                            rule,
                            value: a.value,
                            whole: a.whole,
                        })
                    })
                }
                Probe::Netrc | Probe::Pgpass | Probe::Mysql => {
                    let (mark, probe_fn): (&mut usize, LineProbe) = match probe {
                        Probe::Netrc => (&mut covered.netrc, shapes::netrc),
                        Probe::Pgpass => (&mut covered.pgpass, shapes::pgpass),
                        _ => (&mut covered.mysql, shapes::mysql),
                    };
                    if at < *mark {
                        continue;
                    }
                    let (examined_to, hit) = probe_fn(b, at, *mark);
                    *mark = examined_to.max(at + 1);
                    hit.map(Hit::from)
                }
                Probe::Authorization => shapes::authorization(b, at).map(Hit::from),
                Probe::Url => shapes::url_credentials(b, at).map(Hit::from),
                Probe::Pem => key_blocks::pem(b, at).map(Hit::from),
                Probe::Sas => {
                    let hit = shapes::azure_sas(b, at, covered.sas);
                    covered.sas = at;
                    hit.map(Hit::from)
                }
                Probe::Base64Pem | Probe::Jwt => {
                    // After `=` or `/` too (`TOKEN=eyJ…`, `key=LS0t…`): the mark keeps a run of
                    // base64 from being read once per anchor inside it.
                    let mark = if probe == Probe::Jwt { &mut covered.jwt } else { &mut covered.base64_pem };
                    if at < *mark || joined(b, at) {
                        continue;
                    }
                    let (reach, f) =
                        if probe == Probe::Jwt { shapes::jwt(b, at) } else { key_blocks::base64_pem(b, at) };
                    *mark = reach;
                    f.map(Hit::from)
                }
            };
            if let Some(hit) = hit
                && found(hit).is_break()
            {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
}

/// A fixed-format token from its anchor: starts after a non-token byte, matches its pattern
/// within `MAX_TOKEN`, ends before a non-token byte, and its generated part looks generated.
/// Returns where examination ended too: the run of token characters from the anchor.
fn token(s: &Scanner, b: &[u8], at: usize, i: usize) -> (usize, Option<Hit>) {
    let rule = &TOKEN_RULES[i];
    let run_end = || {
        let mut end = at;
        while end < b.len() && end - at < MAX_TOKEN && (token_byte(b[end]) || matches!(b[end], b'/' | b'=')) {
            end += 1;
        }
        end
    };
    let start = if rule.back > 0 {
        let class = |c: u8| match rule.rule {
            RuleId::TelegramBotToken => c.is_ascii_digit(),
            _ => c.is_ascii_alphanumeric() || matches!(c, b'_' | b'~' | b'.'),
        };
        let mut start = at;
        while start > 0 && at - start <= rule.back && class(b[start - 1]) {
            start -= 1;
        }
        if at - start > rule.back {
            return (at + 1, None);
        }
        start
    } else {
        at
    };
    if joined(b, start) {
        return (at + 1, None);
    }
    let window = &b[start..(start + MAX_TOKEN).min(b.len())];
    let pattern = s.tokens[i].get_or_init(|| {
        let r = &TOKEN_RULES[i];
        // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
        Regex::new(&format!("^(?:{})", r.pattern)).unwrap_or_else(|e| panic!("{}: {e}", r.rule.id()))
    });
    let Some(m) = pattern.find(window) else { return (run_end(), None) };
    let end = start + m.end();
    if end <= at || b.get(end).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') {
        return (run_end(), None);
    }
    // The storage emulator's published key (Azurite, `devstoreaccount1`) opens no account.
    if rule.rule == RuleId::AzureStorageKey
        && b[start.saturating_sub(256)..start].windows(16).any(|w| w == b"devstoreaccount1")
    {
        return (end, None);
    }
    let tail = &b[(start + rule.prefix).min(end)..end];
    if !judge::random_tail_ok(tail) {
        return (end, None);
    }
    // A PuTTY key file is named by its first line and redacted whole; anchors inside it are
    // covered.
    let whole_end = if rule.rule == RuleId::PuttyPrivateKey {
        key_blocks::putty_end(b, end, shape_reading::LinePrefix::of(b, start))
    } else {
        end
    };
    (whole_end, Some(Hit { rule: rule.rule, value: start..end, whole: start..whole_end }))
}

/// Line numbers for offsets that only grow: each newline is counted once.
pub struct LineCounter {
    offset: usize,
    line: usize,
}

impl Default for LineCounter {
    fn default() -> Self {
        LineCounter { offset: 0, line: 1 }
    }
}

impl LineCounter {
    /// The 1-based line of `offset` (offsets must not go backwards).
    pub fn line_at(&mut self, text: &str, offset: usize) -> usize {
        if offset > self.offset {
            self.line += text.as_bytes()[self.offset..offset].iter().filter(|&&b| b == b'\n').count();
            self.offset = offset;
        }
        self.line
    }
}

/// Every credential in `text`, overlaps resolved: where a token rule and a contextual rule name
/// the same bytes (`GITHUB_TOKEN=ghp_…`), the token rule's hit stays. At most `limit` raw hits
/// are collected.
fn resolved_hits(text: &str, limit: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = Vec::new();
    each_secret(text, |hit| {
        hits.push(hit);
        if hits.len() >= limit { std::ops::ControlFlow::Break(()) } else { std::ops::ControlFlow::Continue(()) }
    });
    hits.sort_by_key(|h| (h.value.start, h.value.end));
    // Specific spans (whole: a password field inside a PEM key's body is part of the key) in
    // start order with the furthest end reached so far: a contextual hit overlaps one iff,
    // among the spans starting before its end, the furthest end passes its start. A binary
    // search per hit: O(n log n) however the spans nest.
    let mut specific: Vec<Range<usize>> =
        hits.iter().filter(|h| !h.rule.contextual()).map(|h| h.whole.clone()).collect();
    specific.sort_by_key(|s| (s.start, s.end));
    let furthest: Vec<usize> = specific
        .iter()
        .scan(0, |end, s| {
            *end = s.end.max(*end);
            Some(*end)
        })
        .collect();
    let overlapped = |h: &Range<usize>| {
        let j = specific.partition_point(|s| s.start < h.end);
        j > 0 && furthest[j - 1] > h.start
    };
    let kept: Vec<Hit> = hits.into_iter().filter(|h| !h.rule.contextual() || !overlapped(&h.whole)).collect();
    kept
}

/// Every credential in `text` (at most `MAX_SECRET_FINDINGS`), one finding per rule and line.
pub fn scan_secrets(text: &str) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut seen: std::collections::HashSet<(RuleId, usize)> = std::collections::HashSet::new();
    let mut lines = LineCounter::default();
    for hit in resolved_hits(text, 4 * MAX_SECRET_FINDINGS) {
        let line = lines.line_at(text, hit.value.start);
        if seen.insert((hit.rule, line)) {
            let value = String::from_utf8_lossy(&text.as_bytes()[hit.value.clone()]);
            let named = if hit.rule.named_by_its_header() { hit.whole.clone() } else { hit.value.clone() };
            findings.push(Finding {
                rule: hit.rule.id(),
                line,
                message: format!("{} ({})", hit.rule.what(), redact(&value)),
                fingerprint: fingerprint(hit.rule, &text.as_bytes()[named]),
            });
            if findings.len() >= MAX_SECRET_FINDINGS {
                break;
            }
        }
    }
    findings
}

/// `text` with every credential the scanner finds replaced, whole (a PEM key with its body and
/// END line), by `[redacted: RULE]`; `None` when it holds none. For text the plugin keeps or
/// shows that it did not choose (a reviewer's findings, a model's reasons): refusing it would
/// lose the work, keeping the key would leak it.
pub fn redact_secrets(text: &str) -> Option<String> {
    let mut hits = resolved_hits(text, usize::MAX);
    if hits.is_empty() {
        return None;
    }
    hits.sort_by_key(|h| (h.whole.start, h.whole.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for hit in hits {
        if hit.whole.end <= at {
            continue;
        }
        // Widened to character boundaries: a span never splits a character, and nothing
        // around it is lost.
        let mut from = hit.whole.start.max(at);
        while !text.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = hit.whole.end.min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        out.push_str(&text[at..from.max(at)]);
        out.push_str(&format!("[redacted: {}]", hit.rule.id()));
        at = to.max(at);
    }
    out.push_str(text.get(at..).unwrap_or(""));
    Some(out)
}

/// `rule@hash`: names one credential-looking value without holding it (the first 12 hex digits
/// of its sha256), for an operator's acknowledgement that it is not a credential.
pub fn fingerprint(rule: RuleId, value: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let hash: String = Sha256::digest(value).iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("{}@{hash}", rule.id())
}

/// Enough to find it, never enough to use it (a quarter of a short value at most).
fn redact(value: &str) -> String {
    let shown: String = value.chars().take((value.chars().count() / 4).min(4)).collect();
    format!("{shown}… {} characters, redacted", value.chars().count())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod prefilter_tests;

#[cfg(test)]
mod redaction_tests;
