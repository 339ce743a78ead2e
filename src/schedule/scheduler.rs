//! Review scheduling (seed 000 "When a review runs"): per-session counters of completed
//! top-level turns and tool calls, the cooldown, the budget, one review in flight, the gate,
//! and the forked reviewer child's lifecycle (start, narrow, time out, end).

use crate::api::{ActivationResult, CallContext, Decision, ToolEvent, TurnStatus};
use crate::config::Config;
use crate::host::{Host, Level, Root, SubagentSpec};
use crate::schedule::digest::{redact_clip, truncate};
use crate::schedule::gate::{self, Breaker, Verdict};
use crate::schedule::session_state::{InFlight, SessionState};
use crate::schedule::sessions;
use serde_json::json;
use std::collections::BTreeMap;

/// Runtime on/off override (`/skills review on|off`), in the state root.
pub const OVERRIDE_PATH: &str = "review.json";
/// The only tools the reviewer child may use.
pub const CHILD_TOOLS: [&str; 2] = ["skill", "skill_manage"];
const MINUTE_MS: u64 = 60_000;

#[derive(Default)]
pub struct Scheduler {
    pub sessions: BTreeMap<String, SessionState>,
    /// The breaker as the last gate call left it (for `status`); the shared one is in the
    /// state root (`sessions::breaker_before`/`after`).
    pub breaker: Breaker,
    /// The breaker without a state root: this process's.
    pub(crate) breaker_memory: sessions::StoredBreaker,
    /// From review.json; wins over `review.enabled`.
    pub enabled_override: Option<bool>,
    /// A model gate (jev or openai) is configured and the host can serve it.
    pub gate_active: bool,
    /// The lock of the session whose state is loaded from the state root (`Active::enter` to
    /// `Active::leave`): the gate's call, slow as it may be, renews it.
    pub(crate) session_lock: Option<crate::state_file::Lock>,
}

fn decision(session: &str, turn: u64, action: &str, reason: &str) -> Decision {
    json!({"kind": "review", "session": session, "turn": turn, "action": action, "reason": reason}).to_string()
}

/// The reviewer's instructions (seed 000, "The review child").
pub fn prompt(skills_loaded: &[String]) -> String {
    let loaded = if skills_loaded.is_empty() { "none".to_string() } else { skills_loaded.join(", ") };
    format!(
        "You are reviewing the conversation that just finished, to keep the skill library right.\n\
         Decide whether it holds a durable, reusable lesson: a correction or standing preference from the user, \
         a non-trivial procedure that succeeded after trial and error, or a loaded skill that proved wrong.\n\
         If it does, make exactly one change, in this order of preference:\n\
         1. patch a skill that was loaded in this conversation (loaded in the last turn: {loaded});\n\
         2. otherwise patch an existing umbrella skill that covers the lesson;\n\
         3. otherwise create one new class-level skill (a kind of task, not this one instance).\n\
         View a skill with skill_manage before you patch it. Never write secrets, credentials or facts true only \
         on this machine (paths, hostnames, ids). A refusal explains what to do instead: follow its hint.\n\
         Use only the `skill` and `skill_manage` tools; no other tool is allowed.\n\
         If there is no durable lesson, answer exactly: no skill update"
    )
}

