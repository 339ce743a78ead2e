//! The `events` exports: what a session does (messages, tool results, turn ends), children's
//! completions, and the timer (`tick`). Each session event runs on that session's state, loaded
//! from the state root and saved after, under its lock; the rest of `Plugin` is in `plugin.rs`.

use super::Plugin;
use crate::active::Active;
use crate::api::{ActivationResult, CallContext, Decision, ToolEvent, TurnStatus};
use crate::errors::ToolError;
use crate::host::{Host, Level};
use crate::library::curation::ledger::{Ledger, Record};

impl<H: Host> Plugin<H> {
    /// Runs `f` on the active state with `session`'s state loaded from the state root and saved
    /// after (see `schedule::sessions`). `None` before init; `Err(conflict)` when another process
    /// held the session past the lock's wait (nothing was done).
    fn in_session<T>(
        &mut self,
        session: &str,
        lease: bool,
        f: impl FnOnce(&H, &mut Active) -> T,
    ) -> Option<Result<T, ToolError>> {
        let host = &self.host;
        let active = self.state.as_mut()?;
        let scope = match active.enter(host, session, lease) {
            Ok(scope) => scope,
            Err(err) => return Some(Err(err)),
        };
        let out = f(host, active);
        active.leave(host, scope);
        Some(Ok(out))
    }

    /// An event for `session`: its decisions, or one line saying it was dropped because another
    /// process held the session (logged; the agent is never blocked).
    fn session_event(
        &mut self,
        session: &str,
        lease: bool,
        f: impl FnOnce(&H, &mut Active) -> Vec<Decision>,
    ) -> Vec<Decision> {
        match self.in_session(session, lease, f) {
            None => Vec::new(),
            Some(Ok(decisions)) => decisions,
            Some(Err(err)) => {
                self.host.log(
                    Level::Warn,
                    &format!("event of session `{}` dropped: {}", crate::visible::visible(session), err.message),
                );
                vec![
                    serde_json::json!({"kind": "session", "session": session, "action": "dropped", "reason": err.message})
                        .to_string(),
                ]
            }
        }
    }

    /// A real user message also resets the shadow reviewer's cooldowns, escalation, spend and decay.
    /// A person's message that corrects the last turn counts against the skills it loaded.
    pub fn user_message(&mut self, ctx: &CallContext, text: &str, human: bool) -> Vec<Decision> {
        self.session_event(&ctx.session, true, |host, active| {
            active.review.user_message(ctx, text, human);
            if ctx.is_top_level() {
                active.shadow.user_message(&ctx.session, human);
                if human {
                    let corrected = active.evidence.user_message(&ctx.session, text);
                    let records: Vec<Record> = corrected
                        .iter()
                        .map(|s| Record::Followed(s, crate::library::curation::ledger::Outcome::Corrected))
                        .collect();
                    active.record(host, &records);
                }
            }
            Vec::new()
        })
    }

    pub fn assistant_message(&mut self, ctx: &CallContext, text: &str) -> Vec<Decision> {
        self.session_event(&ctx.session, true, |host, active| {
            active.review.assistant_message(ctx, text);
            if ctx.is_top_level() {
                active.shadow.assistant_message(host, &ctx.session, text);
            }
            Vec::new()
        })
    }

    /// A `skill` load registers the read for this agent, counts as a use and joins the digest.
    pub fn tool_result(&mut self, ctx: &CallContext, event: &ToolEvent) -> Vec<Decision> {
        self.session_event(&ctx.session, true, |host, active| {
            let loaded = (event.tool == "skill" && event.ok)
                .then(|| serde_json::from_str::<serde_json::Value>(&event.args_json).ok())
                .flatten()
                .and_then(|v| v.get("name").and_then(|n| n.as_str()).map(str::to_string))
                // Only a name a skill can have: the read registry, the evidence and the digest are
                // kept in the session's state, which a host's unchecked string must not outgrow.
                .filter(|name| crate::library::storage::skillfile::check_name(name).is_ok());
            if let Some(name) = &loaded {
                active.reads.mark(&ctx.session, &ctx.agent, name);
                let now = host.now_ms();
                if ctx.is_top_level() && active.evidence.loaded(&ctx.session, name) {
                    active.record(host, &[Record::Used(name, now), Record::Loaded(name)]);
                } else {
                    active.record(host, &[Record::Used(name, now)]);
                }
            }
            active.review.tool_result(ctx, event, loaded.as_deref());
            if ctx.is_top_level() {
                active.shadow.tool_result(host, &ctx.session, &event.args_json);
            }
            Vec::new()
        })
    }

