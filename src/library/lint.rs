//! Content checks run before every write: destructive-idiom warnings and advisory lint, and the
//! finding type they share with the credential scanner (`library::scan`, which refuses).
//! Findings never echo a secret.

use crate::library::scan::LineCounter;
use regex::Regex;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Advisory: style and usefulness.
    Advice,
    /// Allowed but risky (destructive idioms).
    Warning,
    /// A credential: the write is refused.
    Secret,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Advice => "advice",
            Severity::Warning => "warning",
            Severity::Secret => "secret",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    /// 1-based line in the scanned text.
    pub line: usize,
    pub message: String,
    /// For a credential: `rule@hash` of the value (see `scan::fingerprint`), what an operator's
    /// acknowledgement names. `None` for other findings.
    pub fingerprint: Option<String>,
}

const DESTRUCTIVE_RULES: &[(&str, &str, &str)] = &[
    (
        "rm-rf-root",
        "deletes from the filesystem root or home",
        r"(?-u:\b)rm[ \t]+(?:-[a-zA-Z]*[rR][a-zA-Z]*[ \t]+)+(?:/|~|\$HOME|/\*)(?:[ \t\r\n;]|$)",
    ),
    (
        "force-push",
        "force-pushes git history",
        r"(?-u:\b)git[ \t]+push(?-u:\b)[^\n]*(?:[ \t]--force(?-u:\b)|[ \t]-f(?-u:\b)|[ \t]--force-with-lease(?-u:\b))",
    ),
    ("git-reset-hard", "discards uncommitted work", r"(?-u:\b)git[ \t]+reset[ \t]+--hard(?-u:\b)"),
    (
        "drop-table",
        "drops database objects",
        r"(?-u:\b)(?i-u:drop[ \t]+(?:table|database|schema)|truncate[ \t]+table)(?-u:\b)",
    ),
    (
        "curl-pipe-shell",
        "runs a downloaded script unseen",
        r"(?-u:\b)(?:curl|wget)(?-u:\b)[^\n|]*\|[ \t]*(?:sudo[ \t]+)?(?:ba|z)?sh(?-u:\b)",
    ),
    ("chmod-777", "makes files world-writable", r"(?-u:\b)chmod[ \t]+(?:-R[ \t]+)?0?777(?-u:\b)"),
    ("mkfs", "formats a filesystem", r"(?-u:\b)mkfs(?:\.[a-z0-9]+)?[ \t]"),
    ("dd-to-device", "writes raw bytes to a device", r"(?-u:\b)dd(?-u:\b)[^\n]*(?-u:\b)of=/dev/"),
];

fn destructive() -> &'static [Regex] {
    static COMPILED: OnceLock<Vec<Regex>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
        DESTRUCTIVE_RULES
            .iter()
            .map(|(_, _, p)| Regex::new(p).unwrap_or_else(|e| panic!("built-in lint pattern: {e}")))
            .collect()
    })
}

/// Destructive shell and SQL idioms, as warnings.
pub fn scan_destructive(text: &str) -> Vec<Finding> {
    let mut findings = Vec::new();
    for ((id, what, _), regex) in DESTRUCTIVE_RULES.iter().zip(destructive()) {
        let mut lines = LineCounter::default();
        for m in regex.find_iter(text) {
            let line = lines.line_at(text, m.start());
            findings.push(Finding {
                rule: id,
                severity: Severity::Warning,
                line,
                message: format!("`{}` {what}; say when it is safe, or use a safer form", m.as_str().trim()),
                fingerprint: None,
            });
        }
    }
    findings.sort_by_key(|f| f.line);
    findings
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
