//! `self-evolve eval` end to end with a fake agent whose success depends on what a skill says
//! (tests/fixtures/eval/fake-agent), so the expected effect is known: a helpful skill is found
//! helpful, a harmful one harmful, a neutral one inconclusive, with the statistics the test
//! computes by hand; a budget that stops an evaluation loses nothing and the next invocation
//! finishes it; a hanging agent is killed with its children at its timeout, and on an interrupt;
//! the user's library is never touched.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fake_agent() -> String {
    format!("{} {{prompt}}", root().join("cli/tests/fixtures/eval/fake-agent").display())
}

fn cli(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm")
        .arg(root().join("dist/self-evolve.wasm"))
        .arg("--home")
        .arg(home)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_HOME");
    cmd
}

/// A home whose library holds `skill` saying `says`, and a suite of `tasks` tasks (the first
/// `easy` of them easy) checked by the `done` file the fake agent writes.
fn setup(dir: &Path, skill: &str, says: &str, tasks: usize, easy: usize) -> (PathBuf, PathBuf) {
    let home = dir.join("home");
    let folder = home.join("skills").join(skill);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!(
            "---\nname: {skill}\ndescription: A skill for the test. Use when testing.\n---\n\n# {skill}\n\n{says}\n"
        ),
    )
    .unwrap();
    let mut lines = String::new();
    for i in 0..tasks {
        let repo = dir.join(format!("repo{i}"));
        std::fs::create_dir_all(&repo).unwrap();
        if i < easy {
            std::fs::write(repo.join("easy"), "").unwrap();
        }
        lines += &format!(
            "{}\n",
            serde_json::json!({"id": format!("t{i}"), "prompt": format!("solve {i}"), "folder": format!("repo{i}"), "check": "test -f done"})
        );
    }
    let suite = dir.join("suite.jsonl");
    std::fs::write(&suite, lines).unwrap();
    (home, suite)
}

fn eval(home: &Path, suite: &Path, args: &[&str]) -> Value {
    let out = cli(home).arg("eval").arg(suite).args(["--agent", &fake_agent(), "--json"]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-4)
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            out.extend(snapshot(&entry.path()));
        } else {
            out.push((entry.path(), std::fs::read(entry.path()).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn a_helpful_skill_is_found_helpful_with_the_statistics_computed_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 3, 0);
    let library = snapshot(&home.join("skills"));
    let report = eval(&home, &suite, &["--skill", "helper", "--repeat", "2", "--jobs", "2"]);
    // 6 pairs, A alone succeeds in each: p = 2 × (½)^6, the difference 1, its interval [1, 1].
    let overall = &report["overall"];
    assert_eq!(overall["verdict"], "a-better", "{report}");
    assert_eq!(
        (overall["onlyA"].as_u64(), overall["onlyB"].as_u64(), overall["pairs"].as_u64()),
        (Some(6), Some(0), Some(6))
    );
    assert!(close(&overall["pValue"], 0.03125) && close(&overall["difference"], 1.0), "{overall}");
    assert_eq!(report["a"]["successes"], 6);
    assert_eq!(report["b"]["successes"], 0);
    // Wilson's interval of 6 of 6: [0.6097, 1].
    assert!(close(&report["a"]["interval"][0], 0.6097), "{}", report["a"]);
    assert_eq!(report["complete"], true);
    assert_eq!(snapshot(&home.join("skills")), library, "the user's library is untouched");
    let evidence = std::fs::read_to_string(home.join("self-evolve/eval/evidence.jsonl")).unwrap();
    let line: Value = serde_json::from_str(evidence.trim()).unwrap();
    assert_eq!((line["skill"].as_str(), line["verdict"].as_str()), (Some("helper"), Some("a-better")));
    assert_eq!(line["suiteSha256"].as_str().map(str::len), Some(64));
    assert_eq!(line["version"].as_str().map(str::len), Some(64), "the evaluated text's sha256: {line}");
    // `/skills show` says what the evaluation found, of this version.
    let shown = cli(&home).args(["skills", "show", "helper"]).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("evaluated: helps: +100%") && shown.contains("of this version"), "{shown}");
}

