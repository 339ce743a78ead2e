//! Content checks run before every write: the credential scanner (one named rule per kind,
//! refusing), destructive-idiom warnings, and advisory lint. Findings never echo a secret.

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
}

struct Rule {
    id: &'static str,
    what: &'static str,
    pattern: &'static str,
    /// Value checks beyond the pattern (placeholders, entropy) for loose rules.
    gated: bool,
}

/// Credential rules. Patterns follow the issuers' documented token formats.
const SECRET_RULES: &[Rule] = &[
    Rule {
        id: "aws-access-key-id",
        what: "AWS access key id",
        pattern: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "github-pat",
        what: "GitHub personal access token",
        pattern: r"(?-u:\b)ghp_[0-9A-Za-z]{36}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "github-fine-grained-pat",
        what: "GitHub fine-grained token",
        pattern: r"(?-u:\b)github_pat_[0-9A-Za-z_]{60,}",
        gated: false,
    },
    Rule {
        id: "github-oauth-token",
        what: "GitHub OAuth token",
        pattern: r"(?-u:\b)gho_[0-9A-Za-z]{36}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "github-app-token",
        what: "GitHub app token",
        pattern: r"(?-u:\b)gh[us]_[0-9A-Za-z]{36}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "github-refresh-token",
        what: "GitHub refresh token",
        pattern: r"(?-u:\b)ghr_[0-9A-Za-z]{36,}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "gitlab-pat",
        what: "GitLab personal access token",
        pattern: r"(?-u:\b)glpat-[0-9A-Za-z_-]{20,}",
        gated: false,
    },
    Rule { id: "slack-token", what: "Slack token", pattern: r"(?-u:\b)xox[abposre]-[0-9A-Za-z-]{10,}", gated: false },
    Rule {
        id: "slack-webhook",
        what: "Slack webhook URL",
        pattern: r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}",
        gated: false,
    },
    Rule {
        id: "stripe-key",
        what: "Stripe secret key",
        pattern: r"(?-u:\b)[rs]k_(?:live|test)_[0-9A-Za-z]{20,}",
        gated: false,
    },
    Rule {
        id: "openai-key",
        what: "OpenAI API key",
        pattern: r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
        gated: false,
    },
    Rule {
        id: "anthropic-key",
        what: "Anthropic API key",
        pattern: r"(?-u:\b)sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{32,}",
        gated: false,
    },
    Rule { id: "google-api-key", what: "Google API key", pattern: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}", gated: false },
    Rule { id: "npm-token", what: "npm access token", pattern: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)", gated: false },
    Rule {
        id: "pypi-token",
        what: "PyPI upload token",
        pattern: r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        gated: false,
    },
    Rule {
        id: "huggingface-token",
        what: "Hugging Face token",
        pattern: r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)",
        gated: false,
    },
    Rule { id: "twilio-api-key", what: "Twilio API key", pattern: r"(?-u:\b)SK[0-9a-f]{32}(?-u:\b)", gated: false },
    Rule {
        id: "sendgrid-api-key",
        what: "SendGrid API key",
        pattern: r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        gated: false,
    },
    Rule {
        id: "azure-ad-client-secret",
        what: "Azure AD client secret",
        pattern: r"(?:^|[^A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
        gated: false,
    },
    Rule {
        id: "digitalocean-token",
        what: "DigitalOcean token",
        pattern: r"(?-u:\b)do[opr]_v1_[a-f0-9]{64}(?-u:\b)",
        gated: false,
    },
    Rule {
        id: "vault-token",
        what: "HashiCorp Vault token",
        pattern: r"(?-u:\b)hv[sb]\.[A-Za-z0-9_-]{24,}",
        gated: false,
    },
    Rule {
        id: "age-secret-key",
        what: "age secret key",
        pattern: r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        gated: false,
    },
    Rule {
        id: "private-key",
        what: "PEM private key block",
        pattern: r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----",
        gated: false,
    },
    Rule {
        id: "jwt",
        what: "JSON Web Token",
        pattern: r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        gated: false,
    },
    Rule {
        id: "password-in-url",
        what: "password in a URL",
        pattern: r"(?-u:\b)[a-zA-Z][a-zA-Z0-9+.-]*://[^ \t\r\n:/@]+:[^ \t\r\n:/@]{3,}@",
        gated: true,
    },
    Rule {
        id: "generic-secret",
        what: "secret-looking value assigned to a key, token, secret or password",
        pattern: r#"[A-Za-z0-9_.-]*(?i-u:api[_-]?key|secret|token|passw(?:or)?d|pwd|access[_-]?key|auth[_-]?key)[A-Za-z0-9_.-]*["']?[ \t]*[:=][ \t]*["']?[^[ \t]"'`,;)]{8,}"#,
        gated: true,
    },
];

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

