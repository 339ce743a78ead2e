//! The review loop (seed 003): an independence gate, state and locks, lens reviewers dispatched
//! in parallel through `subagent.start`, a falsifier per finding, aggregation and a decision per
//! iteration, and a commit-pinned verdict. The plugin orchestrates; the host runs commands,
//! applies fixes, knows git and owns the `review-trail` endpoint.
//!
//! One `begin` is one iteration: it ends in `continue` (the host fixes the actionable findings
//! and calls `begin` again) or in a terminal verdict. Completions arrive through
//! `events.activation-end`, token counts through `spend`, command results through `commands`.
//!
//! This file declares the steps, re-exports the request types and holds `Loops`, which routes
//! host calls to live runs. The steps share what the host sends (`request.rs`) from below and
//! never import this file. May use `api`, `config`, `errors`, `host`, `state_file`, `digest`,
//! `time`, `rounds` and the library's secret scan (`library::guards::scan`); `plugin`, `active`,
//! `adapter` and `command` read it, and it reads none of them.

pub mod aggregate;
mod begin;
pub mod context;
mod decide;
pub mod findings;
pub mod history;
pub mod lenses;
mod request;
mod run;
pub mod similarity;
pub mod state;
#[cfg(test)]
mod tests;
pub mod verdict;

use crate::api::{ActivationResult, CallContext, Decision};
use crate::config::ReviewLoopConfig;
use crate::errors::ToolError;
use crate::host::Host;
pub use lenses::Mode;
pub use request::{CommandResult, DEFAULT_MAX_ITER, DEFAULT_TOKEN_CEILING, Independence, MAX_ARTIFACT, Request};
use run::Run;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Live runs of this instance and the activations they wait for.
#[derive(Default)]
pub struct Loops {
    runs: BTreeMap<String, Run>,
    /// Activation id → run id, kept until the run ends so a late `spend` still counts.
    activations: BTreeMap<String, String>,
    next: u64,
    instance: String,
}

impl Loops {
    /// Starts one iteration for the calling session. `Ok` carries the decision (dispatched,
    /// stopped, skipped, stalled); `Err` a structured refusal that changed nothing.
    pub fn begin(
        &mut self,
        host: &impl Host,
        config: &ReviewLoopConfig,
        ctx: &CallContext,
        req: Request,
    ) -> Result<Value, ToolError> {
        if self.instance.is_empty() {
            self.instance = format!("inst-{:x}", host.now_ms());
        }
        self.next += 1;
        let id = format!("rl-{}", self.next);
        let (runs, instance) = (&self.runs, self.instance.as_str());
        // Only this instance's own runs are known to be alive: run ids restart in every process.
        let alive = |owner: &state::LockOwner| owner.owner == instance && runs.contains_key(&owner.run);
        let started = begin::begin(host, config, ctx, req, &id, &self.instance, &alive)?;
        let (decision, live) = started;
        if let Some(live) = live {
            for activation in live.activation_ids() {
                self.activations.insert(activation, id.clone());
            }
            self.runs.insert(id, live);
        }
        Ok(decision)
    }

    /// Routes a child's completion; `None` when the activation is not this loop's.
    pub fn activation_end(&mut self, host: &impl Host, result: &ActivationResult) -> Option<Vec<Decision>> {
        let run_id = self.activations.get(&result.id)?.clone();
        let run = self.runs.get_mut(&run_id)?;
        let out = run.activation_end(host, result);
        Some(self.settle(&run_id, out))
    }

    /// Whether `activation` is a child of one of this instance's live runs.
    pub fn knows(&self, activation: &str) -> bool {
        self.activations.contains_key(activation)
    }

    /// Token counts of one activation, as the host measured them (replaces an estimate).
    pub fn spend(&mut self, host: &impl Host, activation: &str, input: u64, output: u64) -> Vec<Decision> {
        let Some(run_id) = self.activations.get(activation).cloned() else { return Vec::new() };
        let Some(run) = self.runs.get_mut(&run_id) else { return Vec::new() };
        let out = run.spend(host, activation, input, output);
        self.settle(&run_id, out)
    }

    /// Execution-grounded results for a code-mode run that waits for them.
    pub fn commands(
        &mut self,
        host: &impl Host,
        run_id: &str,
        results: &[CommandResult],
    ) -> Result<Vec<Decision>, ToolError> {
        let run = self.runs.get_mut(run_id).ok_or_else(|| {
            ToolError::new(
                "unknown-run",
                format!("no live review-loop run `{run_id}`"),
                "use the run id `begin` returned",
            )
        })?;
        let out = run.commands(host, results)?;
        Ok(self.settle(run_id, out))
    }

    /// Gives up on runs the host has gone silent about (see `Run::expire`).
    pub fn tick(&mut self, host: &impl Host) -> Vec<Decision> {
        let ids: Vec<String> = self.runs.keys().cloned().collect();
        let mut out = Vec::new();
        for id in ids {
            if let Some(step) = self.runs.get_mut(&id).and_then(|run| run.expire(host)) {
                out.extend(self.settle(&id, step));
            }
        }
        out
    }

    /// Live run (pending lenses, spend) and saved state of a session, as JSON.
    pub fn status(&self, host: &impl Host, session: &str) -> Value {
        let live: Vec<Value> = self.runs.values().filter(|r| r.session() == session).map(Run::status).collect();
        let saved = state::load(host, session).ok().flatten().map(|s| serde_json::to_value(s).unwrap_or_default());
        json!({"session": session, "live": live, "state": saved, "archived": state::prior_runs(host, session)})
    }

    /// Drops a run that reached its decision.
    /// Registers activations a step started (falsifiers); drops a run that reached its decision.
    fn settle(&mut self, run_id: &str, out: run::Step) -> Vec<Decision> {
        if out.finished {
            self.runs.remove(run_id);
            self.activations.retain(|_, r| r != run_id);
        } else if let Some(run) = self.runs.get(run_id) {
            for activation in run.activation_ids() {
                self.activations.insert(activation, run_id.to_string());
            }
        }
        out.decisions
    }
}
