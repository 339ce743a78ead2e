//! Feedback-loop counting, checks and judges: the seed's feature-team example and a table of
//! the counting rules.

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn run(spec: Value) -> Run {
    Run::begin(&spec.to_string()).unwrap()
}

fn say(run: &mut Run, event: Value) -> Value {
    run.report(&event.to_string()).unwrap()
}

fn built(run: &mut Run, stage: &str) -> Value {
    say(run, json!({"event": "built", "stage": stage}))
}

fn reviewer(run: &mut Run, stage: &str, pass: bool) -> Value {
    say(run, json!({"event": "check", "stage": stage, "pass": pass, "findings": [{"title": "off by one"}]}))
}

/// implement + a single-reviewer stage `review` targeting it, with `refine` on implement.
fn reviewed(refine: Value) -> Run {
    run(json!({"stages": [
        {"name": "implement", "refine": refine},
        {"name": "review", "check": {"kind": "reviewer"}, "target": "implement"}
    ]}))
}

/// Builds and fails until the run stops; returns (builds, final decision).
fn fail_until_stopped(r: &mut Run) -> (u32, Value) {
    for builds in 1..100 {
        built(r, "implement");
        let d = reviewer(r, "review", false);
        if d["action"] == "fail" {
            return (builds, d);
        }
        assert_eq!(d["action"], "send-back", "{d}");
    }
    panic!("never stopped");
}

#[test]
fn the_feature_team_example() {
    let mut r = run(json!({"stages": [
        {"name": "implement"},
        {"name": "review", "target": "implement",
         "check": {"kind": "panel", "reviewers": ["correctness", "safety", "scope"], "pass": 2}}
    ]}));
    built(&mut r, "implement");
    let first = say(
        &mut r,
        json!({"event": "check", "stage": "review", "votes": [
            {"reviewer": "correctness", "pass": false, "findings": [{"title": "null input crashes"}]},
            {"reviewer": "safety", "pass": false, "findings": [{"title": "unchecked path"}]},
            {"reviewer": "scope", "pass": true}
        ]}),
    );
    assert_eq!(first["action"], "send-back");
    assert_eq!(
        (first["to"].as_str(), first["round"].as_u64(), first["limit"].as_u64()),
        (Some("implement"), Some(1), Some(1))
    );
    assert_eq!(first["findings"].as_array().unwrap().len(), 2);
    built(&mut r, "implement");
    let second = say(
        &mut r,
        json!({"event": "check", "stage": "review", "votes": [
            {"reviewer": "correctness", "pass": true}, {"reviewer": "safety", "pass": true}, {"reviewer": "scope", "pass": false}
        ]}),
    );
    assert_eq!(second["action"], "done");
    assert_eq!(r.summary(), json!({"status": "pass", "implementRuns": 2}));
}

#[test]
fn refine_n_allows_n_refinements() {
    for (refine, builds) in [(0, 1), (1, 2), (3, 4)] {
        let mut r = reviewed(json!(refine));
        let (n, decision) = fail_until_stopped(&mut r);
        assert_eq!(n, builds, "refine {refine}");
        assert!(decision["reason"].as_str().unwrap().contains(&format!("used its {refine} refinement")), "{decision}");
        assert_eq!(r.summary()["status"], "fail");
        assert_eq!(r.record()["reason"], decision["reason"]);
    }
    // The default is one refinement.
    let mut r = run(
        json!({"stages": [{"name": "implement"}, {"name": "review", "check": {"kind": "reviewer"}, "target": "implement"}]}),
    );
    assert_eq!(fail_until_stopped(&mut r).0, 2);
}

#[test]
fn a_loop_counts_its_body_runs() {
    let mut r = run(json!({"stages": [
        {"name": "implement", "loop": {"max": 3}},
        {"name": "review", "check": {"kind": "reviewer"}, "target": "implement"}
    ]}));
    assert_eq!(fail_until_stopped(&mut r).0, 3, "max: 3 ≡ refine: 2");
}

#[test]
fn a_judge_without_a_cap_sets_no_limit_and_can_let_the_work_stand() {
    let mut r = reviewed(json!({"judge": {}}));
    for round in 1..=5 {
        built(&mut r, "implement");
        let ask = reviewer(&mut r, "review", false);
        assert_eq!(
            (ask["action"].as_str(), ask["round"].as_u64(), ask["limit"].is_null()),
            (Some("ask-judge"), Some(round), true)
        );
        let id = ask["findings"][0]["id"].as_str().unwrap().to_string();
        let d = say(&mut r, json!({"event": "judge", "stage": "review", "decisions": [{"finding": id, "act": true}]}));
        assert_eq!(d["action"], "send-back");
        assert_eq!(d["findings"][0]["reason"], "act: it must be fixed before the work can stand");
    }
    built(&mut r, "implement");
    let ask = reviewer(&mut r, "review", false);
    let id = ask["findings"][0]["id"].as_str().unwrap().to_string();
    let d = say(
        &mut r,
        json!({"event": "judge", "stage": "review", "decisions": [{"finding": id, "act": false, "reason": "cosmetic"}]}),
    );
    assert_eq!(d["action"], "done", "every finding skipped: the work stands");
    assert_eq!(r.summary(), json!({"status": "pass", "implementRuns": 6}));
    assert_eq!(r.record()["skipped"]["implement"][0]["reason"], "cosmetic");
}

