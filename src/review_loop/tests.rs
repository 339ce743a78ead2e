//! The review loop on the fake host and a manual clock: lens sets, independence, locks, stall,
//! falsifiers, each decision branch, malformed replies, the token ceiling and the verdict.

use super::*;
use crate::api::{ActivationStatus, Origin};
use crate::config::Config;
use crate::fake::FakeHost;
use crate::host::{HttpResponse, Root};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const MIN: u64 = 60_000;

/// A small change to a lock file, shared with the end-to-end tests and the demo scene.
pub(super) const DIFF: &str = include_str!("../../tests/fixtures/lock.diff");

struct T {
    host: FakeHost,
    loops: Loops,
    config: ReviewLoopConfig,
    delivered: usize,
}

fn fresh() -> T {
    let host = FakeHost::new(1_000 * MIN);
    host.map_root(Root::State);
    T { host, loops: Loops::default(), config: Config::default().review_loop, delivered: 0 }
}

pub(super) fn ctx(session: &str) -> CallContext {
    CallContext { session: session.into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
}

pub(super) fn req(mode: Mode, artifact: &str) -> Request {
    Request {
        mode,
        artifact: artifact.into(),
        artifact_sha: None,
        files: vec!["src/lock.rs".into()],
        documents: vec![],
        repo: "/work/repo".into(),
        branch: "feat/locks".into(),
        commit: Some("0123456789abcdef0123".into()),
        uncommitted: false,
        max_iter: None,
        token_ceiling: None,
        independence: Independence::Independent,
        self_review_ack: None,
        auto: false,
        commands: (mode == Mode::Code).then(Vec::new),
        disabled_lenses: vec![],
    }
}

fn finding(file: &str, line: u32, claim: &str, severity: &str, confidence: u32, load_bearing: bool) -> String {
    serde_json::json!({"file": file, "line": line, "claim": claim, "severity": severity,
        "confidence": confidence, "load_bearing": load_bearing, "category": "bug"})
    .to_string()
}

const ON_TOPIC: &str = "take_lock removes a stale lock of another owner without checking the owner is gone";

impl T {
    fn begin(&mut self, session: &str, r: Request) -> Value {
        self.loops.begin(&self.host, &self.config, &ctx(session), r).expect("begin")
    }

    /// Answers every started activation not yet answered (including falsifiers started on the
    /// way) with `answer(prompt)`, until none is left. Returns all decisions, parsed.
    fn drive(&mut self, answer: impl Fn(&str) -> String) -> Vec<Value> {
        let mut out = Vec::new();
        while self.delivered < self.host.started.borrow().len() {
            let prompt = self.host.started.borrow()[self.delivered].prompt.clone();
            self.delivered += 1;
            let id = format!("act-{}", self.delivered);
            let result = ActivationResult { id, status: ActivationStatus::Completed, text: answer(&prompt) };
            if let Some(decisions) = self.loops.activation_end(&self.host, &result) {
                out.extend(decisions.iter().map(|d| serde_json::from_str::<Value>(d).unwrap()));
            }
        }
        out
    }

    fn prompts(&self) -> Vec<String> {
        self.host.started.borrow().iter().map(|s| s.prompt.clone()).collect()
    }
}

fn last(decisions: &[Value]) -> &Value {
    decisions.last().expect("a decision")
}

/// Lens replies: `adversarial` reports `findings`, every other lens `[]`; falsifiers do not
/// falsify unless their prompt holds `falsify`.
fn replies(findings: &'static str, falsify: &'static str) -> impl Fn(&str) -> String {
    move |prompt: &str| {
        if prompt.starts_with("A reviewer flagged") {
            if !falsify.is_empty() && prompt.contains(falsify) {
                r#"{"falsified": true, "evidence": "the cited code does not exist"}"#.into()
            } else {
                r#"{"falsified": false}"#.into()
            }
        } else if prompt.starts_with("You are the ADVERSARIAL") {
            findings.to_string()
        } else {
            "[]".into()
        }
    }
}

#[test]
fn each_mode_dispatches_its_lens_set_in_parallel() {
    for (mode, count, first) in [
        (Mode::Code, 5, "You are the SIMPLICITY"),
        (Mode::Plan, 4, "You are the VISION-COHERENCE"),
        (Mode::Claim, 4, "You are the CLAIM-FALSIFICATION"),
        (Mode::Deliverable, 1, "You are the OPERATOR-EMPATHY lens, scope B"),
    ] {
        let mut t = fresh();
        let mut r = req(mode, DIFF);
        r.commands = None;
        let out = t.begin("s1", r);
        assert_eq!(out["outcome"], "dispatched");
        assert_eq!(out["lenses"].as_array().unwrap().len(), count, "{mode:?}");
        assert_eq!(out["awaitingCommands"], mode == Mode::Code);
        let prompts = t.prompts();
        assert_eq!(prompts.len(), count, "all lenses start before any reply");
        assert!(prompts[0].starts_with(first), "{mode:?}: {}", &prompts[0][..60]);
        for p in &prompts {
            assert!(p.contains("Return JSON findings only"));
            assert!(p.contains(DIFF), "the artifact is in the prompt");
            assert!(!p.contains("In the prior iteration"), "no reflection in iteration 1");
            let discipline = ["PLAN-VS-CODE DISCIPLINE", "CLAIM DISCIPLINE", "DELIVERABLE DISCIPLINE"];
            let expected = match mode {
                Mode::Code => None,
                Mode::Plan => Some(0),
                Mode::Claim => Some(1),
                Mode::Deliverable => Some(2),
            };
            for (i, block) in discipline.iter().enumerate() {
                assert_eq!(p.contains(block), expected == Some(i), "{mode:?} {block}");
            }
        }
        let spec = &t.host.started.borrow()[0];
        assert_eq!((spec.provider.as_str(), spec.delivery.as_str(), spec.timeout_ms), ("fresh", "caller", 600_000));
    }
    // The optional lens can be switched off, and only it.
    let mut t = fresh();
    let mut r = req(Mode::Code, DIFF);
    r.disabled_lenses = vec!["statistical-rigor".into()];
    assert_eq!(t.begin("s1", r)["lenses"].as_array().unwrap().len(), 4);
    let mut r = req(Mode::Plan, DIFF);
    r.disabled_lenses = vec!["completeness".into()];
    let err = t.loops.begin(&t.host, &t.config, &ctx("s2"), r).unwrap_err();
    assert_eq!(err.code, "bad-disabled-lens");
}

#[test]
fn self_authored_without_acknowledgement_stops_before_any_reviewer() {
    let mut t = fresh();
    let before = t.host.snapshot();
    let mut r = req(Mode::Code, DIFF);
    r.independence = Independence::SelfAuthored(vec!["src/lock.rs".into()]);
    let out = t.begin("s1", r);
    assert_eq!(out["outcome"], "stopped");
    let message = out["message"].as_str().unwrap();
    assert!(message.contains("fresh session") && message.contains("src/lock.rs"), "{message}");
    assert!(t.host.started.borrow().is_empty(), "no reviewer started");
    assert_eq!(t.host.snapshot(), before, "no state, lock or log written");
}

#[test]
fn acknowledged_self_review_runs_marked_and_never_says_review_clean() {
    for (independence, ack, auto) in [
        (Independence::SelfAuthored(vec!["src/lock.rs".into()]), Some("no second session on this box"), false),
        (Independence::SelfAuthored(vec!["src/lock.rs".into()]), None, true),
        (Independence::Unverified("git log is unavailable".into()), None, false),
    ] {
        let mut t = fresh();
        let mut r = req(Mode::Code, DIFF);
        r.independence = independence.clone();
        r.self_review_ack = ack.map(String::from);
        r.auto = auto;
        assert_eq!(t.begin("s1", r)["outcome"], "dispatched");
        let decisions = t.drive(replies("[]", ""));
        let out = last(&decisions);
        assert_eq!(out["outcome"], "no-blocking-findings");
        let text = out.to_string();
        assert!(!text.contains("review-clean"), "the token is withheld: {text}");
        let verdict = out["verdict"].as_str().unwrap();
        assert!(verdict.contains("SELF-REVIEW — NOT INDEPENDENT"), "{verdict}");
        assert!(verdict.contains("**Verdict:** self-review — no blocking findings"));
        match &independence {
            Independence::Unverified(_) => {
                assert!(verdict.contains("**Independence:** unverified — git log is unavailable"))
            }
            _ if auto => assert!(verdict.contains("Reason given: hook-invoked in the authoring session")),
            _ => assert!(verdict.contains(
                "Reason given: no second session on this box. Files this session edited in this diff: 1 (src/lock.rs)"
            )),
        }
        let archived = out["archived"].as_str().unwrap();
        let state = String::from_utf8(t.host.file(&Root::State, archived).unwrap()).unwrap();
        assert!(!state.contains("review-clean"), "{state}");
    }
}

#[test]
fn an_independent_clean_run_says_review_clean_and_archives() {
    let mut t = fresh();
    t.begin("s1", req(Mode::Code, DIFF));
    let decisions = t.drive(replies("[]", ""));
    let out = last(&decisions);
    assert_eq!(out["outcome"], "review-clean");
    assert_eq!(out["iteration"], 1);
    let verdict = out["verdict"].as_str().unwrap();
    let expected_head = "<!-- review-loop-verdict -->\n## 🔬 review-loop verdict — pinned to `0123456789ab`\n\n**Reviewed:** `feat/locks` on `0123456789ab` · **mode:** code · **iterations:** 1 · **method:** automated multi-agent review-loop — lens subagents (simplicity, design-coherence, adversarial, ship-readiness, statistical-rigor) in independent contexts + an execution-grounded lint/test/build check. Findings falsified against the diff; not a human review.\n\n**Verdict:** review-clean\n\n**Independence:** independent\n";
    assert!(verdict.starts_with(expected_head), "{verdict}");
    assert!(!verdict.contains("SELF-REVIEW"));
    assert!(verdict.ends_with("_Re-run after new commits to refresh._\n"));
    assert_eq!(out["trail"]["skipped"], "no `review-trail` endpoint");
    // State archived, locks released, the live state file gone.
    assert!(t.host.file(&Root::State, &state::state_path("s1")).is_none());
    assert!(t.host.file(&Root::State, &state::session_lock("s1")).is_none());
    assert!(t.host.file(&Root::State, &state::repo_lock("/work/repo")).is_none());
    let archived: state::State =
        serde_json::from_slice(&t.host.file(&Root::State, out["archived"].as_str().unwrap()).unwrap()).unwrap();
    assert_eq!(archived.completion.as_deref(), Some("review-clean"));
    // A second run in the same session warns and names the first.
    let again = t.begin("s1", req(Mode::Code, DIFF));
    let warning = again["warnings"][0].as_str().unwrap();
    assert!(warning.contains(out["archived"].as_str().unwrap()) && warning.contains("fresh session"), "{warning}");
}

#[test]
fn actionable_findings_continue_then_a_fixed_artifact_is_clean_and_the_same_one_stalls() {
    let mut t = fresh();
    let first = format!("[{}]", finding("src/lock.rs", 6, ON_TOPIC, "high", 90, true));
    let first: &'static str = Box::leak(first.into_boxed_str());
    t.begin("s1", req(Mode::Code, DIFF));
    let out = last(&t.drive(replies(first, ""))).clone();
    assert_eq!(out["outcome"], "continue");
    assert_eq!(out["actionable"][0]["claim"], ON_TOPIC);
    assert_eq!(out["next"]["reason"], "/review-loop --auto --session-id s1 --iteration 1 --max-iter 3 --mode code");
    assert_eq!(out["next"]["systemMessage"], "Review-loop iter 2/3");
    assert!(t.host.file(&Root::State, &state::session_lock("s1")).is_none(), "locks released between iterations");
    let saved = state::load(&t.host, "s1").unwrap().unwrap();
    assert_eq!((saved.iteration, saved.completion.clone()), (1, None));

    // Iteration 2 on a changed diff: the prompt reflects, the repeat is deduplicated → clean.
    let fixed = DIFF.replace("remove_stale_lock(path, owner)", "remove_stale_lock_if_dead(path, owner)");
    t.begin("s1", req(Mode::Code, &fixed));
    let reflection = t.prompts().last().unwrap().clone();
    assert!(reflection.contains("In the prior iteration you flagged:") && reflection.contains(ON_TOPIC));
    let out = last(&t.drive(replies(first, ""))).clone();
    assert_eq!(out["outcome"], "review-clean", "{out}");
    assert_eq!(out["dropped"][0]["dropped"], "duplicate");
    assert!(out["verdict"].as_str().unwrap().contains(&format!("- **[load-bearing]** `src/lock.rs:6` — {ON_TOPIC}")));

    // A new loop whose second iteration sees the same diff stalls.
    let mut t2 = t_with_continue(first);
    let out = t2.begin("s1", req(Mode::Code, DIFF));
    assert_eq!(out["outcome"], "review-stalled");
    assert!(out["verdict"].as_str().unwrap().contains("**Verdict:** review-stalled — no progress, not clean"));
    assert!(out["verdict"].as_str().unwrap().contains(ON_TOPIC), "unresolved checklist");
    assert_eq!(t2.prompts().len(), 5 + 1, "no reviewer dispatched for a stalled iteration");
    assert!(state::load(&t2.host, "s1").unwrap().is_none(), "archived");
}

fn t_with_continue(findings: &'static str) -> T {
    let mut t = fresh();
    t.begin("s1", req(Mode::Code, DIFF));
    assert_eq!(last(&t.drive(replies(findings, "")))["outcome"], "continue");
    t
}

#[test]
fn the_iteration_cap_exhausts_with_both_checklists() {
    let mut t = fresh();
    let both: &'static str = Box::leak(
        format!(
            "[{},{}]",
            finding("src/lock.rs", 6, ON_TOPIC, "high", 90, true),
            finding("src/lock.rs", 5, "take_lock could return the created lock file handle", "low", 90, false)
        )
        .into_boxed_str(),
    );
    let mut r = req(Mode::Code, DIFF);
    r.max_iter = Some(1);
    t.begin("s1", r);
    let out = last(&t.drive(replies(both, ""))).clone();
    assert_eq!(out["outcome"], "review-exhausted");
    assert_eq!((out["actionable"].as_array().unwrap().len(), out["speculative"].as_array().unwrap().len()), (1, 1));
    let verdict = out["verdict"].as_str().unwrap();
    assert!(verdict.contains("**Verdict:** review-exhausted — 1 unresolved actionable finding(s)"));
    assert!(verdict.contains(&format!("- `src/lock.rs:6` — {ON_TOPIC} (high, load-bearing)")));
    assert!(verdict.contains("- `src/lock.rs:5` — take_lock could return the created lock file handle (low)"));
}

