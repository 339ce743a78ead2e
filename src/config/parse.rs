//! Turns the host's JSON into checked values by key path: unknown keys with a "did you mean",
//! type and bound checks naming the key, and the nested JSON of the effective config.

use super::keys::{DefaultValue, KEYS, KeySpec, Kind};
use super::sections::{
    Config, CuratorConfig, GateKind, JevConfig, Limits, OpenAiConfig, ReviewConfig, ReviewLoopConfig, ShadowConfig,
    TeamConfig,
};
use crate::api::ConfigError;
use serde_json::{Map, Value};

/// Values by key path, defaults first, then the host's overrides.
pub(super) struct Resolved(std::collections::BTreeMap<&'static str, Value>);

impl Resolved {
    pub(super) fn defaults() -> Resolved {
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

    pub(super) fn build(&self) -> Config {
        Config {
            write_approval: self.bool("writeApproval"),
            pending_ttl_days: self.uint("pendingTtlDays"),
            history_versions: self.uint("historyVersions") as usize,
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
                gate: match self.str("review.gate").as_str() {
                    "jev" => GateKind::Jev,
                    "openai" => GateKind::OpenAi,
                    _ => GateKind::Counters,
                },
                jev: JevConfig {
                    endpoint: self.str("review.jev.endpoint"),
                    cooldown_minutes: self.uint("review.jev.cooldownMinutes"),
                    timeout_ms: u32::try_from(self.uint("review.jev.timeoutMs")).unwrap_or(u32::MAX),
                    confident_no: self.float("review.jev.confidentNo"),
                },
                openai: OpenAiConfig {
                    endpoint: self.str("review.openai.endpoint"),
                    model: self.str("review.openai.model"),
                    path: self.str("review.openai.path"),
                    cooldown_minutes: self.uint("review.openai.cooldownMinutes"),
                    timeout_ms: u32::try_from(self.uint("review.openai.timeoutMs")).unwrap_or(u32::MAX),
                    confident_no: self.float("review.openai.confidentNo"),
                    max_tokens: u32::try_from(self.uint("review.openai.maxTokens")).unwrap_or(u32::MAX),
                },
            },
            team: TeamConfig {
                library: self.str("team.library"),
                stage_others: self.str("team.othersSkills") == "stage",
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

pub(super) fn walk(map: &Map<String, Value>, prefix: &str, resolved: &mut Resolved) -> Result<(), ConfigError> {
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

pub(super) fn check(spec: &KeySpec, value: &Value) -> Result<Value, String> {
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
        Kind::HttpPath => match value.as_str() {
            Some(s) if is_http_path(s) => Ok(Value::from(s)),
            _ => Err(format!(
                "expected a plain absolute path of at most 200 characters such as /chat/completions (no `..`, `#`, `@`, `\\`, spaces), found {}",
                describe(value)
            )),
        },
        Kind::Text(max) => match value.as_str() {
            Some(s) if s.chars().count() <= max && !s.chars().any(char::is_control) => Ok(Value::from(s)),
            _ => Err(format!("expected text of at most {max} characters, found {}", describe(value))),
        },
    }
}

/// A path the host appends to an endpoint's base URL: it cannot leave that URL (the host checks
/// the same, so a bad one fails here, at init, naming the key, not on every gate call).
fn is_http_path(s: &str) -> bool {
    s.starts_with('/')
        && !s.starts_with("//")
        && s.len() <= 200
        && !s.contains("..")
        && !s.chars().any(|c| "#@\\".contains(c) || c.is_whitespace() || c.is_control())
}

fn default_value(default: DefaultValue) -> Value {
    match default {
        DefaultValue::Bool(b) => b.into(),
        DefaultValue::Int(n) => n.into(),
        DefaultValue::Float(f) => f.into(),
        DefaultValue::Str(s) => s.into(),
    }
}

pub(super) fn insert_path(root: &mut Map<String, Value>, path: &str, value: Value) {
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

pub(super) fn type_name(value: &Value) -> &'static str {
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
