//! `self-evolve replay` end to end on the shipped example: the real binary, the real component,
//! a scripted gate on 127.0.0.1. Decisions are asserted, and two runs give identical output.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fresh_home() -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    copy_dir(&root().join("examples/library"), &home.path().join("skills"));
    home
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn replay(home: &Path, file: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(root().join("dist/self-evolve.wasm"))
        .arg("replay")
        .arg(file)
        .arg("--json")
        .arg("--home")
        .arg(home)
        .arg("--gate-replies")
        .arg(root().join("examples/gate-replies.json"))
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn the_example_session_makes_the_expected_decisions() {
    let home = fresh_home();
    let (ok, stdout, stderr) = replay(home.path(), &root().join("examples/session.jsonl"));
    assert!(ok, "{stderr}");
    let decisions: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let reviews = |action: &str| -> Vec<(u64, String)> {
        decisions
            .iter()
            .filter(|d| d["kind"] == "review" && d["action"] == action)
            .map(|d| (d["turn"].as_u64().unwrap(), d["reason"].as_str().unwrap_or("").to_string()))
            .collect()
    };
    let started: Vec<u64> = reviews("start").iter().map(|r| r.0).collect();
    assert_eq!(started, [4, 13, 17]);
    let skips = reviews("skip");
    assert!(skips.iter().any(|(t, r)| *t == 8 && r.starts_with("cooldown")), "{skips:?}");
    assert!(skips.iter().any(|(t, r)| *t == 9 && r == "gate: no (confidence 0.86)"), "{skips:?}");
    assert_eq!(reviews("abort").len(), 1, "the overrunning third reviewer is aborted");

    let gates: Vec<&Value> = decisions.iter().filter(|d| d["kind"] == "gate").collect();
    let sources: Vec<&str> = gates.iter().map(|g| g["source"].as_str().unwrap()).collect();
    assert_eq!(sources, ["jev", "jev", "jev", "counters"]);
    assert!(gates[3]["reason"].as_str().unwrap().starts_with("fallback: network error"));

    let refusals: Vec<&str> = decisions
        .iter()
        .filter(|d| d["kind"] == "tool" && d["ok"] == false)
        .filter_map(|d| d["result"]["code"].as_str())
        .collect();
    assert_eq!(refusals, ["duplicate", "secret-found", "not-owned"]);
    let staged = decisions.iter().filter(|d| d["kind"] == "tool" && d["result"]["status"] == "staged").count();
    assert_eq!(staged, 3);
    assert!(
        decisions.iter().any(|d| d["kind"] == "command"
            && d["ok"] == true
            && d["output"].as_str().unwrap().starts_with("approved"))
    );

    let deploy = std::fs::read_to_string(home.path().join("skills/deploy-staging/SKILL.md")).unwrap();
    assert!(deploy.contains("Run the database migrations first"), "the approved patch is on disk");
    let node = std::fs::read_to_string(home.path().join("skills/node-tooling/SKILL.md")).unwrap();
    assert!(node.contains("npm install"), "the unapproved patch is still staged, not written");
    let gates_log = std::fs::read_to_string(home.path().join("self-evolve/gates.jsonl")).unwrap();
    assert_eq!(gates_log.lines().count(), 4);
}

#[test]
fn replays_are_reproducible() {
    let (a, b) = (fresh_home(), fresh_home());
    let file = root().join("examples/session.jsonl");
    let (_, first, _) = replay(a.path(), &file);
    let (_, second, _) = replay(b.path(), &file);
    assert!(!first.is_empty());
    assert_eq!(first, second);
}

#[test]
fn a_bad_line_is_named_and_nothing_is_replayed() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"t\":0,\"type\":\"user\",\"session\":\"s\",\"text\":\"hi\"}\n{\"t\":1,\"type\":\"telepathy\"}\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = replay(&home.path().join("h"), &file);
    assert!(!ok);
    assert!(stdout.is_empty());
    assert!(stderr.contains("bad.jsonl:2: not a replay event"), "{stderr}");
    assert!(!home.path().join("h").exists(), "nothing was created");
}

