//! Every text the `self-evolve` CLI shows a person goes through one rule (`text::visible`, and
//! `text::visible_json` for `--json` answers): a value holding an escape sequence, a bell, a
//! carriage return, a C1 control, bidi overrides and a zero-width mark is shown escaped on every
//! output path, never written raw. One table: each row feeds that value to one path and runs the
//! real binary. Also: global options (`--home`) after the subcommand.

use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// ESC [31m (red), BEL, CR, CSI as a C1 control, RLO, LRI and a zero-width space.
const HOSTILE: &str = "\x1b[31m\x07\r\u{9b}\u{202e}\u{2066}\u{200b}";
const RAW: [char; 7] = ['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}', '\u{2066}', '\u{200b}'];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cli() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_WASM", root().join("dist/self-evolve.wasm"))
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .stdin(Stdio::null());
    cmd
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The hostile value without what the host refuses in a file name or the plugin splits words
/// on (control characters): bidi and zero-width marks and a C1 control.
const MARKS: &str = "\u{9b}\u{202e}\u{2066}\u{200b}";

/// A home (named with the hostile value) whose library holds a skill with it in its body and
/// one whose folder is named with the marks a file name may hold.
fn home(dir: &Path) -> PathBuf {
    let home = dir.join(format!("home-{HOSTILE}"));
    write(
        &home.join("skills/deploy/SKILL.md"),
        &format!("---\nname: deploy\ndescription: Deploy to staging. Use when deploying.\n---\nStep {HOSTILE} one.\n"),
    );
    let odd = format!("y{}", MARKS.trim_start_matches('\u{9b}'));
    write(
        &home.join("skills").join(&odd).join("SKILL.md"),
        &format!("---\nname: {odd}\ndescription: Use when odd.\n---\nx\n"),
    );
    home
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A home whose library is a clone of a bare remote (host.json `git`), holding a skill made by
/// hand whose folder is named with the hostile value: `sync` commits it and names it.
fn team_home(dir: &Path) -> PathBuf {
    let remote = dir.join("remote.git");
    git(dir, &["init", "-q", "--bare", "-b", "main", remote.to_str().unwrap()]);
    let home = dir.join("home");
    let skills = home.join("skills");
    git(dir, &["clone", "-q", remote.to_str().unwrap(), skills.to_str().unwrap()]);
    git(&skills, &["config", "user.name", "t"]);
    git(&skills, &["config", "user.email", "t@example.com"]);
    write(&skills.join("README.md"), "Team skills.\n");
    git(&skills, &["add", "README.md"]);
    git(&skills, &["commit", "-q", "-m", "start"]);
    git(&skills, &["push", "-q", "origin", "HEAD:main"]);
    let host = json!({"git": {"remote": "origin", "branch": "main", "library": "laptop"}});
    write(&home.join("host.json"), &host.to_string());
    let name = format!("hand{HOSTILE}made");
    write(
        &skills.join(&name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: Use when {HOSTILE}.\n---\nx\n"),
    );
    home
}

/// A replay whose user says the hostile value and whose operator asks `/skills show` for it.
fn session(dir: &Path) -> PathBuf {
    let path = dir.join(format!("session-{HOSTILE}.jsonl"));
    let lines = [
        json!({"type": "user", "t": 0, "session": "s1", "text": format!("hello {HOSTILE}")}),
        json!({"type": "command", "t": 1000, "session": "s1", "text": format!("/skills show x{HOSTILE}")}),
        json!({"type": "call", "t": 2000, "session": "s1", "tool": "skill_manage",
               "args": {"action": "view", "name": format!("x{HOSTILE}")}}),
    ];
    write(&path, &lines.iter().map(|l| format!("{l}\n")).collect::<String>());
    path
}

fn gates(dir: &Path) -> PathBuf {
    let path = dir.join("gates.jsonl");
    // Decisions and sources with JSON escapes in them were once counted malformed (never shown):
    // here they hold the characters JSON carries raw; the reason holds them all.
    let line = json!({"decision": format!("review{MARKS}"), "source": format!("jev{MARKS}"),
                      "reason": format!("fallback: {HOSTILE} (x)"), "choice": "no", "confidence": 0.9});
    write(&path, &format!("{line}\n"));
    path
}

type Row = (&'static str, fn(&Path) -> Output);

/// Each output path with the hostile value in what it shows.
const ROWS: &[Row] = &[
    ("check (text): paths and messages", |d| {
        write(
            &d.join(format!("lib/x{HOSTILE}/SKILL.md")),
            "---\nname: other\ndescription: Use when testing.\n---\nb\n",
        );
        cli().arg("check").arg(d.join("lib")).output().unwrap()
    }),
    ("check --json", |d| {
        write(
            &d.join(format!("lib/x{HOSTILE}/SKILL.md")),
            "---\nname: other\ndescription: Use when testing.\n---\nb\n",
        );
        cli().args(["check", "--json"]).arg(d.join("lib")).output().unwrap()
    }),
    ("check: an argument that is not there", |d| {
        cli().arg("check").arg(d.join(format!("missing{HOSTILE}"))).output().unwrap()
    }),
    ("gate-stats (text)", |d| cli().arg("gate-stats").arg(gates(d)).output().unwrap()),
    ("gate-stats --json", |d| cli().args(["gate-stats", "--json"]).arg(gates(d)).output().unwrap()),
    ("gate-stats: a file that is not there (the error names it)", |d| {
        cli().arg("gate-stats").arg(d.join(format!("gates{HOSTILE}.jsonl"))).output().unwrap()
    }),
    ("inspect: the home's roots", |d| cli().arg("inspect").arg("--home").arg(home(d)).output().unwrap()),
    ("inspect: a component that is not there (the error names it)", |d| {
        cli().arg("inspect").arg("--wasm").arg(d.join(format!("x{HOSTILE}.wasm"))).output().unwrap()
    }),
    ("replay (narrated), its home named at the end", |d| {
        cli().arg("replay").arg(session(d)).arg("--home").arg(home(d)).output().unwrap()
    }),
    ("replay --json", |d| {
        cli().args(["replay", "--json"]).arg(session(d)).arg("--home").arg(home(d)).output().unwrap()
    }),
    ("replay: a bad line (the error names the file)", |d| {
        let path = d.join(format!("bad{HOSTILE}.jsonl"));
        write(&path, "not json\n");
        cli().arg("replay").arg(path).output().unwrap()
    }),
    ("skills list", |d| cli().args(["skills", "--home"]).arg(home(d)).args(["list"]).output().unwrap()),
    ("skills list --json", |d| {
        cli().args(["skills", "--home"]).arg(home(d)).args(["list", "--json"]).output().unwrap()
    }),
    ("skills show", |d| cli().args(["skills", "--home"]).arg(home(d)).args(["show", "deploy"]).output().unwrap()),
    ("skills show --json", |d| {
        cli().args(["skills", "--home"]).arg(home(d)).args(["show", "deploy", "--json"]).output().unwrap()
    }),
    ("skills: a refusal quoting the word", |d| {
        cli().args(["skills", "--home"]).arg(home(d)).arg("show").arg(format!("x{MARKS}")).output().unwrap()
    }),
    ("tool: the answer quotes the call", |d| {
        let args = json!({"action": "view", "name": format!("x{HOSTILE}")});
        cli()
            .args(["tool", "skill_manage"])
            .arg(args.to_string())
            .args(["--session", "s1", "--home"])
            .arg(home(d))
            .output()
            .unwrap()
    }),
    ("tool: a skill's content", |d| {
        let args = json!({"action": "view", "name": "deploy"});
        cli()
            .args(["tool", "skill_manage"])
            .arg(args.to_string())
            .args(["--session", "s1", "--home"])
            .arg(home(d))
            .output()
            .unwrap()
    }),
    ("sync (text): what it committed", |d| cli().arg("sync").arg("--home").arg(team_home(d)).output().unwrap()),
    ("sync --json", |d| cli().args(["sync", "--json"]).arg("--home").arg(team_home(d)).output().unwrap()),
    ("sync: a home without `git` (the error names it)", |d| {
        cli().arg("sync").arg("--home").arg(home(d)).output().unwrap()
    }),
    ("clap: an unknown subcommand", |_| cli().arg(format!("frob{HOSTILE}")).output().unwrap()),
    ("clap: an unknown option", |_| cli().arg("check").arg(format!("--frob{HOSTILE}")).output().unwrap()),
];

/// Whether `text` shows the hostile value escaped (so a row cannot pass by showing nothing).
fn shows_escaped(text: &str) -> bool {
    text.contains("\\u{202e}") || text.contains("\\u202e")
}

#[test]
fn every_output_path_shows_hostile_characters_escaped() {
    let mut failures = Vec::new();
    for (name, run) in ROWS {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path());
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let raw: Vec<String> = RAW
            .iter()
            .filter(|c| stdout.contains(**c) || stderr.contains(**c))
            .map(|c| format!("U+{:04X}", *c as u32))
            .collect();
        if !raw.is_empty() {
            failures.push(format!("{name}: raw {}\n  stdout: {stdout:?}\n  stderr: {stderr:?}", raw.join(" ")));
        } else if !shows_escaped(&stdout) && !shows_escaped(&stderr) {
            failures.push(format!("{name}: the value is not shown at all\n  stdout: {stdout:?}\n  stderr: {stderr:?}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} output paths:\n{}", failures.len(), ROWS.len(), failures.join("\n"));
}

/// The paths outside the CLI's files, walked with the same value: `event` writes the plugin's
/// decision lines through `visible_json` (serde leaves C1 controls and bidi marks raw).
#[test]
fn the_live_paths_show_hostile_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let home = home(dir.path());
    let line = json!({"type": "command", "t": 0, "session": "s1", "text": format!("/skills show x{HOSTILE}")});
    let mut child = cli()
        .arg("event")
        .arg("--home")
        .arg(&home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), format!("{line}\n").as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let raw: Vec<char> = RAW.iter().copied().filter(|c| text.contains(*c)).collect();
    assert!(raw.is_empty() && shows_escaped(&text), "event: raw {raw:?} in {text:?}");
}

/// `--home` is one global option: before the subcommand, after it, and among `skills`' words
/// (which go to the plugin as they are), `--home=X` too.
#[test]
fn home_is_accepted_before_and_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    write(
        &home.join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploy it. Use when deploying.\n---\nx\n",
    );
    let lists = |args: &[&str]| {
        let out = cli().args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains("deploy"), "{args:?}: {stdout}");
    };
    let home = home.to_str().unwrap();
    lists(&["--home", home, "skills", "list"]);
    lists(&["skills", "--home", home, "list"]);
    lists(&["skills", "list", "--home", home]);
    lists(&["skills", "list", &format!("--home={home}")]);
    lists(&["skills", "list", "--json", "--home", home]);
    let out = cli().args(["skills", "list", "--home"]).output().unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--home needs a folder"));
    // The same option for the other subcommands, before them too.
    let out = cli().args(["--home", home, "inspect"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("{home}/skills")), "{out:?}");
}
