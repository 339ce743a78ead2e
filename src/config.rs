//! Configuration: one table of keys (type, default, bounds, doc) drives parsing,
//! the effective-config report, `config --defaults` and the README reference.

use crate::api::ConfigError;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Choice(&'static [&'static str]),
    /// A non-empty identifier-like string (endpoint names): 1–64 of `a-z A-Z 0-9 - _ .`.
    Name,
    /// Free text of at most this many characters, no control characters (may be empty).
    Text(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'static str),
}

pub struct KeySpec {
    /// Dotted path, e.g. `review.turnInterval`.
    pub path: &'static str,
    pub kind: Kind,
    pub default: DefaultValue,
    pub doc: &'static str,
}

/// Every key the plugin understands. Defaults follow seeds 000 and 002.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        path: "writeApproval",
        kind: Kind::Bool,
        default: DefaultValue::Bool(false),
        doc: "Stage every skill write under pending/ for an operator to approve instead of writing it.",
    },
    KeySpec {
        path: "pendingTtlDays",
        kind: Kind::Int { min: 1, max: 365 },
        default: DefaultValue::Int(14),
        doc: "Staged writes older than this are pruned at init.",
    },
    KeySpec {
        path: "duplicateThreshold",
        kind: Kind::Float { min: 0.1, max: 1.0 },
        default: DefaultValue::Float(0.6),
        doc: "Similarity (0–1) of name and description above which `create` is refused as a duplicate.",
    },
    KeySpec {
        path: "limits.skillBytes",
        kind: Kind::Int { min: 1024, max: 1_048_576 },
        default: DefaultValue::Int(262_144),
        doc: "Largest SKILL.md the plugin writes.",
    },
    KeySpec {
        path: "limits.fileBytes",
        kind: Kind::Int { min: 1024, max: 16_777_216 },
        default: DefaultValue::Int(1_048_576),
        doc: "Largest supporting file (references/, templates/, scripts/, assets/) the plugin writes.",
    },
    KeySpec {
        path: "review.enabled",
        kind: Kind::Bool,
        default: DefaultValue::Bool(true),
        doc: "Run background reviews; `/skills review on|off` overrides it at run time (review.json).",
    },
    KeySpec {
        path: "review.turnInterval",
        kind: Kind::Int { min: 1, max: 10_000 },
        default: DefaultValue::Int(10),
        doc: "A review is due after this many completed top-level turns…",
    },
    KeySpec {
        path: "review.toolCallThreshold",
        kind: Kind::Int { min: 1, max: 100_000 },
        default: DefaultValue::Int(15),
        doc: "…or after this many tool calls since the last review.",
    },
    KeySpec {
        path: "review.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 10_080 },
        default: DefaultValue::Int(20),
        doc: "Least time between two reviews of a session.",
    },
    KeySpec {
        path: "review.maxPerSession",
        kind: Kind::Int { min: 0, max: 1_000 },
        default: DefaultValue::Int(8),
        doc: "Review budget per session (0: never review).",
    },
    KeySpec {
        path: "review.timeoutMinutes",
        kind: Kind::Int { min: 1, max: 240 },
        default: DefaultValue::Int(5),
        doc: "A review child still running after this long is aborted.",
    },
    KeySpec {
        path: "review.gate",
        kind: Kind::Choice(&["counters", "jev"]),
        default: DefaultValue::Str("counters"),
        doc: "`counters`: the counters alone decide. `jev`: ask the host's gate endpoint whether a due review is worth it.",
    },
    KeySpec {
        path: "review.jev.endpoint",
        kind: Kind::Name,
        default: DefaultValue::Str("gate"),
        doc: "Name of the host HTTP endpoint the jev gate calls (the host owns its URL and credential).",
    },
    KeySpec {
        path: "review.jev.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 1_440 },
        default: DefaultValue::Int(5),
        doc: "At most one gate call per session in this window.",
    },
    KeySpec {
        path: "review.jev.timeoutMs",
        kind: Kind::Int { min: 100, max: 60_000 },
        default: DefaultValue::Int(2_000),
        doc: "Deadline of one gate attempt.",
    },
    KeySpec {
        path: "review.jev.confidentNo",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.75),
        doc: "A `no` at or above this confidence skips the review; 1 keeps the gate observing only.",
    },
    KeySpec {
        path: "reviewLoop.provider",
        kind: Kind::Name,
        default: DefaultValue::Str("fresh"),
        doc: "Subagent provider for review-loop lens reviewers and falsifiers: a fresh context, never a fork of the authoring session.",
    },
    KeySpec {
        path: "reviewLoop.reviewerTimeoutMinutes",
        kind: Kind::Int { min: 1, max: 120 },
        default: DefaultValue::Int(10),
        doc: "Deadline the host gives each review-loop lens reviewer.",
    },
    KeySpec {
        path: "reviewLoop.falsifierTimeoutMinutes",
        kind: Kind::Int { min: 1, max: 60 },
        default: DefaultValue::Int(2),
        doc: "Deadline the host gives each review-loop falsifier.",
    },
    KeySpec {
        path: "shadow.softLimitChars",
        kind: Kind::Int { min: 0, max: 1_000_000_000 },
        default: DefaultValue::Int(0),
        doc: "Reviewer characters per root after which later work goes to shadow.frugalModel (0: off).",
    },
    KeySpec {
        path: "shadow.hardLimitChars",
        kind: Kind::Int { min: 0, max: 1_000_000_000 },
        default: DefaultValue::Int(0),
        doc: "Reviewer characters per root after which no new review work is admitted (0: off).",
    },
    KeySpec {
        path: "shadow.frugalModel",
        kind: Kind::Text(200),
        default: DefaultValue::Str(""),
        doc: "The model later work is routed to past the soft limit (required with a soft limit).",
    },
    KeySpec {
        path: "shadow.staleReportDecay",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.0),
        doc: "A repeated envelope multiplies later activation probability by 1 - decay (0: off).",
    },
    KeySpec {
        path: "shadow.cooldownMinutes",
        kind: Kind::Int { min: 0, max: 1_440 },
        default: DefaultValue::Int(10),
        doc: "Cooldown a stagnation detection installs when it does not escalate.",
    },
    KeySpec {
        path: "shadow.escalation",
        kind: Kind::Bool,
        default: DefaultValue::Bool(false),
        doc: "On stagnation, reserve the next higher reasoning effort once instead of cooling down.",
    },
    KeySpec {
        path: "shadow.reasoningEffortLadder",
        kind: Kind::Text(200),
        default: DefaultValue::Str("low medium high"),
        doc: "Reasoning efforts from lowest to highest, space-separated.",
    },
    KeySpec {
        path: "shadow.minNoveltyShare",
        kind: Kind::Float { min: 0.0, max: 1.0 },
        default: DefaultValue::Float(0.34),
        doc: "Below this share of novel envelopes in the window, reviews count as stagnating.",
    },
    KeySpec {
        path: "shadow.valueLoopWindowTurns",
        kind: Kind::Int { min: 1, max: 100 },
        default: DefaultValue::Int(3),
        doc: "Completed root turns an accepted challenge is watched for adoption.",
    },
    KeySpec {
        path: "curator.enabled",
        kind: Kind::Bool,
        default: DefaultValue::Bool(true),
        doc: "Run the mechanical stale/archive lifecycle over user-scope skills this plugin authored.",
    },
    KeySpec {
        path: "curator.staleDays",
        kind: Kind::Int { min: 1, max: 3_650 },
        default: DefaultValue::Int(30),
        doc: "An active skill unused this long becomes stale.",
    },
    KeySpec {
        path: "curator.archiveDays",
        kind: Kind::Int { min: 1, max: 3_650 },
        default: DefaultValue::Int(90),
        doc: "A stale skill unused this long is archived (must exceed staleDays).",
    },
    KeySpec {
        path: "curator.graceDays",
        kind: Kind::Int { min: 0, max: 3_650 },
        default: DefaultValue::Int(14),
        doc: "A skill never used since creation is left alone this long after it was created.",
    },
    KeySpec {
        path: "curator.delaySeconds",
        kind: Kind::Int { min: 0, max: 86_400 },
        default: DefaultValue::Int(30),
        doc: "First curator pass this long after init (on tick).",
    },
    KeySpec {
        path: "curator.intervalHours",
        kind: Kind::Int { min: 1, max: 8_760 },
        default: DefaultValue::Int(24),
        doc: "Time between curator passes.",
    },
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateKind {
    Counters,
    Jev,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JevConfig {
    pub endpoint: String,
    pub cooldown_minutes: u64,
    pub timeout_ms: u32,
    pub confident_no: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewConfig {
    pub enabled: bool,
    pub turn_interval: u64,
    pub tool_call_threshold: u64,
    pub cooldown_minutes: u64,
    pub max_per_session: u64,
    pub timeout_minutes: u64,
    pub gate: GateKind,
    pub jev: JevConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CuratorConfig {
    pub enabled: bool,
    pub stale_days: u64,
    pub archive_days: u64,
    pub grace_days: u64,
    pub delay_seconds: u64,
    pub interval_hours: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShadowConfig {
    pub soft_limit_chars: u64,
    pub hard_limit_chars: u64,
    pub frugal_model: String,
    pub stale_report_decay: f64,
    pub cooldown_minutes: u64,
    pub escalation: bool,
    pub reasoning_effort_ladder: Vec<String>,
    pub min_novelty_share: f64,
    pub value_loop_window_turns: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub skill_bytes: usize,
    pub file_bytes: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub write_approval: bool,
    pub pending_ttl_days: u64,
    pub duplicate_threshold: f64,
    pub limits: Limits,
    pub review: ReviewConfig,
    pub curator: CuratorConfig,
    pub shadow: ShadowConfig,
    pub review_loop: ReviewLoopConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewLoopConfig {
    pub provider: String,
    pub reviewer_timeout_minutes: u64,
    pub falsifier_timeout_minutes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Resolved::defaults().build()
    }
}

impl Config {
    /// Parses the host's JSON (empty text or `null` means all defaults).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let doc: Value = if text.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(text).map_err(|err| ConfigError {
                key: String::new(),
                message: format!("not valid JSON ({err}); pass an object such as {{\"review\":{{\"enabled\":false}}}}"),
            })?
        };
        let mut resolved = Resolved::defaults();
        match doc {
            Value::Null => {}
            Value::Object(map) => walk(&map, "", &mut resolved)?,
            other => {
                return Err(ConfigError {
                    key: String::new(),
                    message: format!("expected a JSON object, found {}", type_name(&other)),
                });
            }
        }
        let config = resolved.build();
        let sh = &config.shadow;
        if sh.soft_limit_chars > 0 && (sh.hard_limit_chars <= sh.soft_limit_chars || sh.frugal_model.is_empty()) {
            return Err(ConfigError {
                key: "shadow.softLimitChars".into(),
                message: "a soft limit needs a larger shadow.hardLimitChars and a shadow.frugalModel".into(),
            });
        }
        if config.curator.archive_days <= config.curator.stale_days {
            return Err(ConfigError {
                key: "curator.archiveDays".into(),
                message: format!(
                    "must be greater than curator.staleDays ({}), found {}",
                    config.curator.stale_days, config.curator.archive_days
                ),
            });
        }
        Ok(config)
    }

    /// The effective configuration as nested JSON, every key present.
    pub fn to_json(&self) -> Value {
        let mut root = Map::new();
        for spec in KEYS {
            insert_path(&mut root, spec.path, self.value_of(spec.path));
        }
        Value::Object(root)
    }

    fn value_of(&self, path: &str) -> Value {
        let r = &self.review;
        let c = &self.curator;
        match path {
            "writeApproval" => self.write_approval.into(),
            "pendingTtlDays" => self.pending_ttl_days.into(),
            "duplicateThreshold" => self.duplicate_threshold.into(),
            "limits.skillBytes" => self.limits.skill_bytes.into(),
            "limits.fileBytes" => self.limits.file_bytes.into(),
            "review.enabled" => r.enabled.into(),
            "review.turnInterval" => r.turn_interval.into(),
            "review.toolCallThreshold" => r.tool_call_threshold.into(),
            "review.cooldownMinutes" => r.cooldown_minutes.into(),
            "review.maxPerSession" => r.max_per_session.into(),
            "review.timeoutMinutes" => r.timeout_minutes.into(),
            "review.gate" => match r.gate {
                GateKind::Counters => "counters",
                GateKind::Jev => "jev",
            }
            .into(),
            "review.jev.endpoint" => r.jev.endpoint.clone().into(),
            "review.jev.cooldownMinutes" => r.jev.cooldown_minutes.into(),
            "review.jev.timeoutMs" => r.jev.timeout_ms.into(),
            "review.jev.confidentNo" => r.jev.confident_no.into(),
            "reviewLoop.provider" => self.review_loop.provider.clone().into(),
            "reviewLoop.reviewerTimeoutMinutes" => self.review_loop.reviewer_timeout_minutes.into(),
            "reviewLoop.falsifierTimeoutMinutes" => self.review_loop.falsifier_timeout_minutes.into(),
            "shadow.softLimitChars" => self.shadow.soft_limit_chars.into(),
            "shadow.hardLimitChars" => self.shadow.hard_limit_chars.into(),
            "shadow.frugalModel" => self.shadow.frugal_model.clone().into(),
            "shadow.staleReportDecay" => self.shadow.stale_report_decay.into(),
            "shadow.cooldownMinutes" => self.shadow.cooldown_minutes.into(),
            "shadow.escalation" => self.shadow.escalation.into(),
            "shadow.reasoningEffortLadder" => self.shadow.reasoning_effort_ladder.join(" ").into(),
            "shadow.minNoveltyShare" => self.shadow.min_novelty_share.into(),
            "shadow.valueLoopWindowTurns" => self.shadow.value_loop_window_turns.into(),
            "curator.enabled" => c.enabled.into(),
            "curator.staleDays" => c.stale_days.into(),
            "curator.archiveDays" => c.archive_days.into(),
            "curator.graceDays" => c.grace_days.into(),
            "curator.delaySeconds" => c.delay_seconds.into(),
            "curator.intervalHours" => c.interval_hours.into(),
            _ => Value::Null,
        }
    }
}

