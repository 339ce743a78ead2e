//! The shadow export through the real component, wired to the plugin's events: envelopes,
//! stagnation reset by a real user message, holdout end to end, and the value loop.

mod common;

use common::{TestHost, all_services, host};
use self_evolve_host::plugin::{ToolEvent, TurnStatus};
use self_evolve_host::user_context;
use serde_json::{Value, json};

fn ready() -> TestHost {
    let mut h = host();
    h.plugin.init("{}", &all_services()).unwrap().unwrap();
    h
}

fn accept(h: &mut TestHost, report: Value, holdout: bool) -> Result<Value, String> {
    let routes = (Some("anthropic/claude-sonnet"), Some("google/gemini-2.5-pro"));
    h.plugin
        .shadow_accept("s1", &report.to_string(), &[1, 2, 3], routes, holdout)
        .unwrap()
        .map(|text| serde_json::from_str(&text).unwrap())
}

#[test]
fn probes_envelopes_and_the_reset_on_a_real_user_message() {
    let mut h = ready();
    let probes: Value = serde_json::from_str(&h.plugin.shadow_probes().unwrap()).unwrap();
    assert_eq!(probes["classes"].as_array().unwrap().len(), 6);
    assert!(probes["checklist"].as_str().unwrap().contains("[misleading-success]"));

    let err = accept(&mut h, json!({"verdict": "challenge", "content": "x", "refs": [9]}), false).unwrap_err();
    assert!(err.contains("not in the projection"), "{err}");
    let report =
        json!({"verdict": "challenge", "content": "the loop skips the last item", "severity": 0.6, "refs": [2]});
    let first = accept(&mut h, report.clone(), false).unwrap();
    assert_eq!(first["independence"], "independent");
    assert_eq!(first["provenance"], json!({"verdict": "challenge", "refs": [2], "severity": 0.6}));
    accept(&mut h, report.clone(), false).unwrap();
    let third = accept(&mut h, report, false).unwrap();
    assert_eq!(third["coordination"]["action"], "cooldown");
    assert!(h.plugin.shadow_admit("s1", "prompt", false).unwrap().unwrap_err().contains("cooling down"));
    let ctx = user_context("s1");
    h.plugin.user_message(&ctx, "[auto] keep going", false).unwrap();
    assert!(h.plugin.shadow_admit("s1", "prompt", false).unwrap().is_err(), "an injected message resets nothing");
    h.plugin.user_message(&ctx, "Please also handle refunds.", true).unwrap();
    let admitted: Value =
        serde_json::from_str(&h.plugin.shadow_admit("s1", "prompt", false).unwrap().unwrap()).unwrap();
    assert_eq!(admitted["budget"], "standard");
}

#[test]
fn a_holdout_key_never_reaches_a_prompt_report_relay_log_or_file() {
    let mut h = ready();
    assert!(h.plugin.shadow_admit("s1", "p", true).unwrap().unwrap_err().contains("missing"));
    let keys = h.state_dir().join("shadow-minds/holdout-keys.json");
    std::fs::create_dir_all(keys.parent().unwrap()).unwrap();
    std::fs::write(&keys, r#"["GOLDEN-ANSWER-5521"]"#).unwrap();
    let prompt = h.plugin.shadow_admit("s1", "the user wrote GOLDEN-ANSWER-5521 in the notes", true).unwrap().unwrap();
    assert!(!prompt.contains("GOLDEN-ANSWER-5521") && prompt.contains("[holdout]"));
    let out = accept(
        &mut h,
        json!({"verdict": "challenge", "content": "GOLDEN-ANSWER-5521 is in src/notes.md", "refs": [1]}),
        true,
    )
    .unwrap();
    assert!(!out.to_string().contains("GOLDEN-ANSWER-5521"));
    let ctx = user_context("s1");
    h.plugin
        .tool_result(
            &ctx,
            &ToolEvent {
                tool: "edit".into(),
                args_json: r#"{"path":"src/notes.md"}"#.into(),
                ok: true,
                output: String::new(),
            },
        )
        .unwrap();
    let status = h.plugin.shadow_status("s1").unwrap();
    assert!(!status.contains("GOLDEN-ANSWER-5521"));
    assert!(!h.log_text().contains("GOLDEN-ANSWER-5521"));
    let files = common::snapshot(h.home.path());
    let holders: Vec<&String> = files
        .iter()
        .filter(|(_, b)| String::from_utf8_lossy(b).contains("GOLDEN-ANSWER-5521"))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(holders, ["self-evolve/shadow-minds/holdout-keys.json"]);
    std::fs::write(&keys, r#"["dup", "dup"]"#).unwrap();
    assert!(h.plugin.shadow_admit("s1", "p", true).unwrap().unwrap_err().contains("duplicates"));
}

#[test]
fn the_value_loop_follows_the_conversation() {
    let mut h = ready();
    let ctx = user_context("s1");
    accept(
        &mut h,
        json!({"verdict": "challenge", "content": "src/cart.rs applies the discount twice", "refs": [1]}),
        false,
    )
    .unwrap();
    h.plugin
        .tool_result(
            &ctx,
            &ToolEvent {
                tool: "edit".into(),
                args_json: r#"{"path":"src/cart.rs"}"#.into(),
                ok: true,
                output: String::new(),
            },
        )
        .unwrap();
    accept(&mut h, json!({"verdict": "challenge", "content": "the retry never backs off", "refs": [2]}), false)
        .unwrap();
    h.plugin.assistant_message(&ctx, "I disagree: the fixed delay is intentional.").unwrap();
    accept(&mut h, json!({"verdict": "challenge", "content": "unanswered point", "refs": [3]}), false).unwrap();
    for _ in 0..3 {
        h.plugin.turn_end(&ctx, TurnStatus::Completed).unwrap();
    }
    let status: Value = serde_json::from_str(&h.plugin.shadow_status("s1").unwrap()).unwrap();
    assert_eq!(status["valueLoop"]["adopted"], 1);
    assert_eq!(status["valueLoop"]["rejected"], 1);
    assert_eq!(status["valueLoop"]["ignored"], 1);
    assert_eq!(status["independence"], "independent");
    let journal = std::fs::read_to_string(h.state_dir().join("value-loop.jsonl")).unwrap();
    assert_eq!(journal.lines().count(), 3);
    assert!(!journal.contains("cart") && !journal.contains("retry"), "metadata only");
}
