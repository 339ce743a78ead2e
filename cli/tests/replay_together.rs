//! Two `self-evolve replay` processes into one home at the same time, each on its own manual
//! clock (issue 39 item 2). Their clocks disagree by seconds to hours while the real time between
//! their steps is milliseconds: a lock judged by the judge's own clock looked stale and was
//! broken under a live holder, and patches reported written were missing from the file. Every
//! patch a replay reports written must be in the file, exactly once, and no lock is broken.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm")
        .arg(root().join("dist/self-evolve.wasm"))
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION");
    cmd
}

const MARKER: &str = "<!-- notes -->";
const PATCHES: usize = 60;

/// A replay script for session `id`: each event's clock `step_ms` after the last (far apart
/// from the other replay's), a view and a patch adding one note line per step.
fn script(dir: &Path, id: &str, start_ms: u64, step_ms: u64) -> PathBuf {
    let mut lines = vec![json!({"t": 0, "type": "config", "config": {"duplicateThreshold": 1.0}})];
    for j in 0..PATCHES {
        let t = start_ms + step_ms * j as u64;
        lines.push(json!({"t": t, "type": "call", "session": id, "tool": "skill_manage",
            "args": {"action": "view", "name": "shared-notes"}}));
        lines.push(json!({"t": t + 1, "type": "call", "session": id, "tool": "skill_manage",
            "args": {"action": "patch", "name": "shared-notes", "old_string": MARKER,
                     "new_string": format!("{MARKER}\n- note {id}-{j}"), "reason": "a note"}}));
    }
    let file = dir.join(format!("{id}.jsonl"));
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    file
}

