//! The shadow state on the fake host: admission, acceptance, stagnation actions, resets on a
//! real user message, holdout end to end, limits and the value loop.

use super::*;
use crate::config::Config;
use crate::fake::FakeHost;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn cfg(extra: &str) -> ShadowConfig {
    Config::parse(extra).unwrap().shadow
}

fn accept(s: &mut Shadow, host: &FakeHost, c: &ShadowConfig, report: Value) -> Result<Value, String> {
    s.accept(
        host,
        c,
        "s1",
        &report.to_string(),
        &[1, 2, 3, 4, 5],
        Some("anthropic/claude-sonnet"),
        Some("openai/gpt-4o"),
        false,
    )
}

#[test]
fn identical_reports_cool_down_and_a_real_user_message_resets() {
    let host = FakeHost::new(1_000);
    let c = cfg("");
    let mut s = Shadow::default();
    let report =
        json!({"verdict": "challenge", "content": "src/cart.rs drops the discount", "severity": 0.7, "refs": [2]});
    accept(&mut s, &host, &c, report.clone()).unwrap();
    accept(&mut s, &host, &c, report.clone()).unwrap();
    let third = accept(&mut s, &host, &c, report.clone()).unwrap();
    assert_eq!(third["coordination"]["pattern"], "identical-envelopes");
    assert_eq!(third["coordination"]["action"], "cooldown");
    assert_eq!(third["independence"], "independent");
    assert!(s.admit(&host, &c, "s1", "review this", false).unwrap_err().contains("cooling down"));
    s.user_message("s1", false);
    assert!(s.admit(&host, &c, "s1", "review this", false).is_err(), "an injected message resets nothing");
    s.user_message("s1", true);
    assert!(s.admit(&host, &c, "s1", "review this", false).is_ok());
    // Headless: the cooldown also expires by the clock.
    for _ in 0..3 {
        accept(&mut s, &host, &c, report.clone()).unwrap();
    }
    host.advance(10 * 60_000);
    assert!(s.admit(&host, &c, "s1", "again", false).is_ok());
}