#[test]
fn falsified_findings_are_dropped_and_checklist_unavailable_is_never_falsified() {
    let mut t = fresh();
    let findings: &'static str = Box::leak(
        format!(
            "[{},{}]",
            finding("src/lock.rs", 6, ON_TOPIC, "high", 90, true),
            r#"{"claim":"the project deliverable standard docs/STD.md could not be read","severity":"high","confidence":100,"load_bearing":true,"category":"checklist-unavailable"}"#
        )
        .into_boxed_str(),
    );
    t.begin("s1", req(Mode::Code, DIFF));
    let out = last(&t.drive(replies(findings, "take_lock removes"))).clone();
    let falsifiers: Vec<String> = t.prompts().into_iter().filter(|p| p.starts_with("A reviewer flagged")).collect();
    assert_eq!(falsifiers.len(), 1, "one falsifier, none for checklist-unavailable");
    assert!(falsifiers[0].contains("at src/lock.rs:6") && falsifiers[0].contains("+fn take_lock"), "diff snippet");
    assert_eq!(out["falsified"][0]["claim"], ON_TOPIC);
    assert_eq!(out["falsified"][0]["evidence"], "the cited code does not exist");
    // The checklist-unavailable finding survives the drift guard too (it shares no words with the diff).
    assert_eq!(out["actionable"][0]["category"], "checklist-unavailable");
    assert_eq!(out["outcome"], "continue");
}