#[test]
fn two_replays_on_their_own_clocks_lose_no_write() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let body = format!("# Shared notes\n\n{MARKER}\n");
    let created = cli()
        .args(["tool", "skill_manage", "--session", "setup", "--home"])
        .arg(&home)
        .arg(
            json!({"action": "create", "name": "shared-notes", "description": "Notes two sessions add to. Use when testing.",
                   "body": body, "reason": "the test's shared skill"})
            .to_string(),
        )
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));

    // One replay steps 7 s per event from t = 3 s, the other 11 s from t = 15 s: within a few
    // events their clocks are more than the stale age (10 s) apart.
    let scripts = [script(dir.path(), "r1", 3_000, 7_000), script(dir.path(), "r2", 15_000, 11_000)];
    let children: Vec<_> = scripts
        .iter()
        .map(|file| {
            cli()
                .arg("replay")
                .arg(file)
                .args(["--json", "--home"])
                .arg(&home)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut written = Vec::new();
    let mut refused = 0;
    let mut codes = Vec::new();
    for (child, id) in children.into_iter().zip(["r1", "r2"]) {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{id}: {stderr}");
        assert!(!stderr.contains("breaking the stale lock"), "{id} broke a live lock:\n{stderr}");
        let decisions: Vec<Value> =
            String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let patches: Vec<&Value> = decisions.iter().filter(|d| d["kind"] == "tool").skip(1).step_by(2).collect();
        assert_eq!(patches.len(), PATCHES, "{id}: one answer per patch");
        for (j, answer) in patches.iter().enumerate() {
            if answer["ok"] == true && answer["result"]["status"] == "written" {
                written.push(format!("- note {id}-{j}"));
            } else {
                // A lost race is said, never hidden: conflict, or the skill changed since it was read.
                let code = answer["result"]["code"].as_str().unwrap_or_default();
                codes.push(code.to_string());
                assert!(matches!(code, "conflict" | "not-read" | "stale"), "{id} patch {j}: {answer}");
                refused += 1;
            }
        }
    }
    codes.sort();
    codes.dedup();
    eprintln!("{} patches written, {refused} refused (a lost race, said: {codes:?})", written.len());
    let text = std::fs::read_to_string(home.join("skills/shared-notes/SKILL.md")).unwrap();
    for note in &written {
        assert_eq!(
            text.matches(&format!("{note}\n")).count(),
            1,
            "a patch reported written is missing:\n{note}\n{text}"
        );
    }
    let on_disk = text.lines().filter(|l| l.starts_with("- note ")).count();
    assert_eq!(on_disk, written.len(), "every note on disk was reported written ({refused} refused)");
    for id in ["r1", "r2"] {
        assert!(written.iter().any(|n| n.starts_with(&format!("- note {id}-"))), "{id} wrote nothing");
    }
}

/// Replay events of session `s1`: `turns` completed turns, from `t0`, reviews due every 4 turns.
fn turns(dir: &Path, name: &str, t0: u64, turns: u64) -> PathBuf {
    let mut lines =
        vec![json!({"t": 0, "type": "config", "config": {"review": {"turnInterval": 4, "cooldownMinutes": 0}}})];
    for i in 0..turns {
        let t = t0 + i * 1_000;
        lines.push(json!({"t": t, "type": "user", "session": "s1", "text": format!("step {i}"), "human": true}));
        lines.push(
            json!({"t": t, "type": "turn-end", "session": "s1", "status": "completed", "origin": "user", "depth": 0}),
        );
    }
    let file = dir.join(name);
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    file
}

fn replay(file: &Path, home: &Path) -> String {
    let out = cli().arg("replay").arg(file).args(["--json", "--home"]).arg(home).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn session_files(home: &Path) -> Vec<String> {
    let sessions = home.join("self-evolve/sessions");
    let mut names = Vec::new();
    for folder in std::fs::read_dir(&sessions).unwrap().flatten().filter(|e| e.path().is_dir()) {
        for file in std::fs::read_dir(folder.path()).unwrap().flatten() {
            names.push(file.file_name().to_string_lossy().into_owned());
        }
    }
    names
}

/// A replay holds its session in memory (the `session-owner` and `session-batch` services) and
/// hands it back when it ends: a generation, no journal; the next process that needs the session,
/// a process per call, reads it from there; the replay after that counts on from there. A state
/// lost or counted twice moves the review that is due at the fourth turn.
#[test]
fn a_session_a_replay_held_is_handed_back_at_its_end_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let first = replay(&turns(dir.path(), "a.jsonl", 1_000, 3), &home);
    assert!(!first.contains("\"start\""), "no review before the fourth turn:\n{first}");
    let files = session_files(&home);
    assert!(!files.iter().any(|n| n.starts_with("journal.")), "handed back: {files:?}");
    assert!(files.iter().any(|n| n.ends_with(".json")), "a generation: {files:?}");

    // A process per call (not a session owner) for the same session: a view adds to the session's
    // reads, so it takes the session over.
    let tool = |session: &str, args: Value| {
        let out = cli()
            .args(["tool", "skill_manage", "--session", session, "--home"])
            .arg(&home)
            .arg(args.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    tool(
        "setup",
        json!({"action": "create", "name": "notes", "description": "Notes. Use when testing.",
                         "body": "# Notes\n\nSome notes.\n", "reason": "the test's skill"}),
    );
    tool("s1", json!({"action": "view", "name": "notes"}));
    let files = session_files(&home);
    assert!(!files.iter().any(|n| n.starts_with("journal.")), "folded into a generation: {files:?}");

    let second = replay(&turns(dir.path(), "b.jsonl", 10_000, 1), &home);
    assert!(second.contains("\"start\""), "the fourth turn is due:\n{second}");
    let third = replay(&turns(dir.path(), "c.jsonl", 20_000, 3), &home);
    assert!(!third.contains("\"start\""), "turns 5 to 7 are not due:\n{third}");
}

/// The newest generation of session `s1` in `home`, as JSON.
fn newest_state(home: &Path) -> Value {
    let sessions = home.join("self-evolve/sessions");
    let mut generations: Vec<PathBuf> = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != "in-flight")
        .flat_map(|folder| std::fs::read_dir(folder.path()).unwrap().flatten().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    generations.sort();
    serde_json::from_slice(&std::fs::read(generations.last().expect("a generation")).unwrap()).unwrap()
}

/// While a replay runs, its session is busy to other processes between its events (a batch
/// writes every 1,024 events). A process per call that needs the session asks for it, and the
/// replay hands it back at its next flush, within the asker's wait: the call succeeds, and when
/// both are done the session has every turn the replay ran and the read the call added.
#[test]
fn a_process_that_needs_a_running_replays_session_gets_it_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let created = cli()
        .args(["tool", "skill_manage", "--session", "setup", "--home"])
        .arg(&home)
        .arg(
            json!({"action": "create", "name": "notes", "description": "Notes. Use when testing.",
                   "body": "# Notes\n\nSome notes.\n", "reason": "the test's skill"})
            .to_string(),
        )
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    const TURNS: u64 = 9_000;
    let mut lines = vec![
        json!({"t": 0, "type": "config", "config": {"review": {"turnInterval": 10_000, "toolCallThreshold": 100_000}}}),
    ];
    for i in 0..TURNS {
        lines.push(json!({"t": 1_000 + i, "type": "turn-end", "session": "s1", "status": "completed"}));
    }
    let file = dir.path().join("long.jsonl");
    std::fs::write(&file, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let child = cli()
        .arg("replay")
        .arg(&file)
        .args(["--json", "--home"])
        .arg(&home)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The replay's journal, busy between its events, marks it a batch.
    let started = std::time::Instant::now();
    let mut child = child;
    while !session_files(&home).iter().any(|n| n.ends_with("-batch.busy")) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the replay ended ({status}) before it held s1");
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the replay never held s1");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let viewed = cli()
        .args(["tool", "skill_manage", "--session", "s1", "--home"])
        .arg(&home)
        .arg(json!({"action": "view", "name": "notes"}).to_string())
        .output()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(viewed.status.success(), "the call got the session: {}", String::from_utf8_lossy(&viewed.stderr));
    assert!(!stderr.contains("stalled"), "nothing taken as dead: {stderr}");
    let state = newest_state(&home);
    assert_eq!(state["review"]["turn"], TURNS, "every turn of the replay, once: {state}");
    assert!(state["reads"]["main"].as_array().is_some_and(|r| r.contains(&json!("notes"))), "the call's read: {state}");
    assert!(
        !session_files(&home).iter().any(|n| n.starts_with("journal.") || n == "want"),
        "{:?}",
        session_files(&home)
    );
}