#[test]
fn a_judge_with_a_cap_reads_the_last_round_too() {
    for (last_answer, outcome) in [(true, "fail"), (false, "done")] {
        let mut r = reviewed(json!({"judge": {"cap": 1}}));
        built(&mut r, "implement");
        let ask = reviewer(&mut r, "review", false);
        assert_eq!(ask["lastRound"], false);
        let id = ask["findings"][0]["id"].as_str().unwrap().to_string();
        say(&mut r, json!({"event": "judge", "stage": "review", "decisions": [{"finding": id, "act": true}]}));
        built(&mut r, "implement");
        let ask = reviewer(&mut r, "review", false);
        assert_eq!((ask["lastRound"].as_bool(), ask["round"].as_u64()), (Some(true), Some(2)), "asked about build N+1");
        let id = ask["findings"][0]["id"].as_str().unwrap().to_string();
        let d = say(
            &mut r,
            json!({"event": "judge", "stage": "review", "decisions": [{"finding": id, "act": last_answer}]}),
        );
        assert_eq!(d["action"], outcome);
    }
}

#[test]
fn a_reviewed_stage_that_is_also_sent_work_back_to_has_one_count() {
    let mut r = run(json!({"stages": [
        {"name": "implement", "refine": 1},
        {"name": "review", "check": {"kind": "reviewer"}, "target": "implement"},
        {"name": "integration", "check": {"kind": "command"}, "target": "implement", "sendsBackTo": ["implement"]}
    ]}));
    built(&mut r, "implement");
    assert_eq!(reviewer(&mut r, "review", false)["action"], "send-back");
    built(&mut r, "implement");
    assert_eq!(reviewer(&mut r, "review", true)["action"], "advance");
    let d = say(&mut r, json!({"event": "check", "stage": "integration", "exitCode": 1, "output": "test failed"}));
    assert_eq!(d["action"], "fail", "the one refinement was spent by the review: {d}");
}

#[test]
fn an_unmet_goal_requirement_counts_as_a_round_without_the_judge() {
    let mut r = run(json!({"stages": [
        {"name": "implement", "refine": {"judge": {"cap": 2}}},
        {"name": "goal", "check": {"kind": "goal"}, "target": "implement"}
    ]}));
    built(&mut r, "implement");
    let d = say(&mut r, json!({"event": "check", "stage": "goal", "met": false, "requirement": "handles empty carts"}));
    assert_eq!((d["action"].as_str(), d["round"].as_u64(), d["limit"].as_u64()), (Some("send-back"), Some(1), Some(2)));
    built(&mut r, "implement");
    assert_eq!(say(&mut r, json!({"event": "check", "stage": "goal", "met": false}))["round"], 2);
    built(&mut r, "implement");
    assert_eq!(say(&mut r, json!({"event": "check", "stage": "goal", "met": false}))["action"], "fail");
}

fn dag(budget: Value) -> Run {
    run(json!({"mode": "dag", "maxKickbacks": budget, "stages": [
        {"name": "plan"},
        {"name": "tests-first", "dependsOn": ["plan"]},
        {"name": "implement", "dependsOn": ["tests-first"]},
        {"name": "review", "dependsOn": ["implement"], "check": {"kind": "reviewer"}, "target": "plan"}
    ]}))
}

#[test]
fn max_kickbacks_as_a_number_is_one_budget_for_the_graph() {
    let mut r = dag(json!(2));
    let to = |r: &mut Run, target: &str| {
        say(r, json!({"event": "check", "stage": "review", "pass": false, "target": target}))
    };
    assert_eq!(to(&mut r, "plan")["action"], "send-back");
    assert_eq!(to(&mut r, "tests-first")["action"], "send-back");
    let d = to(&mut r, "implement");
    assert_eq!(d["action"], "fail");
    assert!(d["reason"].as_str().unwrap().contains("the graph's 2 send-back(s) are spent"));
}