#[test]
fn a_malformed_reply_is_one_recorded_failure() {
    let mut t = fresh();
    t.begin("s1", req(Mode::Code, DIFF));
    let decisions =
        t.drive(
            |p: &str| {
                if p.starts_with("You are the SIMPLICITY") { "Sorry, I can't do that.".into() } else { "[]".into() }
            },
        );
    let reviewer = decisions.iter().find(|d| d["lens"] == "simplicity").unwrap();
    assert!(reviewer["error"].as_str().unwrap().starts_with("malformed reply"));
    let out = last(&decisions);
    assert_eq!(out["outcome"], "no-blocking-findings", "an incomplete review withholds the token");
    assert!(!out.to_string().contains("review-clean"));
    assert!(out["verdict"].as_str().unwrap().contains("**Verdict:** no blocking findings — incomplete review"));
    assert_eq!(out["failures"].as_array().unwrap().len(), 1);
    assert_eq!(out["failures"][0]["lens"], "simplicity");
    // When no lens delivers, nothing was reviewed: exhausted, never clean, and the verdict says why.
    let mut t2 = fresh();
    t2.begin("s3", req(Mode::Code, DIFF));
    let out = last(&t2.drive(|_| "no JSON here".into())).clone();
    assert_eq!(out["outcome"], "review-exhausted");
    let verdict = out["verdict"].as_str().unwrap();
    assert!(
        verdict.contains("**Degraded:** lens `simplicity`: malformed reply")
            && verdict.contains("no lens delivered a review"),
        "{verdict}"
    );
    // A failed or timed-out activation is a failure too, not a crash.
    let mut t = fresh();
    t.begin("s2", req(Mode::Deliverable, "# Report\n\nAll good.\n"));
    let out = t
        .loops
        .activation_end(
            &t.host,
            &ActivationResult { id: "act-1".into(), status: ActivationStatus::TimedOut, text: String::new() },
        )
        .unwrap();
    let out: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(out["failures"][0]["error"], "reviewer timed out");
}