#[test]
fn a_harmful_skill_is_found_harmful_and_a_neutral_one_inconclusive() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "bad", "HARMS", 6, 6);
    let report = eval(&home, &suite, &["--skill", "bad", "--repeat", "1"]);
    assert_eq!(report["overall"]["verdict"], "b-better", "{report}");
    assert!(close(&report["overall"]["difference"], -1.0));

    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "plain", "Nothing that changes the outcome.", 4, 2);
    let report = eval(&home, &suite, &["--skill", "plain", "--repeat", "2"]);
    let overall = &report["overall"];
    assert_eq!(overall["verdict"], "inconclusive", "{report}");
    assert!(close(&overall["pValue"], 1.0) && close(&overall["difference"], 0.0));
    assert_eq!(overall["pairsToDecide"], Value::Null, "no discordant pair: no number of pairs decides");
    assert_eq!((report["a"]["successes"].as_u64(), report["b"]["successes"].as_u64()), (Some(4), Some(4)));
}

#[test]
fn a_budget_stops_an_evaluation_and_the_next_run_finishes_it_without_repeating_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 3, 1);
    let first = eval(&home, &suite, &["--skill", "helper", "--repeat", "2", "--max-runs", "5"]);
    assert_eq!(first["complete"], false);
    let second = eval(&home, &suite, &["--skill", "helper", "--repeat", "2"]);
    assert_eq!(second["complete"], true, "{second}");
    let runs: Vec<PathBuf> = std::fs::read_dir(home.join("self-evolve/eval"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("runs.jsonl"))
        .filter(|p| p.is_file())
        .collect();
    let lines = std::fs::read_to_string(&runs[0]).unwrap();
    assert_eq!(lines.lines().count(), 12, "3 tasks × 2 arms × 2 repetitions, each run once:\n{lines}");
    assert_eq!(second["overall"]["onlyA"], 4, "t1 and t2 in both repetitions");
}