impl Scheduler {
    pub fn load_override(&mut self, host: &impl Host) {
        self.enabled_override = host
            .read(&Root::State, OVERRIDE_PATH)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("enabled").and_then(|e| e.as_bool()));
    }

    /// Persists `/skills review on|off` (atomically) so it survives a restart.
    pub fn set_enabled(&mut self, host: &impl Host, enabled: bool) -> Result<(), String> {
        let store = crate::library::storage::store::Store::new(host, "");
        store
            .write_atomic(&Root::State, OVERRIDE_PATH, json!({"enabled": enabled}).to_string().as_bytes())
            .map_err(|e| e.message)?;
        self.enabled_override = Some(enabled);
        Ok(())
    }

    pub fn enabled(&self, config: &Config) -> bool {
        self.enabled_override.unwrap_or(config.review.enabled)
    }

    pub fn user_message(&mut self, ctx: &CallContext, text: &str, human: bool) {
        if ctx.is_top_level() {
            self.sessions.entry(ctx.session.clone()).or_default().digest.user_message(text, human);
        }
    }

    pub fn assistant_message(&mut self, ctx: &CallContext, text: &str) {
        if ctx.is_top_level() {
            self.sessions.entry(ctx.session.clone()).or_default().digest.assistant_message(text);
        }
    }

    pub fn tool_result(&mut self, ctx: &CallContext, event: &ToolEvent, skill_loaded: Option<&str>) {
        if ctx.is_top_level() {
            let state = self.sessions.entry(ctx.session.clone()).or_default();
            state.pending_tools += 1;
            state.digest.tool_result(&event.tool, skill_loaded);
        }
    }

    pub fn turn_end(
        &mut self,
        host: &impl Host,
        config: &Config,
        ctx: &CallContext,
        status: TurnStatus,
    ) -> Vec<Decision> {
        if !ctx.is_top_level() {
            return vec![decision(&ctx.session, 0, "skip", "not a top-level agent: subagent turns are never reviewed")];
        }
        let state = self.sessions.entry(ctx.session.clone()).or_default();
        // A review past its timeout ends here too: with a process per event, a tick may not have
        // come since (or its marker was lost), and the session would wait on it for ever.
        let timed_out = time_out(host, config, &ctx.session, state);
        if status != TurnStatus::Completed {
            state.pending_tools = 0;
            state.digest.end_turn();
            let why = if status == TurnStatus::Aborted { "aborted" } else { "failed" };
            let skip = decision(&ctx.session, state.turn, "skip", &format!("turn {why}: not counted"));
            return timed_out.into_iter().chain([skip]).collect();
        }
        state.turn += 1;
        state.turns_since_review += 1;
        state.tools_since_review += state.pending_tools;
        state.pending_tools = 0;
        let due = state.turns_since_review >= config.review.turn_interval
            || state.tools_since_review >= config.review.tool_call_threshold;
        if due {
            // `self-evolve skills review off` may have run in another process: re-read the
            // switch whenever it can matter (a due turn), never on the cheap path.
            self.load_override(host);
        }
        let out: Vec<Decision> =
            timed_out.into_iter().chain(self.consider(host, config, &ctx.session, false)).collect();
        if let Some(state) = self.sessions.get_mut(&ctx.session) {
            state.digest.end_turn();
        }
        out
    }

    /// `/skills review now`: rules 1–3 (enabled, counters, cooldown) and the gate are bypassed
    /// once; the budget and the one-in-flight rule still apply.
    pub fn review_now(&mut self, host: &impl Host, config: &Config, session: &str) -> Vec<Decision> {
        self.sessions.entry(session.to_string()).or_default();
        self.consider(host, config, session, true)
    }

    fn consider(&mut self, host: &impl Host, config: &Config, session: &str, forced: bool) -> Vec<Decision> {
        let enabled = self.enabled(config);
        let r = &config.review;
        let now = host.now_ms();
        let Some(state) = self.sessions.get_mut(session) else { return Vec::new() };
        let turn = state.turn;
        let skip = |reason: String| vec![decision(session, turn, "skip", &reason)];
        if !forced {
            if !enabled {
                return skip("disabled (review.enabled is false or /skills review off)".into());
            }
            let due = state.turns_since_review >= r.turn_interval || state.tools_since_review >= r.tool_call_threshold;
            if !due {
                return skip(format!(
                    "not due (turns {}/{}, tool calls {}/{})",
                    state.turns_since_review, r.turn_interval, state.tools_since_review, r.tool_call_threshold
                ));
            }
            if let Some(last) = state.last_review_ms {
                let ready = last + r.cooldown_minutes * MINUTE_MS;
                if now < ready {
                    return skip(format!("cooldown ({} min left)", (ready - now).div_ceil(MINUTE_MS)));
                }
            }
        }
        if state.reviews_started >= r.max_per_session {
            return skip(format!(
                "budget spent ({}/{} reviews this session)",
                state.reviews_started, r.max_per_session
            ));
        }
        if let Some(flight) = &state.in_flight {
            return skip(format!("a review is already in flight ({})", flight.id));
        }
        let mut out = Vec::new();
        if !forced
            && self.gate_active
            && let Some(model) = gate::ModelGate::of(r)
        {
            let digest = state.digest.snapshot(turn);
            let in_window = state.last_gate_ms.is_some_and(|last| now < last + model.cooldown_minutes() * MINUTE_MS);
            let (verdict, record) = if in_window {
                let record = gate::GateRecord {
                    at: crate::time::iso(now),
                    session: session.to_string(),
                    turn,
                    decision: "review",
                    source: "counters",
                    reason: format!(
                        "fallback: gate cooldown (one call per session per {}.cooldownMinutes)",
                        model.source()
                    ),
                    choice: None,
                    confidence: None,
                    probability: None,
                    tool_calls: digest.tool_results_since_review,
                    latency_ms: 0,
                    threshold: model.confident_no(),
                };
                (Verdict::Review, record)
            } else {
                state.last_gate_ms = Some(now);
                let before = sessions::breaker_before(host, &self.breaker_memory, now);
                self.breaker = before.clone();
                let asked = gate::ask(host, model, &mut self.breaker, session, &digest, self.session_lock.as_mut());
                sessions::breaker_after(host, &mut self.breaker_memory, &before, &self.breaker, now);
                asked
            };
            gate::append(host, &record);
            let mut line = serde_json::to_value(&record).unwrap_or_default();
            line["kind"] = json!("gate");
            out.push(line.to_string());
            if verdict == Verdict::Skip {
                state.turns_since_review = 0;
                state.tools_since_review = 0;
                state.digest.reset_since_review();
                out.push(decision(session, turn, "skip", &format!("gate: {}", record.reason)));
                return out;
            }
        }
        let spec = SubagentSpec {
            parent_session: session.to_string(),
            provider: "fork".into(),
            delivery: "caller".into(),
            prompt: prompt(&state.digest.skills_in_turn()),
            tools: CHILD_TOOLS.iter().map(|t| t.to_string()).collect(),
            timeout_ms: u32::try_from(r.timeout_minutes * MINUTE_MS).unwrap_or(u32::MAX),
        };
        // A provider's refusal is the host's text (it may quote its own configuration): kept and
        // shown redacted, as everything a host hands back.
        match host.subagent_start(&spec).map_err(|err| redact_clip(&err, 200)) {
            Ok(id) => {
                if let Err(err) = host.subagent_restrict_tools(&id, &spec.tools).map_err(|err| redact_clip(&err, 200)) {
                    host.log(
                        Level::Warn,
                        &format!("reviewer {id}: could not narrow its tools ({err}); the prompt still forbids others"),
                    );
                }
                let reason = if forced {
                    "forced by /skills review now".to_string()
                } else {
                    format!(
                        "due (turns {}/{}, tool calls {}/{})",
                        state.turns_since_review, r.turn_interval, state.tools_since_review, r.tool_call_threshold
                    )
                };
                crate::schedule::audit::review_started(host, &id, session, turn, &reason, &spec.prompt, &spec.tools);
                state.in_flight = Some(InFlight { id: id.clone(), started_ms: now, turn });
                state.reviews_started += 1;
                state.last_review_ms = Some(now);
                state.turns_since_review = 0;
                state.tools_since_review = 0;
                state.digest.reset_since_review();
                let mut line: serde_json::Value =
                    serde_json::from_str(&decision(session, turn, "start", &reason)).unwrap_or_default();
                line["activation"] = json!(id);
                out.push(line.to_string());
            }
            Err(err) => {
                // Counters stay as they were: the next completed turn tries again.
                host.log(Level::Warn, &format!("review not started: the subagent provider refused ({err})"));
                out.push(decision(session, turn, "skip", &format!("subagent start refused: {err}")));
            }
        }
        out
    }

    pub fn activation_end(&mut self, result: &ActivationResult) -> Vec<Decision> {
        for (session, state) in self.sessions.iter_mut() {
            if state.in_flight.as_ref().is_some_and(|f| f.id == result.id) {
                let flight = state.in_flight.take();
                let turn = flight.map_or(state.turn, |f| f.turn);
                let status = result.status.as_str();
                let text = truncate(result.text.trim(), 200);
                state.last_outcome = Some(format!("{status}: {text}"));
                let line = json!({
                    "kind": "review", "session": session, "turn": turn, "action": "end",
                    "activation": result.id, "status": status, "reason": text,
                });
                return vec![line.to_string()];
            }
        }
        Vec::new()
    }

    /// Aborts reviewers that ran past `timeoutMinutes`.
    pub fn tick(&mut self, host: &impl Host, config: &Config) -> Vec<Decision> {
        let mut out = Vec::new();
        for (session, state) in self.sessions.iter_mut() {
            out.extend(time_out(host, config, session, state));
        }
        out
    }
    /// Reads the shared breaker (another process may have opened it), for `status`.
    pub fn refresh_breaker(&mut self, host: &impl Host) {
        self.breaker = sessions::breaker_before(host, &self.breaker_memory, host.now_ms());
    }

    /// `/skills review status` as JSON.
    pub fn status(&self, config: &Config, session: &str, now: u64) -> serde_json::Value {
        let r = &config.review;
        let s = self.sessions.get(session);
        json!({
            "enabled": self.enabled(config),
            "override": self.enabled_override,
            "gate": match (gate::ModelGate::of(r), self.gate_active, self.breaker.open) {
                (None, _, _) => "counters".to_string(),
                (Some(model), false, _) => format!("counters ({} unavailable)", model.source()),
                (Some(model), true, true) => format!("{} (circuit open: falling back to counters)", model.source()),
                (Some(model), true, false) => model.source().to_string(),
            },
            "session": session,
            "turn": s.map_or(0, |s| s.turn),
            "turnsSinceReview": s.map_or(0, |s| s.turns_since_review),
            "toolCallsSinceReview": s.map_or(0, |s| s.tools_since_review),
            "turnInterval": r.turn_interval,
            "toolCallThreshold": r.tool_call_threshold,
            "reviewsStarted": s.map_or(0, |s| s.reviews_started),
            "maxPerSession": r.max_per_session,
            "cooldownLeftMinutes": s.and_then(|s| s.last_review_ms).map_or(0, |last| {
                (last + r.cooldown_minutes * MINUTE_MS).saturating_sub(now).div_ceil(MINUTE_MS)
            }),
            "inFlight": s.and_then(|s| s.in_flight.as_ref()).map(|f| f.id.clone()),
            "lastOutcome": s.and_then(|s| s.last_outcome.clone()),
        })
    }
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;

/// Aborts `session`'s reviewer when it ran past `timeoutMinutes`; its decision line.
fn time_out(host: &impl Host, config: &Config, session: &str, state: &mut SessionState) -> Option<Decision> {
    let flight = state.in_flight.as_ref()?;
    let limit = config.review.timeout_minutes * MINUTE_MS;
    if host.now_ms().saturating_sub(flight.started_ms) < limit {
        return None;
    }
    host.subagent_abort(&flight.id);
    let reason = format!("timed out after {} min; aborted", config.review.timeout_minutes);
    crate::schedule::audit::review_ended(host, &flight.id, "timed-out", &reason);
    state.last_outcome = Some(format!("timed-out: {reason}"));
    let line = json!({
        "kind": "review", "session": session, "turn": flight.turn, "action": "abort",
        "activation": flight.id, "reason": reason,
    });
    host.log(Level::Info, &format!("reviewer {} {reason}", flight.id));
    state.in_flight = None;
    Some(line.to_string())
}