#[test]
fn code_mode_waits_for_commands_and_a_failed_command_is_a_load_bearing_finding() {
    let mut t = fresh();
    let mut r = req(Mode::Code, DIFF);
    r.commands = None;
    let begun = t.begin("s1", r);
    let run = begun["run"].as_str().unwrap().to_string();
    let decisions = t.drive(replies("[]", ""));
    assert!(decisions.iter().all(|d| d["event"] == "reviewer"), "no decision before the commands");
    let results = vec![
        CommandResult { name: "lint".into(), exit_code: 0, stderr_tail: String::new() },
        CommandResult { name: "test".into(), exit_code: 101, stderr_tail: "test lock::stale ... FAILED".into() },
    ];
    let out = t.loops.commands(&t.host, &run, &results).unwrap();
    let out: Value = serde_json::from_str(&out[0]).unwrap();
    assert_eq!(out["outcome"], "continue");
    let f = &out["actionable"][0];
    assert_eq!(
        (f["lens"].as_str(), f["severity"].as_str(), f["confidence"].as_u64()),
        (Some("execution-grounded"), Some("high"), Some(100))
    );
    let settled = t.host.snapshot();
    assert_eq!(t.loops.commands(&t.host, &run, &results).unwrap_err().code, "unknown-run", "the run is over");
    assert_eq!(t.host.snapshot(), settled);
    // Commands outside code mode are refused, changing nothing.
    let before = t.host.snapshot();
    let mut r = req(Mode::Plan, DIFF);
    r.commands = Some(results);
    assert_eq!(t.loops.begin(&t.host, &t.config, &ctx("s9"), r).unwrap_err().code, "commands-outside-code");
    assert_eq!(t.host.snapshot(), before);
}

#[test]
fn the_token_ceiling_is_honoured_mid_iteration() {
    let mut t = fresh();
    let mut r = req(Mode::Code, DIFF);
    r.token_ceiling = Some(10_000);
    t.begin("s1", r);
    // The first lens replies with a finding: its falsifier starts (act-6).
    let text = format!("[{}]", finding("src/lock.rs", 6, ON_TOPIC, "high", 90, true));
    let ended = ActivationResult { id: "act-1".into(), status: ActivationStatus::Completed, text };
    let progress = t.loops.activation_end(&t.host, &ended).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&progress[0]).unwrap()["falsifiers"], 1);
    assert_eq!(t.host.started.borrow().len(), 6);
    // Then the host reports act-1's real spend: past the ceiling, so the four other lenses and the
    // falsifier are aborted and the iteration decides on what it has.
    let out = t.loops.spend(&t.host, "act-1", 9_000, 2_000);
    let aborted = t.host.aborted.borrow().clone();
    assert_eq!(aborted, ["act-2", "act-3", "act-4", "act-5", "act-6"]);
    let out: Value = serde_json::from_str(out.last().unwrap()).unwrap();
    assert_eq!(out["outcome"], "review-exhausted");
    assert_eq!((out["tokens"]["input"].as_u64(), out["tokens"]["output"].as_u64()), (Some(9_000), Some(2_000)));
    assert_eq!(out["actionable"][0]["claim"], ON_TOPIC, "kept unfalsified");
    assert_eq!(t.host.started.borrow().len(), 6, "nothing started past the ceiling");
    let failures = out["failures"].as_array().unwrap();
    assert_eq!(failures.iter().filter(|f| f["error"] == "aborted: token ceiling reached").count(), 4);
    assert_eq!(failures.iter().filter(|f| f.get("falsifier").is_some()).count(), 1);
    // Late completions of aborted reviewers belong to nobody now.
    let late = ActivationResult { id: "act-2".into(), status: ActivationStatus::Aborted, text: String::new() };
    assert!(t.loops.activation_end(&t.host, &late).is_none());
}

#[test]
fn spend_exactly_at_the_ceiling_is_exhausted_and_one_token_below_continues() {
    // Seed 003, Step 7: more iterations only while cost-spent < ceiling.
    let outcome = |spent_per_lens: u64| {
        let mut t = fresh();
        let mut r = req(Mode::Code, DIFF);
        r.commands = None;
        r.token_ceiling = Some(10_000);
        let begun = t.begin("s1", r);
        let run = begun["run"].as_str().unwrap().to_string();
        for i in 1..=5 {
            t.loops.spend(&t.host, &format!("act-{i}"), spent_per_lens, 0);
        }
        t.drive(replies("[]", ""));
        let failed = vec![CommandResult { name: "test".into(), exit_code: 1, stderr_tail: "FAILED".into() }];
        let out = t.loops.commands(&t.host, &run, &failed).unwrap();
        let out: Value = serde_json::from_str(out.last().unwrap()).unwrap();
        (out["outcome"].as_str().unwrap_or_default().to_string(), out["tokens"]["input"].as_u64())
    };
    assert_eq!(outcome(2_000), ("review-exhausted".to_string(), Some(10_000)), "at the ceiling");
    assert_eq!(outcome(1_999), ("continue".to_string(), Some(9_995)), "below it");
}

