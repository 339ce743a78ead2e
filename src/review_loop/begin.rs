//! Starting an iteration: the Step 0 independence gate, validation, the two locks, state load,
//! the Step 3 stall check and the Step 4 dispatch of every lens at once.

use super::aggregate::Aggregation;
use super::lenses::{self, Mode, Scope};
use super::request::{DEFAULT_MAX_ITER, DEFAULT_TOKEN_CEILING, Independence, MAX_ARTIFACT, Request};
use super::run::{Role, Run, redacted};
use super::state::{self, Acquire, LockOwner, State};
use super::verdict::Terminal;
use crate::api::CallContext;
use crate::config::ReviewLoopConfig;
use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::{Host, Level, SubagentSpec};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Read-only tools a lens may use to look past the prompt (the host maps the names).
const LENS_TOOLS: &[&str] = &["read", "grep", "glob"];

pub(super) type Alive<'a> = &'a dyn Fn(&LockOwner) -> bool;

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
    // A refused begin releases its locks and leaves nothing of its own. `review-loop/` stays, even
    // when its locks were the first in it and it is empty now: it is shared, and removing it could
    // pull it from under another process's first write that has just made it (a write opens the
    // folder, then creates its entry there), and that begin would be skipped as if its lock were
    // busy. An empty `review-loop/` is harmless.
    let release_all = || {
        for path in &locks {
            state::release(host, path, id);
        }
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
    // Every lens and falsifier prompt quotes the artifact and documents (reviewer input), and
    // findings quote them back into decisions, state and the verdict: their credentials are
    // redacted once, here, once the artifact's sha is measured on the host's bytes.
    let mut req = req;
    redact_in_place(&mut req.artifact);
    for (_, text) in &mut req.documents {
        redact_in_place(text);
    }
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
                verdict: None,
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
        corpus: super::similarity::Corpus::of_lines(&req.artifact),
        artifact: req.artifact,
        sections: Default::default(),
        documents: req.documents,
        independence: req.independence,
        ack: req.self_review_ack.or_else(|| req.auto.then(|| "hook-invoked in the authoring session".to_string())),
        commit: req.commit,
        uncommitted: req.uncommitted,
        lenses,
        locks: locks.clone(),
        owner,
        last_touch: now,
        progress_ms: now,
        // Both deadlines the host was given, plus five minutes of grace.
        give_up_after_ms: (config.reviewer_timeout_minutes + config.falsifier_timeout_minutes + 5) * 60_000,
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
        truncated: false,
        delivered: 0,
    };

    // Step 3: the same artifact after an attempted fix is no progress.
    if run.state.iteration > 0 && run.state.last_diff_sha.as_deref() == Some(sha.as_str()) {
        let unresolved =
            run.history(|v| v["addressed"].as_bool() == Some(true) && v["iteration"] == json!(run.state.iteration));
        let agg = Aggregation { actionable: unresolved, ..Default::default() };
        // A stall fixed nothing in the iteration that never ran.
        return Ok((run.terminal(host, Terminal::Stalled, &agg, &[], warnings), None));
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
            Err(why) => run.failures.push(json!({"lens": lens, "error": format!("not started: {}", redacted(&why))})),
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

fn redact_in_place(text: &mut String) {
    if let Some(clean) = crate::library::guards::scan::redact_secrets(text) {
        *text = clean;
    }
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
    if req.self_review_ack.is_some() && req.independence.is_independent() {
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

pub(super) fn minutes_ms(minutes: u64) -> u32 {
    u32::try_from(minutes.saturating_mul(60_000)).unwrap_or(u32::MAX)
}

#[cfg(test)]
#[path = "begin_tests.rs"]
mod tests;
