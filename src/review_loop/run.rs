//! One iteration of one session's loop: the Step 0 gate, locks and state, the stall check,
//! dispatch, replies, falsifiers, the token ceiling and the Step 7 decision.

use super::aggregate::{self, Aggregation};
use super::findings::{self, Finding};
use super::lenses::{self, Mode, Scope};
use super::state::{self, Acquire, LockOwner, State};
use super::verdict::{self, Terminal, Verdict};
use super::{CommandResult, DEFAULT_MAX_ITER, DEFAULT_TOKEN_CEILING, Independence, MAX_ARTIFACT, Request};
use crate::api::{ActivationResult, ActivationStatus, CallContext, Decision};
use crate::approval::sha256_hex;
use crate::config::ReviewLoopConfig;
use crate::errors::ToolError;
use crate::host::{Host, Level, SubagentSpec};
use crate::rounds;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Read-only tools a lens may use to look past the prompt (the host maps the names).
const LENS_TOOLS: &[&str] = &["read", "grep", "glob"];
/// Locks are refreshed at most this often while a run makes progress.
const TOUCH_EVERY_MS: u64 = 60_000;

#[derive(Debug, Clone)]
enum Role {
    Lens(String),
    /// Index into `candidates`.
    Falsifier(usize),
}

#[derive(Debug, Clone, Copy, Default)]
struct Spend {
    input: u64,
    output: u64,
    estimated: bool,
}

#[derive(Debug, Clone)]
struct Candidate {
    finding: Finding,
    /// The falsifier's evidence when it disproved the finding.
    falsified: Option<String>,
}

/// What a call produced: decision lines, and whether the run is over (decided).
#[derive(Default)]
pub struct Step {
    pub decisions: Vec<Decision>,
    pub finished: bool,
}

pub struct Run {
    id: String,
    mode: Mode,
    sha: String,
    artifact: String,
    documents: Vec<(String, String)>,
    independence: Independence,
    ack: Option<String>,
    commit: Option<String>,
    uncommitted: bool,
    lenses: Vec<String>,
    locks: Vec<String>,
    owner: LockOwner,
    last_touch: u64,
    state: State,
    started_ms: u64,
    /// Token spend of earlier iterations (from state).
    base: (u64, u64),
    falsifier_timeout_ms: u32,
    provider: String,
    pending: BTreeMap<String, Role>,
    prompts: BTreeMap<String, usize>,
    counted: BTreeMap<String, Spend>,
    awaiting_commands: bool,
    candidates: Vec<Candidate>,
    failures: Vec<Value>,
    over_ceiling: bool,
}

type Alive<'a> = &'a dyn Fn(&LockOwner) -> bool;

