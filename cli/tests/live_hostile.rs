//! Live hooks against hostile input and a hostile home, through the real binary: whatever sits at
//! the host's paths (a FIFO, `/dev/zero`), whatever a hook payload carries (a flag as session id,
//! a 400,000-byte skill name, an event over the input bound), the hook exits 0 within its budget,
//! starts nothing it should not, and the session's state survives.

mod live_support;

use live_support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Generous: only a hang fails it (the hook's own budget is 10 s by default).
const HANG: Duration = Duration::from_secs(10);

/// `self-evolve hook` with `input` on stdin (written from a thread; the hook may stop reading),
/// killed if it runs past `HANG`: `None` then.
fn hook_within(s: &Session, input: Vec<u8>) -> Option<Output> {
    let mut child = cli(s)
        .arg("hook")
        .arg("--home")
        .arg(s.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let deadline = Instant::now() + HANG;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = writer.join();
    Some(child.wait_with_output().unwrap())
}

fn event(s: &Session, name: &str, extra: Value) -> Vec<u8> {
    let mut event = json!({"session_id": "cc-1", "cwd": s.project.path(), "hook_event_name": name});
    event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    event.to_string().into_bytes()
}

fn mkfifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn log(s: &Session) -> String {
    std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap_or_default()
}

/// The session's state files (a listing with sizes), to show a refusal changed nothing.
fn state_files(s: &Session) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let root = s.home.path().join("self-evolve/sessions");
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(dir.path()).into_iter().flatten().flatten() {
            out.push((file.path().display().to_string(), file.metadata().unwrap().len()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_fifo_at_the_log_or_the_host_config_never_hangs_the_hook() {
    let s = session("none", 30_000);
    mkfifo(&s.home.path().join("self-evolve/live.jsonl"));
    let out = hook_within(&s, event(&s, "UserPromptSubmit", json!({"prompt": "one"})));
    let out = out.expect("the hook hung on a FIFO at live.jsonl");
    assert!(out.status.success());

    let s = session("none", 30_000);
    mkfifo(&s.home.path().join("host.json"));
    let out = hook_within(&s, event(&s, "UserPromptSubmit", json!({"prompt": "one"})));
    let out = out.expect("the hook hung on a FIFO at host.json");
    assert!(out.status.success());
    assert!(log(&s).contains("not a regular file"), "{}", log(&s));
}

#[test]
fn a_config_that_is_a_device_is_refused_with_a_clear_error() {
    let s = session("none", 30_000);
    let config = s.home.path().join("config.json");
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &config).unwrap();
    let out = hook_within(&s, event(&s, "UserPromptSubmit", json!({"prompt": "one"})));
    let out = out.expect("the hook hung reading /dev/zero");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("config.json is not a regular file"), "{stderr}");
    assert!(log(&s).contains("not a regular file"), "{}", log(&s));
}

/// A session id reaches the reviewer's command line: `--dangerously-skip-permissions` as one is
/// refused at the hook, logged, and no review starts however many turns come due.
#[test]
fn a_session_id_that_is_a_flag_starts_nothing() {
    let s = session("patch", 30_000);
    let before = state_files(&s);
    for name in ["UserPromptSubmit", "Stop", "UserPromptSubmit", "Stop", "Stop"] {
        let event = json!({"session_id": "--dangerously-skip-permissions", "cwd": s.project.path(),
            "hook_event_name": name, "prompt": "always use pnpm"});
        let out = hook_within(&s, event.to_string().into_bytes()).expect("the hook hung");
        assert!(out.status.success());
        assert!(out.stdout.is_empty());
    }
    assert!(review_actions(&s).is_empty(), "{:?}", review_actions(&s));
    assert_eq!(state_files(&s), before, "no session state was written");
    assert!(!s.home.path().join("run/reviewers").exists(), "a reviewer was started");
    assert!(log(&s).contains("is not a session id"), "{}", log(&s));
}

/// One `Skill` use with a 400,000-byte name: the session's state survives it (a start-over would
/// lose the review in flight, and the next due turn would start a second one).
#[test]
fn an_oversized_skill_name_leaves_the_session_state_intact() {
    let s = session("hang", 30_000);
    hook(&s, "UserPromptSubmit", json!({"prompt": "one"}));
    hook(&s, "Stop", json!({}));
    turn(&s, "two");
    assert_eq!(review_actions(&s).iter().filter(|(a, _)| a == "start").count(), 1, "{:?}", review_actions(&s));
    let name = "a".repeat(400_000);
    hook(&s, "PostToolUse", json!({"tool_name": "Skill", "tool_input": {"skill": name}, "tool_response": "loaded"}));
    let largest = state_files(&s).iter().map(|(_, len)| *len).max().unwrap_or(0);
    assert!(largest < 64 << 10, "a session file grew to {largest} bytes: {:?}", state_files(&s));
    // Two more completed turns: due again, but the review is still in flight.
    hook(&s, "Stop", json!({}));
    hook(&s, "Stop", json!({}));
    let actions = review_actions(&s);
    kill_reviewers(&s);
    assert_eq!(actions.iter().filter(|(a, _)| a == "start").count(), 1, "{actions:?}");
    assert!(actions.iter().any(|(a, r)| a == "skip" && r.starts_with("a review is already in flight")), "{actions:?}");
    assert!(!log(&s).contains("starting it over"), "{}", log(&s));
}

/// An event over the input bound is dropped unparsed, with a log line; the hook exits 0.
#[test]
fn an_event_over_the_input_bound_is_dropped_with_a_log_line() {
    let s = session("none", 30_000);
    let before = (decisions(&s), state_files(&s));
    let big = event(&s, "UserPromptSubmit", json!({"prompt": "x".repeat(9 << 20)}));
    let out = hook_within(&s, big).expect("the hook hung");
    assert!(out.status.success());
    assert!(log(&s).contains("over 8388608 bytes; ignored"), "{}", log(&s));
    assert_eq!((decisions(&s), state_files(&s)), before, "nothing was delivered");
}
