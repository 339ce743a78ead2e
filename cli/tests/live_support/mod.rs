//! What the live-session tests share: a home with an operator config and host.json, a project,
//! a Claude Code transcript, and the real `self-evolve` binary driven as Claude Code drives hooks.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

pub fn fake_agent() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fake-agent/claude")
}

pub struct Session {
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    pub agent_dir: tempfile::TempDir,
    pub transcript: PathBuf,
}

pub fn cli(s: &Session) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_WASM", wasm())
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_AGENT")
        // As in a hook Claude Code runs: the reviewer it starts must not inherit this.
        .env("CLAUDECODE", "1")
        .arg("--wasm")
        .arg(wasm());
    cmd.current_dir(s.project.path());
    cmd
}

/// A session whose reviewer is tests/fake-agent/claude in `mode`, killed after `reviewer_timeout_ms`.
pub fn session(mode: &str, reviewer_timeout_ms: u64) -> Session {
    session_with(|s| {
        json!({
            "reviewer": {
                "provider": "command",
                "argv": [fake_agent()],
                "env": {"FAKE_AGENT_DIR": s.agent_dir.path(), "FAKE_AGENT_MODE": mode, "FAKE_AGENT_SLEEP": "2"},
                "timeoutMs": reviewer_timeout_ms
            },
            "hook": {"systemMessage": true}
        })
    })
}

/// A session with the host config `host` makes (it may use the session's folders).
pub fn session_with(host: impl FnOnce(&Session) -> Value) -> Session {
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
    let host = host(&s);
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

pub fn tool(s: &Session, session: &str, args: Value) -> (String, bool) {
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
pub fn hook(s: &Session, name: &str, extra: Value) -> String {
    let mut event = json!({
        "session_id": "cc-1",
        "transcript_path": s.transcript,
        "cwd": s.project.path(),
        "hook_event_name": name,
    });
    event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let out = hook_raw(s, event.to_string().as_bytes(), &[]);
    assert!(out.status.success(), "a hook always exits 0: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `self-evolve hook` with `input` on stdin and extra environment variables.
pub fn hook_raw(s: &Session, input: &[u8], env: &[(&str, &str)]) -> std::process::Output {
    let mut child = cli(s)
        .arg("hook")
        .arg("--home")
        .arg(s.home.path())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

pub fn turn(s: &Session, prompt: &str) -> String {
    assert_eq!(hook(s, "UserPromptSubmit", json!({"prompt": prompt})), "", "nothing reaches the model's context");
    hook(
        s,
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "pnpm i"}, "tool_response": {"stdout": "ok"}}),
    );
    hook(s, "Stop", json!({"stop_hook_active": false}))
}

/// Every decision recorded in `<state>/live.jsonl` so far.
pub fn decisions(s: &Session) -> Vec<Value> {
    let text = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("decision").cloned())
        .collect()
}

pub fn review_actions(s: &Session) -> Vec<(String, String)> {
    decisions(s)
        .iter()
        .filter(|d| d["kind"] == "review")
        .map(|d| (d["action"].as_str().unwrap_or("").to_string(), d["reason"].as_str().unwrap_or("").to_string()))
        .collect()
}

pub fn wait_for_end(s: &Session) -> Value {
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
pub fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        // The state follows the command name in parentheses.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

pub fn skill_text(s: &Session) -> String {
    std::fs::read_to_string(s.home.path().join("skills/pnpm-usage/SKILL.md")).unwrap()
}

/// Kills every reviewer the session started that may still run (tests end before their timeouts).
pub fn kill_reviewers(s: &Session) {
    let dir = s.home.path().join("run/reviewers");
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "pgid")
            && let Ok(pgid) = std::fs::read_to_string(&path)
        {
            let _ =
                Command::new("kill").args(["-KILL", "--", &format!("-{}", pgid.trim())]).stderr(Stdio::null()).status();
        }
    }
}

/// Lines through `self-evolve event`, one process; the decisions it printed.
pub fn event_lines(s: &Session, lines: &[Value]) -> Vec<Value> {
    event_input(s, &lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).0
}

/// `input` through `self-evolve event`; the decisions it printed and whether it exited 0.
pub fn event_input(s: &Session, input: &str) -> (Vec<Value>, bool) {
    let mut child = cli(s)
        .arg("event")
        .arg("--home")
        .arg(s.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let decisions = String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (decisions, out.status.success())
}