struct Compiled {
    /// All secret rules as one alternation: text with no secrets is scanned in one pass.
    any_secret: Regex,
    /// The same rules as a set: one pass over a candidate line says which rules to run on it.
    secret_set: regex::RegexSet,
    secrets: Vec<Regex>,
    destructive: Vec<Regex>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        // Built-in patterns: a failure here is a bug caught by the unit tests, never input.
        let build = |p: &str| Regex::new(p).unwrap_or_else(|e| panic!("built-in lint pattern: {e}"));
        let alternation = SECRET_RULES.iter().map(|r| format!("(?:{})", r.pattern)).collect::<Vec<_>>().join("|");
        Compiled {
            any_secret: build(&alternation),
            secret_set: regex::RegexSet::new(SECRET_RULES.iter().map(|r| r.pattern))
                .unwrap_or_else(|e| panic!("built-in lint pattern: {e}")),
            secrets: SECRET_RULES.iter().map(|r| build(r.pattern)).collect(),
            destructive: DESTRUCTIVE_RULES.iter().map(|(_, _, p)| build(p)).collect(),
        }
    })
}

/// Line numbers for offsets that only grow: each newline is counted once, so numbering every
/// hit of a scan costs O(text), not O(text) per hit.
struct LineCounter {
    offset: usize,
    line: usize,
}

impl LineCounter {
    fn new() -> LineCounter {
        LineCounter { offset: 0, line: 1 }
    }

    /// The 1-based line of `offset` (offsets must not go backwards).
    fn line_at(&mut self, text: &str, offset: usize) -> usize {
        if offset > self.offset {
            self.line += memchr_count(&text.as_bytes()[self.offset..offset]);
            self.offset = offset;
        }
        self.line
    }
}

fn memchr_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// A scan stops after this many findings: enough to refuse and to show where; a file made of
/// keys costs no more to refuse than one with a few.
pub const MAX_SECRET_FINDINGS: usize = 100;

/// One credential found: the rule, the offset of its line, and where its value lies in the text.
struct Hit {
    rule: &'static Rule,
    line_start: usize,
    value: std::ops::Range<usize>,
}

/// Calls `found` for each credential in `text`, in order, until it says stop. Linear in the
/// text: the cheap `any_secret` prefilter finds candidate lines, each candidate line is scanned
/// once (hits on a line already scanned are skipped), and only by the rules the set says match.
fn each_secret(text: &str, mut found: impl FnMut(Hit) -> std::ops::ControlFlow<()>) {
    let c = compiled();
    // The end of the last line scanned: hits before it were covered by that scan.
    let mut scanned_to = 0;
    for hit in c.any_secret.find_iter(text) {
        if hit.start() < scanned_to {
            continue;
        }
        // Never looks back past the previous scanned line's end (a newline or the start).
        let start = text[scanned_to..hit.start()].rfind('\n').map_or(scanned_to, |i| scanned_to + i + 1);
        let end = text[hit.end()..].find('\n').map_or(text.len(), |i| hit.end() + i);
        scanned_to = end;
        let line_text = &text[start..end];
        for i in c.secret_set.matches(line_text).iter() {
            let rule = &SECRET_RULES[i];
            for m in c.secrets[i].find_iter(line_text) {
                let value = m.as_str().trim_start_matches(|ch: char| !ch.is_ascii_alphanumeric() && ch != '-');
                if rule.gated && !looks_secret(rule.id, value) {
                    continue;
                }
                let value = start + m.end() - value.len()..start + m.end();
                if found(Hit { rule, line_start: start, value }).is_break() {
                    return;
                }
            }
        }
    }
}

