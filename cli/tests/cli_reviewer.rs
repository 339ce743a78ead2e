//! The operator's CLI from inside a live reviewer (`SELF_EVOLVE_ACTIVATION` set, as the `command`
//! provider sets it on the child it starts): the real binary and component. A reviewer may read
//! the library and the pending writes; it may not approve its own writes, nor change anything
//! else an operator decides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn self_evolve(home: &Path, activation: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm").arg(wasm()).args(args).arg("--home").arg(home);
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).env_remove("SELF_EVOLVE_ACTIVATION");
    if let Some(activation) = activation {
        cmd.env("SELF_EVOLVE_ACTIVATION", activation);
    }
    cmd.output().unwrap()
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// The library as an operator decides it: skills, pending writes, archive, switches.
fn library(home: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = tree(home);
    all.retain(|p, _| {
        let p = p.to_string_lossy();
        ![
            "self-evolve/index",
            "self-evolve/sessions",
            "self-evolve/locks",
            "self-evolve/usage.log",
            "self-evolve/live",
            // An event's tick plans the curator's next pass; `event` keeps the conversation.
            "self-evolve/curator-schedule.json",
            "run/",
        ]
        .iter()
        .any(|cache| p.starts_with(cache))
    });
    all
}

#[test]
fn a_reviewer_cannot_approve_its_own_write_nor_change_what_the_operator_decides() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join("skills/deploy")).unwrap();
    std::fs::write(
        home.join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ships the app. Use when deploying.\nmetadata:\n  authored-by: self-evolve\n  version: \"1\"\n---\n1. build\n",
    )
    .unwrap();
    std::fs::write(home.join("config.json"), r#"{"writeApproval":true}"#).unwrap();
    let create = r#"{"action":"create","name":"lint-first","description":"Lint before tests. Use when checking.","body":"Run the linter.\n"}"#;
    let staged = self_evolve(home, Some("act-7"), &["tool", "skill_manage", create, "--session", "s1"]);
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stdout));
    assert!(String::from_utf8_lossy(&staged.stdout).contains("staged"), "{}", String::from_utf8_lossy(&staged.stdout));
    let before = library(home);

    for line in [
        &["approve", "latest"][..],
        &["reject", "latest"],
        &["archive", "deploy"],
        &["pin", "deploy"],
        &["revert", "deploy"],
        &["approval", "off"],
        &["review", "off"],
        &["curator", "run"],
    ] {
        let out = self_evolve(home, Some("act-7"), &[&["skills"][..], line].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line:?}: {err}");
        assert!(err.contains("operator-only") && err.contains("`act-7`"), "{line:?}: {err}");
        assert_eq!(library(home), before, "{line:?} changed the library");
    }
    for line in [&["pending"][..], &["list"], &["show", "deploy"], &["review", "status"]] {
        let out = self_evolve(home, Some("act-7"), &[&["skills"][..], line].concat());
        assert!(out.status.success(), "{line:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(library(home), before, "a reviewer's reads changed the library");

    // The operator, outside the reviewer, approves it.
    let out = self_evolve(home, None, &["skills", "approve", "latest"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(home.join("skills/lint-first/SKILL.md").is_file());
}

/// The other ways in from a reviewer's shell: `self-evolve event` lines are the reviewer's (a
/// `/skills approve` line is refused operator-only, a call cannot claim to be `main`), and a
/// replay into an existing home (which acts as the operator, with the file's own config) is
/// refused; into a fresh folder it runs.
#[test]
fn a_reviewer_cannot_act_as_the_operator_through_event_or_replay() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    std::fs::create_dir_all(home.join("skills")).unwrap();
    std::fs::write(home.join("config.json"), r#"{"writeApproval":true}"#).unwrap();
    let create = r#"{"action":"create","name":"lint-first","description":"Lint before tests. Use when checking.","body":"Run the linter.\n"}"#;
    let staged = self_evolve(home, Some("act-7"), &["tool", "skill_manage", create, "--session", "s1"]);
    assert!(staged.status.success(), "{}", String::from_utf8_lossy(&staged.stdout));
    let before = library(home);

    let lines = [
        serde_json::json!({"type": "command", "session": "s1", "text": "/skills approve latest"}),
        serde_json::json!({"type": "command", "session": "s1", "text": "/skills approval off"}),
        serde_json::json!({"type": "call", "session": "s1", "tool": "skill_manage", "agent": "main",
            "args": {"action": "archive", "name": "lint-first"}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(wasm())
        .args(["event", "--home"])
        .arg(home)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_ACTIVATION", "act-7")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    let answers: Vec<serde_json::Value> = printed.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let commands: Vec<&serde_json::Value> = answers.iter().filter(|a| a["kind"] == "command").collect();
    assert_eq!(commands.len(), 2, "{printed}");
    for c in commands {
        assert_eq!(c["ok"], false, "{printed}");
        assert!(c["output"].as_str().unwrap().starts_with("operator-only"), "{printed}");
    }
    assert!(
        answers.iter().any(|a| a["ok"] == false && a["error"].as_str().is_some_and(|e| e.contains("not as `main`"))),
        "{printed}"
    );
    assert_eq!(library(home), before, "a reviewer's event lines changed the library");

    let file = home.join("off.jsonl");
    std::fs::write(
        &file,
        format!(
            "{}\n{}\n",
            serde_json::json!({"t": 0, "type": "config", "config": {}}),
            serde_json::json!({"t": 1, "type": "call", "session": "s1", "tool": "skill_manage",
                "args": {"action": "archive", "name": "lint-first"}})
        ),
    )
    .unwrap();
    let before = library(home);
    let out = self_evolve(home, Some("act-7"), &["replay", file.to_str().unwrap(), "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("inside reviewer act-7") && err.contains("leave out --home"), "{err}");
    assert_eq!(library(home), before, "a refused replay changed the home");
    // Without --home it replays into a fresh folder of its own.
    let mut fresh = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    fresh.arg("--wasm").arg(wasm()).args(["replay", file.to_str().unwrap(), "--json"]);
    let fresh = fresh
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_ACTIVATION", "act-7")
        .output()
        .unwrap();
    assert!(fresh.status.success(), "{}", String::from_utf8_lossy(&fresh.stderr));
}
