//! The shadow reviewer's per-root state, tying D3–D8 and the value loop to the plugin's
//! events: admit a prompt, accept a report, and reset on a real user message.

use super::budget::{BudgetState, Limits, Spend};
use super::envelope::{self, Envelope};
use super::holdout::Holdout;
use super::independence::relationship;
use super::stagnation::{self, Action, Meta, Window};
use super::value_loop::{self, Counters, Outcome, Watch};
use crate::config::ShadowConfig;
use crate::host::{Host, Level, Root, WriteMode};
use crate::time;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

pub const VALUE_LOOP_PATH: &str = "value-loop.jsonl";

#[derive(Default)]
struct RootState {
    spend: Spend,
    window: Window,
    cooldown_until: Option<u64>,
    /// A higher reasoning effort reserved for the next run only.
    pending_escalation: Option<String>,
    last_independence: Option<&'static str>,
    /// The routes of the last accepted report (D5: shown in terminal status, never in durable
    /// provenance).
    last_author_route: Option<String>,
    last_reviewer_route: Option<String>,
    watches: Vec<Watch>,
    /// Accepted reports waiting to be relayed to the root agent.
    relay: Vec<Envelope>,
}

#[derive(Default)]
pub struct Shadow {
    roots: BTreeMap<String, RootState>,
    pub counters: Counters,
    next_watch: u64,
}

fn limits(config: &ShadowConfig) -> Limits {
    Limits { soft: config.soft_limit_chars, hard: config.hard_limit_chars, decay: config.stale_report_decay }
}

impl Shadow {
    /// A real user message resets cooldowns, pending escalation, spend and decay.
    pub fn user_message(&mut self, root: &str, human: bool) {
        if human && let Some(state) = self.roots.get_mut(root) {
            state.spend = Spend::default();
            state.cooldown_until = None;
            state.pending_escalation = None;
            state.window.clear();
        }
    }

    /// Admits a reviewer prompt for `root`: cooldown and hard limit first, then holdout
    /// redaction; counts the (redacted) prompt.
    pub fn admit(
        &mut self,
        host: &impl Host,
        config: &ShadowConfig,
        root: &str,
        prompt: &str,
        holdout: bool,
    ) -> Result<Value, String> {
        let now = host.now_ms();
        let state = self.roots.entry(root.to_string()).or_default();
        if let Some(until) = state.cooldown_until {
            if now < until {
                return Err(format!("reviews are cooling down until {} after stagnation", time::iso(until)));
            }
            state.cooldown_until = None;
        }
        // The prompt is the shadow reviewer's input: credentials in the trajectory never reach it.
        let prompt = crate::library::guards::scan::redact_secrets(prompt).unwrap_or_else(|| prompt.to_string());
        let prompt = match holdout {
            true => {
                let keys = Holdout::load(host)?;
                let redacted = keys.redact(&prompt);
                keys.check(&redacted)?;
                redacted
            }
            false => prompt,
        };
        let budget = state.spend.admit(&limits(config), prompt.chars().count() as u64)?;
        let model = if budget == BudgetState::Frugal { config.frugal_model.clone() } else { String::new() };
        let effort = state.pending_escalation.take();
        Ok(json!({"prompt": prompt, "budget": budget.as_str(), "model": model, "effort": effort,
            "checklist": super::probes::render_checklist()}))
    }

    /// Accepts a report: the envelope (D3), holdout (D7), spend and decay (D8), stagnation (D4),
    /// independence (D5) and the value loop. Returns the relay and durable provenance.
    #[allow(clippy::too_many_arguments)]
    pub fn accept(
        &mut self,
        host: &impl Host,
        config: &ShadowConfig,
        root: &str,
        report_json: &str,
        projection_refs: &[u64],
        author_route: Option<&str>,
        reviewer_route: Option<&str>,
        holdout: bool,
    ) -> Result<Value, String> {
        let mut report: Value =
            serde_json::from_str(report_json).map_err(|e| format!("the report is not JSON: {e}"))?;
        // What the reviewer hands back is kept for the relay and shown: redacted before either,
        // and so is a refusal that quotes it.
        crate::library::guards::scan::redact_json(&mut report);
        let refs: BTreeSet<u64> = projection_refs.iter().copied().collect();
        let mut env: Envelope = envelope::validate(&report, &refs)
            .map_err(|why| crate::library::guards::scan::redact_secrets(&why).unwrap_or(why))?;
        if holdout {
            let keys = Holdout::load(host)?;
            env.content = keys.redact(&env.content);
            keys.check(&env.content)?;
        }
        let independence = relationship(author_route, reviewer_route).as_str();
        let now = host.now_ms();
        let state = self.roots.entry(root.to_string()).or_default();
        state.last_independence = Some(independence);
        state.last_author_route = author_route.map(str::to_string);
        state.last_reviewer_route = reviewer_route.map(str::to_string);
        if env.is_quiet() {
            return Ok(json!({"relay": null, "provenance": env.provenance(), "independence": independence}));
        }
        let lim = limits(config);
        state.spend.accepted(env.content.chars().count() as u64);
        let repeat =
            state.window.push(Meta { verdict: env.verdict.clone(), refs: env.refs.clone(), severity: env.severity });
        if repeat {
            state.spend.repeats += 1;
        }
        let mut coordination = Value::Null;
        if let Some(pattern) = state.window.detect(config.min_novelty_share) {
            let current =
                state.pending_escalation.as_deref().or(config.reasoning_effort_ladder.first().map(String::as_str));
            let action = stagnation::action(
                config.escalation,
                &config.reasoning_effort_ladder,
                current,
                now,
                config.cooldown_minutes * 60_000,
            );
            coordination = match &action {
                Action::Escalate(effort) => {
                    state.pending_escalation = Some(effort.clone());
                    json!({"pattern": pattern.as_str(), "action": "escalate", "effort": effort})
                }
                Action::Cooldown { until_ms } => {
                    state.cooldown_until = Some(*until_ms);
                    json!({"pattern": pattern.as_str(), "action": "cooldown", "until": time::iso(*until_ms)})
                }
            };
            state.window.clear();
        }
        if env.verdict == "challenge" {
            self.next_watch += 1;
            let watch = Watch {
                id: self.next_watch,
                turns_left: config.value_loop_window_turns as u32,
                targets: value_loop::targets_of(&env.content),
            };
            state.watches.push(watch);
        }
        let probability = state.spend.activation_probability(1.0, &lim);
        state.relay.push(env.clone());
        Ok(json!({
            "relay": {"verdict": env.verdict, "severity": env.severity, "refs": env.refs, "content": env.content},
            "provenance": env.provenance(),
            "independence": independence,
            "coordination": coordination,
            "activationProbability": probability,
            "budget": state.spend.state(&lim).as_str(),
        }))
    }