/// Every credential in `text` (at most `MAX_SECRET_FINDINGS`), one finding per rule and line.
pub fn scan_secrets(text: &str) -> Vec<Finding> {
    let mut findings: Vec<Finding> = Vec::new();
    let mut seen: std::collections::HashSet<(&'static str, usize)> = std::collections::HashSet::new();
    let mut lines = LineCounter::new();
    each_secret(text, |hit| {
        let line = lines.line_at(text, hit.line_start);
        if seen.insert((hit.rule.id, line)) {
            findings.push(Finding {
                rule: hit.rule.id,
                severity: Severity::Secret,
                line,
                message: format!("{} ({})", hit.rule.what, redact(&text[hit.value])),
            });
        }
        if findings.len() >= MAX_SECRET_FINDINGS {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    });
    findings
}

/// `text` with every credential the scanner finds replaced by `[redacted: RULE]`; `None` when it
/// holds none. For text the plugin keeps or shows that it did not choose (a reviewer's findings,
/// a model's reasons): refusing it would lose the work, keeping the key would leak it.
pub fn redact_secrets(text: &str) -> Option<String> {
    let mut spans: Vec<(usize, usize, &'static str)> = Vec::new();
    each_secret(text, |hit| {
        spans.push((hit.value.start, hit.value.end, hit.rule.id));
        std::ops::ControlFlow::Continue(())
    });
    if spans.is_empty() {
        return None;
    }
    spans.sort();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (from, to, rule) in spans {
        if to <= at {
            continue;
        }
        out.push_str(&text[at..from.max(at)]);
        out.push_str(&format!("[redacted: {rule}]"));
        at = to;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// Redacts every string in a JSON value (keys and numbers stay); returns how many changed.
pub fn redact_json(value: &mut serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(text) => match redact_secrets(text) {
            Some(clean) => {
                *text = clean;
                1
            }
            None => 0,
        },
        serde_json::Value::Array(items) => items.iter_mut().map(redact_json).sum(),
        serde_json::Value::Object(map) => map.values_mut().map(redact_json).sum(),
        _ => 0,
    }
}

/// Destructive shell and SQL idioms, as warnings.
pub fn scan_destructive(text: &str) -> Vec<Finding> {
    let c = compiled();
    let mut findings = Vec::new();
    for ((id, what, _), regex) in DESTRUCTIVE_RULES.iter().zip(&c.destructive) {
        let mut lines = LineCounter::new();
        for m in regex.find_iter(text) {
            let line = lines.line_at(text, m.start());
            findings.push(Finding {
                rule: id,
                severity: Severity::Warning,
                line,
                message: format!("`{}` {what}; say when it is safe, or use a safer form", m.as_str().trim()),
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
        });
    }
    if body.trim().is_empty() {
        findings.push(Finding {
            rule: "body-empty",
            severity: Severity::Advice,
            line: 1,
            message: "the body is empty; say how to do the task".into(),
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
        });
    }
    findings
}

/// Placeholders and low-entropy values are not secrets.
fn looks_secret(rule: &str, matched: &str) -> bool {
    let value = match rule {
        "password-in-url" => matched.rsplit_once(':').map(|(_, v)| v.trim_end_matches('@')).unwrap_or(matched),
        _ => matched.split_once(['=', ':']).map(|(_, v)| v.trim().trim_matches(['"', '\''])).unwrap_or(matched),
    };
    if value.len() < 8 && rule != "password-in-url" {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let placeholder = value.starts_with('$')
        || value.starts_with('<')
        || value.starts_with('{')
        || value.starts_with('%')
        || value.contains("${")
        || value.contains("{{")
        || value.contains("...")
        || value.contains('*')
        || lower.contains("xxxx")
        || ["your", "example", "changeme", "placeholder", "redacted", "dummy", "password", "secret", "token", "sample"]
            .iter()
            .any(|w| lower.contains(w));
    if placeholder {
        return false;
    }
    if rule == "password-in-url" {
        return value.len() >= 4;
    }
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    let has_alpha = value.chars().any(|c| c.is_ascii_alphabetic());
    // Identifiers like `skill_manage.token_count` and words are not credentials.
    let identifier_like = value.chars().all(|c| c.is_ascii_lowercase() || c == '_' || c == '.' || c == '-');
    has_digit && has_alpha && !identifier_like && shannon_entropy(value) >= 3.0
}

fn shannon_entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[b as usize] += 1;
    }
    let n = text.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// Enough to find it, never enough to use it.
fn redact(value: &str) -> String {
    let shown: String = value.chars().take(4).collect();
    format!("{shown}… {} characters, redacted", value.chars().count())
}

#[cfg(test)]
#[path = "lint_tests.rs"]
mod tests;