pub fn begin(
    host: &impl Host,
    config: &ReviewLoopConfig,
    ctx: &CallContext,
    req: Request,
    id: &str,
    instance: &str,
    alive: Alive<'_>,
) -> Result<(Value, Option<Run>), ToolError> {
    validate(ctx, &req)?;
    let session = ctx.session.clone();
    let base = json!({"kind": "review-loop", "run": id, "session": session, "mode": req.mode.as_str()});

    // Step 0: nobody has spent reviewer effort by the time this stops them.
    if let Independence::SelfAuthored(files) = &req.independence
        && req.self_review_ack.is_none()
        && !req.auto
    {
        let mut out = base;
        out["outcome"] = json!("stopped");
        out["reason"] = json!("self-authored");
        out["message"] = json!(format!(
            "STOP: this session edited {} file(s) in what it is asked to review ({}), so it carries the blind \
                 spots that produced any defect in them. Fix: review from a fresh session (check the branch or PR \
                 out there, e.g. `gh pr checkout <number>`, and run the review in it). To review here anyway, pass \
                 a self-review acknowledgement with the reason: the verdict is then marked SELF-REVIEW and never \
                 says review-clean.",
            files.len(),
            files.join(", ")
        ));
        return Ok((out, None));
    }

    // Step 2: the per-session lock, then the per-repo lock.
    let now = host.now_ms();
    let owner = LockOwner { owner: instance.into(), run: id.into(), session: session.clone(), touched_ms: now };
    let mut locks = Vec::new();
    let mut warnings = Vec::new();
    let mut wanted = vec![state::session_lock(&session)];
    if !req.repo.is_empty() {
        wanted.push(state::repo_lock(&req.repo));
    }
    for path in wanted {
        match state::acquire(host, &path, &owner, alive) {
            Acquire::Taken => locks.push(path),
            Acquire::TakenStale(old) => {
                warnings.push(format!(
                    "broke a stale lock {path} (run `{}` of session `{}`, untouched since {})",
                    old.run,
                    old.session,
                    crate::time::iso(old.touched_ms)
                ));
                locks.push(path);
            }
            Acquire::Busy(holder) => {
                for taken in &locks {
                    state::release(host, taken, id);
                }
                let by = holder.map(|h| format!(" (held by run `{}` of session `{}`)", h.run, h.session));
                state::log(
                    host,
                    &session,
                    &format!("skip: concurrent-loop-in-repo {path}{}", by.clone().unwrap_or_default()),
                );
                let mut out = base;
                out["outcome"] = json!("skipped");
                out["reason"] = json!("skip: concurrent-loop-in-repo");
                out["lock"] = json!(path);
                out["message"] = json!(format!(
                    "another review loop holds {path}{}; run again when it ends",
                    by.unwrap_or_default()
                ));
                return Ok((out, None));
            }
        }
    }
    // A refused begin leaves the state root as it found it (the folder too, when it is empty).
    let release_all = || {
        for path in &locks {
            state::release(host, path, id);
        }
        let _ = host.remove_dir(&crate::host::Root::State, state::DIR);
    };

    // Step 1: load or start the state.
    let saved = match state::load(host, &session) {
        Ok(saved) => saved,
        Err(message) => {
            release_all();
            return Err(ToolError::new("state-unreadable", message, "move the file aside; the loop starts over"));
        }
    };
    let sha = req.artifact_sha.clone().unwrap_or_else(|| sha256_hex(req.artifact.as_bytes()));
    let mut state = match saved.filter(|s| s.completion.is_none()) {
        Some(s) => {
            if s.mode != req.mode.as_str() {
                release_all();
                return Err(ToolError::new(
                    "mode-changed",
                    format!("this session's loop runs in mode `{}`; the mode does not flip mid-loop", s.mode),
                    format!("call begin with mode `{}`, or finish that loop first", s.mode),
                ));
            }
            if req.max_iter.is_some_and(|m| m != s.max_iterations) {
                warnings.push(format!("kept this loop's maxIter {} (set when it started)", s.max_iterations));
            }
            s
        }
        None => {
            for prior in state::prior_runs(host, &session) {
                warnings.push(format!(
                    "this session already completed a review ({prior}); a second review shares the first one's \
                     context — prefer a fresh session"
                ));
            }
            State {
                session_id: session.clone(),
                started_at: crate::time::iso(now),
                iteration: 0,
                max_iterations: req.max_iter.unwrap_or(DEFAULT_MAX_ITER),
                cost_spent_input_tokens: 0,
                cost_spent_output_tokens: 0,
                cost_ceiling_input_tokens: req.token_ceiling.unwrap_or(DEFAULT_TOKEN_CEILING),
                last_diff_sha: None,
                findings_history: Vec::new(),
                completion: None,
                scope: state::Scope { branch: req.branch.clone(), files: req.files.clone() },
                mode: req.mode.as_str().into(),
                independence: req.independence.to_json(),
                estimated_activations: 0,
            }
        }
    };
    state.scope = state::Scope { branch: req.branch.clone(), files: req.files.clone() };
    let started_ms = crate::time::parse_iso(&state.started_at).unwrap_or(now);
    let mut lenses: Vec<String> = req.mode.lenses().iter().map(|s| s.to_string()).collect();
    lenses.retain(|l| !req.disabled_lenses.contains(l));

    let mut run = Run {
        id: id.into(),
        mode: req.mode,
        sha: sha.clone(),
        artifact: req.artifact,
        documents: req.documents,
        independence: req.independence,
        ack: req.self_review_ack.or_else(|| req.auto.then(|| "hook-invoked in the authoring session".to_string())),
        commit: req.commit,
        uncommitted: req.uncommitted,
        lenses,
        locks: locks.clone(),
        owner,
        last_touch: now,
        base: (state.cost_spent_input_tokens, state.cost_spent_output_tokens),
        state,
        started_ms,
        falsifier_timeout_ms: minutes_ms(config.falsifier_timeout_minutes),
        provider: config.provider.clone(),
        pending: BTreeMap::new(),
        prompts: BTreeMap::new(),
        counted: BTreeMap::new(),
        awaiting_commands: false,
        candidates: Vec::new(),
        failures: Vec::new(),
        over_ceiling: false,
    };

    // Step 3: the same artifact after an attempted fix is no progress.
    if run.state.iteration > 0 && run.state.last_diff_sha.as_deref() == Some(sha.as_str()) {
        let unresolved =
            run.history(|v| v["addressed"].as_bool() == Some(true) && v["iteration"] == json!(run.state.iteration));
        let agg = Aggregation { actionable: unresolved, ..Default::default() };
        return Ok((run.terminal(host, Terminal::Stalled, &agg, warnings), None));
    }

    // Step 4: every lens at once.
    let prior = run.history(|v| v["iteration"] == json!(run.state.iteration) && v.get("dropped").is_none());
    let scope = Scope {
        mode: run.mode,
        branch: &req.branch,
        files: &req.files,
        artifact: &run.artifact,
        documents: &run.documents,
    };
    let mut dispatched = Vec::new();
    let reviewer_timeout = minutes_ms(config.reviewer_timeout_minutes);
    for lens in run.lenses.clone() {
        let prompt = lenses::lens_prompt(&lens, &scope, run.state.iteration, &prior);
        let spec = SubagentSpec {
            parent_session: session.clone(),
            provider: run.provider.clone(),
            delivery: "caller".into(),
            prompt,
            tools: LENS_TOOLS.iter().map(|t| t.to_string()).collect(),
            timeout_ms: reviewer_timeout,
        };
        match host.subagent_start(&spec) {
            Ok(activation) => {
                run.prompts.insert(activation.clone(), spec.prompt.len());
                run.pending.insert(activation.clone(), Role::Lens(lens.clone()));
                dispatched.push(json!({"lens": lens, "activation": activation}));
            }
            Err(why) => run.failures.push(json!({"lens": lens, "error": format!("not started: {why}")})),
        }
    }
    if dispatched.is_empty() {
        release_all();
        return Err(ToolError::new(
            "no-reviewer",
            "no lens reviewer could start, so nothing was reviewed",
            "check that the host offers subagents with the configured reviewLoop.provider",
        )
        .with_details(json!({"failures": run.failures})));
    }
    if run.mode == Mode::Code {
        match &req.commands {
            Some(results) => run.add_commands(results),
            None => run.awaiting_commands = true,
        }
    }
    if let Err(err) = state::save(host, &run.state) {
        host.log(Level::Warn, &format!("review-loop: could not save state: {err}"));
    }
    let iteration = run.state.iteration + 1;
    let mut out = base;
    out["outcome"] = json!("dispatched");
    out["iteration"] = json!(iteration);
    out["maxIter"] = json!(run.state.max_iterations);
    out["independence"] = json!(run.independence.as_str());
    out["sha"] = json!(sha);
    out["lenses"] = json!(dispatched);
    out["awaitingCommands"] = json!(run.awaiting_commands);
    if !run.failures.is_empty() {
        out["failures"] = json!(run.failures);
    }
    if !warnings.is_empty() {
        out["warnings"] = json!(warnings);
    }
    if !req.auto {
        out["preamble"] = json!(format!(
            "Running /review-loop on {}, iter {iteration}/{}, scope={}.",
            if req.branch.is_empty() { "(no branch)" } else { &req.branch },
            run.state.max_iterations,
            run.mode.as_str()
        ));
    }
    Ok((out, Some(run)))
}

