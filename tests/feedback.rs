//! The feedback export through the real component: the seed's feature-team example, the
//! record, and errors as data.

mod common;

use serde_json::{Value, json};

#[test]
fn the_feature_team_example_through_the_component() {
    let mut h = common::host();
    let spec = json!({"stages": [
        {"name": "implement"},
        {"name": "review", "target": "implement",
         "check": {"kind": "panel", "reviewers": ["correctness", "safety", "scope"], "pass": 2}}
    ]});
    let run = h.plugin.feedback_begin(&spec.to_string()).unwrap().unwrap();
    let mut say = |event: Value| -> Value {
        serde_json::from_str(&h.plugin.feedback_report(&run, &event.to_string()).unwrap().unwrap()).unwrap()
    };
    say(json!({"event": "built", "stage": "implement"}));
    let first = say(json!({"event": "check", "stage": "review", "votes": [
        {"reviewer": "correctness", "pass": false, "findings": [{"title": "null input crashes"}]},
        {"reviewer": "safety", "pass": false, "findings": [{"title": "unchecked path"}]},
        {"reviewer": "scope", "pass": true}]}));
    assert_eq!(first["action"], "send-back");
    say(json!({"event": "built", "stage": "implement"}));
    let done = say(json!({"event": "check", "stage": "review", "votes": [
        {"reviewer": "correctness", "pass": true}, {"reviewer": "safety", "pass": true}, {"reviewer": "scope", "pass": false}]}));
    assert_eq!(done, json!({"action": "done", "status": "pass", "implementRuns": 2}));
    let record: Value = serde_json::from_str(&h.plugin.feedback_record(&run).unwrap().unwrap()).unwrap();
    assert_eq!(record["rounds"].as_array().unwrap().len(), 2);
    assert_eq!(record["rounds"][0]["outcome"], "send-back");
    assert_eq!(record["rounds"][0]["limit"], 1);
}

#[test]
fn bad_specs_events_and_ids_are_errors_not_traps() {
    let mut h = common::host();
    let err = h.plugin.feedback_begin(r#"{"stages":[{"name":"a","target":"ghost"}]}"#).unwrap().unwrap_err();
    assert!(err.contains("`ghost`, which is not a stage"), "{err}");
    assert!(h.plugin.feedback_report("fb-99", "{}").unwrap().unwrap_err().contains("no feedback run"));
    let run = h.plugin.feedback_begin(r#"{"stages":[{"name":"a"}]}"#).unwrap().unwrap();
    assert!(h.plugin.feedback_report(&run, "not json").unwrap().unwrap_err().contains("invalid event"));
    assert_eq!(h.plugin.replacements(), 0, "nothing trapped");
}