#[test]
fn escalation_reserves_the_next_effort_once() {
    let host = FakeHost::new(0);
    let c = cfg(r#"{"shadow":{"escalation":true}}"#);
    let mut s = Shadow::default();
    for v in ["challenge", "confirm", "challenge"] {
        accept(&mut s, &host, &c, json!({"verdict": v, "content": "x", "refs": [4]})).unwrap();
    }
    let fourth = accept(&mut s, &host, &c, json!({"verdict": "confirm", "content": "x", "refs": [4]})).unwrap();
    assert_eq!(
        fourth["coordination"],
        json!({"pattern": "alternating-verdicts", "action": "escalate", "effort": "medium"})
    );
    assert_eq!(s.admit(&host, &c, "s1", "p", false).unwrap()["effort"], "medium");
    assert_eq!(s.admit(&host, &c, "s1", "p", false).unwrap()["effort"], Value::Null, "for one run only");
}

#[test]
fn soft_and_hard_limits_and_decay() {
    let host = FakeHost::new(0);
    let c = cfg(
        r#"{"shadow":{"softLimitChars":10,"hardLimitChars":20,"frugalModel":"openai/gpt-4o-mini","staleReportDecay":0.5}}"#,
    );
    let mut s = Shadow::default();
    assert_eq!(s.admit(&host, &c, "s1", "0123456789", false).unwrap()["budget"], "standard");
    let frugal = s.admit(&host, &c, "s1", "0123456789", false).unwrap();
    assert_eq!((frugal["budget"].as_str(), frugal["model"].as_str()), (Some("frugal"), Some("openai/gpt-4o-mini")));
    assert!(s.admit(&host, &c, "s1", "x", false).unwrap_err().contains("exhausted"));
    assert_eq!(s.status(&c, "s1", 0)["budget"], "exhausted");
    s.user_message("s1", true);
    assert_eq!(s.status(&c, "s1", 0)["budget"], "standard");
    let r = json!({"verdict": "gap", "content": "no output", "refs": [1]});
    accept(&mut s, &host, &c, r.clone()).unwrap();
    let again = accept(&mut s, &host, &c, r).unwrap();
    assert_eq!(again["activationProbability"], 0.5);
    assert!(Config::parse(r#"{"shadow":{"softLimitChars":10}}"#).unwrap_err().message.contains("hardLimitChars"));
}

#[test]
fn a_planted_holdout_key_never_reaches_a_prompt_report_relay_log_or_file() {
    let host = FakeHost::new(0);
    host.write(&Root::State, crate::shadow::holdout::KEYS_PATH, br#"["EXPECTED-ANSWER-7731"]"#, WriteMode::CreateNew)
        .unwrap();
    let c = cfg("");
    let mut s = Shadow::default();
    let admitted = s.admit(&host, &c, "s1", "trajectory: the user typed EXPECTED-ANSWER-7731", true).unwrap();
    assert!(!admitted.to_string().contains("EXPECTED-ANSWER-7731"));
    assert!(admitted["prompt"].as_str().unwrap().contains("[holdout]"));
    let report =
        json!({"verdict": "challenge", "content": "the answer EXPECTED-ANSWER-7731 leaked in notes.md", "refs": [1]});
    let out = s.accept(&host, &c, "s1", &report.to_string(), &[1], None, None, true).unwrap();
    assert!(!out.to_string().contains("EXPECTED-ANSWER-7731"));
    assert_eq!(out["independence"], "unavailable");
    s.assistant_message(&host, "s1", "good catch, fixed");
    let mut files = String::new();
    for entries in host.snapshot().values() {
        for (path, node) in entries {
            if let crate::fake::Node::File { data, .. } = node {
                files.push_str(&format!("{path}: {}\n", String::from_utf8_lossy(data)));
            }
        }
    }
    let everything = format!("{files}{:?}{}", host.logs.borrow(), s.status(&c, "s1", 0));
    assert_eq!(everything.matches("EXPECTED-ANSWER-7731").count(), 1, "only the operator's key file holds it");
    assert!(files.contains("value-loop.jsonl"), "the journal was written (and holds no key)");
    // A faulty key file rejects the operation.
    let bare = FakeHost::new(0);
    assert!(Shadow::default().admit(&bare, &c, "s1", "p", true).unwrap_err().contains("missing"));
}

#[test]
fn the_value_loop_classifies_and_journals_metadata_only() {
    let host = FakeHost::new(0);
    let c = cfg(r#"{"shadow":{"valueLoopWindowTurns":2}}"#);
    let mut s = Shadow::default();
    let challenge = |s: &mut Shadow, text: &str| {
        s.accept(
            &host,
            &c,
            "s1",
            &json!({"verdict": "challenge", "content": text, "refs": [1]}).to_string(),
            &[1],
            None,
            None,
            false,
        )
        .unwrap()
    };
    challenge(&mut s, "src/cart.rs applies the discount twice");
    s.tool_result(&host, "s1", r#"{"path":"src/cart.rs"}"#);
    challenge(&mut s, "the retry in net/retry.go never backs off");
    s.assistant_message(&host, "s1", "I disagree, the fixed delay is intentional.");
    challenge(&mut s, "a secret word nobody answers");
    s.turn_end(&host, "s1");
    s.turn_end(&host, "s1");
    let status = s.status(&c, "s1", 0);
    assert_eq!(status["valueLoop"]["adopted"], 1);
    assert_eq!(status["valueLoop"]["rejected"], 1);
    assert_eq!(status["valueLoop"]["ignored"], 1);
    assert!((status["valueLoop"]["hitRate"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    let journal = String::from_utf8(host.file(&Root::State, VALUE_LOOP_PATH).unwrap()).unwrap();
    assert_eq!(journal.lines().count(), 3);
    assert!(!journal.contains("cart") && !journal.contains("secret word") && !journal.contains("disagree"));
}

#[test]
fn relay_sections_come_most_severe_first_and_once() {
    let host = FakeHost::new(0);
    let c = cfg("");
    let mut s = Shadow::default();
    for (severity, refs) in [(0.2, 1), (0.9, 2), (0.5, 3)] {
        accept(
            &mut s,
            &host,
            &c,
            json!({"verdict": "gap", "content": format!("point {refs}"), "severity": severity, "refs": [refs]}),
        )
        .unwrap();
    }
    accept(&mut s, &host, &c, json!({"verdict": "silent"})).unwrap();
    let relay = s.take_relay("s1");
    let order: Vec<f64> = relay.as_array().unwrap().iter().map(|r| r["severity"].as_f64().unwrap()).collect();
    assert_eq!(order, [0.9, 0.5, 0.2], "quiet reports are not relayed");
    assert_eq!(s.take_relay("s1"), json!([]));
}

#[test]
fn terminal_status_shows_both_routes_and_the_relationship_and_provenance_neither() {
    // Seed 004, D5: route and relationship appear in terminal status; durable provenance carries
    // verdict, refs and severity only.
    let host = FakeHost::new(1_000);
    let c = cfg("");
    let mut s = Shadow::default();
    let before = s.status(&c, "s1", 1_000);
    assert_eq!((before["authorRoute"].clone(), before["reviewerRoute"].clone()), (Value::Null, Value::Null));
    let report =
        json!({"verdict": "challenge", "content": "src/cart.rs drops the discount", "severity": 0.7, "refs": [2]});
    let accepted = accept(&mut s, &host, &c, report.clone()).unwrap();
    let status = s.status(&c, "s1", 1_000);
    assert_eq!(
        (status["authorRoute"].as_str(), status["reviewerRoute"].as_str(), status["independence"].as_str()),
        (Some("anthropic/claude-sonnet"), Some("openai/gpt-4o"), Some("independent"))
    );
    assert!(!accepted["provenance"].to_string().contains("openai"), "{accepted}");
    // An accept with no routes: nothing shown, and the relationship is unavailable.
    s.accept(&host, &c, "s1", &report.to_string(), &[1, 2, 3], None, None, false).unwrap();
    let status = s.status(&c, "s1", 1_000);
    assert_eq!(
        (status["authorRoute"].clone(), status["reviewerRoute"].clone(), status["independence"].as_str()),
        (Value::Null, Value::Null, Some("unavailable"))
    );
}