#[test]
fn the_example_review_loop_continues_then_ends_clean_and_stops_a_self_review() {
    let home = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = replay(home.path(), &root().join("examples/review-loop.jsonl"));
    assert!(ok, "{stderr}");
    let decisions: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let outcomes: Vec<&str> = decisions
        .iter()
        .filter(|d| d["kind"] == "review-loop")
        .filter_map(|d| d["outcome"].as_str().or(d.get("refused").map(|_| "refused")))
        .collect();
    assert_eq!(outcomes, ["dispatched", "continue", "dispatched", "review-clean", "stopped", "refused"]);
    let cont = decisions.iter().find(|d| d["outcome"] == "continue").unwrap();
    assert_eq!(cont["falsified"][0]["lens"], "ship-readiness");
    assert_eq!(cont["failures"][0]["lens"], "simplicity", "the prose reply is one recorded failure");
    let clean = decisions.iter().find(|d| d["outcome"] == "review-clean").unwrap();
    assert!(
        clean["verdict"].as_str().unwrap().contains("### Fixed in-loop\n- **[load-bearing]** `execution-grounded`")
    );
    assert!(home.path().join("self-evolve").join(clean["archived"].as_str().unwrap()).is_file());

    // The operator's view: `self-evolve skills loops` and the session's last verdict.
    let skills = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .arg("--wasm")
            .arg(root().join("dist/self-evolve.wasm"))
            .arg("skills")
            .arg("--home")
            .arg(home.path())
            .args(args)
            .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = skills(&["loops"]);
    assert!(table.starts_with("session") && table.contains("review-clean"), "{table}");
    let verdict = skills(&["loops", "verdict", "s1"]);
    assert_eq!(verdict.trim_end(), clean["verdict"].as_str().unwrap().trim_end());
}

#[test]
fn a_bad_review_loop_line_is_named_before_anything_runs() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"t\":0,\"type\":\"review-loop\",\"session\":\"s\",\"artifact\":\"x\",\"mode\":\"poem\"}\n",
    )
    .unwrap();
    let (ok, stdout, stderr) = replay(&home.path().join("h"), &file);
    assert!(!ok && stdout.is_empty());
    assert!(stderr.contains("bad.jsonl:1: a review-loop line") && stderr.contains("mode `poem`"), "{stderr}");
    assert!(!home.path().join("h").exists(), "nothing was created");
}

/// Times at the end of the clock saturate instead of overflowing (a panic before), and a
/// reviewer delay past the end never completes instead of wrapping around.
#[test]
fn times_near_the_end_of_the_clock_do_not_overflow() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("late.jsonl");
    let max = u64::MAX;
    std::fs::write(
        &file,
        format!(
            "{{\"t\":0,\"type\":\"reviewer\",\"calls\":[],\"text\":\"late\",\"delayMs\":{max}}}\n\
             {{\"t\":1000,\"type\":\"user\",\"session\":\"s\",\"text\":\"hi\",\"human\":true}}\n\
             {{\"t\":{},\"type\":\"turn-end\",\"session\":\"s\",\"status\":\"completed\",\"origin\":\"user\",\"depth\":0}}\n",
            max - 1
        ),
    )
    .unwrap();
    let (ok, _stdout, stderr) = replay(&home.path().join("h"), &file);
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Input that never ends a line (`/dev/zero`) stops at the line bound with the line named.
#[test]
fn an_endless_line_is_refused_with_bounded_memory() {
    let (ok, stdout, stderr) = replay(&tempfile::tempdir().unwrap().path().join("h"), Path::new("/dev/zero"));
    assert!(!ok && stdout.is_empty());
    assert!(stderr.contains("/dev/zero:1") && stderr.contains("a line longer than"), "{stderr}");
}

/// The per-call deadline (2 s) is for the plugin's own work: a gate that takes longer to answer,
/// within its own timeout, is waited for, not a trap that loses the turn.
#[test]
fn a_slow_gate_answer_within_its_timeout_is_not_a_trap() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("slow.jsonl");
    let lines = [
        r#"{"t":0,"type":"config","config":{"review":{"turnInterval":1,"gate":"jev","jev":{"timeoutMs":3500}}}}"#,
        r#"{"t":1000,"type":"user","session":"s1","text":"use pnpm","human":true}"#,
        r#"{"t":2000,"type":"turn-end","session":"s1","status":"completed"}"#,
    ];
    std::fs::write(&session, lines.join("\n") + "\n").unwrap();
    let replies = dir.path().join("replies.json");
    std::fs::write(&replies, r#"[{"status": 200, "delayMs": 2600, "body": {"choice": "no", "confidence": 0.95}}]"#)
        .unwrap();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .arg("--wasm")
        .arg(root().join("dist/self-evolve.wasm"))
        .args(["replay", "--json", "--home"])
        .arg(home.path())
        .arg("--gate-replies")
        .arg(&replies)
        .arg(&session)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let gate: Value =
        stdout.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|d| d["kind"] == "gate").unwrap();
    assert_eq!((gate["decision"].as_str(), gate["source"].as_str()), (Some("skip"), Some("jev")), "{stdout}");
}