/// The pids that still run: a zombie (killed, not yet reaped by whoever adopted it) does not.
fn alive(pids: &str) -> Vec<String> {
    pids.split_whitespace()
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state follows the command's closing parenthesis.
            let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
            state.is_some_and(|s| s != 'Z' && s != 'X')
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_hanging_agent_is_killed_with_its_children_at_its_timeout_and_on_an_interrupt() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = setup(dir.path(), "helper", "HELPS", 1, 0);
    std::fs::create_dir_all(dir.path().join("repo")).unwrap();
    let suite = dir.path().join("hang.jsonl");
    std::fs::write(&suite, r#"{"id":"hang","prompt":"hang","folder":"repo","check":"true"}"#).unwrap();
    let pids = dir.path().join("pids");
    let out = cli(&home)
        .arg("eval")
        .arg(&suite)
        .args([
            "--agent",
            &fake_agent(),
            "--skill",
            "helper",
            "--repeat",
            "1",
            "--timeout",
            "1",
            "--env",
            "EVAL_PIDS",
            "--json",
        ])
        .env("EVAL_PIDS", &pids)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["notChecked"], 2, "{report}");
    assert_eq!(report["tasks"][0]["a"]["successes"], 0);
    let written = std::fs::read_to_string(&pids).unwrap();
    assert_eq!(written.lines().count(), 2, "both arms' agents ran");
    assert!(alive(&written).is_empty(), "an agent or its child outlived its timeout: {written}");

    // An interrupt mid-run: the agents and their children go, the process says so.
    std::fs::remove_file(&pids).unwrap();
    let child = cli(&home)
        .arg("eval")
        .arg(&suite)
        .args(["--agent", &fake_agent(), "--library", "--repeat", "1", "--jobs", "2", "--env", "EVAL_PIDS"])
        .env("EVAL_PIDS", &pids)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&pids).map_or(0, |t| t.lines().count()) < 2 {
        assert!(started.elapsed().as_secs() < 30, "the agents never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let interrupted = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    // The agents hang for 300 s: an exit within seconds is the interrupt's kill, not their end.
    assert!(interrupted.elapsed().as_secs() < 20, "the evaluation waited for its agents after the interrupt");
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"));
    let written = std::fs::read_to_string(&pids).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(alive(&written).is_empty(), "an agent outlived the interrupt: {written}");
}

#[test]
fn an_evaluation_without_arms_or_agent_says_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 1, 0);
    for (args, says) in [
        (vec!["--agent", "x {prompt}"], "--skill NAME"),
        (vec!["--skill", "helper"], "no agent command"),
        (vec!["--skill", "missing", "--agent", "x {prompt}"], "no skill `missing`"),
        (vec!["--skill", "helper", "--agent", "x"], "{prompt}"),
    ] {
        let out = cli(&home).arg("eval").arg(&suite).args(&args).output().unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert!(!home.join("self-evolve/eval").exists(), "a refused evaluation records nothing");

    // The home's host.json may name the agent.
    std::fs::write(home.join("host.json"), serde_json::json!({"eval": {"agent": fake_agent()}}).to_string()).unwrap();
    let out =
        cli(&home).arg("eval").arg(&suite).args(["--skill", "helper", "--repeat", "1", "--json"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["agent"].as_str(), Some(fake_agent().as_str()));
}

#[test]
fn a_skill_now_is_evaluated_against_its_text_before_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "other", "Nothing.", 3, 0);
    let tool = |args: Value| {
        let out = cli(&home).args(["tool", "skill_manage", "--session", "s1"]).arg(args.to_string()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(answer.get("code").is_none(), "{answer}");
    };
    // Version 1 creates it; version 2 adds what makes the fake agent succeed.
    tool(
        serde_json::json!({"action": "create", "name": "helper", "description": "Helps with tasks. Use when solving.",
        "body": "# Helper\n\nSolve the task.\n", "reason": "the test's skill"}),
    );
    tool(serde_json::json!({"action": "view", "name": "helper"}));
    tool(serde_json::json!({"action": "patch", "name": "helper", "old_string": "Solve the task.",
        "new_string": "Solve the task. HELPS", "reason": "what helps"}));
    let report = eval(&home, &suite, &["--against", "helper@2", "--repeat", "2"]);
    assert_eq!(report["arms"], serde_json::json!(["helper now", "helper before version 2"]), "{report}");
    assert_eq!(report["overall"]["verdict"], "a-better", "{report}");
    assert_eq!((report["a"]["successes"].as_u64(), report["b"]["successes"].as_u64()), (Some(6), Some(0)));
    let out =
        cli(&home).arg("eval").arg(&suite).args(["--agent", &fake_agent(), "--against", "helper@1"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("no text before it"), "{stderr}");
}

#[test]
fn a_credential_in_the_agent_command_is_kept_in_no_file_of_the_state_root() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 1, 0);
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let agent = format!("{} --token {key}", fake_agent());
    let out = cli(&home)
        .arg("eval")
        .arg(&suite)
        .args(["--agent", &agent, "--skill", "helper", "--repeat", "1", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let state = snapshot(&home.join("self-evolve"));
    assert!(state.len() >= 3, "eval.json, runs.jsonl and evidence.jsonl: {state:?}");
    for (path, bytes) in state {
        assert!(!String::from_utf8_lossy(&bytes).contains(&key), "{} keeps the key", path.display());
    }
}

#[test]
fn the_tokens_agents_report_are_counted_per_arm_and_a_token_budget_stops_new_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 2, 0);
    // Each run reports 110 tokens: the budget of 250 is passed by the third run, and no fourth starts.
    let first = eval(&home, &suite, &["--skill", "helper", "--repeat", "2", "--max-tokens", "250"]);
    assert_eq!(first["complete"], false, "{first}");
    let total = |r: &Value, arm: usize| (r["tokens"][arm]["total"].as_u64(), r["tokens"][arm]["runs"].as_u64());
    assert_eq!((total(&first, 0), total(&first, 1)), ((Some(220), Some(2)), (Some(110), Some(1))), "{first}");
    assert_eq!(first["tokens"][0]["input"], 200, "cached input is a part of input_tokens: {first}");
    // The rest, without a budget; the table says what each arm used.
    let out = cli(&home)
        .arg("eval")
        .arg(&suite)
        .args(["--agent", &fake_agent(), "--skill", "helper", "--repeat", "2"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("tokens reported: A 440 over 4 runs (110 a run); B 440 over 4 runs"), "{table}");
    let evidence = std::fs::read_to_string(home.join("self-evolve/eval/evidence.jsonl")).unwrap();
    assert!(evidence.contains("\"tokens\":[440,440]"), "{evidence}");
}

