//! Content checks run before every write: destructive-idiom warnings and advisory lint, as
//! `Finding`s (`finding`, shared with the credential scanner `scan`, which refuses).
//! Findings never echo a secret.

use crate::library::guards::finding::{Finding, Severity};
use regex::Regex;
use self_evolve_scan::{LineCounter, Prefilter};
use std::ops::ControlFlow;
use std::sync::OnceLock;

/// Each rule: its id, what it does, its pattern, and the `COMMAND_WORDS` its match starts with
/// (a line holding none of them is never given to it).
const DESTRUCTIVE_RULES: &[(&str, &str, &str, &[&str])] = &[
    (
        "rm-rf-root",
        "deletes from the filesystem root or home",
        r"(?-u:\b)rm[ \t]+(?:-[a-zA-Z]*[rR][a-zA-Z]*[ \t]+)+(?:/|~|\$HOME|/\*)(?:[ \t\r\n;]|$)",
        &["rm"],
    ),
    (
        "force-push",
        "force-pushes git history",
        r"(?-u:\b)git[ \t]+push(?-u:\b)[^\n]*(?:[ \t]--force(?-u:\b)|[ \t]-f(?-u:\b)|[ \t]--force-with-lease(?-u:\b))",
        &["git"],
    ),
    ("git-reset-hard", "discards uncommitted work", r"(?-u:\b)git[ \t]+reset[ \t]+--hard(?-u:\b)", &["git"]),
    (
        "drop-table",
        "drops database objects",
        r"(?-u:\b)(?i-u:drop[ \t]+(?:table|database|schema)|truncate[ \t]+table)(?-u:\b)",
        &["drop", "truncate"],
    ),
    (
        "curl-pipe-shell",
        "runs a downloaded script unseen",
        r"(?-u:\b)(?:curl|wget)(?-u:\b)[^\n|]*\|[ \t]*(?:sudo[ \t]+)?(?:ba|z)?sh(?-u:\b)",
        &["curl", "wget"],
    ),
    ("chmod-777", "makes files world-writable", r"(?-u:\b)chmod[ \t]+(?:-R[ \t]+)?0?777(?-u:\b)", &["chmod"]),
    ("mkfs", "formats a filesystem", r"(?-u:\b)mkfs(?:\.[a-z0-9]+)?[ \t]", &["mkfs"]),
    ("dd-to-device", "writes raw bytes to a device", r"(?-u:\b)dd(?-u:\b)[^\n]*(?-u:\b)of=/dev/", &["dd"]),
];

fn destructive() -> &'static [Regex] {
    static COMPILED: OnceLock<Vec<Regex>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
        DESTRUCTIVE_RULES
            .iter()
            .map(|(_, _, p, _)| Regex::new(p).unwrap_or_else(|e| panic!("built-in lint pattern: {e}")))
            .collect()
    })
}

/// Destructive shell and SQL idioms, as warnings: only the lines that hold a command word are
/// given to the rules (`by_command_lines`). The regex crate is built without its literal
/// prefilters (they cost the component ~130 KB), so no build has a faster whole-text search.
pub fn scan_destructive(text: &str) -> Vec<Finding> {
    by_command_lines(text)
}

/// The words a destructive idiom starts with, at a word boundary (`drop` and `truncate` in any
/// case): every rule's match begins with one of them.
const COMMAND_WORDS: [&str; 9] = ["rm", "git", "drop", "truncate", "curl", "wget", "chmod", "mkfs", "dd"];

fn finding(id: &'static str, what: &str, line: usize, matched: &str) -> Finding {
    Finding {
        rule: id,
        severity: Severity::Warning,
        line,
        message: format!("`{}` {what}; say when it is safe, or use a safer form", matched.trim()),
        fingerprint: None,
    }
}

/// Each rule's regex over the whole text, findings in line order: the oracle the tests hold
/// `by_command_lines` to.
#[cfg(test)]
fn by_rule(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for ((id, what, _, _), regex) in DESTRUCTIVE_RULES.iter().zip(destructive()) {
        let mut lines = LineCounter::default();
        for m in regex.find_iter(text) {
            findings.push(finding(id, what, lines.line_at(text, m.start()), m.as_str()));
        }
    }
    findings.sort_by_key(|f| f.line);
    findings
}

