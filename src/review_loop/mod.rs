//! The review loop (seed 003): an independence gate, state and locks, lens reviewers dispatched
//! in parallel through `subagent.start`, a falsifier per finding, aggregation and a decision per
//! iteration, and a commit-pinned verdict. The plugin orchestrates; the host runs commands,
//! applies fixes, knows git and owns the `review-trail` endpoint.
//!
//! One `begin` is one iteration: it ends in `continue` (the host fixes the actionable findings
//! and calls `begin` again) or in a terminal verdict. Completions arrive through
//! `events.activation-end`, token counts through `spend`, command results through `commands`.

pub mod aggregate;
mod begin;
pub mod context;
mod decide;
pub mod findings;
pub mod history;
pub mod lenses;
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
use run::Run;
use serde_json::{Value, json};
use std::collections::BTreeMap;

pub const DEFAULT_MAX_ITER: u32 = 3;
pub const DEFAULT_TOKEN_CEILING: u64 = 300_000;
/// Largest artifact plus documents accepted, in bytes (about a million tokens: past any
/// reviewer's context, and each lens gets its own copy).
pub const MAX_ARTIFACT: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Independence {
    Independent,
    /// The files of the artifact this session (or a subagent it dispatched) edited.
    SelfAuthored(Vec<String>),
    /// Why authorship could not be measured. Never upgraded to independent.
    Unverified(String),
}

impl Independence {
    pub fn is_independent(&self) -> bool {
        matches!(self, Independence::Independent)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Independence::Independent => "independent",
            Independence::SelfAuthored(_) => "self-authored",
            Independence::Unverified(_) => "unverified",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Independence::Independent => json!({"kind": "independent"}),
            Independence::SelfAuthored(files) => json!({"kind": "self-authored", "files": files}),
            Independence::Unverified(why) => json!({"kind": "unverified", "why": why}),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    pub name: String,
    pub exit_code: i32,
    pub stderr_tail: String,
}

/// What the host asks to review (the WIT `review-loop.request`).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub mode: Mode,
    /// Code: the diff. Plan: the plan change (diff or full text). Claim: the claims verbatim.
    /// Deliverable: the whole deliverable as its reader meets it.
    pub artifact: String,
    /// sha256 hex of the artifact as the host measured it; computed when absent.
    pub artifact_sha: Option<String>,
    pub files: Vec<String>,
    /// Plan files in full, claim sources, the deliverable standard: (path, text).
    pub documents: Vec<(String, String)>,
    /// The repository's top level; hashed into the per-repo lock ("" for no repository).
    pub repo: String,
    pub branch: String,
    pub commit: Option<String>,
    pub uncommitted: bool,
    pub max_iter: Option<u32>,
    pub token_ceiling: Option<u64>,
    pub independence: Independence,
    pub self_review_ack: Option<String>,
    /// Hook-invoked in the authoring session: a self-authored run proceeds, marked.
    pub auto: bool,
    /// Code mode: lint/test/build results already run; `None` waits for `commands`.
    pub commands: Option<Vec<CommandResult>>,
    /// Optional lenses the project switched off (seed: `review-loop.disabled-roles`).
    pub disabled_lenses: Vec<String>,
}

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