    /// The accepted reports not yet relayed, most severe first, as relay sections.
    pub fn take_relay(&mut self, root: &str) -> Value {
        let Some(state) = self.roots.get_mut(root) else { return json!([]) };
        let mut sections = std::mem::take(&mut state.relay);
        envelope::relay_order(&mut sections);
        Value::Array(
            sections
                .iter()
                .map(|e| json!({"verdict": e.verdict, "severity": e.severity, "refs": e.refs, "content": e.content}))
                .collect(),
        )
    }

    /// Evidence for open challenges: the assistant's words.
    pub fn assistant_message(&mut self, host: &impl Host, root: &str, text: &str) {
        if let Some(outcome) = value_loop::classify_text(text) {
            let done: Vec<Watch> = self.roots.get_mut(root).map(|s| std::mem::take(&mut s.watches)).unwrap_or_default();
            for watch in done {
                self.finish(host, root, &watch, outcome);
            }
        }
    }

    /// Evidence for open challenges: a tool call touching what a challenge named.
    pub fn tool_result(&mut self, host: &impl Host, root: &str, args_json: &str) {
        let Some(state) = self.roots.get_mut(root) else { return };
        let (hit, keep): (Vec<Watch>, Vec<Watch>) =
            std::mem::take(&mut state.watches).into_iter().partition(|w| value_loop::touches(w, args_json));
        state.watches = keep;
        for watch in hit {
            self.finish(host, root, &watch, Outcome::Adopted);
        }
    }

    /// A completed root turn: windows shrink; a challenge nobody answered is `ignored`.
    pub fn turn_end(&mut self, host: &impl Host, root: &str) {
        let Some(state) = self.roots.get_mut(root) else { return };
        let mut expired = Vec::new();
        state.watches.retain_mut(|w| {
            w.turns_left = w.turns_left.saturating_sub(1);
            if w.turns_left == 0 {
                expired.push(w.clone());
                false
            } else {
                true
            }
        });
        for watch in expired {
            self.finish(host, root, &watch, Outcome::Ignored);
        }
    }

    /// Counts the outcome and journals metadata only (never report or trajectory text).
    fn finish(&mut self, host: &impl Host, root: &str, watch: &Watch, outcome: Outcome) {
        self.counters.add(outcome);
        let line =
            json!({"at": time::iso(host.now_ms()), "root": root, "challenge": watch.id, "outcome": outcome.as_str()});
        if let Err(err) = host.write(&Root::State, VALUE_LOOP_PATH, format!("{line}\n").as_bytes(), WriteMode::Append) {
            host.log(Level::Warn, &format!("value loop: could not append to {VALUE_LOOP_PATH}: {err}"));
        }
    }

    pub fn status(&self, config: &ShadowConfig, root: &str, now: u64) -> Value {
        let lim = limits(config);
        let state = self.roots.get(root);
        let spend = state.map(|s| s.spend.clone()).unwrap_or_default();
        json!({
            "root": root,
            "budget": spend.state(&lim).as_str(),
            "spentChars": spend.spent_chars,
            "softLimitChars": config.soft_limit_chars,
            "hardLimitChars": config.hard_limit_chars,
            "activationProbability": spend.activation_probability(1.0, &lim),
            "cooldownUntil": state.and_then(|s| s.cooldown_until).filter(|u| *u > now).map(time::iso),
            "pendingEscalation": state.and_then(|s| s.pending_escalation.clone()),
            "independence": state.and_then(|s| s.last_independence),
            "authorRoute": state.and_then(|s| s.last_author_route.clone()),
            "reviewerRoute": state.and_then(|s| s.last_reviewer_route.clone()),
            "openChallenges": state.map_or(0, |s| s.watches.len()),
            "valueLoop": {
                "adopted": self.counters.adopted, "rejected": self.counters.rejected,
                "ignored": self.counters.ignored, "hitRate": self.counters.hit_rate(),
            },
        })
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
