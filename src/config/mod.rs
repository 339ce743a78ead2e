//! Configuration: the typed sections the policy reads (`Config` and one struct per section, in
//! `sections.rs`), built from the key table in `keys.rs` by the checks in `parse.rs`. This file
//! declares them, re-exports the public names and holds `Config::parse` and `to_json` on top;
//! the child files never import it. May use `api` (for `ConfigError`) and nothing else of the plugin.

mod keys;
mod parse;
mod sections;

pub use keys::{DefaultValue, KEYS, KeySpec, Kind};
pub use sections::{
    Config, CuratorConfig, GateKind, JevConfig, Limits, OpenAiConfig, ReviewConfig, ReviewLoopConfig, ShadowConfig,
    TeamConfig,
};

use crate::api::ConfigError;
use parse::{Resolved, insert_path, type_name, walk};
use serde_json::{Map, Value};

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
        if config.review.openai.model.trim().is_empty() {
            return Err(ConfigError {
                key: "review.openai.model".into(),
                message: "must name the model the openai gate asks, e.g. \"gpt-4o-mini\"".into(),
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
            "historyVersions" => self.history_versions.into(),
            "team.library" => self.team.library.clone().into(),
            "team.othersSkills" => (if self.team.stage_others { "stage" } else { "patch" }).into(),
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
                GateKind::OpenAi => "openai",
            }
            .into(),
            "review.jev.endpoint" => r.jev.endpoint.clone().into(),
            "review.jev.cooldownMinutes" => r.jev.cooldown_minutes.into(),
            "review.jev.timeoutMs" => r.jev.timeout_ms.into(),
            "review.jev.confidentNo" => r.jev.confident_no.into(),
            "review.openai.endpoint" => r.openai.endpoint.clone().into(),
            "review.openai.model" => r.openai.model.clone().into(),
            "review.openai.path" => r.openai.path.clone().into(),
            "review.openai.cooldownMinutes" => r.openai.cooldown_minutes.into(),
            "review.openai.timeoutMs" => r.openai.timeout_ms.into(),
            "review.openai.confidentNo" => r.openai.confident_no.into(),
            "review.openai.maxTokens" => r.openai.max_tokens.into(),
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

#[cfg(test)]
mod tests;
