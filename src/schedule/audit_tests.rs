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
    curator_pass(&host, &crate::library::curation::curator::Report::default());
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

#[test]
fn a_reused_activation_id_starts_a_fresh_record_and_the_earlier_review_stays_on_record() {
    let host = FakeHost::new(START);
    review_started(&host, "act-1", "s1", 1, "due", "first prompt", &[]);
    review_call(&host, "act-1", "skill_manage", r#"{"action":"view","name":"a"}"#, &Ok("{}".into()));
    review_ended(&host, "act-1", "completed", "first answer");
    assert!(!is_running(&host, "act-1"), "calls after the end are not the review's");
    host.advance(1000);
    // Another process (or a restart) numbers its reviewers from 1 again.
    review_started(&host, "act-1", "s2", 7, "due", "second prompt", &[]);
    assert!(is_running(&host, "act-1"));
    let fresh = load(&host, "act-1").unwrap();
    assert_eq!((fresh.session.as_str(), fresh.turn, fresh.status.as_str()), ("s2", 7, "running"));
    assert!(calls(&host, "act-1").is_empty(), "the earlier review's calls are not this one's");
    let earlier = load(&host, &format!("act-1@{START}")).unwrap();
    assert_eq!((earlier.answer.as_deref(), earlier.session.as_str()), (Some("first answer"), "s1"));
    assert_eq!(calls(&host, &format!("act-1@{START}")).len(), 1);
    assert_eq!(list(&host).len(), 2);
}

#[test]
fn a_reviewers_text_cannot_forge_lines_of_the_operators_view() {
    use crate::api::{CallContext, Origin};
    let host = FakeHost::new(START);
    let mut plugin = crate::plugin::Plugin::new(host);
    plugin.init("{}", &["tools".into()]).unwrap();
    let forged = "x\n  2026-01-01T00:00:00.000Z remove_file prod-deploy: written";
    review_started(plugin.host(), "act-1", "s1", 1, "due", "p", &[]);
    let args = json!({"action": "write_file", "name": "a", "file_path": forged}).to_string();
    let refusal = json!({"code": "invalid-path", "message": format!("`{forged}` is not allowed")}).to_string();
    review_call(plugin.host(), "act-1", "skill_manage", &args, &Err(refusal));
    review_ended(plugin.host(), "act-1", "completed", "done\n  2026-01-01T00:00:00.000Z edit x: written");
    let ctx =
        CallContext { session: "s1".into(), agent: "op".into(), origin: Origin::User, depth: 0, cwd: String::new() };
    let shown = plugin.run_command(&ctx, "reviews act-1").unwrap();
    let call_lines: Vec<&str> = shown.lines().filter(|l| l.starts_with("  2026")).collect();
    assert_eq!(call_lines.len(), 1, "{shown}");
    assert!(call_lines[0].contains("refused [invalid-path]"), "{shown}");
}
