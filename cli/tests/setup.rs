//! `self-evolve setup HARNESS` end to end, through the binary, on a temporary `$HOME` that holds
//! each harness's realistic config files (cli/tests/fixtures/harness/*/existing, from their docs):
//! a dry run writes nothing; setup keeps every value a person wrote and every comment, in order; a
//! second run changes nothing; `--remove` gives back every file byte for byte (and takes away the
//! ones setup created); a file it cannot parse stops the run with nothing written anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HARNESSES: [&str; 5] = ["claude", "codex", "gemini", "cursor", "hermes"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harness")
}

/// Where each harness's existing files go: (fixture, user-scope path under $HOME, project path).
fn placements(harness: &str) -> Vec<(&'static str, &'static str, Option<&'static str>)> {
    match harness {
        "claude" => vec![
            ("claude/existing/claude.json", ".claude.json", None),
            ("claude/existing/mcp.json", "", Some(".mcp.json")),
            ("claude/existing/user-settings.json", ".claude/settings.json", None),
            ("claude/existing/project-settings.json", "", Some(".claude/settings.json")),
        ],
        "codex" => vec![
            ("codex/existing/config.toml", ".codex/config.toml", Some(".codex/config.toml")),
            ("codex/existing/hooks.json", ".codex/hooks.json", Some(".codex/hooks.json")),
        ],
        "gemini" => vec![
            ("gemini/existing/settings.json", ".gemini/settings.json", None),
            ("gemini/existing/project-settings.json", "", Some(".gemini/settings.json")),
        ],
        "cursor" => vec![
            ("cursor/existing/mcp.json", ".cursor/mcp.json", Some(".cursor/mcp.json")),
            ("cursor/existing/hooks.json", ".cursor/hooks.json", Some(".cursor/hooks.json")),
        ],
        "hermes" => vec![("hermes/existing/config.yaml", ".hermes/config.yaml", None)],
        _ => unreachable!(),
    }
}

struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl World {
    fn new(harness: &str, with_files: bool) -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("me");
        let project = home.join("work/app");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        if with_files {
            for (fixture, user, project_path) in placements(harness) {
                let bytes = std::fs::read(fixtures().join(fixture)).unwrap();
                let mut targets = Vec::new();
                if !user.is_empty() {
                    targets.push(home.join(user));
                }
                if let Some(p) = project_path {
                    targets.push(project.join(p));
                }
                for target in targets {
                    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                    std::fs::write(target, &bytes).unwrap();
                }
            }
        }
        World { _dir: dir, home, project }
    }

    fn setup(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
        command.arg("setup").args(args).current_dir(&self.project).env("HOME", &self.home);
        for name in [
            "SELF_EVOLVE_HOME",
            "SELF_EVOLVE_WASM",
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "GEMINI_CLI_HOME",
            "HERMES_HOME",
        ] {
            command.env_remove(name);
        }
        command.output().unwrap()
    }

    fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        let mut files = BTreeMap::new();
        walk(&self.home, &self.home, &mut files);
        files
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(root, &path, out);
        } else {
            out.insert(path.strip_prefix(root).unwrap().display().to_string(), std::fs::read(&path).unwrap());
        }
    }
}

