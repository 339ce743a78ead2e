//! A live iteration: the lenses and falsifiers it waits for, their replies, token spend and the
//! ceiling. `begin.rs` starts it; `decide.rs` ends it.

use super::findings::{self, Finding};
use super::lenses::{self, Mode};
use super::request::{CommandResult, Independence};
use super::state::{self, LockOwner, State};
use crate::api::{ActivationResult, ActivationStatus, Decision};
use crate::errors::ToolError;
use crate::host::{Host, SubagentSpec};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Locks are refreshed at most this often while a run makes progress.
const TOUCH_EVERY_MS: u64 = 60_000;

#[derive(Debug, Clone)]
pub(super) enum Role {
    Lens(String),
    /// Index into `candidates`.
    Falsifier(usize),
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Spend {
    pub(super) input: u64,
    pub(super) output: u64,
    pub(super) estimated: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Candidate {
    pub(super) finding: Finding,
    /// The falsifier's evidence when it disproved the finding.
    pub(super) falsified: Option<String>,
}

/// What a call produced: decision lines, and whether the run is over (decided).
#[derive(Default)]
pub struct Step {
    pub decisions: Vec<Decision>,
    pub finished: bool,
}

pub struct Run {
    pub(super) id: String,
    pub(super) mode: Mode,
    pub(super) sha: String,
    pub(super) artifact: String,
    /// The artifact's TF-IDF index, built at begin so the deciding call only weighs claims.
    pub(super) corpus: super::similarity::Corpus,
    /// Each file's part of the artifact when it is a diff, indexed on first use.
    pub(super) sections: std::cell::OnceCell<std::collections::HashMap<String, std::ops::Range<usize>>>,
    pub(super) documents: Vec<(String, String)>,
    pub(super) independence: Independence,
    pub(super) ack: Option<String>,
    pub(super) commit: Option<String>,
    pub(super) uncommitted: bool,
    pub(super) lenses: Vec<String>,
    pub(super) locks: Vec<String>,
    pub(super) owner: LockOwner,
    pub(super) last_touch: u64,
    /// When the run last heard from the host (a completion, a spend, command results).
    pub(super) progress_ms: u64,
    /// Silence after which `tick` gives up on what is outstanding.
    pub(super) give_up_after_ms: u64,
    pub(super) state: State,
    pub(super) started_ms: u64,
    /// Token spend of earlier iterations (from state).
    pub(super) base: (u64, u64),
    pub(super) falsifier_timeout_ms: u32,
    pub(super) provider: String,
    pub(super) pending: BTreeMap<String, Role>,
    pub(super) prompts: BTreeMap<String, usize>,
    pub(super) counted: BTreeMap<String, Spend>,
    pub(super) awaiting_commands: bool,
    pub(super) candidates: Vec<Candidate>,
    pub(super) failures: Vec<Value>,
    pub(super) over_ceiling: bool,
    /// The ceiling cut this iteration short (work aborted or not started): never clean.
    pub(super) truncated: bool,
    /// Lenses whose reply parsed; with none, nothing was reviewed.
    pub(super) delivered: usize,
}

impl Run {
    pub fn session(&self) -> &str {
        &self.state.session_id
    }

    pub fn activation_ids(&self) -> Vec<String> {
        self.pending.keys().cloned().collect()
    }

    pub fn status(&self) -> Value {
        let pending: Vec<Value> = self
            .pending
            .iter()
            .map(|(id, role)| match role {
                Role::Lens(lens) => json!({"activation": id, "lens": lens}),
                Role::Falsifier(i) => json!({"activation": id, "falsifies": self.candidates[*i].finding.claim}),
            })
            .collect();
        let (input, output) = self.totals();
        json!({"run": self.id, "iteration": self.state.iteration + 1, "pending": pending,
               "awaitingCommands": self.awaiting_commands, "tokens": {"input": input, "output": output}})
    }

    pub(super) fn totals(&self) -> (u64, u64) {
        let (i, o) = self.counted.values().fold((0, 0), |(i, o), s| (i + s.input, o + s.output));
        (self.base.0 + i, self.base.1 + o)
    }

    pub(super) fn spent(&self) -> u64 {
        let (i, o) = self.totals();
        i + o
    }

    /// Findings of `findings_history` matching `keep`.
    pub(super) fn history(&self, keep: impl Fn(&Value) -> bool) -> Vec<Finding> {
        self.state.findings_history.iter().filter(|v| keep(v)).filter_map(Finding::from_json).collect()
    }

    /// Each file's part of the artifact when it is a diff: indexed once, shared by the
    /// falsifiers' context and the drift guard.
    pub(super) fn diff_sections(&self) -> &std::collections::HashMap<String, std::ops::Range<usize>> {
        self.sections.get_or_init(|| super::context::diff_sections(&self.artifact))
    }

    /// The host's command results, their output redacted whole before the finding keeps its
    /// last lines (a key's last lines, without its header, are no longer known as one).
    pub(super) fn add_commands(&mut self, results: &[CommandResult]) {
        for r in results {
            let tail = redacted(&r.stderr_tail);
            if let Some(f) = findings::from_command(&redacted(&r.name), r.exit_code, &tail) {
                self.candidates.push(Candidate { finding: f, falsified: None });
            }
        }
    }

    pub fn commands(&mut self, host: &impl Host, results: &[CommandResult]) -> Result<Step, ToolError> {
        if !self.awaiting_commands {
            return Err(ToolError::new(
                "not-awaiting-commands",
                format!("run `{}` is not waiting for command results", self.id),
                "only a code-mode run begun without `commands` takes them, once",
            ));
        }
        self.awaiting_commands = false;
        self.progress_ms = host.now_ms();
        self.add_commands(results);
        Ok(self.maybe_finish(host))
    }

    pub fn spend(&mut self, host: &impl Host, activation: &str, input: u64, output: u64) -> Step {
        self.progress_ms = host.now_ms();
        self.counted.insert(activation.to_string(), Spend { input, output, estimated: false });
        self.check_ceiling(host);
        self.maybe_finish(host)
    }

    /// On tick: a run the host has been silent about for longer than its children's deadlines
    /// allow stops waiting; what never came back is recorded and the iteration decides.
    pub fn expire(&mut self, host: &impl Host) -> Option<Step> {
        let silent = host.now_ms().saturating_sub(self.progress_ms);
        if silent <= self.give_up_after_ms {
            return None;
        }
        let minutes = silent / 60_000;
        for (activation, role) in std::mem::take(&mut self.pending) {
            host.subagent_abort(&activation);
            let error = format!("no completion from the host after {minutes} min");
            self.failures.push(match role {
                Role::Lens(lens) => json!({"lens": lens, "error": error}),
                Role::Falsifier(i) => json!({"falsifier": self.candidates[i].finding.claim, "error": error}),
            });
        }
        if self.awaiting_commands {
            self.awaiting_commands = false;
            let error = format!("no lint/test/build results from the host after {minutes} min");
            self.failures.push(json!({"lens": super::findings::EXECUTION_LENS, "error": error}));
        }
        Some(self.decide(host))
    }

    pub fn activation_end(&mut self, host: &impl Host, result: &ActivationResult) -> Step {
        let Some(role) = self.pending.remove(&result.id) else { return Step::default() };
        self.counted.entry(result.id.clone()).or_insert_with(|| Spend {
            input: self.prompts.get(&result.id).copied().unwrap_or(0) as u64 / 4,
            output: result.text.len() as u64 / 4,
            estimated: true,
        });
        let now = host.now_ms();
        self.progress_ms = now;
        if now.saturating_sub(self.last_touch) >= TOUCH_EVERY_MS {
            self.last_touch = now;
            self.owner.touched_ms = now;
            for lock in &self.locks {
                state::touch(host, lock, &self.owner);
            }
        }
        let mut step = Step::default();
        let completed = result.status == ActivationStatus::Completed;
        match role {
            Role::Lens(lens) if completed => self.lens_reply(host, &lens, &result.text, &mut step),
            Role::Lens(lens) => {
                self.failures.push(json!({"lens": lens, "error": format!("reviewer {}", status_text(result.status))}))
            }
            Role::Falsifier(i) if completed => match findings::parse_falsifier(&result.text) {
                Ok(Some(evidence)) => self.candidates[i].falsified = Some(evidence),
                Ok(None) => {}
                Err(why) => self.failures.push(json!({"falsifier": self.candidates[i].finding.claim, "error": why})),
            },
            Role::Falsifier(i) => self.failures.push(
                json!({"falsifier": self.candidates[i].finding.claim, "error": format!("falsifier {}", status_text(result.status))}),
            ),
        }
        self.check_ceiling(host);
        let mut rest = self.maybe_finish(host);
        step.decisions.append(&mut rest.decisions);
        step.finished = rest.finished;
        step
    }

    fn lens_reply(&mut self, host: &impl Host, lens: &str, text: &str, step: &mut Step) {
        let parsed = match findings::parse_reply(text, lens, self.mode.cap()) {
            Ok(parsed) => parsed,
            Err(why) => {
                self.failures.push(json!({"lens": lens, "error": format!("malformed reply: {why}")}));
                step.decisions.push(
                    json!({"kind": "review-loop", "run": self.id, "event": "reviewer", "lens": lens, "error": format!("malformed reply: {why}")})
                        .to_string(),
                );
                return;
            }
        };
        self.delivered += 1;
        if !parsed.rejected.is_empty() || parsed.over_cap > 0 {
            self.failures.push(json!({"lens": lens, "rejected": parsed.rejected, "overCap": parsed.over_cap}));
        }
        let found = parsed.findings.len();
        let mut falsifiers = 0;
        for finding in parsed.findings {
            let index = self.candidates.len();
            let exempt = finding.is_checklist_unavailable();
            self.candidates.push(Candidate { finding, falsified: None });
            if exempt {
                continue;
            }
            if self.over_ceiling {
                self.truncated = true;
                continue;
            }
            let candidate = &self.candidates[index].finding;
            let prompt = lenses::falsifier_prompt(candidate, self.mode, &self.falsifier_context(candidate));
            let spec = SubagentSpec {
                parent_session: self.state.session_id.clone(),
                provider: self.provider.clone(),
                delivery: "caller".into(),
                prompt,
                tools: Vec::new(),
                timeout_ms: self.falsifier_timeout_ms,
            };
            match host.subagent_start(&spec) {
                Ok(activation) => {
                    self.prompts.insert(activation.clone(), spec.prompt.len());
                    self.pending.insert(activation, Role::Falsifier(index));
                    falsifiers += 1;
                }
                Err(why) => self
                    .failures
                    .push(json!({"falsifier": candidate.claim, "error": format!("not started: {}", redacted(&why))})),
            }
        }
        step.decisions.push(
            json!({"kind": "review-loop", "run": self.id, "event": "reviewer", "lens": lens, "findings": found, "falsifiers": falsifiers})
                .to_string(),
        );
    }

    fn falsifier_context(&self, finding: &Finding) -> String {
        use super::context;
        let doc = |file: &str| self.documents.iter().find(|(p, _)| p == file).map(|(_, t)| t.as_str());
        match self.mode {
            Mode::Code | Mode::Plan => {
                let file = finding.file.as_deref().unwrap_or("");
                if let Some(section) =
                    self.diff_sections().get(file.trim_start_matches("./")).map(|r| &self.artifact[r.clone()])
                {
                    return finding
                        .line
                        .and_then(|l| context::diff_window(section, l))
                        .unwrap_or_else(|| context::clip(section.to_string()));
                }
                match doc(file) {
                    Some(text) => context::text_window(text, finding.line),
                    None => context::text_window(&self.artifact, finding.line),
                }
            }
            Mode::Claim => match finding.file.as_deref().and_then(doc) {
                Some(text) => context::text_window(text, finding.line),
                None => context::clip(self.artifact.clone()),
            },
            Mode::Deliverable => {
                let at = finding.passage.as_deref().and_then(|p| context::find_passage(&self.artifact, p));
                match (at, finding.section.as_deref().and_then(|s| context::section_named(&self.artifact, s))) {
                    (Some(at), _) => context::clip(context::section_at(&self.artifact, at).to_string()),
                    (None, Some(section)) => context::clip(section.to_string()),
                    (None, None) => context::clip(self.artifact.clone()),
                }
            }
        }
    }

    /// Cost discipline: past the ceiling, nothing more is dispatched and what runs is aborted.
    fn check_ceiling(&mut self, host: &impl Host) {
        if self.over_ceiling || self.spent() <= self.state.cost_ceiling_input_tokens {
            return;
        }
        self.over_ceiling = true;
        self.truncated |= !self.pending.is_empty() || self.awaiting_commands;
        let outstanding: Vec<(String, Role)> = std::mem::take(&mut self.pending).into_iter().collect();
        for (activation, role) in outstanding {
            host.subagent_abort(&activation);
            let what = match role {
                Role::Lens(lens) => json!({"lens": lens, "error": "aborted: token ceiling reached"}),
                Role::Falsifier(i) => {
                    json!({"falsifier": self.candidates[i].finding.claim, "error": "aborted: token ceiling reached (finding kept unfalsified)"})
                }
            };
            self.failures.push(what);
        }
    }

    pub(super) fn maybe_finish(&mut self, host: &impl Host) -> Step {
        if !self.pending.is_empty() || (self.awaiting_commands && !self.over_ceiling) {
            return Step::default();
        }
        self.decide(host)
    }
}

fn status_text(status: ActivationStatus) -> &'static str {
    match status {
        ActivationStatus::Completed => "completed",
        ActivationStatus::Failed => "failed",
        ActivationStatus::Aborted => "was aborted",
        ActivationStatus::TimedOut => "timed out",
    }
}

/// `text` with its credentials redacted (a host's or a reviewer's words, kept or shown).
pub(super) fn redacted(text: &str) -> String {
    crate::library::guards::scan::redact_secrets(text).unwrap_or_else(|| text.to_string())
}