/// Values by key path, defaults first, then the host's overrides.
struct Resolved(std::collections::BTreeMap<&'static str, Value>);

impl Resolved {
    fn defaults() -> Resolved {
        Resolved(KEYS.iter().map(|spec| (spec.path, default_value(spec.default))).collect())
    }

    fn int(&self, path: &str) -> i64 {
        self.0.get(path).and_then(Value::as_i64).unwrap_or(0)
    }
    fn uint(&self, path: &str) -> u64 {
        u64::try_from(self.int(path)).unwrap_or(0)
    }
    fn float(&self, path: &str) -> f64 {
        self.0.get(path).and_then(Value::as_f64).unwrap_or(0.0)
    }
    fn bool(&self, path: &str) -> bool {
        self.0.get(path).and_then(Value::as_bool).unwrap_or(false)
    }
    fn str(&self, path: &str) -> String {
        self.0.get(path).and_then(Value::as_str).unwrap_or_default().to_string()
    }

    fn build(&self) -> Config {
        Config {
            write_approval: self.bool("writeApproval"),
            pending_ttl_days: self.uint("pendingTtlDays"),
            duplicate_threshold: self.float("duplicateThreshold"),
            limits: Limits {
                skill_bytes: self.uint("limits.skillBytes") as usize,
                file_bytes: self.uint("limits.fileBytes") as usize,
            },
            review: ReviewConfig {
                enabled: self.bool("review.enabled"),
                turn_interval: self.uint("review.turnInterval"),
                tool_call_threshold: self.uint("review.toolCallThreshold"),
                cooldown_minutes: self.uint("review.cooldownMinutes"),
                max_per_session: self.uint("review.maxPerSession"),
                timeout_minutes: self.uint("review.timeoutMinutes"),
                gate: if self.str("review.gate") == "jev" { GateKind::Jev } else { GateKind::Counters },
                jev: JevConfig {
                    endpoint: self.str("review.jev.endpoint"),
                    cooldown_minutes: self.uint("review.jev.cooldownMinutes"),
                    timeout_ms: u32::try_from(self.uint("review.jev.timeoutMs")).unwrap_or(u32::MAX),
                    confident_no: self.float("review.jev.confidentNo"),
                },
            },
            review_loop: ReviewLoopConfig {
                provider: self.str("reviewLoop.provider"),
                reviewer_timeout_minutes: self.uint("reviewLoop.reviewerTimeoutMinutes"),
                falsifier_timeout_minutes: self.uint("reviewLoop.falsifierTimeoutMinutes"),
            },
            shadow: ShadowConfig {
                soft_limit_chars: self.uint("shadow.softLimitChars"),
                hard_limit_chars: self.uint("shadow.hardLimitChars"),
                frugal_model: self.str("shadow.frugalModel"),
                stale_report_decay: self.float("shadow.staleReportDecay"),
                cooldown_minutes: self.uint("shadow.cooldownMinutes"),
                escalation: self.bool("shadow.escalation"),
                reasoning_effort_ladder: self
                    .str("shadow.reasoningEffortLadder")
                    .split_whitespace()
                    .map(String::from)
                    .collect(),
                min_novelty_share: self.float("shadow.minNoveltyShare"),
                value_loop_window_turns: self.uint("shadow.valueLoopWindowTurns"),
            },
            curator: CuratorConfig {
                enabled: self.bool("curator.enabled"),
                stale_days: self.uint("curator.staleDays"),
                archive_days: self.uint("curator.archiveDays"),
                grace_days: self.uint("curator.graceDays"),
                delay_seconds: self.uint("curator.delaySeconds"),
                interval_hours: self.uint("curator.intervalHours"),
            },
        }
    }
}

fn walk(map: &Map<String, Value>, prefix: &str, resolved: &mut Resolved) -> Result<(), ConfigError> {
    for (key, value) in map {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        if let Some(spec) = KEYS.iter().find(|spec| spec.path == path) {
            let checked = check(spec, value).map_err(|message| ConfigError { key: path.clone(), message })?;
            resolved.0.insert(spec.path, checked);
        } else if is_section(&path) {
            match value {
                Value::Object(inner) => walk(inner, &path, resolved)?,
                other => {
                    return Err(ConfigError {
                        key: path.clone(),
                        message: format!("expected an object (a section of keys), found {}", type_name(other)),
                    });
                }
            }
        } else {
            return Err(unknown_key(prefix, key, &path));
        }
    }
    Ok(())
}

fn is_section(path: &str) -> bool {
    KEYS.iter().any(|spec| spec.path.strip_prefix(path).is_some_and(|rest| rest.starts_with('.')))
}

/// The keys one level below `prefix`, as a user would type them there.
fn keys_under(prefix: &str) -> Vec<&'static str> {
    let mut keys: Vec<&'static str> = KEYS
        .iter()
        .filter_map(|spec| {
            let rest =
                if prefix.is_empty() { Some(spec.path) } else { spec.path.strip_prefix(prefix)?.strip_prefix('.') };
            rest.map(|r| r.split('.').next().unwrap_or(r))
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn unknown_key(prefix: &str, key: &str, path: &str) -> ConfigError {
    let known = keys_under(prefix);
    let suggestion = known
        .iter()
        .map(|k| (edit_distance(&k.to_ascii_lowercase(), &key.to_ascii_lowercase()), *k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| format!(" Did you mean `{k}`?"))
        .unwrap_or_default();
    let place = if prefix.is_empty() { "at the top level".to_string() } else { format!("in `{prefix}`") };
    ConfigError {
        key: path.to_string(),
        message: format!("unknown key `{key}`.{suggestion} Known keys {place}: {}", known.join(", ")),
    }
}

fn check(spec: &KeySpec, value: &Value) -> Result<Value, String> {
    match spec.kind {
        Kind::Bool => value
            .as_bool()
            .map(Value::from)
            .ok_or_else(|| format!("expected true or false, found {}", type_name(value))),
        Kind::Int { min, max } => {
            let n = match value {
                Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64().unwrap_or(i64::MAX),
                Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => n.as_f64().unwrap_or(0.0) as i64,
                _ => return Err(format!("expected an integer, found {}", describe(value))),
            };
            if n < min || n > max {
                return Err(format!("must be between {min} and {max}, found {n}"));
            }
            Ok(Value::from(n))
        }
        Kind::Float { min, max } => {
            let f = value.as_f64().ok_or_else(|| format!("expected a number, found {}", describe(value)))?;
            if !(min..=max).contains(&f) {
                return Err(format!("must be between {min} and {max}, found {f}"));
            }
            Ok(Value::from(f))
        }
        Kind::Choice(options) => match value.as_str() {
            Some(s) if options.contains(&s) => Ok(Value::from(s)),
            _ => Err(format!("must be one of {}, found {}", options.join(", "), describe(value))),
        },
        Kind::Name => match value.as_str() {
            Some(s)
                if !s.is_empty()
                    && s.len() <= 64
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
            {
                Ok(Value::from(s))
            }
            _ => Err(format!("expected a name of 1–64 characters from a-z A-Z 0-9 - _ ., found {}", describe(value))),
        },
        Kind::Text(max) => match value.as_str() {
            Some(s) if s.chars().count() <= max && !s.chars().any(char::is_control) => Ok(Value::from(s)),
            _ => Err(format!("expected text of at most {max} characters, found {}", describe(value))),
        },
    }
}

fn default_value(default: DefaultValue) -> Value {
    match default {
        DefaultValue::Bool(b) => b.into(),
        DefaultValue::Int(n) => n.into(),
        DefaultValue::Float(f) => f.into(),
        DefaultValue::Str(s) => s.into(),
    }
}

fn insert_path(root: &mut Map<String, Value>, path: &str, value: Value) {
    let mut parts = path.split('.').peekable();
    let mut node = root;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            node.insert(part.to_string(), value);
            return;
        }
        let entry = node.entry(part.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        match entry {
            Value::Object(next) => node = next,
            _ => return,
        }
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("\"{s}\""),
        other => type_name(other).to_string(),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_seeds() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.review.turn_interval, 10);
        assert_eq!(c.review.tool_call_threshold, 15);
        assert_eq!(c.review.cooldown_minutes, 20);
        assert_eq!(c.review.max_per_session, 8);
        assert_eq!(c.review.timeout_minutes, 5);
        assert_eq!(c.review.gate, GateKind::Counters);
        assert_eq!(c.review.jev.cooldown_minutes, 5);
        assert_eq!(c.review.jev.timeout_ms, 2_000);
        assert_eq!(c.review.jev.confident_no, 0.75);
        assert_eq!(c.curator.stale_days, 30);
        assert_eq!(c.curator.archive_days, 90);
        assert_eq!(c.curator.delay_seconds, 30);
        assert_eq!(Config::parse("null").unwrap(), c);
        assert_eq!(Config::parse("{}").unwrap(), c);
    }

    #[test]
    fn overrides_apply_and_round_trip_through_the_effective_json() {
        let c = Config::parse(r#"{"writeApproval":true,"review":{"gate":"jev","jev":{"confidentNo":1}}}"#).unwrap();
        assert!(c.write_approval);
        assert_eq!(c.review.gate, GateKind::Jev);
        assert_eq!(c.review.jev.confident_no, 1.0);
        let again = Config::parse(&c.to_json().to_string()).unwrap();
        assert_eq!(again, c);
    }

    #[test]
    fn unknown_key_names_it_and_the_known_keys() {
        let err = Config::parse(r#"{"review":{"turnIntervall":3}}"#).unwrap_err();
        assert_eq!(err.key, "review.turnIntervall");
        assert!(err.message.contains("`turnIntervall`"), "{}", err.message);
        assert!(err.message.contains("Did you mean `turnInterval`?"), "{}", err.message);
        assert!(err.message.contains("cooldownMinutes, enabled, gate, jev"), "{}", err.message);

        let err = Config::parse(r#"{"bogus":1}"#).unwrap_err();
        assert_eq!(err.key, "bogus");
        assert!(err.message.contains("writeApproval"), "{}", err.message);
    }

    #[test]
    fn out_of_range_names_the_bound() {
        let err = Config::parse(r#"{"review":{"turnInterval":0}}"#).unwrap_err();
        assert_eq!(err.key, "review.turnInterval");
        assert!(err.message.contains("between 1 and 10000"), "{}", err.message);
        let err = Config::parse(r#"{"review":{"jev":{"confidentNo":1.5}}}"#).unwrap_err();
        assert_eq!(err.key, "review.jev.confidentNo");
        assert!(err.message.contains("between 0 and 1"), "{}", err.message);
    }

    #[test]
    fn wrong_types_and_shapes_are_named() {
        let cases = [
            (r#"{"writeApproval":"yes"}"#, "writeApproval", "expected true or false"),
            (r#"{"review":{"turnInterval":2.5}}"#, "review.turnInterval", "expected an integer"),
            (r#"{"review":{"gate":"magic"}}"#, "review.gate", "one of counters, jev"),
            (r#"{"review":true}"#, "review", "expected an object"),
            (r#"{"review":{"jev":{"endpoint":"../x"}}}"#, "review.jev.endpoint", "expected a name"),
            (r#"[1]"#, "", "expected a JSON object"),
            (r#"{"#, "", "not valid JSON"),
            (r#"{"curator":{"staleDays":100}}"#, "curator.archiveDays", "greater than curator.staleDays"),
        ];
        for (text, key, needle) in cases {
            let err = Config::parse(text).unwrap_err();
            assert_eq!(err.key, key, "{text}");
            assert!(err.message.contains(needle), "{text}: {}", err.message);
        }
    }

    #[test]
    fn every_key_has_a_value_in_the_effective_json() {
        let json = Config::default().to_json();
        for spec in KEYS {
            let mut node = &json;
            for part in spec.path.split('.') {
                node = &node[part];
            }
            assert!(!node.is_null(), "{} missing", spec.path);
            assert_eq!(check(spec, node).as_ref(), Ok(node), "{}", spec.path);
        }
    }
}
