//! A whole live session through real processes: `self-evolve hook` invocations as Claude Code
//! would make them, a reviewer started by the `command` provider (tests/fake-agent/claude, which
//! behaves like `claude -p`), its writes made through `self-evolve tool` and every guard, and the
//! completion delivered by the detached supervisor. Also: a second due turn while a review runs
//! starts nothing; a reviewer that hangs is killed with everything it started; one that fails is
//! reported as failed.

mod live_support;

use live_support::*;
use serde_json::{Value, json};

#[test]
fn a_due_turn_starts_a_real_reviewer_whose_patch_lands_through_every_guard() {
    let s = session("patch", 30_000);
    // Turn 1 loads the skill; not due yet (turnInterval 2).
    hook(&s, "UserPromptSubmit", json!({"prompt": "install deps"}));
    hook(
        &s,
        "PostToolUse",
        json!({"tool_name": "Skill", "tool_input": {"skill": "pnpm-usage"}, "tool_response": "loaded"}),
    );
    assert_eq!(hook(&s, "Stop", json!({})), "");
    assert!(review_actions(&s)[0].1.starts_with("not due (turns 1/2"), "{:?}", review_actions(&s));
    // Turn 2 is due: the review starts and the hook says so to the user (systemMessage).
    let printed = turn(&s, "no, always use pnpm here");
    let message: Value = serde_json::from_str(printed.trim()).expect("the configured systemMessage");
    assert!(message["systemMessage"].as_str().unwrap().contains("background skill review started"));
    let end = wait_for_end(&s);
    assert_eq!(
        (end["status"].as_str(), end["reason"].as_str()),
        (Some("completed"), Some("patched pnpm-usage")),
        "{end}"
    );
    let id = end["activation"].as_str().unwrap();

    // The reviewer got the plugin's prompt and the conversation, without tool output.
    let prompt = std::fs::read_to_string(s.agent_dir.path().join(format!("prompt-{id}.txt"))).unwrap();
    assert!(prompt.contains("no skill update") && prompt.contains("always use pnpm here"), "{prompt}");
    // Its first patch was refused by the read-before-write guard; after a view it landed.
    let first: Value =
        serde_json::from_str(&std::fs::read_to_string(s.agent_dir.path().join(format!("first-{id}.json"))).unwrap())
            .unwrap();
    assert_eq!(first["code"], "not-read", "{first}");
    assert!(skill_text(&s).contains("Use pnpm; never npm or yarn."), "{}", skill_text(&s));
    // The review's record keeps the reviewer's calls, the refusal included.
    let reviews = cli(&s).args(["skills", "--home"]).arg(s.home.path()).args(["reviews", "--json"]).output().unwrap();
    let reviews = String::from_utf8_lossy(&reviews.stdout);
    assert!(reviews.contains(id) && reviews.contains("completed"), "{reviews}");
    // The session's counters survived every process: its status shows one review, ended.
    let status =
        event_lines(&s, &[json!({"type": "command", "session": "cc-1", "text": "/skills review status --json"})]);
    let status: Value = serde_json::from_str(status[0]["output"].as_str().unwrap()).unwrap();
    assert_eq!((status["turn"].as_u64(), status["reviewsStarted"].as_u64()), (Some(2), Some(1)), "{status}");
    assert_eq!(status["inFlight"], Value::Null, "{status}");
    assert_eq!(status["lastOutcome"], "completed: patched pnpm-usage", "{status}");
}

#[test]
fn a_second_due_turn_starts_nothing_and_a_hanging_reviewer_is_killed_with_its_children() {
    let s = session("hang", 8_000);
    hook(&s, "UserPromptSubmit", json!({"prompt": "one"}));
    hook(&s, "Stop", json!({}));
    turn(&s, "two");
    let started: Vec<_> = review_actions(&s).into_iter().filter(|(a, _)| a == "start").collect();
    assert_eq!(started.len(), 1, "{:?}", review_actions(&s));
    // Two more completed turns while it runs: due again, but one review is in flight.
    hook(&s, "Stop", json!({}));
    hook(&s, "Stop", json!({}));
    assert!(
        review_actions(&s).iter().any(|(a, r)| a == "skip" && r.starts_with("a review is already in flight")),
        "{:?}",
        review_actions(&s)
    );
    let end = wait_for_end(&s);
    assert_eq!(end["status"], "timed-out", "{end}");
    let id = end["activation"].as_str().unwrap();
    let pid = std::fs::read_to_string(s.agent_dir.path().join(format!("pid-{id}"))).unwrap();
    let grandchild = std::fs::read_to_string(s.agent_dir.path().join(format!("grandchild-{id}"))).unwrap();
    assert!(!alive(&pid), "the reviewer was killed");
    assert!(!alive(&grandchild), "and what it started, as a process group");
    assert!(!skill_text(&s).contains("never npm"));
    // The next due turn may review again.
    turn(&s, "five");
    turn(&s, "six");
    assert_eq!(review_actions(&s).iter().filter(|(a, _)| a == "start").count(), 2, "{:?}", review_actions(&s));
}

#[test]
fn a_reviewer_that_fails_is_reported_and_changes_nothing() {
    let s = session("fail", 30_000);
    let before = skill_text(&s);
    hook(&s, "UserPromptSubmit", json!({"prompt": "one"}));
    hook(&s, "Stop", json!({}));
    turn(&s, "two");
    let end = wait_for_end(&s);
    assert_eq!(end["status"], "failed", "{end}");
    assert!(end["reason"].as_str().unwrap().contains("model overloaded"), "{end}");
    assert_eq!(skill_text(&s), before);
}

