//! The review loop (seed 003) through the real component in the wasmtime host: reviewers are
//! scripted children answered by their prompt, state and locks live on a real disk, the clock
//! is manual, and the verdict goes to a `review-trail` server on 127.0.0.1.

mod common;

use common::{TestHost, all_services, host_with, snapshot};
use self_evolve_host::bindings::review_loop::{CommandResult, Independence, Mode, Request};
use self_evolve_host::caps::subagent::{Script, ScriptedProvider, Spec};
use self_evolve_host::testing::{Reply, ScriptedServer};
use self_evolve_host::{Clock, Endpoint, HttpConfig, user_context};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const DIFF: &str = include_str!("fixtures/lock.diff");

const CLAIM: &str = "take_lock removes a stale lock of another owner without checking the owner is gone";

/// What the scripted children answer: the adversarial lens reports `CLAIM` while `raise` is set,
/// the simplicity lens answers prose, the others `[]`; falsifiers never falsify.
fn respond(raise: Arc<Mutex<bool>>) -> impl FnMut(&Spec) -> Option<Script> + Send {
    move |spec: &Spec| {
        let text = if spec.prompt.starts_with("A reviewer flagged") {
            r#"{"falsified": false}"#.to_string()
        } else if spec.prompt.starts_with("You are the ADVERSARIAL") && *raise.lock().unwrap() {
            json!([{"file": "src/lock.rs", "line": 6, "claim": CLAIM, "severity": "high", "confidence": 90,
                    "load_bearing": true, "category": "concurrency", "fix": "check the owner is dead first"}])
            .to_string()
        } else if spec.prompt.starts_with("You are the SIMPLICITY") && *raise.lock().unwrap() {
            "Looks fine to me!".to_string()
        } else {
            "[]".to_string()
        };
        Some(Script { text, ..Default::default() })
    }
}

struct Rig {
    h: TestHost,
    provider: Arc<Mutex<ScriptedProvider>>,
    raise: Arc<Mutex<bool>>,
}

fn rig(trail: Option<&str>) -> Rig {
    let raise = Arc::new(Mutex::new(true));
    let provider = Arc::new(Mutex::new(ScriptedProvider {
        responder: Some(Box::new(respond(raise.clone()))),
        ..Default::default()
    }));
    let p = provider.clone();
    let mut h = host_with(|c| {
        c.subagents = Box::new(p);
        if let Some(url) = trail {
            c.http = HttpConfig { endpoints: BTreeMap::from([("review-trail".to_string(), Endpoint::new(url))]) };
        }
    });
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    Rig { h, provider, raise }
}

fn request(diff: &str) -> Request {
    Request {
        mode: Mode::Code,
        artifact: diff.into(),
        artifact_sha: None,
        files: vec!["src/lock.rs".into()],
        documents: vec![],
        repo: "/work/repo".into(),
        branch: "feat/locks".into(),
        commit: Some("0123456789abcdef".into()),
        uncommitted: false,
        max_iter: None,
        token_ceiling: None,
        independence: Independence::Independent,
        self_review_ack: None,
        auto: true,
        commands: None,
        disabled_lenses: vec![],
    }
}

fn parse(lines: Vec<String>) -> Vec<Value> {
    lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect()
}

impl Rig {
    fn begin(&mut self, session: &str, req: &Request) -> Result<Value, Value> {
        match self.h.plugin.review_loop_begin(&user_context(session), req).unwrap() {
            Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
            Err(text) => Err(serde_json::from_str(&text).unwrap()),
        }
    }

    /// Delivers finished children until none is left (falsifiers start on the way).
    fn pump(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let lines = parse(self.h.plugin.pump_activations().unwrap());
            if lines.is_empty() {
                return out;
            }
            out.extend(lines);
        }
    }

    fn started(&self) -> usize {
        self.provider.lock().unwrap().activations.len()
    }
}