#[test]
fn a_run_the_host_went_silent_about_is_given_up_on_tick() {
    let mut t = fresh();
    let mut r = req(Mode::Code, DIFF);
    r.commands = None;
    t.begin("s1", r);
    // Two lenses answer; three never do, and the command results never come.
    for id in ["act-1", "act-2"] {
        let done = ActivationResult { id: id.into(), status: ActivationStatus::Completed, text: "[]".into() };
        t.loops.activation_end(&t.host, &done).unwrap();
    }
    t.host.advance(16 * MIN);
    assert!(t.loops.tick(&t.host).is_empty(), "10 + 2 + 5 minutes of grace have not passed");
    t.host.advance(2 * MIN);
    let out: Value = serde_json::from_str(&t.loops.tick(&t.host)[0]).unwrap();
    assert_eq!(out["outcome"], "no-blocking-findings", "two of five lenses and no commands: incomplete");
    assert_eq!(t.host.aborted.borrow().as_slice(), ["act-3", "act-4", "act-5"]);
    let verdict = out["verdict"].as_str().unwrap();
    assert!(verdict.contains("lens `adversarial`: no completion from the host after 18 min"), "{verdict}");
    assert!(verdict.contains("lens `execution-grounded`: no lint/test/build results"), "{verdict}");
    assert!(t.host.file(&Root::State, &state::session_lock("s1")).is_none(), "locks released");
    assert!(t.loops.tick(&t.host).is_empty(), "the run is over");
}

#[test]
fn unreported_spend_is_estimated_and_counted() {
    let mut t = fresh();
    let mut r = req(Mode::Deliverable, "# Report\n\nThe answer is 4.\n");
    r.token_ceiling = Some(50);
    t.begin("s1", r);
    let out = last(&t.drive(|_| "[]".into())).clone();
    assert_eq!(out["outcome"], "review-clean", "a clean run is clean even past the ceiling");
    assert!(out["tokens"]["input"].as_u64().unwrap() > 50);
    assert_eq!(out["tokens"]["estimatedActivations"], 1);
}

#[test]
fn lock_contention_and_stale_locks_on_a_manual_clock() {
    let mut t = fresh();
    t.begin("s1", req(Mode::Code, DIFF));
    // Another session in the same repo is skipped while s1 runs.
    let before = t.host.file(&Root::State, &state::repo_lock("/work/repo"));
    let out = t.begin("s2", req(Mode::Code, DIFF));
    assert_eq!(out["outcome"], "skipped");
    assert_eq!(out["reason"], "skip: concurrent-loop-in-repo");
    let log = String::from_utf8(t.host.file(&Root::State, "review-loop/s2.log").unwrap()).unwrap();
    assert!(log.contains("skip: concurrent-loop-in-repo"), "{log}");
    assert!(t.host.file(&Root::State, &state::session_lock("s2")).is_none(), "s2's session lock released");
    assert_eq!(t.host.file(&Root::State, &state::repo_lock("/work/repo")), before);
    // 31 minutes later s1 is still live in this instance: its lock is not broken.
    t.host.advance(31 * MIN);
    assert_eq!(t.begin("s2", req(Mode::Code, DIFF))["outcome"], "skipped");

    // A lock left by an owner that is gone: busy at 29 minutes, broken once after 30.
    let mut t = fresh();
    let dead = state::LockOwner {
        owner: "inst-other".into(),
        run: "rl-9".into(),
        session: "s0".into(),
        touched_ms: t.host.now_ms(),
    };
    let path = state::repo_lock("/work/repo");
    t.host.write(&Root::State, &path, &serde_json::to_vec(&dead).unwrap(), crate::host::WriteMode::CreateNew).unwrap();
    t.host.advance(29 * MIN);
    assert_eq!(t.begin("s1", req(Mode::Code, DIFF))["outcome"], "skipped");
    t.host.advance(2 * MIN);
    let out = t.begin("s1", req(Mode::Code, DIFF));
    assert_eq!(out["outcome"], "dispatched");
    assert!(out["warnings"][0].as_str().unwrap().contains("broke a stale lock"), "{out}");
    let held: state::LockOwner = serde_json::from_slice(&t.host.file(&Root::State, &path).unwrap()).unwrap();
    assert_eq!(held.session, "s1");

    // Run ids restart in every process: another instance's stale lock naming `rl-1` is not alive
    // because this instance happens to run an `rl-1` of its own.
    let mut t = fresh();
    assert_eq!(t.begin("s1", req(Mode::Code, DIFF))["run"], "rl-1");
    let other_repo = "/work/other";
    let dead = state::LockOwner {
        owner: "inst-other".into(),
        run: "rl-1".into(),
        session: "s0".into(),
        touched_ms: t.host.now_ms(),
    };
    let path = state::repo_lock(other_repo);
    t.host.write(&Root::State, &path, &serde_json::to_vec(&dead).unwrap(), crate::host::WriteMode::CreateNew).unwrap();
    t.host.advance(31 * MIN);
    let mut r = req(Mode::Code, DIFF);
    r.repo = other_repo.into();
    let out = t.begin("s2", r);
    assert_eq!(out["outcome"], "dispatched", "{out}");
    assert!(out["warnings"][0].as_str().unwrap().contains("broke a stale lock"), "{out}");
}

