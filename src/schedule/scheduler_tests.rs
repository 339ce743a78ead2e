//! Tests for review scheduling on the fake host and a manual clock: each rule of "When a review
//! runs", counter resets, refusals, timeouts and the gate's place in the flow.

use super::*;
use crate::api::{ActivationStatus, Origin};
use crate::fake::FakeHost;
use crate::host::HttpResponse;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const MIN: u64 = 60_000;

fn ctx(session: &str) -> CallContext {
    CallContext { session: session.into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
}

fn config(extra: &str) -> Config {
    Config::parse(extra).unwrap()
}

fn actions(decisions: &[Decision]) -> Vec<(String, String)> {
    decisions
        .iter()
        .map(|d| {
            let v: serde_json::Value = serde_json::from_str(d).unwrap();
            (
                v["action"].as_str().unwrap_or(v["kind"].as_str().unwrap_or("")).to_string(),
                v["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn turns(s: &mut Scheduler, host: &FakeHost, c: &Config, n: usize) -> Vec<(String, String)> {
    let mut last = Vec::new();
    for _ in 0..n {
        last = actions(&s.turn_end(host, c, &ctx("s1"), TurnStatus::Completed));
    }
    last
}

#[test]
fn due_after_turn_interval_and_counters_reset_on_start() {
    let host = FakeHost::new(0);
    let c = config("");
    let mut s = Scheduler::default();
    let last = turns(&mut s, &host, &c, 9);
    assert_eq!(last[0].0, "skip");
    assert!(last[0].1.starts_with("not due (turns 9/10"), "{last:?}");
    let tenth = turns(&mut s, &host, &c, 1);
    assert_eq!(tenth[0].0, "start", "{tenth:?}");
    let spec = host.started.borrow()[0].clone();
    assert_eq!((spec.provider.as_str(), spec.delivery.as_str()), ("fork", "caller"));
    assert_eq!(spec.tools, ["skill", "skill_manage"]);
    assert!(spec.prompt.contains("no skill update"));
    assert_eq!(host.restricted.borrow()[0].1, ["skill", "skill_manage"]);
    assert_eq!(s.sessions["s1"].turns_since_review, 0);
}

#[test]
fn due_after_tool_call_threshold_counting_only_completed_turns() {
    let host = FakeHost::new(0);
    let c = config("");
    let mut s = Scheduler::default();
    let tool = ToolEvent { tool: "bash".into(), args_json: "{}".into(), ok: true, output: String::new() };
    for _ in 0..20 {
        s.tool_result(&ctx("s1"), &tool, None);
    }
    let aborted = actions(&s.turn_end(&host, &c, &ctx("s1"), TurnStatus::Aborted));
    assert_eq!(aborted[0].1, "turn aborted: not counted");
    assert_eq!(s.sessions["s1"].tools_since_review, 0, "tools of an aborted turn do not count");
    for _ in 0..15 {
        s.tool_result(&ctx("s1"), &tool, None);
    }
    assert_eq!(turns(&mut s, &host, &c, 1)[0].0, "start");
}

#[test]
fn subagents_and_nested_agents_are_never_reviewed() {
    let host = FakeHost::new(0);
    let c = config(r#"{"review":{"turnInterval":1}}"#);
    let mut s = Scheduler::default();
    let mut child = ctx("s1");
    child.origin = Origin::Subagent;
    let mut nested = ctx("s1");
    nested.depth = 1;
    for who in [child, nested] {
        let out = actions(&s.turn_end(&host, &c, &who, TurnStatus::Completed));
        assert_eq!(out[0].0, "skip");
        assert!(out[0].1.contains("not a top-level agent"));
    }
    assert!(host.started.borrow().is_empty());
}

#[test]
fn disabled_cooldown_budget_and_in_flight_each_skip() {
    let host = FakeHost::new(0);
    let mut s = Scheduler::default();
    let off = config(r#"{"review":{"enabled":false,"turnInterval":1}}"#);
    assert!(turns(&mut s, &host, &off, 1)[0].1.starts_with("disabled"));

    let c = config(r#"{"review":{"turnInterval":1,"maxPerSession":2,"cooldownMinutes":20,"timeoutMinutes":30}}"#);
    let mut s = Scheduler::default();
    assert_eq!(turns(&mut s, &host, &c, 1)[0].0, "start");
    let in_flight = turns(&mut s, &host, &c, 1);
    assert!(in_flight[0].1.starts_with("cooldown (20 min left)"), "{in_flight:?}");
    host.advance(20 * MIN);
    assert!(turns(&mut s, &host, &c, 1)[0].1.starts_with("a review is already in flight (act-1)"));
    s.activation_end(&ActivationResult {
        id: "act-1".into(),
        status: ActivationStatus::Completed,
        text: "no skill update".into(),
    });
    assert_eq!(turns(&mut s, &host, &c, 1)[0].0, "start");
    s.activation_end(&ActivationResult {
        id: "act-2".into(),
        status: ActivationStatus::Completed,
        text: "patched".into(),
    });
    host.advance(20 * MIN);
    assert!(turns(&mut s, &host, &c, 1)[0].1.starts_with("budget spent (2/2"));
}

#[test]
fn review_now_bypasses_enabled_counters_and_cooldown_but_not_budget_or_in_flight() {
    let host = FakeHost::new(0);
    let c = config(r#"{"review":{"enabled":false,"maxPerSession":1}}"#);
    let mut s = Scheduler::default();
    let out = actions(&s.review_now(&host, &c, "s1"));
    assert_eq!(out[0], ("start".to_string(), "forced by /skills review now".to_string()));
    assert!(actions(&s.review_now(&host, &c, "s1"))[0].1.starts_with("budget spent"));
    let c = config(r#"{"review":{"maxPerSession":5}}"#);
    assert!(actions(&s.review_now(&host, &c, "s1"))[0].1.starts_with("a review is already in flight"));
}

#[test]
fn a_refused_start_is_logged_and_keeps_the_counters() {
    let host = FakeHost::new(0);
    host.refuse_starts.set(true);
    let c = config(r#"{"review":{"turnInterval":2}}"#);
    let mut s = Scheduler::default();
    let out = turns(&mut s, &host, &c, 2);
    assert!(out[0].1.starts_with("subagent start refused"), "{out:?}");
    assert!(host.logged("refused"));
    assert_eq!(s.sessions["s1"].turns_since_review, 2, "counters restored");
    assert_eq!(s.sessions["s1"].reviews_started, 0, "not counted against the budget");
    host.refuse_starts.set(false);
    assert_eq!(turns(&mut s, &host, &c, 1)[0].0, "start");
}

#[test]
fn a_reviewer_past_its_timeout_is_aborted_on_tick() {
    let host = FakeHost::new(0);
    let c = config(r#"{"review":{"turnInterval":1,"timeoutMinutes":5}}"#);
    let mut s = Scheduler::default();
    turns(&mut s, &host, &c, 1);
    host.advance(5 * MIN - 1);
    assert!(s.tick(&host, &c).is_empty());
    host.advance(1);
    let out = actions(&s.tick(&host, &c));
    assert_eq!(out[0].0, "abort");
    assert_eq!(*host.aborted.borrow(), ["act-1"]);
    assert!(s.sessions["s1"].in_flight.is_none());
}

#[test]
fn the_gate_can_skip_a_due_review_which_resets_the_counters() {
    let host = FakeHost::new(0);
    host.add_endpoint("gate", true);
    host.http_script
        .borrow_mut()
        .push_back(Ok(HttpResponse { status: 200, body: br#"{"choice":"no","confidence":0.9}"#.to_vec() }));
    let c = config(r#"{"review":{"turnInterval":1,"gate":"jev"}}"#);
    let mut s = Scheduler { gate_active: true, ..Default::default() };
    let out = turns(&mut s, &host, &c, 1);
    assert_eq!(out[0].0, "gate");
    assert_eq!(out[1], ("skip".to_string(), "gate: no (confidence 0.90)".to_string()));
    assert_eq!(s.sessions["s1"].turns_since_review, 0);
    let log = String::from_utf8(host.file(&Root::State, gate::LOG_PATH).unwrap()).unwrap();
    assert_eq!(log.lines().count(), 1);
    // Within jev.cooldownMinutes no second call: fall back to reviewing.
    let out = turns(&mut s, &host, &c, 1);
    assert_eq!(out[1].0, "start");
    assert_eq!(host.http_requests.borrow().len(), 1);
    assert!(
        String::from_utf8(host.file(&Root::State, gate::LOG_PATH).unwrap())
            .unwrap()
            .contains("fallback: gate cooldown")
    );
}

#[test]
fn tool_output_never_reaches_the_gate() {
    let host = FakeHost::new(0);
    host.add_endpoint("gate", true);
    host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 200, body: br#"{"choice":"yes"}"#.to_vec() }));
    let c = config(r#"{"review":{"turnInterval":1,"gate":"jev"}}"#);
    let mut s = Scheduler { gate_active: true, ..Default::default() };
    let secret = "AKIA-SECRET-IN-TOOL-OUTPUT";
    s.tool_result(
        &ctx("s1"),
        &ToolEvent { tool: "bash".into(), args_json: "{}".into(), ok: true, output: secret.into() },
        None,
    );
    turns(&mut s, &host, &c, 1);
    let body = String::from_utf8(host.http_requests.borrow()[0].body.clone()).unwrap();
    assert!(!body.contains(secret));
    assert!(!host.logs.borrow().iter().any(|(_, m)| m.contains(secret)));
}

#[test]
fn the_override_persists_in_review_json() {
    let host = FakeHost::new(0);
    let mut s = Scheduler::default();
    s.set_enabled(&host, false).unwrap();
    let mut restarted = Scheduler::default();
    restarted.load_override(&host);
    assert_eq!(restarted.enabled_override, Some(false));
    assert!(!restarted.enabled(&config("")));
}

#[test]
fn a_review_past_its_timeout_ends_at_the_next_turn_even_without_a_tick() {
    let host = FakeHost::new(0);
    let c = config(r#"{"review":{"turnInterval":1,"cooldownMinutes":0,"timeoutMinutes":5}}"#);
    let mut s = Scheduler::default();
    assert_eq!(turns(&mut s, &host, &c, 1)[0].0, "start");
    host.advance(4 * MIN);
    assert!(turns(&mut s, &host, &c, 1)[0].1.starts_with("a review is already in flight"));
    host.advance(MIN);
    let out = turns(&mut s, &host, &c, 1);
    assert_eq!(out[0].0, "abort", "{out:?}");
    assert_eq!(out[1].0, "start", "the turn that ended it may start the next: {out:?}");
    assert_eq!(host.aborted.borrow().as_slice(), ["act-1"]);
}