fn tool(home: &Path, args: Value) -> Value {
    let out = cli(home).args(["tool", "skill_manage", "--session", "s1"]).arg(args.to_string()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn skills(home: &Path, args: &[&str]) -> String {
    let out = cli(home).arg("skills").args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_staged_write_is_evaluated_against_what_it_replaces_and_shown_with_its_diff() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "other", "Nothing.", 3, 0);
    skills(&home, &["approval", "on"]);
    // A staged create: its text against the library without it.
    let staged = tool(
        &home,
        serde_json::json!({"action": "create", "name": "helper", "description": "Helps with tasks. Use when solving.",
            "body": "# Helper\n\nSolve the task. HELPS\n", "reason": "the test's skill"}),
    );
    let id = staged["id"].as_str().unwrap_or_else(|| panic!("{staged}")).to_string();
    let library = snapshot(&home.join("skills"));
    let report = eval(&home, &suite, &["--pending", "latest", "--repeat", "2"]);
    assert_eq!(report["arms"], serde_json::json!([format!("helper as staged ({id})"), "without helper"]), "{report}");
    assert_eq!(report["overall"]["verdict"], "a-better", "{report}");
    assert_eq!(snapshot(&home.join("skills")), library, "the staged write did not land");
    // In a file of its own: a plugin that reads evidence.jsonl alone never takes it for the skill's.
    assert!(home.join("self-evolve/eval/staged.jsonl").is_file());
    assert!(!home.join("self-evolve/eval/evidence.jsonl").exists());
    let pending = skills(&home, &["pending"]);
    assert!(pending.contains("[evaluated: better than without helper: +100%"), "{pending}");
    let diff = skills(&home, &["diff", &id]);
    assert!(
        diff.starts_with("evaluated: better than without helper: +100%") && diff.contains("+Solve the task. HELPS"),
        "{diff}"
    );
    let json: Value = serde_json::from_str(&skills(&home, &["diff", &id, "--json"])).unwrap();
    assert_eq!(json["evaluation"]["kind"], "staged");

    // Approved, the skill is there; a staged patch that harms is worse than the skill now. The
    // skill's own evaluation (against its absence) is not the staged one's.
    skills(&home, &["approve", &id]);
    tool(&home, serde_json::json!({"action": "view", "name": "helper"}));
    let patch = tool(
        &home,
        serde_json::json!({"action": "patch", "name": "helper", "old_string": "Solve the task. HELPS",
            "new_string": "Solve the task. HARMS", "reason": "a bad idea"}),
    );
    let patch_id = patch["id"].as_str().unwrap_or_else(|| panic!("{patch}")).to_string();
    let report = eval(&home, &suite, &["--pending", &patch_id, "--repeat", "2"]);
    assert_eq!(report["arms"][1], "helper now");
    assert_eq!(report["overall"]["verdict"], "b-better", "{report}");
    assert!(skills(&home, &["diff", &patch_id]).starts_with("evaluated: worse than helper now: -100%"));
    let shown = skills(&home, &["show", "helper"]);
    assert!(!shown.contains("evaluated:"), "no evaluation of the skill against its absence yet: {shown}");
}

#[test]
fn a_staged_write_that_cannot_be_evaluated_is_refused_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 1, 0);
    skills(&home, &["approval", "on"]);
    // Held on a credential finding: its text would go to the agent.
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let create = serde_json::json!({"action": "create", "name": "deploy", "description": "Deploys. Use when deploying.",
        "body": format!("# Deploy\n\nexport GITHUB_TOKEN={key}\n"), "reason": "held"});
    let out = cli(&home).args(["tool", "skill_manage", "--session", "s1"]).arg(create.to_string()).output().unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let held = answer["details"]["held"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string();
    assert!(skills(&home, &["pending"]).contains(&held));
    for (args, says) in [
        (["--pending", "1-nope"], "no staged write `1-nope`"),
        (["--pending", held.as_str()], "held on credential findings"),
    ] {
        let out = cli(&home).arg("eval").arg(&suite).args(["--agent", &fake_agent()]).args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{args:?}: {stderr}");
    }
    // Its text changed on disk since it was staged, or a FIFO put in its place: refused, never
    // blocked on, and the staged write is still there to reject.
    let plain = tool(
        &home,
        serde_json::json!({"action": "create", "name": "plain-one", "description": "Plain. Use when testing.",
            "body": "# Plain\n", "reason": "a plain write"}),
    );
    let plain = plain["id"].as_str().unwrap_or_else(|| panic!("{plain}")).to_string();
    let new = home.join("self-evolve/pending").join(&plain).join("new");
    let refused = |says: &str| {
        let args = ["--agent", fake_agent().as_str(), "--pending", plain.as_str()].map(str::to_string);
        let out = cli(&home).arg("eval").arg(&suite).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{says}: {stderr}");
    };
    std::fs::write(&new, "# Plain, changed behind the plugin's back\n").unwrap();
    refused("changed on disk since it was staged");
    std::fs::remove_file(&new).unwrap();
    rustix::fs::mknodat(rustix::fs::CWD, &new, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0).unwrap();
    refused("not a regular file");
    assert!(skills(&home, &["pending"]).contains(&plain));
    assert!(!home.join("self-evolve/eval").exists(), "a refused evaluation records nothing");
}