fn ok(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// The file's content as a value, read by its format.
fn value_of(path: &str, text: &str) -> serde_json::Value {
    if path.ends_with(".toml") {
        let table: toml_edit::DocumentMut = text.parse().unwrap();
        toml_json(table.as_item())
    } else if path.ends_with(".yaml") {
        let docs = yaml_rust2::YamlLoader::load_from_str(text).unwrap();
        docs.first().map_or(serde_json::Value::Null, yaml_json)
    } else {
        jsonc_parser::cst::CstRootNode::parse(text, &Default::default()).unwrap().to_serde_value().unwrap_or_default()
    }
}

fn toml_json(item: &toml_edit::Item) -> serde_json::Value {
    match item {
        toml_edit::Item::Value(v) => match v {
            toml_edit::Value::String(s) => s.value().clone().into(),
            toml_edit::Value::Integer(n) => (*n.value()).into(),
            toml_edit::Value::Boolean(b) => (*b.value()).into(),
            toml_edit::Value::Array(a) => a.iter().map(|v| toml_json(&toml_edit::Item::Value(v.clone()))).collect(),
            toml_edit::Value::InlineTable(t) => {
                t.iter().map(|(k, v)| (k.to_string(), toml_json(&toml_edit::Item::Value(v.clone())))).collect()
            }
            other => other.to_string().into(),
        },
        toml_edit::Item::Table(t) => t.iter().map(|(k, v)| (k.to_string(), toml_json(v))).collect(),
        toml_edit::Item::ArrayOfTables(a) => a.iter().map(|t| toml_json(&toml_edit::Item::Table(t.clone()))).collect(),
        toml_edit::Item::None => serde_json::Value::Null,
    }
}

fn yaml_json(yaml: &yaml_rust2::Yaml) -> serde_json::Value {
    use yaml_rust2::Yaml;
    match yaml {
        Yaml::String(s) | Yaml::Real(s) => s.clone().into(),
        Yaml::Integer(n) => (*n).into(),
        Yaml::Boolean(b) => (*b).into(),
        Yaml::Array(a) => a.iter().map(yaml_json).collect(),
        Yaml::Hash(h) => {
            h.iter().map(|(k, v)| (k.as_str().map_or_else(|| format!("{k:?}"), str::to_string), yaml_json(v))).collect()
        }
        _ => serde_json::Value::Null,
    }
}

/// Everything in `old` is in `new`: each key with its value, each list's items in order.
fn contained(old: &serde_json::Value, new: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => o.iter().all(|(k, v)| n.get(k).is_some_and(|w| contained(v, w))),
        (Value::Array(o), Value::Array(n)) => {
            let mut rest = n.iter();
            o.iter().all(|v| rest.any(|w| contained(v, w)))
        }
        (o, n) => o == n,
    }
}

/// Nothing a person wrote is lost: every value is still there, and every comment line, in order.
fn kept_in_order(path: &str, before: &str, after: &str, what: &str) {
    assert!(contained(&value_of(path, before), &value_of(path, after)), "{what}: a value was lost:\n{after}");
    let comment = |l: &&str| l.trim_start().starts_with("//") || l.trim_start().starts_with('#');
    let after: Vec<String> = after.lines().filter(comment).map(|l| l.trim_end().to_string()).collect();
    let mut at = 0;
    for line in before.lines().filter(comment).map(|l| l.trim_end().to_string()) {
        match after[at..].iter().position(|l| *l == line) {
            Some(i) => at += i + 1,
            None => panic!("{what}: the line {line:?} is gone or out of order"),
        }
    }
}

fn scopes(harness: &str) -> Vec<Vec<&'static str>> {
    if harness == "hermes" { vec![vec![]] } else { vec![vec![], vec!["--project"]] }
}