    pub fn turn_end(&mut self, ctx: &CallContext, status: TurnStatus) -> Vec<Decision> {
        self.session_event(&ctx.session, true, |host, active| {
            if ctx.is_top_level() && status == TurnStatus::Completed {
                active.shadow.turn_end(host, &ctx.session);
            }
            if ctx.is_top_level() {
                let followed = active.evidence.turn_end(&ctx.session, status);
                let records: Vec<Record> = followed.iter().map(|(s, o)| Record::Followed(s, *o)).collect();
                active.record(host, &records);
            }
            if !active.review_ready {
                return Vec::new();
            }
            active.review.turn_end(host, &active.config, ctx, status)
        })
    }

    /// A review-loop child's completion goes to its run; any other to the review scheduler.
    /// The child's text is model output: its credentials are redacted here, once, before the
    /// run, the audit record, the session's state or a decision line keeps or shows any of it.
    pub fn activation_end(&mut self, result: &ActivationResult) -> Vec<Decision> {
        let redacted;
        let result = match crate::library::guards::scan::redact_secrets(&result.text) {
            Some(text) => {
                redacted = ActivationResult { id: result.id.clone(), status: result.status, text };
                &redacted
            }
            None => result,
        };
        let host = &self.host;
        let Some(active) = self.state.as_mut() else { return Vec::new() };
        if let Some(decisions) = active.review_loops.activation_end(host, result) {
            return decisions;
        }
        crate::schedule::audit::review_ended(host, &result.id, result.status.as_str(), &result.text);
        if !crate::schedule::sessions::persisted(host) {
            return active.review.activation_end(result);
        }
        // The session is found by the review's marker; without one the review already ended
        // (timed out, or delivered twice) and there is nothing to decide.
        match crate::schedule::sessions::session_of(host, &result.id) {
            Some(session) => self.session_event(&session, false, |_, active| active.review.activation_end(result)),
            None => Vec::new(),
        }
    }

    /// Hands every session held in memory back to the state root (`sessions.hand-back`).
    pub fn hand_back(&mut self) {
        if let Some(active) = self.state.as_mut() {
            active.holdings.hand_back(&self.host);
        }
    }

    /// Reviewer timeouts, silent review-loop runs, then the curator when its pass is due.
    pub fn tick(&mut self) -> Vec<Decision> {
        let mut out = self.review_timeouts();
        let host = &self.host;
        let Some(active) = self.state.as_mut() else { return Vec::new() };
        out.extend(active.review_loops.tick(host));
        let now = host.now_ms();
        let config = active.config.curator.clone();
        if active.curator.due_shared(host, now, &config) {
            // One process runs a due pass, the lock's holder; the others find the next one set when
            // they look again.
            if let Ok(mut lock) = crate::library::curation::curator::take_pass_lock(host) {
                if active.curator.due_shared(host, now, &config) {
                    // The next pass is set first: a pass that fails (or runs past the call's
                    // deadline) is not retried by every process that ticks after it.
                    active.curator.done_shared(host, now, &config);
                    let history_versions = active.config.history_versions;
                    let ledger = active.ledger.get_or_insert_with(|| Ledger::load(host));
                    // Renewed per skill; a pass that loses it to another process stops there.
                    let report = crate::library::curation::curator::pass(
                        host,
                        &config,
                        ledger,
                        &mut active.cache,
                        false,
                        history_versions,
                        lock.as_mut(),
                    );
                    crate::schedule::audit::curator_pass(host, &report);
                    for change in &report.changes {
                        out.push(
                            serde_json::json!({"kind": "curator", "skill": change.name, "from": change.from, "to": change.to, "reason": change.reason})
                                .to_string(),
                        );
                    }
                }
                if let Some(lock) = lock {
                    lock.release(host);
                }
            }
        }
        out
    }

    /// Reviewers past their timeout: of the sessions with a review in flight (their markers),
    /// or of this process's sessions when there is no state root.
    fn review_timeouts(&mut self) -> Vec<Decision> {
        use crate::schedule::sessions;
        let host = &self.host;
        let Some(active) = self.state.as_mut() else { return Vec::new() };
        if !sessions::persisted(host) {
            return active.review.tick(host, &active.config);
        }
        sessions::sweep(host);
        let mut out = Vec::new();
        for (session, activation) in active.holdings.in_flight(host) {
            // Under the session's lock: a marker whose review the session no longer has (its
            // process died between the two writes) goes; one of a session busy elsewhere stays.
            let decisions = self.in_session(&session, false, |host, active| {
                let out = active.review.tick(host, &active.config);
                let live = active
                    .review
                    .sessions
                    .get(&session)
                    .and_then(|s| s.in_flight.as_ref())
                    .is_some_and(|f| f.id == activation);
                if !live {
                    sessions::forget_stale_marker(host, &activation);
                }
                out
            });
            if let Some(Ok(decisions)) = decisions {
                out.extend(decisions);
            }
        }
        out
    }
}