fn validate(ctx: &CallContext, req: &Request) -> Result<(), ToolError> {
    let bad = |code, message: String, hint: &str| Err(ToolError::new(code, message, hint));
    if !ctx.is_top_level() {
        return bad(
            "not-top-level",
            "a review loop runs for a top-level session".into(),
            "call begin from the session whose work is reviewed, not from a child agent",
        );
    }
    if req.artifact.trim().is_empty() {
        let why = match req.mode {
            Mode::Deliverable => "an empty deliverable set is a routing fault, never review-clean",
            Mode::Claim => "claim mode reviews the claims themselves: pass them verbatim",
            _ => "there is nothing to review",
        };
        return bad(
            "empty-artifact",
            format!("the artifact is empty: {why}"),
            "pass the diff, plan, claims or deliverable text",
        );
    }
    let size = req.artifact.len() + req.documents.iter().map(|(p, t)| p.len() + t.len()).sum::<usize>();
    if size > MAX_ARTIFACT {
        return bad(
            "too-large",
            format!("artifact and documents are {size} bytes (limit {MAX_ARTIFACT})"),
            "review a smaller change",
        );
    }
    if let Some(sha) = &req.artifact_sha
        && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
    {
        return bad(
            "bad-sha",
            format!("artifactSha `{sha}` is not a sha256 in hex"),
            "pass 64 hex digits, or none and the plugin computes it",
        );
    }
    if req.max_iter.is_some_and(|m| !(1..=20).contains(&m)) {
        return bad("bad-max-iter", "maxIter must be 1 to 20".into(), "the seed's default is 3");
    }
    if req.token_ceiling == Some(0) {
        return bad("bad-ceiling", "the token ceiling must be above 0".into(), "the seed's default is 300000");
    }
    if req.commands.is_some() && req.mode != Mode::Code {
        return bad(
            "commands-outside-code",
            format!("execution-grounded checks run in code mode only, not `{}`", req.mode.as_str()),
            "drop `commands` for this mode",
        );
    }
    if let Independence::SelfAuthored(_) = req.independence {
    } else if req.self_review_ack.is_some() && req.independence.is_independent() {
        return bad(
            "ack-without-self-review",
            "a self-review acknowledgement was given for an independent review".into(),
            "drop the acknowledgement, or pass the measured independence",
        );
    }
    if req.self_review_ack.as_deref().is_some_and(|a| a.trim().is_empty()) {
        return bad(
            "empty-ack",
            "the self-review acknowledgement needs its reason".into(),
            "say why the review runs in the authoring session",
        );
    }
    for lens in &req.disabled_lenses {
        if !req.mode.optional_lenses().contains(&lens.as_str()) {
            return bad(
                "bad-disabled-lens",
                format!("lens `{lens}` cannot be switched off in mode `{}`", req.mode.as_str()),
                "only statistical-rigor (code mode) is optional",
            );
        }
    }
    Ok(())
}

