//! The audit trail on the fake host: a review's record from start to end, its calls with
//! credentials redacted and content never kept, ids that are not file names, and the bound.

use super::*;
use crate::fake::FakeHost;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const START: u64 = 1_767_225_600_000;

#[test]
fn a_review_is_kept_from_start_to_end_with_its_calls_and_no_content() {
    let host = FakeHost::new(START);
    let id = "act-1/../../etc";
    review_started(&host, id, "s1", 4, "due (turns 3/3)", "the reviewer prompt", &["skill_manage".into()]);
    assert!(is_review(&host, id) && !is_review(&host, "act-2"));
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let create = json!({"action": "create", "name": "build-fixes", "body": format!("use {key}")}).to_string();
    review_call(
        &host,
        id,
        "skill_manage",
        &create,
        &Ok(r#"{"status":"written","path":"build-fixes/SKILL.md"}"#.into()),
    );
    let refusal = json!({"code": "secret-found", "message": format!("the content holds {key}")}).to_string();
    review_call(&host, id, "skill_manage", &create, &Err(refusal));
    review_spent(&host, id, 1200, 300);
    review_spent(&host, id, 800, 100);
    host.advance(2500);
    review_ended(&host, id, "completed", &format!("  created build-fixes; saw {key}  "));
    let record = load(&host, id).unwrap();
    assert_eq!((record.status.as_str(), record.turn, record.ended_ms), ("completed", 4, Some(START + 2500)));
    host.advance(1);
    review_ended(&host, id, "aborted", "");
    assert_eq!(load(&host, id).unwrap(), record, "the first end is kept");
    assert_eq!(record.prompt_sha256, Some(sha256_hex(b"the reviewer prompt")));
    assert_eq!((record.input_tokens, record.output_tokens), (Some(2000), Some(400)));
    let calls = calls(&host, id);
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0]["ok"].as_bool(), calls[0]["answer"]["status"].as_str()), (Some(true), Some("written")));
    assert_eq!((calls[1]["ok"].as_bool(), calls[1]["answer"]["code"].as_str()), (Some(false), Some("secret-found")));
    // The key is never kept: not the body (content is not kept), not the refusal, not the answer.
    let everything: String = host
        .list_dir(&Root::State, DIR)
        .unwrap()
        .iter()
        .map(|(name, _)| String::from_utf8(host.file(&Root::State, &format!("{DIR}/{name}")).unwrap()).unwrap())
        .collect();
    assert!(!everything.contains(&key) && everything.contains("[redacted: github-pat]"), "{everything}");
    assert!(!everything.contains("use "), "content is not kept");
    // The host's id never becomes a path.
    assert!(host.list_dir(&Root::State, DIR).unwrap().iter().all(|(name, _)| name.starts_with("r-")));
}

#[test]
fn the_newest_records_are_kept_and_an_unknown_end_writes_nothing() {
    let host = FakeHost::new(START);
    let before = host.snapshot();
    review_ended(&host, "never-started", "completed", "x");
    assert_eq!(host.snapshot(), before, "the end of a review with no record writes nothing");
    for i in 0..(KEEP + PRUNE_SLACK) {
        host.advance(1);
        review_started(&host, &format!("act-{i}"), "s1", 1, "due", "p", &[]);
    }
    assert_eq!(list(&host).len(), KEEP + PRUNE_SLACK, "pruning waits for its slack");
    // Past the slack, one start in about sixteen prunes: within 200 more, the oldest are gone.
    for i in 0..200 {
        host.advance(1);
        review_started(&host, &format!("more-{i}"), "s1", 1, "due", "p", &[]);
    }
    let kept = list(&host);
    assert!(kept.len() <= KEEP + PRUNE_SLACK && kept.len() >= KEEP, "{}", kept.len());
    assert!(!kept.iter().any(|r| r.id == "act-0"), "the oldest went first");
    // A curator pass always looks.
    for i in 0..(PRUNE_SLACK + 1) {
        host.advance(1);
        create(&host, &Record { id: format!("late-{i}"), started_ms: host.now_ms(), ..kept[0].clone() });
    }
    curator_pass(&host, &crate::library::curator::Report::default());
    assert_eq!(list(&host).len(), KEEP);
}

#[test]
fn huge_arguments_are_not_parsed_and_a_runaway_reviewers_calls_stop_being_kept() {
    let host = FakeHost::new(START);
    review_started(&host, "act-1", "s1", 1, "due", "p", &[]);
    let huge = json!({"action": "edit", "name": "x", "content": "y".repeat(200_000)}).to_string();
    review_call(&host, "act-1", "skill_manage", &huge, &Ok("{}".into()));
    assert_eq!(calls(&host, "act-1")[0]["action"], Value::Null);
    let path = format!("{DIR}/{}.calls.jsonl", stem("act-1"));
    host.write(&Root::State, &path, &vec![b'\n'; (MAX_CALLS_BYTES + 1) as usize], WriteMode::Append).unwrap();
    let before = host.file(&Root::State, &path).unwrap().len();
    review_call(&host, "act-1", "skill_manage", r#"{"action":"view","name":"x"}"#, &Ok("{}".into()));
    assert_eq!(host.file(&Root::State, &path).unwrap().len(), before);
}
