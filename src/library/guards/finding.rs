//! What a content check reports: a `Finding` with its rule, `Severity` and line, shared by the
//! lint (`lint`, which warns) and the credential scanner (`scan`, which refuses). Findings never
//! echo a secret. Uses nothing: every other guard stands on it.

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