#[test]
fn a_code_review_continues_with_a_failed_test_then_ends_clean_and_posts_its_verdict() {
    let server = ScriptedServer::start(vec![
        Reply::ok(r#"{"number": 12, "state": "OPEN", "headRefOid": "0123456789abcdef", "lastCommentMarked": true}"#),
        Reply::status(200),
    ])
    .unwrap();
    let mut r = rig(Some(&server.url()));

    // Iteration 1: five lenses start at once; the host still owes its command results.
    let begun = r.begin("s1", &request(DIFF)).unwrap();
    assert_eq!((begun["outcome"].as_str(), begun["lenses"].as_array().unwrap().len()), (Some("dispatched"), 5));
    assert!(begun.get("preamble").is_none(), "auto runs print no preamble");
    let run = begun["run"].as_str().unwrap().to_string();
    let lock = r.h.state_dir().join("review-loop/s1.lock");
    assert!(lock.is_file(), "the session lock is held while the iteration runs");
    let events = r.pump();
    assert_eq!(events.iter().filter(|e| e["event"] == "reviewer").count(), 5);
    assert!(events.iter().any(|e| e["lens"] == "simplicity" && e["error"].as_str().unwrap().contains("malformed")));
    assert_eq!(r.started(), 6, "one falsifier for the one finding");
    let results = [
        CommandResult { name: "lint".into(), exit_code: 0, stderr_tail: String::new() },
        CommandResult { name: "test".into(), exit_code: 1, stderr_tail: "test lock::stale_lock ... FAILED".into() },
    ];
    let out = parse(r.h.plugin.review_loop_commands(&run, &results).unwrap().unwrap());
    let out = &out[0];
    assert_eq!(out["outcome"], "continue");
    assert_eq!(out["actionable"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(out["next"]["reason"], "/review-loop --auto --session-id s1 --iteration 1 --max-iter 3 --mode code");
    assert!(!lock.exists(), "locks are released between iterations");
    let state: Value =
        serde_json::from_slice(&std::fs::read(r.h.state_dir().join("review-loop/s1.json")).unwrap()).unwrap();
    for key in [
        "session_id",
        "started_at",
        "iteration",
        "max_iterations",
        "cost_spent_input_tokens",
        "cost_spent_output_tokens",
        "cost_ceiling_input_tokens",
        "last_diff_sha",
        "findings_history",
        "completion",
        "scope",
    ] {
        assert!(state.get(key).is_some(), "state has the seed's `{key}`");
    }
    assert_eq!((state["iteration"].as_u64(), state["cost_ceiling_input_tokens"].as_u64()), (Some(1), Some(300_000)));

    // Iteration 2: fixed diff, the lens is quiet, the tests pass → review-clean, posted.
    *r.raise.lock().unwrap() = false;
    let fixed = DIFF.replace("remove_stale_lock(path, owner)", "remove_stale_lock_if_dead(path, owner)");
    let mut req = request(&fixed);
    req.commands = Some(vec![CommandResult { name: "test".into(), exit_code: 0, stderr_tail: String::new() }]);
    r.begin("s1", &req).unwrap();
    let reflected = r.provider.lock().unwrap().activations.last().unwrap().spec.prompt.clone();
    assert!(reflected.contains("In the prior iteration you flagged:") && reflected.contains(CLAIM));
    let end = r.pump().into_iter().find(|e| e.get("outcome").is_some()).expect("a decision");
    assert_eq!(end["outcome"], "review-clean");
    assert_eq!(end["iteration"], 2);
    assert_eq!(end["trail"], json!({"posted": true, "pr": 12, "edited": true, "pinned": "0123456789abcdef"}));
    let sent = server.requests();
    assert_eq!((sent[0].path.as_str(), sent[1].path.as_str()), ("/pr", "/comment"));
    let comment: Value = serde_json::from_slice(&sent[1].body).unwrap();
    let body = comment["body"].as_str().unwrap();
    assert!(body.starts_with("<!-- review-loop-verdict -->\n## 🔬 review-loop verdict — pinned to `0123456789ab`"));
    assert!(
        body.contains("**Verdict:** review-clean")
            && body.contains(&format!("**[load-bearing]** `src/lock.rs:6` — {CLAIM} → check the owner is dead first"))
    );
    assert!(!r.h.state_dir().join("review-loop/s1.json").exists(), "terminal state is archived");
    let archive = r.h.state_dir().join(end["archived"].as_str().unwrap());
    let archived: Value = serde_json::from_slice(&std::fs::read(archive).unwrap()).unwrap();
    assert_eq!(archived["completion"], "review-clean");
    let status: Value = serde_json::from_str(&r.h.plugin.review_loop_status("s1").unwrap()).unwrap();
    assert_eq!(status["archived"].as_array().unwrap().len(), 1);
}

#[test]
fn a_self_authored_session_is_stopped_before_any_reviewer_and_nothing_is_written() {
    let mut r = rig(None);
    let before = snapshot(r.h.home.path());
    let mut req = request(DIFF);
    req.auto = false;
    req.independence = Independence::SelfAuthored(vec!["src/lock.rs".into()]);
    let out = r.begin("s1", &req).unwrap();
    assert_eq!(out["outcome"], "stopped");
    assert!(out["message"].as_str().unwrap().contains("fresh session"));
    assert_eq!(r.started(), 0);
    assert_eq!(snapshot(r.h.home.path()), before);
    // Refusals are structured and change nothing either.
    let mut bad = request("   ");
    bad.mode = Mode::Deliverable;
    let err = r.begin("s1", &bad).unwrap_err();
    assert_eq!(err["code"], "empty-artifact");
    assert!(err["message"].as_str().unwrap().contains("routing fault"));
    assert_eq!(snapshot(r.h.home.path()), before);

    // Acknowledged: it runs, and the verdict never says review-clean.
    req.self_review_ack = Some("single-operator hotfix".into());
    *r.raise.lock().unwrap() = false;
    req.commands = Some(vec![]);
    r.begin("s1", &req).unwrap();
    let end = r.pump().into_iter().find(|e| e.get("outcome").is_some()).unwrap();
    assert_eq!(end["outcome"], "no-blocking-findings");
    assert!(!end.to_string().contains("review-clean"));
    assert!(
        end["verdict"].as_str().unwrap().contains(
            "> Reason given: single-operator hotfix. Files this session edited in this diff: 1 (src/lock.rs)."
        )
    );
}

#[test]
fn a_lock_left_by_a_gone_owner_is_broken_after_thirty_minutes_on_the_manual_clock() {
    let mut r = rig(None);
    let dir = r.h.state_dir().join("review-loop");
    std::fs::create_dir_all(&dir).unwrap();
    let now = r.h.clock.now_ms();
    // The repo lock's name is the hash of the repository path; take it from a first run's skip.
    let held = json!({"owner": "inst-elsewhere", "run": "rl-7", "session": "other", "touched_ms": now});
    std::fs::write(dir.join("other.lock"), held.to_string()).unwrap();
    let mut req = request(DIFF);
    req.commands = Some(vec![]);
    let first = r.begin("other", &req).unwrap();
    assert_eq!(first["outcome"], "skipped");
    assert_eq!(first["reason"], "skip: concurrent-loop-in-repo");
    let log = std::fs::read_to_string(dir.join("other.log")).unwrap();
    assert!(log.contains("skip: concurrent-loop-in-repo"), "{log}");
    r.h.clock.advance(29 * 60_000);
    assert_eq!(r.begin("other", &req).unwrap()["outcome"], "skipped");
    r.h.clock.advance(2 * 60_000);
    let out = r.begin("other", &req).unwrap();
    assert_eq!(out["outcome"], "dispatched", "{out}");
    assert!(out["warnings"][0].as_str().unwrap().contains("broke a stale lock"));
    // While it runs, a second session in the same repository is skipped.
    let blocked = r.begin("s2", &req).unwrap();
    assert_eq!(blocked["outcome"], "skipped");
    assert!(blocked["lock"].as_str().unwrap().starts_with("review-loop/repo-"));
}

#[test]
fn the_token_ceiling_aborts_the_rest_of_the_iteration() {
    let mut r = rig(None);
    let mut req = request(DIFF);
    req.token_ceiling = Some(5_000);
    req.commands = Some(vec![]);
    let begun = r.begin("s1", &req).unwrap();
    let first = begun["lenses"][0]["activation"].as_str().unwrap().to_string();
    let out = parse(r.h.plugin.review_loop_spend(&first, 4_000, 1_500).unwrap());
    assert_eq!(out[0]["outcome"], "review-exhausted");
    assert_eq!(out[0]["tokens"]["input"], 4_000);
    let aborted = r.provider.lock().unwrap().activations.iter().filter(|a| a.aborted).count();
    assert_eq!(aborted, 5, "every running lens, including the one that reported");
    assert!(r.pump().is_empty(), "late completions belong to no run");
}

#[test]
fn without_subagents_the_loop_is_pending_and_begin_says_what_is_missing() {
    let mut h = host_with(|_| {});
    let report = h.plugin.init("{}", &["tools".to_string()]).unwrap().unwrap();
    let part = report.parts.iter().find(|p| p.name == "review-loop").unwrap();
    assert_eq!(part.missing, ["subagents"]);
    let before = snapshot(h.home.path());
    let err = h.plugin.review_loop_begin(&user_context("s1"), &request(DIFF)).unwrap().unwrap_err();
    let err: Value = serde_json::from_str(&err).unwrap();
    assert_eq!(err["code"], "review-loop-pending");
    assert_eq!(snapshot(h.home.path()), before);
}