#[test]
fn refusals_are_structured_and_change_nothing() {
    let mut t = fresh();
    let before = t.host.snapshot();
    let cases: Vec<(Request, CallContext, &str)> = vec![
        (req(Mode::Deliverable, "  \n"), ctx("s1"), "empty-artifact"),
        (
            {
                let mut r = req(Mode::Code, DIFF);
                r.artifact_sha = Some("xyz".into());
                r
            },
            ctx("s1"),
            "bad-sha",
        ),
        (
            {
                let mut r = req(Mode::Code, DIFF);
                r.max_iter = Some(0);
                r
            },
            ctx("s1"),
            "bad-max-iter",
        ),
        (
            {
                let mut r = req(Mode::Code, DIFF);
                r.token_ceiling = Some(0);
                r
            },
            ctx("s1"),
            "bad-ceiling",
        ),
        (
            {
                let mut r = req(Mode::Code, DIFF);
                r.self_review_ack = Some("why".into());
                r
            },
            ctx("s1"),
            "ack-without-self-review",
        ),
        (req(Mode::Code, DIFF), CallContext { depth: 1, origin: Origin::Subagent, ..ctx("s1") }, "not-top-level"),
        (req(Mode::Deliverable, &"x".repeat(MAX_ARTIFACT + 1)), ctx("s1"), "too-large"),
        (
            {
                let mut r = req(Mode::Plan, DIFF);
                r.disabled_lenses = vec!["completeness".into()];
                r
            },
            ctx("s1"),
            "bad-disabled-lens",
        ),
        (
            {
                let mut r = req(Mode::Code, DIFF);
                r.self_review_ack = Some(" ".into());
                r.independence = Independence::SelfAuthored(vec![]);
                r
            },
            ctx("s1"),
            "empty-ack",
        ),
    ];
    for (r, c, code) in cases {
        assert_eq!(t.loops.begin(&t.host, &t.config, &c, r).unwrap_err().code, code);
    }
    t.host.refuse_starts.set(true);
    let err = t.loops.begin(&t.host, &t.config, &ctx("s1"), req(Mode::Code, DIFF)).unwrap_err();
    assert_eq!(err.code, "no-reviewer");
    let mut expected = before; // but for the shared `review-loop/` (see `begin_tests`)
    expected.entry(Root::State).or_default().insert(state::DIR.into(), crate::fake::Node::Dir);
    assert_eq!(t.host.snapshot(), expected, "locks released, no state written");
}

#[test]
fn the_mode_does_not_flip_mid_loop() {
    let mut t = t_with_continue(Box::leak(
        format!("[{}]", finding("src/lock.rs", 6, ON_TOPIC, "high", 90, true)).into_boxed_str(),
    ));
    let before = t.host.snapshot();
    let err = t.loops.begin(&t.host, &t.config, &ctx("s1"), req(Mode::Plan, "a plan")).unwrap_err();
    assert_eq!(err.code, "mode-changed");
    assert_eq!(t.host.snapshot(), before);
}

#[test]
fn the_verdict_is_posted_once_per_pr_editing_a_marked_comment() {
    for (marked, expect_edit) in [(false, false), (true, true)] {
        let mut t = fresh();
        t.host.add_endpoint("review-trail", true);
        let pr = serde_json::json!({"number": 7, "state": "OPEN", "headRefOid": "fedcba9876543210", "lastCommentMarked": marked});
        t.host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 200, body: pr.to_string().into_bytes() }));
        t.host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 201, body: vec![] }));
        t.begin("s1", req(Mode::Code, DIFF));
        let out = last(&t.drive(replies("[]", ""))).clone();
        assert_eq!(out["trail"]["posted"], true);
        assert_eq!(out["trail"]["edited"], expect_edit);
        let requests = t.host.http_requests.borrow();
        assert_eq!((requests[0].path.as_str(), requests[1].path.as_str()), ("/pr", "/comment"));
        let sent: Value = serde_json::from_slice(&requests[1].body).unwrap();
        assert_eq!(sent["editLast"], expect_edit);
        let body = sent["body"].as_str().unwrap();
        assert!(body.starts_with("<!-- review-loop-verdict -->") && body.contains("pinned to `fedcba987654`"));
        assert!(body.contains("Local HEAD `0123456789ab` differs from the PR head `fedcba987654`"), "{body}");
    }
    // A finding that quotes a credential keeps the verdict off the PR (the lookup is all that is sent).
    let mut t = fresh();
    t.host.add_endpoint("review-trail", true);
    let pr = serde_json::json!({"number": 7, "state": "OPEN", "headRefOid": "fedcba9876543210"});
    t.host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 200, body: pr.to_string().into_bytes() }));
    let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2zA4");
    let quoting: &'static str = Box::leak(
        format!(
            "[{}]",
            finding(
                "src/lock.rs",
                6,
                &format!("take_lock logs the token {token} when the lock is stale"),
                "low",
                90,
                false
            )
        )
        .into_boxed_str(),
    );
    t.begin("s1", req(Mode::Code, &format!("{DIFF}+    log(\"{token}\");\n")));
    // The plugin redacts a child's text where it arrives (`events.activation-end`), as `begin`
    // redacted the diff: the finding reaches the verdict with the credential's mark, which keeps
    // the verdict off the PR as the credential itself would.
    let reply = replies(quoting, "");
    let out = last(&t.drive(|prompt| {
        let text = reply(prompt);
        crate::library::guards::scan::redact_secrets(&text).unwrap_or(text)
    }))
    .clone();
    assert!(out["trail"]["withheld"].as_str().is_some_and(|w| w.contains("github-pat")), "{out}");
    assert!(!out.to_string().contains(&token), "{out}");
    assert!(!t.prompts().iter().any(|p| p.contains(&token)), "no reviewer is sent the token");
    assert_eq!(t.host.http_requests.borrow().len(), 1, "no /comment");
    assert!(!t.host.logs.borrow().iter().any(|(_, m)| m.contains(&token)), "the token is in no log");

    // No open PR: nothing posted, nothing failed.
    let mut t = fresh();
    t.host.add_endpoint("review-trail", true);
    t.host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 404, body: vec![] }));
    t.begin("s1", req(Mode::Code, DIFF));
    let out = last(&t.drive(replies("[]", ""))).clone();
    assert_eq!(out["trail"]["skipped"], "no open PR for the branch");
    assert_eq!(t.host.http_requests.borrow().len(), 1);
}

fn one(claim: &str, severity: &str, confidence: u32, load_bearing: bool) -> findings::Finding {
    let text = format!("[{}]", finding("src/lock.rs", 6, claim, severity, confidence, load_bearing));
    findings::parse_reply(&text, "adversarial", 9).unwrap().findings.remove(0)
}

