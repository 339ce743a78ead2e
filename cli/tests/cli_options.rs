//! The CLI's habits: the global options (`--home`, `--wasm`, `--json`, `--project`) mean the same
//! before or after the subcommand, one that a subcommand has no use for is refused by name (and
//! touches nothing), and every subcommand's `--help` ends with an example.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn wasm() -> PathBuf {
    root().join("dist/self-evolve.wasm")
}

/// The binary with no component, home or identity from the environment.
fn cli(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.current_dir(cwd)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_WASM")
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .stdin(Stdio::null());
    cmd
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    cli(cwd).args(args).output().unwrap()
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn skill(root: &Path, name: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: Does {name} things. Use when asked for {name}.\n---\n# {name}\n\nSteps.\n"
        ),
    )
    .unwrap();
}

/// Every file under `dir`, for "nothing changed" checks.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(entry.path());
        if entry.file_type().unwrap().is_dir() {
            out.extend(tree(&entry.path()));
        }
    }
    out.sort();
    out
}

#[test]
fn global_options_mean_the_same_before_or_after_the_subcommand() {
    let place = tempfile::tempdir().unwrap();
    let home = place.path().join("home");
    let project = place.path().join("project");
    skill(&home.join("skills"), "user-one");
    skill(&project.join(".dsh/skills"), "project-one");
    std::fs::create_dir_all(place.path().join("elsewhere")).unwrap();
    let (h, p, w) = (home.to_str().unwrap(), project.to_str().unwrap(), wasm());
    let w = w.to_str().unwrap();
    let cwd = place.path().join("elsewhere");

    let orders: [&[&str]; 5] = [
        &["--wasm", w, "--home", h, "--project", p, "--json", "skills", "list"],
        &["skills", "list", "--wasm", w, "--home", h, "--project", p, "--json"],
        &["skills", "--json", "--home", h, "list", "--project", p, "--wasm", w],
        &["--project", p, "skills", "--wasm", w, "list", "--home", h, "--json"],
        &["--home", h, "skills", "list", "--json", "--project", p, "--wasm", w],
    ];
    let mut answers = Vec::new();
    for args in orders {
        answers.push(stdout(&run(&cwd, args)));
    }
    let first: serde_json::Value = serde_json::from_str(&answers[0]).expect("--json answers JSON");
    let names = first.to_string();
    assert!(names.contains("user-one") && names.contains("project-one"), "{names}");
    for (args, answer) in orders.iter().zip(&answers) {
        assert_eq!(answer, &answers[0], "{args:?}");
    }
    // `--opt=VALUE` among `skills`' words too.
    let eq = stdout(&run(
        &cwd,
        &["skills", "list", &format!("--home={h}"), &format!("--project={p}"), &format!("--wasm={w}"), "--json"],
    ));
    assert_eq!(eq, answers[0]);
    // `--` ends what the host takes: the words after it go to the plugin, the `--` does not.
    let escaped = stdout(&run(&cwd, &["--wasm", w, "--home", h, "--project", p, "skills", "list", "--json", "--"]));
    assert_eq!(escaped, answers[0]);
    // Without --project, from a folder with no project, only the user's skill.
    let user_only = stdout(&run(&cwd, &["--wasm", w, "skills", "list", "--home", h]));
    assert!(user_only.contains("user-one") && !user_only.contains("project-one"), "{user_only}");

    // Files the CLI reads: `check` and `gate-stats` with --json on either side.
    let check = |args: &[&str]| stdout(&run(&cwd, args));
    let dir = home.join("skills/user-one");
    let d = dir.to_str().unwrap();
    assert_eq!(check(&["--wasm", w, "--json", "check", d]), check(&["check", d, "--json", "--wasm", w]));
    let gates = place.path().join("gates.jsonl");
    std::fs::write(&gates, "{\"decision\":\"review\",\"source\":\"jev\",\"latencyMs\":3}\n").unwrap();
    let g = gates.to_str().unwrap();
    let before = check(&["--json", "gate-stats", g]);
    assert_eq!(before, check(&["gate-stats", g, "--json"]));
    assert!(serde_json::from_str::<serde_json::Value>(&before).is_ok(), "{before}");
}

#[test]
fn an_option_a_subcommand_has_no_use_for_is_refused_and_touches_nothing() {
    let place = tempfile::tempdir().unwrap();
    let home = place.path().join("home");
    let (h, w) = (home.to_str().unwrap(), wasm());
    let cases: [(&[&str], &str); 11] = [
        (&["inspect", "--json", "--home", h], "--json does not apply to `self-evolve inspect`"),
        (&["hook", "--harness", "hermes", "EXTRA", "--home", h], "unexpected argument `EXTRA`"),
        (&["--json", "hook", "--home", h], "--json does not apply to `self-evolve hook`"),
        (&["sync", "--project", ".", "--home", h], "--project does not apply to `self-evolve sync`"),
        (
            &["--project", ".", "replay", "session.jsonl", "--home", h],
            "--project does not apply to `self-evolve replay`",
        ),
        (
            &["tool", "skill_manage", "{}", "--session", "s1", "--project", ".", "--home", h],
            "--project does not apply to `self-evolve tool` (it applies to inspect, skills, mcp, setup and ui); give the session's working folder with --cwd",
        ),
        (&["check", ".", "--home", h], "--home does not apply to `self-evolve check`"),
        (&["gate-stats", "g.jsonl", "--home", h], "--home does not apply to `self-evolve gate-stats`"),
        (&["skills", "list", "--home"], "--home needs a folder: `self-evolve skills list --home ~/.dsh`"),
        (&["skills", "list", "--home="], "--home needs a folder"),
        (&["skills", "list", "--project="], "--project needs a folder"),
    ];
    for (args, message) in cases {
        let out = cli(place.path()).arg("--wasm").arg(&w).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(message), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(!home.exists(), "{args:?} created the home");
        assert_eq!(tree(place.path()), Vec::<PathBuf>::new(), "{args:?}");
    }
}

#[test]
fn every_subcommand_help_ends_with_an_example() {
    let place = tempfile::tempdir().unwrap();
    let subcommands = [
        "inspect",
        "check",
        "skills",
        "gate-stats",
        "replay",
        "mcp",
        "hook",
        "event",
        "tool",
        "sync",
        "config",
        "setup",
    ];
    let top = stdout(&run(place.path(), &["--help"]));
    for name in subcommands {
        assert!(top.contains(&format!("  {name} ")), "`self-evolve --help` lists {name}");
        let help = stdout(&run(place.path(), &[name, "--help"]));
        let example =
            help.split("Example").nth(1).unwrap_or_else(|| panic!("`{name} --help` shows no example:\n{help}"));
        assert!(example.contains(&format!("self-evolve {name}")), "`{name} --help`'s example runs {name}:\n{help}");
    }
}