#[test]
fn a_task_at_a_git_ref_runs_in_a_clone_cut_off_from_the_users_repository() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = setup(dir.path(), "plain", "Nothing.", 1, 0);
    let repo = dir.path().join("repo");
    let git = |args: &[&str]| {
        let out = Command::new("git").arg("-C").arg(&repo).args(args).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    std::fs::create_dir_all(&repo).unwrap();
    git(&["init", "--quiet", "--initial-branch", "main"]);
    git(&["config", "user.email", "t@example.com"]);
    git(&["config", "user.name", "t"]);
    // v1 holds `easy` (the fake agent solves it) and a link out of the repository; main has neither.
    std::fs::write(repo.join("easy"), "").unwrap();
    std::os::unix::fs::symlink(home.join("skills"), repo.join("out")).unwrap();
    git(&["add", "-A"]);
    git(&["commit", "--quiet", "-m", "v1"]);
    git(&["tag", "v1"]);
    git(&["rm", "--quiet", "easy", "out"]);
    git(&["commit", "--quiet", "-m", "v2"]);
    let head = git(&["rev-parse", "HEAD"]);
    // The check passes only in a clone with no remote whose `out` is a plain file, kept so by
    // its own config, and that holds no later commit (its answer) nor any branch or tag.
    let check = format!(
        "test -f done && test -z \"$(git remote)\" && test ! -L out && test \"$(git config core.symlinks)\" = false \
         && ! git cat-file -e {head} 2>/dev/null && test -z \"$(git for-each-ref)\""
    );
    let suite = dir.path().join("git.jsonl");
    let task =
        |id: &str, r: &str| serde_json::json!({"id": id, "prompt": "p", "folder": "repo", "ref": r, "check": check});
    std::fs::write(&suite, format!("{}\n{}\n", task("old", "v1"), task("new", "main"))).unwrap();
    // Started from inside a git hook of the user's repository (GIT_DIR set): still the clone.
    let out = cli(&home)
        .arg("eval")
        .arg(&suite)
        .args(["--agent", &fake_agent(), "--json", "--skill", "plain", "--repeat", "1"])
        .env("GIT_DIR", repo.join(".git"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let successes =
        |i: usize| (report["tasks"][i]["a"]["successes"].as_u64(), report["tasks"][i]["b"]["successes"].as_u64());
    assert_eq!((successes(0), successes(1)), ((Some(1), Some(1)), (Some(0), Some(0))), "{report}");
    assert_eq!(report["notChecked"], 0, "{report}");
    // The user's repository is as it was.
    assert_eq!((git(&["rev-parse", "HEAD"]), git(&["status", "--porcelain"])), (head, String::new()));
    assert_eq!(git(&["symbolic-ref", "HEAD"]), "refs/heads/main", "the user's HEAD is still on its branch");

    // A ref that names no commit is refused before any run.
    std::fs::write(&suite, format!("{}\n", task("gone", "no-such-branch"))).unwrap();
    let out = cli(&home).arg("eval").arg(&suite).args(["--agent", &fake_agent(), "--skill", "plain"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("`no-such-branch` names no commit"), "{stderr}");
}

/// An agent that prints far more than is kept of a run's output (20 MB of progress before its
/// result) has its tokens read from the end, and nothing of what it printed is stored on disk:
/// the run's folder holds only its copy of the task (a file there grew with a runaway agent
/// until the disk filled, before its timeout).
#[test]
fn what_an_agent_prints_is_read_as_it_prints_and_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let (home, _) = setup(dir.path(), "helper", "HELPS", 0, 0);
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let suite = dir.path().join("flood.jsonl");
    let check = r#"test -f done && [ "$(ls -A ..)" = work ]"#;
    std::fs::write(
        &suite,
        serde_json::json!({"id": "flood", "prompt": "flood", "folder": "repo", "check": check}).to_string() + "\n",
    )
    .unwrap();
    let report = eval(&home, &suite, &["--skill", "helper"]);
    let total = |arm: usize| report["tokens"][arm]["total"].as_u64();
    assert_eq!((total(0), total(1)), (Some(330), Some(330)), "110 a run, each after 20 MB: {report}");
    assert_eq!(report["a"]["successes"], 3, "the check found only the copy beside it: {report}");
}

/// The other two writes an evaluation refuses, with nothing recorded and the write still staged:
/// one to a project's library (a run sees the user's library only) and one that is not a
/// SKILL.md (a file beside it).
#[test]
fn a_staged_project_write_or_one_beside_a_skill_md_is_refused_and_nothing_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let (home, suite) = setup(dir.path(), "helper", "HELPS", 1, 0);
    // A skill the plugin wrote (a hand-written one is read-only to it), then approval on.
    tool(
        &home,
        serde_json::json!({"action": "create", "name": "owned-one", "description": "Owned. Use when testing.",
            "body": "# Owned
", "reason": "a skill of the plugin's"}),
    );
    skills(&home, &["approval", "on"]);
    let project = dir.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let staged = |args: Value| -> String {
        let out = cli(&home)
            .args(["tool", "skill_manage", "--session", "s1", "--cwd"])
            .arg(&project)
            .arg(args.to_string())
            .output()
            .unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{out:?}"));
        answer["id"].as_str().unwrap_or_else(|| panic!("{answer}")).to_string()
    };
    let in_project = staged(serde_json::json!({"action": "create", "name": "local-one", "scope": "project",
        "description": "Local. Use when testing.", "body": "# Local\n", "reason": "a project write"}));
    let beside =
        staged(serde_json::json!({"action": "write_file", "name": "owned-one", "file_path": "references/notes.md",
        "content": "# Notes\n", "reason": "a file beside the skill"}));
    for (id, says) in
        [(&in_project, "is to a project's library"), (&beside, "only a write of a SKILL.md can be evaluated")]
    {
        let out =
            cli(&home).arg("eval").arg(&suite).args(["--agent", &fake_agent(), "--pending", id]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(says), "{id}: {stderr}");
        assert!(skills(&home, &["pending"]).contains(id.as_str()), "{id} is still staged");
    }
    assert!(!home.join("self-evolve/eval").exists(), "a refused evaluation records nothing");
}