#[test]
fn a_confidence_just_below_seventy_is_dropped_and_reported_as_given() {
    let text =
        finding("src/lock.rs", 6, ON_TOPIC, "high", 70, true).replace("\"confidence\":70", "\"confidence\":69.5");
    let f = findings::parse_reply(&format!("[{text}]"), "adversarial", 9).unwrap().findings.remove(0);
    assert_eq!(f.confidence, 69.5);
    let a = aggregate_code(1, &[], vec![f.clone()]);
    assert!(a.actionable.is_empty(), "69.5 < 70: dropped from iteration 2");
    assert_eq!((a.dropped[0].reason, a.dropped[0].score), ("low-confidence", 69.5));
    assert_eq!(a.dropped[0].to_json()["confidence"], serde_json::json!(69.5), "reported as given");
    let kept = aggregate_code(0, &[], vec![f]);
    assert_eq!(kept.actionable[0].to_json()["confidence"], serde_json::json!(69.5), "iteration 1 keeps it as given");
}

fn aggregate_code(
    iteration: u32,
    addressed: &[findings::Finding],
    fs: Vec<findings::Finding>,
) -> aggregate::Aggregation {
    let corpus = similarity::Corpus::of_lines(DIFF);
    let sections = context::diff_sections(DIFF);
    let input = aggregate::Input {
        mode: Mode::Code,
        artifact: DIFF,
        corpus: &corpus,
        sections: &sections,
        iteration,
        addressed,
    };
    aggregate::aggregate(&input, fs)
}

#[test]
fn each_aggregation_filter_on_both_sides_of_its_threshold() {
    // 1. Drift: 0.333 against the ±10 lines around src/lock.rs:6 stays, 0.293 goes.
    let a = aggregate_code(
        0,
        &[],
        vec![
            one("owner is unused when the lock is created", "high", 90, true),
            one("take_lock ignores the owner", "high", 90, true),
        ],
    );
    assert_eq!(a.actionable.len(), 1);
    assert_eq!(a.dropped.len(), 1);
    let d = &a.dropped[0];
    assert_eq!((d.reason, d.reference, d.finding.claim.as_str()), ("drift", "window", "take_lock ignores the owner"));
    assert!(d.score > 0.28 && d.score < aggregate::DRIFT_MIN, "{}", d.score);

    // 2. Dedup from iteration 2 against addressed findings: 0.936 goes, 0.835 stays.
    let addressed = [one(ON_TOPIC, "high", 90, true)];
    let repeat = "take_lock removes a stale lock of another owner without checking the owner";
    let reworded = "take_lock removes a stale lock without checking whether its owner is gone";
    let a = aggregate_code(1, &addressed, vec![one(repeat, "high", 90, true), one(reworded, "high", 90, true)]);
    assert_eq!(a.dropped.len(), 1);
    assert_eq!((a.dropped[0].reason, a.dropped[0].finding.claim.as_str()), ("duplicate", repeat));
    assert!(a.dropped[0].score >= aggregate::DEDUP_MIN && a.dropped[0].score < 0.95, "{}", a.dropped[0].score);
    assert_eq!(a.actionable[0].claim, reworded);
    // Iteration 1 has no history to deduplicate against.
    assert_eq!(aggregate_code(0, &addressed, vec![one(repeat, "high", 90, true)]).actionable.len(), 1);

    // 3. Confidence from iteration 2: 69 goes, 70 stays; iteration 1 keeps 10; commands always stay.
    let exec = findings::from_command("build", 1, "error[E0425]").unwrap();
    let a =
        aggregate_code(1, &[], vec![one(ON_TOPIC, "high", 69, true), one(ON_TOPIC, "medium", 70, true), exec.clone()]);
    assert_eq!(a.dropped.len(), 1);
    assert_eq!((a.dropped[0].reason, a.dropped[0].score), ("low-confidence", 69.0));
    assert_eq!(a.actionable.len(), 2);
    assert!(a.actionable.contains(&exec), "execution-grounded: no drift guard, no confidence filter");
    assert_eq!(aggregate_code(0, &[], vec![one(ON_TOPIC, "high", 10, true)]).actionable.len(), 1);

    // 4. Classify: medium and load-bearing is actionable; low, or not load-bearing, is speculative.
    let a = aggregate_code(
        0,
        &[],
        vec![one(ON_TOPIC, "medium", 90, true), one(ON_TOPIC, "low", 90, true), one(ON_TOPIC, "critical", 90, false)],
    );
    assert_eq!((a.actionable.len(), a.speculative.len()), (1, 2));
    assert_eq!(a.actionable[0].severity, findings::Severity::Medium);
}

#[test]
fn deliverable_drift_compares_with_the_cited_passage_and_its_section() {
    use super::similarity::{Corpus, cosine};
    let mut doc = String::from("# Quarterly report\n\nThe answer: costs fell 4%.\n\n");
    for i in 0..40 {
        doc.push_str(&format!(
            "## Region {i}\n\nRevenue grew in region {i} while hiring stayed flat and churn improved.\n\n"
        ));
    }
    doc.push_str("## Vendors\n\nAcme, Globex, Initech, Umbrella, Hooli, Stark and Wayne each supplied parts.\n");
    let claim = "the vendors section lists seven suppliers (Acme, Globex, Initech) in prose instead of a table";
    let passage = "Acme, Globex, Initech, Umbrella, Hooli, Stark and Wayne each supplied parts.";
    let corpus = Corpus::of_lines(&doc);
    let whole = cosine(&corpus.vector(claim), &corpus.vector(&doc));
    assert!(whole < aggregate::DRIFT_MIN, "against the whole document it would drift-drop: {whole}");
    let mut f = one(claim, "medium", 90, true);
    f.passage = Some(passage.into());
    let mut unavailable = one("docs/STANDARD.md could not be read", "high", 100, true);
    unavailable.category = findings::CHECKLIST_UNAVAILABLE.into();
    let mut misquoted = one(claim, "medium", 90, true);
    misquoted.passage = Some("text that is nowhere".into());
    let sections = context::diff_sections(&doc);
    let input = aggregate::Input {
        mode: Mode::Deliverable,
        artifact: &doc,
        corpus: &corpus,
        sections: &sections,
        iteration: 0,
        addressed: &[],
    };
    let a = aggregate::aggregate(&input, vec![f, unavailable, misquoted]);
    assert_eq!(a.actionable.len(), 2, "{:?}", a.dropped);
    assert!(a.actionable.iter().any(|f| f.is_checklist_unavailable()), "exempt from the drift guard");
    assert_eq!((a.dropped[0].reason, a.dropped[0].reference), ("drift", "artifact"), "no passage: the whole text");
}