#[test]
fn the_hooks_of_a_reviewer_that_is_itself_an_agent_never_count_toward_a_review() {
    let s = session("none", 30_000);
    for name in ["UserPromptSubmit", "Stop", "Stop", "Stop"] {
        let event =
            json!({"session_id": "fork-of-cc-1", "cwd": s.project.path(), "hook_event_name": name, "prompt": "review"});
        let out = hook_raw(&s, event.to_string().as_bytes(), &[("SELF_EVOLVE_ACTIVATION", "rv-1-2-3")]);
        assert!(out.status.success());
    }
    let actions = review_actions(&s);
    assert_eq!(actions.len(), 3, "{actions:?}");
    assert!(actions.iter().all(|(a, r)| a == "skip" && r.starts_with("not a top-level agent")), "{actions:?}");
}

#[test]
fn a_broken_hook_event_never_blocks_the_agent() {
    let s = session("none", 30_000);
    for input in ["not json", "{}", "{\"session_id\": \"x\"}"] {
        let out = hook_raw(&s, input.as_bytes(), &[]);
        assert!(out.status.success(), "{input}");
        assert!(out.stdout.is_empty(), "{input}");
    }
    let log = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap();
    assert!(log.contains("\"level\":\"error\""), "{log}");
}

/// `self-evolve event`: the same lines decide the same whether one process takes them all or a
/// process takes each (the activation ids aside, which name processes).
#[test]
fn event_lines_decide_the_same_in_one_process_or_one_per_line() {
    let lines = [
        json!({"type": "user", "session": "e1", "text": "install deps"}),
        json!({"type": "tool", "session": "e1", "tool": "skill", "args": {"name": "pnpm-usage"}}),
        json!({"type": "turn-end", "session": "e1", "status": "completed"}),
        json!({"type": "turn-end", "session": "e1", "status": "aborted"}),
        json!({"type": "user", "session": "e1", "text": "use pnpm"}),
        json!({"type": "call", "session": "e1", "tool": "skill_manage", "args": {"action": "patch", "name": "pnpm-usage", "old_string": "Use pnpm.", "new_string": "Use pnpm only."}}),
        json!({"type": "turn-end", "session": "e1", "status": "completed"}),
        json!({"type": "command", "session": "e1", "text": "/skills review status --json"}),
        json!({"type": "config", "config": {}}),
    ];
    let run = |s: &Session, input: &str| event_input(s, input);
    let shape = |d: &Value| {
        let mut d = d.clone();
        if let Some(obj) = d.as_object_mut() {
            obj.remove("activation");
            obj.remove("line");
            // The status command's answer names the review in flight by its id.
            if let Some(Value::String(output)) = obj.get_mut("output") {
                *output = output.split("rv-").next().unwrap_or("").to_string();
            }
        }
        d
    };
    // The reviewer hangs, so the review is in flight for every status line in both runs.
    let together = session("hang", 30_000);
    let all: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    let (one_process, ok) = run(&together, &all);
    assert!(!ok, "a replay-only line is refused");
    let apart = session("hang", 30_000);
    let mut per_line = Vec::new();
    for line in &lines {
        per_line.extend(run(&apart, &(line.to_string() + "\n")).0);
    }
    // The reviewer started from event lines is seeded with the conversation those lines carried.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let prompt = loop {
        let found = std::fs::read_dir(apart.agent_dir.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("prompt-"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default());
        match found {
            Some(text) if !text.is_empty() => break text,
            _ if std::time::Instant::now() > deadline => panic!("the reviewer never got its prompt"),
            _ => std::thread::sleep(std::time::Duration::from_millis(100)),
        }
    };
    assert!(prompt.contains("User: install deps") && prompt.contains("User: use pnpm"), "{prompt}");
    kill_reviewers(&together);
    kill_reviewers(&apart);
    let a: Vec<Value> = one_process.iter().map(shape).collect();
    let b: Vec<Value> = per_line.iter().map(shape).collect();
    assert_eq!(a, b);
    let kinds: Vec<String> = a
        .iter()
        .map(|d| {
            format!(
                "{}:{}",
                d["kind"],
                d["action"].as_str().or(d["ok"].as_bool().map(|b| if b { "ok" } else { "refused" })).unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "\"review\":skip",
            "\"review\":skip",
            "\"tool\":ok",
            "\"review\":start",
            "\"command\":ok",
            "\"event\":refused"
        ],
        "{a:?}"
    );
    assert!(a[0]["reason"].as_str().unwrap().starts_with("not due (turns 1/2"), "{a:?}");
    assert!(a[1]["reason"].as_str().unwrap().starts_with("turn aborted"), "{a:?}");
}

/// Codex's `notify` program: each completed turn arrives as one JSON argument; the second is due.
#[test]
fn codex_notifications_count_turns_and_start_a_review() {
    let s = session("none", 30_000);
    for (turn, said) in [(1, "Renamed."), (2, "Kept the old name.")] {
        let payload = json!({
            "type": "agent-turn-complete", "thread-id": "codex-t1", "turn-id": turn.to_string(),
            "cwd": s.project.path(), "input-messages": ["keep the old module name"], "last-assistant-message": said
        });
        let out =
            cli(&s).args(["hook", "--codex", "--home"]).arg(s.home.path()).arg(payload.to_string()).output().unwrap();
        assert!(out.status.success() && out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let actions = review_actions(&s);
    assert!(actions[0].1.starts_with("not due (turns 1/2"), "{actions:?}");
    assert_eq!(actions[1].0, "start", "{actions:?}");
    let end = wait_for_end(&s);
    assert_eq!((end["session"].as_str(), end["status"].as_str()), (Some("codex-t1"), Some("completed")), "{end}");
}