fn minutes_ms(minutes: u64) -> u32 {
    u32::try_from(minutes.saturating_mul(60_000)).unwrap_or(u32::MAX)
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

    fn totals(&self) -> (u64, u64) {
        let (i, o) = self.counted.values().fold((0, 0), |(i, o), s| (i + s.input, o + s.output));
        (self.base.0 + i, self.base.1 + o)
    }

    fn spent(&self) -> u64 {
        let (i, o) = self.totals();
        i + o
    }

    /// Findings of `findings_history` matching `keep`.
    fn history(&self, keep: impl Fn(&Value) -> bool) -> Vec<Finding> {
        self.state.findings_history.iter().filter(|v| keep(v)).filter_map(Finding::from_json).collect()
    }

    fn add_commands(&mut self, results: &[CommandResult]) {
        for r in results {
            if let Some(f) = findings::from_command(&r.name, r.exit_code, &r.stderr_tail) {
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
        self.add_commands(results);
        Ok(self.maybe_finish(host))
    }

    pub fn spend(&mut self, host: &impl Host, activation: &str, input: u64, output: u64) -> Step {
        self.counted.insert(activation.to_string(), Spend { input, output, estimated: false });
        self.check_ceiling(host);
        self.maybe_finish(host)
    }

    pub fn activation_end(&mut self, host: &impl Host, result: &ActivationResult) -> Step {
        let Some(role) = self.pending.remove(&result.id) else { return Step::default() };
        self.counted.entry(result.id.clone()).or_insert_with(|| Spend {
            input: self.prompts.get(&result.id).copied().unwrap_or(0) as u64 / 4,
            output: result.text.len() as u64 / 4,
            estimated: true,
        });
        let now = host.now_ms();
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
        if !parsed.rejected.is_empty() || parsed.over_cap > 0 {
            self.failures.push(json!({"lens": lens, "rejected": parsed.rejected, "overCap": parsed.over_cap}));
        }
        let found = parsed.findings.len();
        let mut falsifiers = 0;
        for finding in parsed.findings {
            let index = self.candidates.len();
            let exempt = finding.is_checklist_unavailable();
            self.candidates.push(Candidate { finding, falsified: None });
            if exempt || self.over_ceiling {
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
                Err(why) => {
                    self.failures.push(json!({"falsifier": candidate.claim, "error": format!("not started: {why}")}))
                }
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
                if let Some(section) = context::diff_section(&self.artifact, file) {
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

    fn maybe_finish(&mut self, host: &impl Host) -> Step {
        if !self.pending.is_empty() || (self.awaiting_commands && !self.over_ceiling) {
            return Step::default();
        }
        self.decide(host)
    }

    /// Steps 6 and 7.
    fn decide(&mut self, host: &impl Host) -> Step {
        let addressed = self.history(|v| v["addressed"].as_bool() == Some(true));
        let kept: Vec<Finding> =
            self.candidates.iter().filter(|c| c.falsified.is_none()).map(|c| c.finding.clone()).collect();
        let input = aggregate::Input {
            mode: self.mode,
            artifact: &self.artifact,
            iteration: self.state.iteration,
            addressed: &addressed,
        };
        let agg = aggregate::aggregate(&input, kept);
        let iteration = self.state.iteration + 1;
        let may_refine = rounds::may_refine(self.state.iteration, rounds::refinements(self.state.max_iterations));
        let terminal = if agg.actionable.is_empty() {
            Some(Terminal::Clean)
        } else if self.over_ceiling || self.spent() > self.state.cost_ceiling_input_tokens || !may_refine {
            Some(Terminal::Exhausted)
        } else {
            None
        };
        self.record_history(iteration, &agg, terminal.is_none());
        if let Some(terminal) = terminal {
            let out = self.terminal(host, terminal, &agg, Vec::new());
            return Step { decisions: vec![out.to_string()], finished: true };
        }
        self.state.iteration += 1;
        self.state.last_diff_sha = Some(self.sha.clone());
        self.save_spend();
        if let Err(err) = state::save(host, &self.state) {
            host.log(Level::Warn, &format!("review-loop: could not save state: {err}"));
        }
        self.release(host);
        let next = self.state.iteration;
        let max = self.state.max_iterations;
        let mut out = self.decision("continue", &agg, iteration);
        out["next"] = json!({
            "decision": "block",
            "reason": format!("/review-loop --auto --session-id {} --iteration {next} --max-iter {max} --mode {}", self.state.session_id, self.mode.as_str()),
            "systemMessage": format!("Review-loop iter {}/{max}", next + 1),
        });
        out["summary"] = json!(format!(
            "Iteration {iteration}/{max}: {} actionable finding(s) to fix (one fix per finding; a non-obvious fix gets a \
             `REVIEW-LOOP-iter:` tracking comment), then call begin again with the new artifact.",
            agg.actionable.len()
        ));
        Step { decisions: vec![out.to_string()], finished: true }
    }

    fn record_history(&mut self, iteration: u32, agg: &Aggregation, continuing: bool) {
        let entry = |f: &Finding, extra: Value| {
            let mut v = f.to_json();
            v["iteration"] = json!(iteration);
            if let Value::Object(map) = extra {
                for (k, val) in map {
                    v[k] = val;
                }
            }
            v
        };
        let mut items = Vec::new();
        items.extend(agg.actionable.iter().map(|f| entry(f, json!({"class": "actionable", "addressed": continuing}))));
        items.extend(agg.speculative.iter().map(|f| entry(f, json!({"class": "speculative", "addressed": false}))));
        items.extend(agg.dropped.iter().map(|d| entry(&d.finding, json!({"dropped": d.reason, "score": d.score}))));
        items.extend(self.candidates.iter().filter_map(|c| {
            c.falsified.as_ref().map(|e| entry(&c.finding, json!({"dropped": "falsified", "evidence": e})))
        }));
        self.state.findings_history.extend(items);
    }

    fn save_spend(&mut self) {
        let (input, output) = self.totals();
        self.state.cost_spent_input_tokens = input;
        self.state.cost_spent_output_tokens = output;
        self.state.estimated_activations += self.counted.values().filter(|s| s.estimated).count() as u32;
        self.counted.clear();
        self.base = (input, output);
    }

    fn release(&self, host: &impl Host) {
        for lock in &self.locks {
            state::release(host, lock, &self.id);
        }
    }

    fn decision(&self, outcome: &str, agg: &Aggregation, iteration: u32) -> Value {
        let (input, output) = self.totals();
        let list = |fs: &[Finding]| fs.iter().map(Finding::to_json).collect::<Vec<_>>();
        let falsified: Vec<Value> = self
            .candidates
            .iter()
            .filter_map(|c| {
                c.falsified.as_ref().map(|e| json!({"claim": c.finding.claim, "lens": c.finding.lens, "evidence": e}))
            })
            .collect();
        let estimated = self.state.estimated_activations + self.counted.values().filter(|s| s.estimated).count() as u32;
        json!({
            "kind": "review-loop", "run": self.id, "session": self.state.session_id, "mode": self.mode.as_str(),
            "iteration": iteration,
            "maxIter": self.state.max_iterations, "outcome": outcome, "independence": self.independence.as_str(),
            "actionable": list(&agg.actionable), "speculative": list(&agg.speculative),
            "dropped": agg.dropped.iter().map(|d| d.to_json()).collect::<Vec<_>>(), "falsified": falsified,
            "failures": self.failures,
            "tokens": {"input": input, "output": output, "ceiling": self.state.cost_ceiling_input_tokens, "estimatedActivations": estimated},
        })
    }

    /// A terminal verdict: completion, verdict, trail, archive, locks released.
    fn terminal(&mut self, host: &impl Host, terminal: Terminal, agg: &Aggregation, warnings: Vec<String>) -> Value {
        let outcome = match terminal {
            Terminal::Clean if self.independence.is_independent() => "review-clean",
            Terminal::Clean => "no-blocking-findings",
            Terminal::Exhausted => "review-exhausted",
            Terminal::Stalled => "review-stalled",
        };
        // A stall is found before the iteration runs: the last one reviewed is the one counted.
        let iterations = self.state.iteration + u32::from(terminal != Terminal::Stalled);
        let mut out = self.decision(outcome, agg, iterations);
        self.save_spend();
        let fixed = self.history(|v| v["addressed"].as_bool() == Some(true));
        let fixed: Vec<Finding> = if terminal == Terminal::Stalled { Vec::new() } else { fixed };
        let verdict = Verdict {
            terminal,
            mode: self.mode,
            branch: &self.state.scope.branch,
            commit: self.commit.as_deref(),
            uncommitted: self.uncommitted,
            iterations,
            lenses: &self.lenses,
            independence: &self.independence,
            ack: self.ack.as_deref(),
            fixed: &fixed,
            unresolved: &agg.actionable,
            speculative: &agg.speculative,
        };
        let markdown = verdict.markdown(None);
        // Claim mode posts only when the analysis lives in files (seed: tied to an open PR).
        let trail = if self.mode == Mode::Claim && self.state.scope.files.is_empty() {
            json!({"skipped": "claim mode without files has no PR to post to"})
        } else {
            verdict::post(host, &verdict)
        };
        self.state.completion = Some(outcome.to_string());
        let archived = state::archive(host, &self.state, self.started_ms);
        self.release(host);
        out["verdictLine"] = json!(verdict.line());
        out["verdict"] = json!(markdown);
        out["trail"] = trail;
        match archived {
            Ok(path) => out["archived"] = json!(path),
            Err(err) => out["archiveError"] = json!(err.to_string()),
        }
        if !warnings.is_empty() {
            out["warnings"] = json!(warnings);
        }
        let (input, output) = self.totals();
        out["summary"] = json!(format!(
            "{}: {} lens(es), {} unresolved actionable, {} speculative, {} dropped, {} falsified; {} tokens of plan usage \
             (API-equivalent) of {}.",
            verdict.line(),
            self.lenses.len(),
            agg.actionable.len(),
            agg.speculative.len(),
            agg.dropped.len(),
            self.candidates.iter().filter(|c| c.falsified.is_some()).count(),
            input + output,
            self.state.cost_ceiling_input_tokens
        ));
        out
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
