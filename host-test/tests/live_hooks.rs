//! A whole live session through real processes: `self-evolve hook` invocations as Claude Code
//! would make them, a reviewer started by the `command` provider (tests/fake-agent/claude, which
//! behaves like `claude -p`), its writes made through `self-evolve tool` and every guard, and the
//! completion delivered by the detached supervisor. Also: a second due turn while a review runs
//! starts nothing; a reviewer that hangs is killed with everything it started; one that fails is
//! reported as failed.

use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fake-agent/claude")
}

struct Session {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
    agent_dir: tempfile::TempDir,
    transcript: PathBuf,
}

fn cli(s: &Session) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_WASM", wasm())
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_AGENT")
        .arg("--wasm")
        .arg(wasm());
    cmd.current_dir(s.project.path());
    cmd
}

fn session(mode: &str, reviewer_timeout_ms: u64) -> Session {
    let s = Session {
        home: tempfile::tempdir().unwrap(),
        project: tempfile::tempdir().unwrap(),
        agent_dir: tempfile::tempdir().unwrap(),
        transcript: PathBuf::new(),
    };
    std::fs::create_dir(s.project.path().join(".git")).unwrap();
    let transcript = s.project.path().join("transcript.jsonl");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "install deps; always use pnpm here"}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Ran pnpm install."}]}}),
    ];
    std::fs::write(&transcript, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let config = json!({"review": {"enabled": true, "turnInterval": 2, "cooldownMinutes": 0}});
    std::fs::write(s.home.path().join("config.json"), config.to_string()).unwrap();
    let host = json!({
        "reviewer": {
            "provider": "command",
            "argv": [fake_agent()],
            "env": {"FAKE_AGENT_DIR": s.agent_dir.path(), "FAKE_AGENT_MODE": mode, "FAKE_AGENT_SLEEP": "2"},
            "timeoutMs": reviewer_timeout_ms
        },
        "hook": {"systemMessage": true}
    });
    std::fs::write(s.home.path().join("host.json"), host.to_string()).unwrap();
    let s = Session { transcript, ..s };
    let created = tool(
        &s,
        "setup",
        json!({"action": "create", "name": "pnpm-usage", "description": "Package manager choice for this team's Node projects. Use when installing dependencies.", "body": "Use pnpm.\n"}),
    );
    assert!(created.1, "{}", created.0);
    s
}

fn tool(s: &Session, session: &str, args: Value) -> (String, bool) {
    let out = cli(s)
        .args(["tool", "skill_manage"])
        .arg(args.to_string())
        .arg("--home")
        .arg(s.home.path())
        .args(["--session", session])
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out.status.success())
}

/// One hook event as Claude Code sends it; returns what the hook printed.
fn hook(s: &Session, name: &str, extra: Value) -> String {
    let mut event = json!({
        "session_id": "cc-1",
        "transcript_path": s.transcript,
        "cwd": s.project.path(),
        "hook_event_name": name,
    });
    event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let mut child = cli(s)
        .arg("hook")
        .arg("--home")
        .arg(s.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(event.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "a hook always exits 0: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn turn(s: &Session, prompt: &str) -> String {
    assert_eq!(hook(s, "UserPromptSubmit", json!({"prompt": prompt})), "", "nothing reaches the model's context");
    hook(
        s,
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "pnpm i"}, "tool_response": {"stdout": "ok"}}),
    );
    hook(s, "Stop", json!({"stop_hook_active": false}))
}

/// Every decision recorded in `<state>/live.jsonl` so far.
fn decisions(s: &Session) -> Vec<Value> {
    let text = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("decision").cloned())
        .collect()
}

fn review_actions(s: &Session) -> Vec<(String, String)> {
    decisions(s)
        .iter()
        .filter(|d| d["kind"] == "review")
        .map(|d| (d["action"].as_str().unwrap_or("").to_string(), d["reason"].as_str().unwrap_or("").to_string()))
        .collect()
}

fn wait_for_end(s: &Session) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(end) = decisions(s).into_iter().find(|d| d["kind"] == "review" && d["action"] == "end") {
            return end;
        }
        assert!(Instant::now() < deadline, "no review ended: {:?}", decisions(s));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a process runs (a zombie waiting for a parent that does not reap it is not running).
fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn skill_text(s: &Session) -> String {
    std::fs::read_to_string(s.home.path().join("skills/pnpm-usage/SKILL.md")).unwrap()
}

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
    // The session's counters survived every process: the status shows one review started.
    let status = tool(&s, "cc-1", json!({"action": "list"}));
    assert!(status.1);
}

#[test]
fn a_second_due_turn_starts_nothing_and_a_hanging_reviewer_is_killed_with_its_children() {
    let s = session("hang", 1_500);
    hook(&s, "UserPromptSubmit", json!({"prompt": "one"}));
    hook(&s, "Stop", json!({}));
    turn(&s, "two");
    let started: Vec<_> = review_actions(&s).into_iter().filter(|(a, _)| a == "start").collect();
    assert_eq!(started.len(), 1, "{:?}", review_actions(&s));
    // Two more completed turns while it runs: due again, but one review is in flight.
    turn(&s, "three");
    turn(&s, "four");
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
fn a_broken_hook_event_never_blocks_the_agent() {
    let s = session("none", 30_000);
    for input in ["not json", "{}", "{\"session_id\": \"x\"}"] {
        let mut child = cli(&s)
            .arg("hook")
            .arg("--home")
            .arg(s.home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{input}");
        assert!(out.stdout.is_empty(), "{input}");
    }
    let log = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap();
    assert!(log.contains("\"level\":\"error\""), "{log}");
}