#[test]
fn max_kickbacks_as_a_map_gives_named_targets_their_own_and_others_none() {
    let mut r = dag(json!({"plan": 1}));
    let d = say(&mut r, json!({"event": "check", "stage": "review", "pass": false, "target": "plan"}));
    assert_eq!((d["action"].as_str(), d["limit"].as_u64()), (Some("send-back"), Some(1)));
    let mut r = dag(json!({"plan": 1}));
    let d = say(&mut r, json!({"event": "check", "stage": "review", "pass": false, "target": "tests-first"}));
    assert_eq!(d["action"], "fail", "an unnamed target gets none: {d}");
    // Without maxKickbacks a graph never runs a step again.
    let mut r = run(
        json!({"mode": "dag", "stages": [{"name": "a"}, {"name": "b", "dependsOn": ["a"], "check": {"kind": "reviewer"}, "target": "a"}]}),
    );
    assert_eq!(say(&mut r, json!({"event": "check", "stage": "b", "pass": false}))["action"], "fail");
}

#[test]
fn a_send_back_to_an_undeclared_target_fails_naming_both() {
    let mut r = run(json!({"stages": [
        {"name": "plan"}, {"name": "implement"},
        {"name": "review", "check": {"kind": "command"}, "target": "implement", "sendsBackTo": ["implement"]}
    ]}));
    let d = say(&mut r, json!({"event": "check", "stage": "review", "exitCode": 2, "target": "plan"}));
    assert_eq!(d["action"], "fail");
    assert_eq!(d["reason"], "`review` may not send work back to `plan`: `plan` is not declared in its sendsBackTo");
    let mut r = dag(json!(5));
    let mut bad = run(json!({"mode": "dag", "maxKickbacks": 5, "stages": [
        {"name": "a"}, {"name": "b"}, {"name": "c", "dependsOn": ["a"], "check": {"kind": "reviewer"}, "target": "a"}
    ]}));
    let d = say(&mut bad, json!({"event": "check", "stage": "c", "pass": false, "target": "b"}));
    assert!(d["reason"].as_str().unwrap().contains("`b` is not one of its dependencies"), "{d}");
    // Transitive dependencies count in a graph.
    let d = say(&mut r, json!({"event": "check", "stage": "review", "pass": false, "target": "plan"}));
    assert_eq!(d["action"], "send-back");
}

#[test]
fn a_dag_step_sends_back_only_to_the_targets_it_lists() {
    // Seed 001: the step that sends work back lists its targets in `acceptsKickbackTo`; a
    // send-back to a step it does not list fails the sender, naming both.
    for field in ["acceptsKickbackTo", "sendsBackTo"] {
        let spec = |field: &str| {
            json!({"mode": "dag", "maxKickbacks": 5, "stages": [
                {"name": "plan"},
                {"name": "implement", "dependsOn": ["plan"]},
                {"name": "review", "dependsOn": ["implement"], "check": {"kind": "reviewer"}, "target": "implement", field: ["implement"]}
            ]})
        };
        let mut r = run(spec(field));
        let d = say(&mut r, json!({"event": "check", "stage": "review", "pass": false, "target": "plan"}));
        assert_eq!(d["action"], "fail", "{field}: plan is a dependency, but not listed: {d}");
        assert_eq!(
            d["reason"],
            "`review` may not send work back to `plan`: `plan` is not among the steps its acceptsKickbackTo lists"
        );
        let mut r = run(spec(field));
        let d = say(&mut r, json!({"event": "check", "stage": "review", "pass": false, "target": "implement"}));
        assert_eq!(d["action"], "send-back", "{field}: listed: {d}");
    }
}