#[test]
fn claim_and_deliverable_falsifiers_get_the_source_and_the_section() {
    // Claim mode: the finding cites a primary source; its falsifier reads that excerpt.
    let mut t = fresh();
    let claims = "Churn fell because of the new onboarding flow (interviews, n=12).";
    let source =
        "line one\nline two\nP7: I stayed because support answered fast, not because of onboarding.\nline four\n";
    let mut r = req(Mode::Claim, claims);
    r.files = vec![];
    r.max_iter = Some(1);
    r.documents = vec![("sources/interviews.md".into(), source.into())];
    t.begin("s1", r);
    assert!(t.prompts()[0].contains("## sources/interviews.md") && t.prompts()[0].contains("CLAIM DISCIPLINE"));
    let finding = r#"[{"file":"sources/interviews.md","line":3,"claim":"churn fell is attributed to onboarding but the interviews credit support","severity":"high","confidence":90,"load_bearing":true,"category":"attribution"}]"#;
    let out = last(&t.drive(|p: &str| {
        if p.starts_with("A reviewer flagged") {
            r#"{"falsified": false}"#.into()
        } else if p.starts_with("You are the CLAIM-FALSIFICATION") {
            finding.into()
        } else {
            "[]".into()
        }
    }))
    .clone();
    let falsifier = t.prompts().into_iter().find(|p| p.starts_with("A reviewer flagged")).unwrap();
    assert!(
        falsifier.contains("The relevant primary-source excerpt is") && falsifier.contains("P7: I stayed"),
        "{falsifier}"
    );
    assert_eq!(out["trail"]["skipped"], "claim mode without files has no PR to post to");
    assert!(out["verdict"].as_str().unwrap().contains("Findings falsified against the claims"));

    // Deliverable mode: the falsifier re-counts within the passage's section.
    let mut t = fresh();
    let doc = "# Report\n\nAnswer: ship it.\n\n## Vendors\n\nAcme, Globex and Initech supplied parts.\n\n## Appendix\n\nRaw numbers.\n";
    t.begin("s1", req(Mode::Deliverable, doc));
    let finding = r#"[{"claim":"the vendors section lists 3 suppliers (Acme, Globex, Initech) as prose, not a table","severity":"medium","confidence":90,"load_bearing":true,"category":"D2","passage":"Acme, Globex and Initech supplied parts.","section":"Vendors"}]"#;
    t.drive(|p: &str| {
        if p.starts_with("A reviewer flagged") {
            r#"{"falsified": true, "evidence": "count is right but genre is reference"}"#.into()
        } else {
            finding.into()
        }
    });
    let falsifier = t.prompts().into_iter().find(|p| p.starts_with("A reviewer flagged")).unwrap();
    assert!(
        falsifier
            .contains("The surrounding deliverable text is:\n\n## Vendors\n\nAcme, Globex and Initech supplied parts."),
        "{falsifier}"
    );
    assert!(!falsifier.contains("Raw numbers"), "only the passage's section");
}

#[test]
fn a_corrupt_state_file_is_refused_and_kept() {
    let mut t = fresh();
    let path = state::state_path("s1");
    t.host.write(&Root::State, &path, b"{not json", crate::host::WriteMode::CreateNew).unwrap();
    let before = t.host.snapshot();
    let err = t.loops.begin(&t.host, &t.config, &ctx("s1"), req(Mode::Code, DIFF)).unwrap_err();
    assert_eq!(err.code, "state-unreadable");
    assert!(err.message.contains("review-loop/s1.json"), "{}", err.message);
    assert_eq!(t.host.snapshot(), before, "the file is kept and the locks released");
    assert!(t.host.started.borrow().is_empty());
}

#[test]
fn history_lists_running_and_archived_loops_with_their_verdicts() {
    let mut t = fresh();
    t.begin("done", req(Mode::Code, DIFF));
    t.drive(replies("[]", ""));
    let mut r = req(Mode::Code, DIFF);
    r.repo = "/other".into();
    t.begin("running", r);
    let rows = history::list(&t.host);
    let sessions: Vec<(&str, &str)> =
        rows.iter().map(|r| (r["session"].as_str().unwrap(), r["status"].as_str().unwrap())).collect();
    assert_eq!(sessions, [("running", "waiting for iteration 1"), ("done", "review-clean")]);
    let verdict = history::verdict(&t.host, "done").unwrap();
    assert!(verdict.contains("**Verdict:** review-clean"));
    assert!(history::verdict(&t.host, "running").is_none());
}

#[test]
fn commands_for_a_run_that_already_has_them_are_refused_and_change_nothing() {
    let mut t = fresh();
    let run = t.begin("s1", req(Mode::Code, DIFF))["run"].as_str().unwrap().to_string();
    let before = t.host.snapshot();
    let late = [CommandResult { name: "test".into(), exit_code: 1, stderr_tail: String::new() }];
    let err = t.loops.commands(&t.host, &run, &late).unwrap_err();
    assert_eq!(err.code, "not-awaiting-commands");
    assert_eq!(t.host.snapshot(), before);
    assert_eq!(last(&t.drive(replies("[]", "")))["outcome"], "review-clean", "the run goes on unaffected");
}