/// The same findings, in the same order, from one pass: the prefilter finds where a command
/// word may start, and only a line holding one at a word boundary is given to the rules: those
/// whose words it holds, from the first of them on. No rule's match crosses a line (each reads
/// at most to the line's newline), so a line without a command word holds none. It replaces
/// eight passes of regex searches over the whole text.
fn by_command_lines(text: &str) -> Vec<Finding> {
    static WORDS: OnceLock<Prefilter> = OnceLock::new();
    let words = WORDS.get_or_init(|| {
        // As written and in capitals; the prefilter groups a pattern's spellings by their
        // lowercase into one bucket, so `Drop` and `DrOp` pass its tables too, and `command_at`
        // compares in any case (`drop` and `truncate` match in any case).
        let spellings: Vec<String> =
            COMMAND_WORDS.iter().flat_map(|w| [w.to_string(), w.to_ascii_uppercase()]).collect();
        Prefilter::new(&spellings.iter().map(|w| w.as_bytes()).collect::<Vec<_>>())
    });
    let b = text.as_bytes();
    let mut findings = Vec::new();
    let mut lines = LineCounter::default();
    words.candidates(b, |pos| {
        if command_at(b, pos).is_none() {
            return ControlFlow::Continue(pos + 1);
        }
        let start = b[..pos].iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
        let end = b[pos..].iter().position(|&c| c == b'\n').map_or(b.len(), |i| pos + i + 1);
        let line = lines.line_at(text, start);
        let first = words_on(&b[start..end]);
        for ((id, what, _, starts), regex) in DESTRUCTIVE_RULES.iter().zip(destructive()) {
            // A rule's matches start at one of its words, so none before the first of them:
            // the search starts there (a word boundary, as the rule's leading `\b` needs).
            let at = |w: &&str| COMMAND_WORDS.iter().position(|c| c == w).and_then(|i| first[i]);
            let Some(from) = starts.iter().filter_map(at).min() else { continue };
            for m in regex.find_iter(&text[start + from..end]) {
                findings.push(finding(id, what, line, m.as_str()));
            }
        }
        ControlFlow::Continue(end)
    });
    findings
}

fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The index in `COMMAND_WORDS` of the word standing alone at `pos` (a word boundary on either
/// side), in any case.
fn command_at(b: &[u8], pos: usize) -> Option<usize> {
    if pos > 0 && word_byte(b[pos - 1]) {
        return None;
    }
    COMMAND_WORDS.iter().position(|w| {
        b.get(pos..pos + w.len()).is_some_and(|s| s.eq_ignore_ascii_case(w.as_bytes()))
            && !b.get(pos + w.len()).is_some_and(|&c| word_byte(c))
    })
}

/// Where in `line` each of `COMMAND_WORDS` first stands alone, if it does: one pass, looking
/// only where a word starts.
fn words_on(line: &[u8]) -> [Option<usize>; COMMAND_WORDS.len()] {
    let mut first = [None; COMMAND_WORDS.len()];
    for pos in 0..line.len() {
        if (pos == 0 || !word_byte(line[pos - 1]))
            && word_byte(line[pos])
            && let Some(i) = command_at(line, pos)
        {
            first[i].get_or_insert(pos);
        }
    }
    first
}

/// Advice on the skill's usefulness: body length and a "when to use" cue.
pub fn advise(description: &str, body: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    let lines = body.lines().count();
    if lines > 500 {
        findings.push(Finding {
            rule: "body-length",
            severity: Severity::Advice,
            line: 1,
            message: format!("the body has {lines} lines; keep SKILL.md under 500 and move detail to references/"),
            fingerprint: None,
        });
    }
    if body.trim().is_empty() {
        findings.push(Finding {
            rule: "body-empty",
            severity: Severity::Advice,
            line: 1,
            message: "the body is empty; say how to do the task".into(),
            fingerprint: None,
        });
    }
    let cue = |t: &str| {
        let t = t.to_lowercase();
        t.contains("use when")
            || t.contains("when to use")
            || t.contains("use this")
            || t.contains("when the")
            || t.contains("when you")
            || t.contains("whenever")
            || t.contains("use for")
            || t.contains("use it")
    };
    if !cue(description) && !cue(body) {
        findings.push(Finding {
            rule: "when-to-use",
            severity: Severity::Advice,
            line: 1,
            message: "neither the description nor the body says when to use this skill (e.g. \"Use when …\")".into(),
            fingerprint: None,
        });
    }
    findings
}

#[cfg(test)]
#[path = "lint_tests.rs"]
mod tests;