#[test]
fn synthesis_merges_votes_drops_majority_rejections_but_keeps_blocks() {
    let mut r = run(json!({"stages": [
        {"name": "implement", "refine": {"judge": {}}},
        {"name": "review", "target": "implement",
         "check": {"kind": "panel", "reviewers": ["r1", "r2", "r3"], "pass": 3, "synthesise": true}}
    ]}));
    built(&mut r, "implement");
    let ask = say(
        &mut r,
        json!({"event": "check", "stage": "review",
        "votes": [
            {"reviewer": "r1", "pass": false, "findings": [
                {"title": "Rename the helper"}, {"title": "SQL injection in search", "severity": "block"}, {"title": "Missing test for empty cart"}]},
            {"reviewer": "r2", "pass": false, "findings": [{"title": "missing test for EMPTY cart!"}]},
            {"reviewer": "r3", "pass": true}
        ],
        "ballots": [
            {"reviewer": "r2", "finding": "rename the helper", "accept": false},
            {"reviewer": "r3", "finding": "rename the helper", "accept": false},
            {"reviewer": "r2", "finding": "sql injection in search", "accept": false},
            {"reviewer": "r3", "finding": "sql injection in search", "accept": false},
            {"reviewer": "r3", "finding": "missing test for empty cart", "accept": true},
            {"reviewer": "r1", "finding": "missing test for empty cart", "accept": false}
        ]}),
    );
    assert_eq!(ask["action"], "ask-judge");
    let titles: Vec<&str> = ask["findings"].as_array().unwrap().iter().map(|f| f["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["SQL injection in search", "Missing test for empty cart"], "{ask}");
    assert_eq!(ask["findings"][1]["raisedBy"], json!(["r1", "r2"]));
    let (block, test) = (ask["findings"][0]["id"].as_str().unwrap(), ask["findings"][1]["id"].as_str().unwrap());
    let d = say(
        &mut r,
        json!({"event": "judge", "stage": "review", "decisions": [
        {"finding": block, "act": true, "reason": "exploitable"}, {"finding": test, "act": false}]}),
    );
    assert_eq!(d["action"], "send-back");
    assert_eq!(d["findings"].as_array().unwrap().len(), 1, "the builder gets only acted-on findings");
    assert_eq!(d["findings"][0]["reason"], "exploitable");
    assert_eq!(d["skipped"][0]["reason"], "skip: not worth another round");
    assert_eq!(
        built(&mut r, "implement")["skipped"][0]["title"],
        "Missing test for empty cart",
        "later rounds are told"
    );
}

#[test]
fn a_block_goes_back_without_a_judge_only_when_there_is_none() {
    let mut r = reviewed(json!(1));
    let d = say(
        &mut r,
        json!({"event": "check", "stage": "review", "pass": false, "findings": [{"title": "x", "severity": "block"}]}),
    );
    assert_eq!(d["action"], "send-back");
    let mut r = reviewed(json!({"judge": {}}));
    let d = say(
        &mut r,
        json!({"event": "check", "stage": "review", "pass": false, "findings": [{"title": "x", "severity": "block"}]}),
    );
    assert_eq!(d["action"], "ask-judge");
}

#[test]
fn people_commands_and_bad_input() {
    let mut r = run(
        json!({"stages": [{"name": "draft"}, {"name": "approve", "check": {"kind": "person"}, "target": "draft"}]}),
    );
    assert_eq!(say(&mut r, json!({"event": "check", "stage": "approve", "answer": "silence"}))["action"], "pause");
    let d = say(&mut r, json!({"event": "check", "stage": "approve", "answer": "no", "note": "tone it down"}));
    assert_eq!((d["action"].as_str(), d["findings"][0]["title"].as_str()), (Some("send-back"), Some("tone it down")));
    assert_eq!(say(&mut r, json!({"event": "check", "stage": "approve", "answer": "yes"}))["action"], "done");
    assert!(r.report(r#"{"event":"check","stage":"approve","answer":"yes"}"#).unwrap_err().contains("ended"));

    let mut r =
        run(json!({"stages": [{"name": "build"}, {"name": "test", "check": {"kind": "command"}, "target": "build"}]}));
    let d = say(&mut r, json!({"event": "check", "stage": "test", "exitCode": 1, "output": "1 failed"}));
    assert_eq!(
        (d["findings"][0]["title"].as_str(), d["findings"][0]["detail"].as_str()),
        (Some("the command exited with 1"), Some("1 failed"))
    );

    for (spec, needle) in [
        (json!({"stages": []}), "at least one stage"),
        (json!({"stages": [{"name": "a", "target": "ghost"}]}), "`ghost`, which is not a stage"),
        (json!({"stages": [{"name": "a", "check": {"kind": "panel", "reviewers": ["x"], "pass": 2}}]}), "pass count"),
        (json!({"stages": [{"name": "a", "bogus": 1}]}), "invalid feedback spec"),
        (json!({"mode": "dag", "maxKickbacks": "lots", "stages": [{"name": "a"}]}), "maxKickbacks"),
        (
            json!({"mode": "dag", "stages": [{"name": "a"}, {"name": "b"}, {"name": "c", "dependsOn": ["a"], "acceptsKickbackTo": ["b"]}]}),
            "lists `b` in acceptsKickbackTo, but does not depend on it",
        ),
        (
            json!({"stages": [{"name": "a"}, {"name": "b", "sendsBackTo": ["a"], "acceptsKickbackTo": ["a"]}]}),
            "duplicate field",
        ),
    ] {
        let err = Run::begin(&spec.to_string()).err().unwrap();
        assert!(err.contains(needle), "{spec}: {err}");
    }
    let mut r = reviewed(json!(1));
    assert!(r.report("not json").unwrap_err().contains("invalid event"));
    assert!(r.report(r#"{"event":"check","stage":"nope"}"#).unwrap_err().contains("no stage"));
    assert!(r.report(r#"{"event":"check","stage":"review"}"#).unwrap_err().contains("needs `pass`"));
    assert!(r.report(r#"{"event":"judge","stage":"review","decisions":[]}"#).unwrap_err().contains("no judge"));
}