#[test]
fn setup_merges_keeps_everything_is_idempotent_and_removes_to_the_same_bytes() {
    let binary = std::fs::canonicalize(env!("CARGO_BIN_EXE_self-evolve")).unwrap();
    for harness in HARNESSES {
        for scope in scopes(harness) {
            for with_files in [true, false] {
                let what = format!("{harness} {scope:?} existing={with_files}");
                let world = World::new(harness, with_files);
                let before = world.tree();
                let args = |extra: &[&'static str]| [&[harness][..], &scope, extra].concat();

                // A dry run shows the diff and writes nothing.
                let dry = ok(&world.setup(&args(&["--dry-run"])));
                assert!(dry.contains("dry run: nothing was written") && dry.contains("+++ "), "{what}: {dry}");
                assert_eq!(world.tree(), before, "{what}: the dry run wrote");

                let first = ok(&world.setup(&args(&[])));
                assert!(first.contains(&format!("self-evolve is set up for {harness}")), "{what}: {first}");
                let after = world.tree();
                for (path, bytes) in &before {
                    let new = after.get(path).unwrap_or_else(|| panic!("{what}: {path} disappeared"));
                    if new != bytes {
                        kept_in_order(
                            path,
                            &String::from_utf8_lossy(bytes),
                            &String::from_utf8_lossy(new),
                            &format!("{what} {path}"),
                        );
                        let backup = after
                            .get(&format!("{path}.before-self-evolve"))
                            .unwrap_or_else(|| panic!("{what}: no backup of {path}"));
                        assert_eq!(backup, bytes, "{what}: the backup of {path}");
                    }
                }
                let written: String = after
                    .iter()
                    .filter(|(p, _)| !before.contains_key(*p) || before[*p] != *after[*p])
                    .map(|(p, b)| format!("{p}\n{}\n", String::from_utf8_lossy(b)))
                    .collect();
                assert!(
                    written.contains(&*binary.to_string_lossy()),
                    "{what}: the binary's absolute path is not in\n{written}"
                );
                // Every harness has hooks, and setup writes them.
                let hooks = written.matches(&format!("{} hook", binary.display())).count();
                assert!(hooks >= 3, "{what}: {hooks} hook commands in\n{written}");
                assert!(after.contains_key(".dsh/host.json"), "{what}: no host.json");
                assert!(after.keys().any(|p| p.starts_with(".dsh/")), "{what}");

                // Again: nothing changes.
                let second = ok(&world.setup(&args(&[])));
                assert!(!second.contains("+++ "), "{what}: second run changed something:\n{second}");
                assert_eq!(world.tree(), after, "{what}: the second run wrote");

                // Removed: every config as it was; the backups and the home stay.
                let removed = ok(&world.setup(&args(&["--remove"])));
                assert!(removed.contains("self-evolve is out of"), "{what}: {removed}");
                let now = world.tree();
                for (path, bytes) in &now {
                    if path.starts_with(".dsh/") || path.contains(".before-self-evolve") {
                        continue;
                    }
                    assert_eq!(
                        Some(bytes),
                        before.get(path),
                        "{what}: {path} after --remove:\n{}",
                        String::from_utf8_lossy(bytes)
                    );
                }
                for path in before.keys() {
                    assert!(now.contains_key(path), "{what}: {path} removed");
                }
                // Removing again changes nothing.
                let again = ok(&world.setup(&args(&["--remove"])));
                assert!(!again.contains("+++ "), "{what}: {again}");
            }
        }
    }
}

#[test]
fn a_file_setup_cannot_parse_stops_the_run_and_nothing_is_written_anywhere() {
    // The second file of each plan is broken, so a writer that went file by file would already
    // have changed the first.
    for (harness, broken, text, says) in [
        ("claude", ".claude/settings.json", "{\"hooks\": {,}}", "not valid JSON"),
        ("codex", ".codex/hooks.json", "{\"hooks\": []", "not valid JSON"),
        ("codex", ".codex/config.toml", "[mcp_servers\n", "not valid TOML"),
        ("gemini", ".gemini/settings.json", "{\"mcpServers\": {\"a\": 1,},}", "not valid JSONC"),
        ("cursor", ".cursor/hooks.json", "{\"version\": 1, \"hooks\": {\"stop\": {}}}", "`hooks.stop` is not a list"),
        ("cursor", ".cursor/hooks.json", "{\"version\": 1 // comment\n}", "not valid JSON"),
        ("hermes", ".hermes/config.yaml", "mcp_servers: [a, b]\n", "cannot edit safely"),
        ("claude", ".claude.json", "{\"mcpServers\": {}, \"mcpServers\": {}}", "written twice"),
    ] {
        let world = World::new(harness, true);
        std::fs::create_dir_all(world.home.join(broken).parent().unwrap()).unwrap();
        std::fs::write(world.home.join(broken), text).unwrap();
        let before = world.tree();
        let output = world.setup(&[harness]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{harness}: {broken} was accepted");
        assert!(
            stderr.contains(says) && stderr.contains(broken) && stderr.contains("nothing was changed"),
            "{harness}: {stderr}"
        );
        assert_eq!(world.tree(), before, "{harness}: something was written");
    }
}

#[test]
fn a_named_home_is_carried_by_every_entry_and_an_existing_reviewer_is_kept() {
    let world = World::new("claude", false);
    let home = world.home.join("team home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("host.json"),
        "{\"reviewer\": {\"provider\": \"openai\"}, \"hook\": {\"budgetMs\": 5000}}\n",
    )
    .unwrap();
    let out = ok(&world.setup(&["claude", "--home", home.to_str().unwrap(), "--json"]));
    let report: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(report["harness"], "claude");
    assert_eq!(report["scope"], "user");
    let settings = std::fs::read_to_string(world.home.join(".claude/settings.json")).unwrap();
    assert!(settings.contains(&format!("--home '{}' hook", home.display())), "{settings}");
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(world.home.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["self-evolve"]["args"],
        serde_json::json!(["--home", home.display().to_string(), "mcp"])
    );
    assert_eq!(
        std::fs::read_to_string(home.join("host.json")).unwrap(),
        "{\"reviewer\": {\"provider\": \"openai\"}, \"hook\": {\"budgetMs\": 5000}}\n",
        "an operator's reviewer is theirs"
    );
}

#[test]
fn the_reviewer_fits_the_harness() {
    for (harness, program) in
        [("claude", Some("claude")), ("codex", Some("codex")), ("gemini", None), ("cursor", None), ("hermes", None)]
    {
        let world = World::new(harness, false);
        ok(&world.setup(&[harness]));
        let host: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(world.home.join(".dsh/host.json")).unwrap_or_else(|_| "{}".into()),
        )
        .unwrap();
        assert_eq!(host["reviewer"]["argv"][0].as_str(), program, "{harness}: {host}");
        assert!(world.home.join(".dsh/skills").is_dir(), "{harness}: no skills folder");
    }
    let world = World::new("claude", false);
    ok(&world.setup(&["claude"]));
    let mcp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(world.home.join(".dsh/reviewer-mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp["mcpServers"]["self-evolve"]["args"], serde_json::json!(["mcp", "--as-reviewer"]));
}

#[test]
fn setup_refuses_what_it_cannot_do_clearly() {
    let world = World::new("hermes", false);
    for (args, says) in [
        (vec!["hermes", "--project"], "Hermes reads MCP servers only from its own config.yaml"),
        (vec!["vscode"], "no harness `vscode`; setup knows claude, codex, gemini, cursor, hermes"),
    ] {
        let output = world.setup(&args);
        assert!(!output.status.success());
        assert!(String::from_utf8_lossy(&output.stderr).contains(says), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert!(!world.home.join(".dsh").exists(), "a refused setup created the home");
}

#[test]
fn remove_after_a_person_edited_the_file_takes_out_only_ours_and_a_linked_config_stays_a_link() {
    let world = World::new("cursor", true);
    ok(&world.setup(&["cursor"]));
    // A person adds a server and a hook after setup.
    let mcp = world.home.join(".cursor/mcp.json");
    let text = std::fs::read_to_string(&mcp).unwrap().replacen(
        "\"mcpServers\": {",
        "\"mcpServers\": {\n    \"mine\": { \"command\": \"mine\" },",
        1,
    );
    std::fs::write(&mcp, &text).unwrap();
    ok(&world.setup(&["cursor", "--remove"]));
    let left = std::fs::read_to_string(&mcp).unwrap();
    let value = value_of("mcp.json", &left);
    assert_eq!(value["mcpServers"]["mine"]["command"], "mine", "{left}");
    assert!(value["mcpServers"].get("self-evolve").is_none(), "{left}");
    let original = std::fs::read_to_string(fixtures().join("cursor/existing/mcp.json")).unwrap();
    assert!(contained(&value_of("mcp.json", &original), &value), "{left}");

    // A dotfiles link: the target is edited, the link stays a link.
    let world = World::new("gemini", false);
    let dotfiles = world.home.join("dotfiles/gemini-settings.json");
    std::fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    std::fs::write(&dotfiles, "{\n  // mine\n  \"theme\": \"dark\"\n}\n").unwrap();
    std::fs::create_dir_all(world.home.join(".gemini")).unwrap();
    std::os::unix::fs::symlink(&dotfiles, world.home.join(".gemini/settings.json")).unwrap();
    ok(&world.setup(&["gemini"]));
    assert!(std::fs::symlink_metadata(world.home.join(".gemini/settings.json")).unwrap().file_type().is_symlink());
    let edited = std::fs::read_to_string(&dotfiles).unwrap();
    assert!(edited.contains("// mine") && edited.contains("self-evolve"), "{edited}");
    ok(&world.setup(&["gemini", "--remove"]));
    assert_eq!(std::fs::read_to_string(&dotfiles).unwrap(), "{\n  // mine\n  \"theme\": \"dark\"\n}\n");
}

#[test]
fn what_sits_at_a_config_path_cannot_hang_or_fool_setup() {
    // A FIFO, a file that is not UTF-8, and a link to nothing: each refused, nothing written.
    for (name, make) in [
        (
            "fifo",
            Box::new(|p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success()))
                as Box<dyn Fn(&Path)>,
        ),
        ("latin-1", Box::new(|p: &Path| std::fs::write(p, b"{\"a\": \"\xe9\"}").unwrap())),
        ("dangling link", Box::new(|p: &Path| std::os::unix::fs::symlink("/nonexistent/x.json", p).unwrap())),
    ] {
        let world = World::new("cursor", false);
        let path = world.home.join(".cursor/mcp.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        make(&path);
        let output = world.setup(&["cursor"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{name}: accepted");
        assert!(stderr.contains("mcp.json") && stderr.contains("nothing was changed"), "{name}: {stderr}");
        assert!(!world.home.join(".cursor/hooks.json").exists() && !world.home.join(".dsh").exists(), "{name}: wrote");
    }
}

#[test]
fn a_hostile_home_path_is_quoted_so_the_hook_shell_runs_nothing_of_it() {
    let world = World::new("codex", false);
    let home = world.home.join("it's $(touch pwned) `touch pwned2`");
    ok(&world.setup(&["codex", "--home", home.to_str().unwrap()]));
    let hooks: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(world.home.join(".codex/hooks.json")).unwrap()).unwrap();
    let command = hooks["hooks"]["Stop"][0]["hooks"][0]["command"].as_str().unwrap().to_string();
    let files_in = |dir: &Path| {
        let mut files = BTreeMap::new();
        walk(dir, dir, &mut files);
        files
    };
    let before = files_in(&home);
    let run = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(&world.project)
        .env("HOME", &world.home)
        .stdin(std::fs::File::open(fixtures().join("codex/payloads/Stop.json")).unwrap())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(
        !world.project.join("pwned").exists() && !world.project.join("pwned2").exists(),
        "the shell ran part of the path: {command}"
    );
    assert_ne!(files_in(&home), before, "the hook did not record the turn in the named home");
}

#[test]
fn a_neighbours_credential_in_the_diff_context_is_redacted() {
    let world = World::new("claude", false);
    let token = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s0K";
    std::fs::write(
        world.home.join(".claude.json"),
        format!("{{\n  \"mcpServers\": {{\n    \"github\": {{\n      \"command\": \"gh\",\n      \"env\": {{ \"GITHUB_TOKEN\": \"{token}\" }}\n    }}\n  }}\n}}\n"),
    )
    .unwrap();
    let out = ok(&world.setup(&["claude"]));
    assert!(out.contains("\"self-evolve\""), "{out}");
    assert!(!out.contains(token), "the token was printed:\n{out}");
    assert!(
        std::fs::read_to_string(world.home.join(".claude.json")).unwrap().contains(token),
        "the file itself keeps it"
    );
}

#[test]
fn home_only_writes_the_home_and_no_harness_file() {
    let world = World::new("claude", false);
    let out = ok(&world.setup(&["claude", "--home-only"]));
    let files: Vec<String> = world.tree().into_keys().collect();
    assert_eq!(files, [".dsh/host.json", ".dsh/reviewer-mcp.json"], "{out}");
    let output = world.setup(&["claude", "--home-only", "--remove"]);
    assert!(!output.status.success(), "--home-only --remove was accepted");
}
