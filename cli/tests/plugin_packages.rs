//! The plugin packages in this repository, checked against each harness's docs and run the way
//! the harness runs them:
//! - Claude Code: the marketplace `.claude-plugin/marketplace.json` and the plugin
//!   `plugins/self-evolve/` (`.claude-plugin/plugin.json`, `hooks/hooks.json`, `.mcp.json`);
//! - Codex: the marketplace `.agents/plugins/marketplace.json` and the same folder's
//!   `.codex-plugin/plugin.json`, which points at `codex/hooks.json` and `codex/mcp.json`;
//! - Gemini CLI: the extension at the repository root (`gemini-extension.json`, `hooks/hooks.json`).
//!
//! Every command in them goes through `plugins/self-evolve/bin/self-evolve-launch`. The documented
//! fields come from `tests/fixtures/harness/<harness>/fields.json` (sources in its SOURCE.md).

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const BIN: &str = env!("CARGO_BIN_EXE_self-evolve");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn launcher() -> PathBuf {
    repo().join("plugins/self-evolve/bin/self-evolve-launch")
}

fn wasm() -> PathBuf {
    let path = repo().join("dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// A package file, by its path in the repository.
fn package(rel: &str) -> Value {
    read_json(&repo().join(rel))
}

/// What `fields.json` says about one harness.
fn fixture(harness: &str) -> Value {
    read_json(&repo().join("cli/tests/fixtures/harness").join(harness).join("fields.json"))
}

/// `manifests[]` (or `config_files[]`) entry `id` of a fixture.
fn entry<'a>(fixture: &'a Value, list: &str, id: &str) -> &'a Value {
    fixture[list].as_array().unwrap().iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no {list} `{id}`"))
}

fn strings(list: &Value) -> Vec<String> {
    list.as_array().unwrap_or_else(|| panic!("not a list: {list}")).iter().map(|s| s.as_str().unwrap().into()).collect()
}

/// `required_fields` of a manifest entry.
fn required(manifest: &Value) -> Vec<&str> {
    manifest["required_fields"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect()
}

/// `nested_fields[key]` of a manifest entry.
fn nested(manifest: &Value, key: &str) -> Vec<String> {
    strings(&manifest["nested_fields"][key])
}

/// Problems found, one line each, reported together.
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    /// `value` is an object whose keys are all in `allowed`, with every key of `required`.
    fn object(&mut self, what: &str, value: &Value, allowed: &[String], required: &[&str]) {
        let Some(object) = value.as_object() else {
            self.0.push(format!("{what}: not an object: {value}"));
            return;
        };
        for key in object.keys() {
            if !allowed.contains(key) {
                self.0.push(format!("{what}: `{key}` is not a documented field (documented: {})", allowed.join(", ")));
            }
        }
        for key in required {
            if !object.contains_key(*key) {
                self.0.push(format!("{what}: the required field `{key}` is missing"));
            }
        }
    }

    /// A hooks file: the event map wrapped in `"hooks"` (beside `top` only), documented events,
    /// matcher groups of documented fields, each with handlers of documented fields that run a
    /// command within a timeout.
    fn hooks(
        &mut self,
        what: &str,
        file: &Value,
        top: &[String],
        events: &[String],
        group: &[String],
        handler: &[String],
    ) {
        self.object(what, file, top, &["hooks"]);
        let Some(map) = file["hooks"].as_object() else {
            self.0.push(format!("{what}: `hooks` must hold the event map (an object)"));
            return;
        };
        for (event, groups) in map {
            if !events.contains(event) {
                self.0.push(format!("{what}: `{event}` is not a documented event"));
            }
            let groups = groups.as_array().map(Vec::as_slice).unwrap_or_default();
            if groups.is_empty() {
                self.0.push(format!("{what}: `{event}` holds no matcher group"));
            }
            for (i, g) in groups.iter().enumerate() {
                let at = format!("{what} {event}[{i}]");
                self.object(&at, g, group, &["hooks"]);
                let handlers = g["hooks"].as_array().map(Vec::as_slice).unwrap_or_default();
                if handlers.is_empty() {
                    self.0.push(format!("{at}: no handler"));
                }
                for (j, h) in handlers.iter().enumerate() {
                    let at = format!("{at}.hooks[{j}]");
                    self.object(&at, h, handler, &["type", "command", "timeout"]);
                    if h["type"] != "command" || !h["command"].is_string() || !h["timeout"].is_u64() {
                        self.0.push(format!("{at}: not a command with a timeout: {h}"));
                    }
                }
            }
        }
    }

    /// An `mcpServers` map: stdio entries of documented fields, each a command with its arguments.
    fn servers(&mut self, what: &str, servers: &Value, fields: &[String]) {
        let Some(map) = servers.as_object() else {
            self.0.push(format!("{what}: `mcpServers` must be an object"));
            return;
        };
        for (name, server) in map {
            let at = format!("{what} mcpServers.{name}");
            self.object(&at, server, fields, &["command", "args"]);
            self.kebab(&at, name);
            let args_ok = server["args"].as_array().is_some_and(|a| a.iter().all(Value::is_string));
            if !server["command"].is_string() || !args_ok {
                self.0.push(format!("{at}: command must be a string and args a list of strings: {server}"));
            }
        }
    }

    fn kebab(&mut self, what: &str, name: &str) {
        let ok = !name.is_empty()
            && name
                .split('-')
                .all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()));
        if !ok {
            self.0.push(format!("{what}: name `{name}` is not kebab-case"));
        }
    }

    /// A relative path as the marketplaces and the Codex manifest want it: `./…`, no `..`, and
    /// present under `root`.
    fn relative(&mut self, what: &str, path: &Value, root: &Path) -> Option<PathBuf> {
        let Some(text) = path.as_str() else {
            self.0.push(format!("{what}: not a path: {path}"));
            return None;
        };
        let escapes = Path::new(text).components().any(|c| matches!(c, Component::ParentDir | Component::RootDir));
        if !text.starts_with("./") || escapes {
            self.0.push(format!("{what}: `{text}` must start with ./ and stay inside {}", root.display()));
            return None;
        }
        let full = root.join(text);
        if !full.exists() {
            self.0.push(format!("{what}: `{text}` is not there ({})", full.display()));
            return None;
        }
        Some(full)
    }

    fn assert_none(self) {
        assert!(self.0.is_empty(), "\n{}", self.0.join("\n"));
    }
}

#[test]
fn the_claude_code_plugin_and_its_marketplace_use_only_documented_fields() {
    let docs = fixture("claude");
    let mut found = Findings::default();

    let m = entry(&docs, "manifests", "marketplace");
    let market = package(".claude-plugin/marketplace.json");
    found.object("marketplace.json", &market, &strings(&m["fields"]), &required(m));
    found.kebab("marketplace.json", market["name"].as_str().unwrap_or_default());
    // `owner.name`, and `name` and `source` of each entry, are required (SOURCE.md, 3.5).
    found.object("marketplace.json owner", &market["owner"], &nested(m, "owner"), &["name"]);
    let entries = market["plugins"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "one plugin: {market}");
    for p in entries {
        found.object("marketplace.json plugins[]", p, &nested(m, "plugins[]"), &["name", "source"]);
        let name = p["name"].as_str().unwrap_or_default();
        found.kebab("marketplace.json plugins[]", name);
        // A relative source is resolved from the repository root, not from .claude-plugin/.
        if let Some(dir) = found.relative("marketplace.json plugins[].source", &p["source"], &repo()) {
            let manifest = read_json(&dir.join(".claude-plugin/plugin.json"));
            assert_eq!(manifest["name"], name, "the marketplace entry names the plugin its source holds");
        }
    }

    let root = repo().join("plugins/self-evolve");
    let m = entry(&docs, "manifests", "plugin");
    let plugin = read_json(&root.join(".claude-plugin/plugin.json"));
    found.object(".claude-plugin/plugin.json", &plugin, &strings(&m["fields"]), &required(m));
    found.object(".claude-plugin/plugin.json author", &plugin["author"], &nested(m, "author"), &["name"]);
    found.kebab(".claude-plugin/plugin.json", plugin["name"].as_str().unwrap_or_default());

    let m = entry(&docs, "manifests", "plugin-hooks");
    let events = strings(&entry(&docs, "config_files", "settings")["hook_events"]);
    found.hooks(
        "hooks/hooks.json",
        &read_json(&root.join("hooks/hooks.json")),
        &strings(&m["fields"]),
        &events,
        &nested(m, "hooks.<Event>[]"),
        &nested(m, "hooks.<Event>[].hooks[]"),
    );

    let m = entry(&docs, "manifests", "plugin-mcp");
    let mcp = read_json(&root.join(".mcp.json"));
    found.object(".mcp.json", &mcp, &strings(&m["fields"]), &required(m));
    found.servers(".mcp.json", &mcp["mcpServers"], &nested(m, "mcpServers.<name>"));
    found.assert_none();
}

#[test]
fn the_codex_plugin_and_its_marketplace_use_only_documented_fields() {
    let docs = fixture("codex");
    let mut found = Findings::default();

    let m = entry(&docs, "manifests", "marketplace");
    let market = package(".agents/plugins/marketplace.json");
    found.object("marketplace.json", &market, &strings(&m["fields"]), &required(m));
    found.kebab("marketplace.json", market["name"].as_str().unwrap_or_default());
    found.object("marketplace.json interface", &market["interface"], &nested(m, "interface"), &[]);
    let entries = market["plugins"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "one plugin: {market}");
    for p in entries {
        // "Always include `policy.installation`, `policy.authentication`, and `category`".
        found.object("plugins[]", p, &nested(m, "plugins[]"), &["name", "source", "policy", "category"]);
        found.object("plugins[].source", &p["source"], &nested(m, "plugins[].source"), &["source", "path"]);
        found.object(
            "plugins[].policy",
            &p["policy"],
            &nested(m, "plugins[].policy"),
            &["installation", "authentication"],
        );
        assert_eq!(p["source"]["source"], "local", "{p}");
        let name = p["name"].as_str().unwrap_or_default();
        found.kebab("plugins[]", name);
        if let Some(dir) = found.relative("plugins[].source.path", &p["source"]["path"], &repo()) {
            let manifest = read_json(&dir.join(".codex-plugin/plugin.json"));
            assert_eq!(manifest["name"], name, "the marketplace entry names the plugin its source holds");
        }
    }

    let root = repo().join("plugins/self-evolve");
    let m = entry(&docs, "manifests", "plugin");
    let plugin = read_json(&root.join(".codex-plugin/plugin.json"));
    found.object(".codex-plugin/plugin.json", &plugin, &strings(&m["fields"]), &required(m));
    found.object(".codex-plugin/plugin.json author", &plugin["author"], &nested(m, "author"), &["name"]);
    found.object(".codex-plugin/plugin.json interface", &plugin["interface"], &nested(m, "interface"), &[]);
    found.kebab(".codex-plugin/plugin.json", plugin["name"].as_str().unwrap_or_default());
    for key in ["skills", "mcpServers", "apps", "hooks"] {
        if !plugin[key].is_null() {
            found.relative(&format!(".codex-plugin/plugin.json {key}"), &plugin[key], &root);
        }
    }

    // Codex's own hooks file holds `hooks` alone; its groups are `{matcher, hooks}`.
    let c = entry(&docs, "config_files", "plugin-hooks");
    found.hooks(
        "codex/hooks.json",
        &read_json(&root.join("codex/hooks.json")),
        &[c["hooks_key"].as_str().unwrap().to_string()],
        &strings(&c["hook_events"]),
        &["matcher".to_string(), "hooks".to_string()],
        &strings(&c["hook_handler_fields"]),
    );
    let c = entry(&docs, "config_files", "plugin-mcp");
    let key = c["mcp_servers_key"].as_str().unwrap();
    let mcp = read_json(&root.join("codex/mcp.json"));
    found.object("codex/mcp.json", &mcp, &[key.to_string()], &[key]);
    found.servers("codex/mcp.json", &mcp[key], &strings(&c["mcp_server_fields"]));
    found.assert_none();
}

/// The Codex manifest shares the plugin folder with Claude Code's, whose files Codex would load by
/// default (`hooks/hooks.json`, `.mcp.json`): it names its own. Its MCP file declares no server:
/// Codex leaves `${PLUGIN_ROOT}` unexpanded in a plugin's MCP command (openai/codex#35762), and
/// newer versions start a plugin's server in the plugin's folder, where `self-evolve mcp` would
/// not find the user's project; plugins/README.md has Codex users add the server with
/// `codex mcp add`, which starts it in the project.
#[test]
fn the_codex_plugin_loads_its_own_files_and_no_mcp_server() {
    let root = repo().join("plugins/self-evolve");
    let plugin = read_json(&root.join(".codex-plugin/plugin.json"));
    for (key, claude_default) in [("hooks", "./hooks/hooks.json"), ("mcpServers", "./.mcp.json")] {
        let path = plugin[key].as_str().unwrap_or_else(|| panic!("the Codex manifest names its own `{key}`"));
        assert_ne!(path, claude_default, "Codex would load Claude Code's file");
    }
    let mcp = read_json(&root.join("codex/mcp.json"));
    assert_eq!(mcp, json!({"mcpServers": {}}));
}

#[test]
fn the_gemini_extension_uses_only_documented_fields() {
    let docs = fixture("gemini");
    let mut found = Findings::default();
    let m = entry(&docs, "manifests", "extension");
    // `gemini extensions install <repository URL>` reads the manifest at the repository's root.
    let extension = package("gemini-extension.json");
    found.object("gemini-extension.json", &extension, &strings(&m["fields"]), &required(m));
    found.kebab("gemini-extension.json", extension["name"].as_str().unwrap_or_default());
    found.servers("gemini-extension.json", &extension["mcpServers"], &nested(m, "mcpServers.<name>"));

    let m = entry(&docs, "manifests", "extension_hooks");
    found.hooks(
        "hooks/hooks.json",
        &package("hooks/hooks.json"),
        &strings(&m["fields"]),
        &strings(&entry(&docs, "config_files", "settings")["hook_events"]),
        &nested(m, "hooks.<EventName>[]"),
        &nested(m, "hooks.<EventName>[].hooks[]"),
    );
    found.assert_none();
}

/// Every file a release ships, and where each harness reads a version.
const PACKAGE_FILES: [&str; 10] = [
    ".claude-plugin/marketplace.json",
    "plugins/self-evolve/.claude-plugin/plugin.json",
    "plugins/self-evolve/hooks/hooks.json",
    "plugins/self-evolve/.mcp.json",
    ".agents/plugins/marketplace.json",
    "plugins/self-evolve/.codex-plugin/plugin.json",
    "plugins/self-evolve/codex/hooks.json",
    "plugins/self-evolve/codex/mcp.json",
    "gemini-extension.json",
    "hooks/hooks.json",
];

#[test]
fn every_version_is_the_crates_version() {
    fn versions(value: &Value, at: &str, out: &mut Vec<(String, Value)>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    if key == "version" {
                        out.push((format!("{at}.version"), v.clone()));
                    }
                    versions(v, &format!("{at}.{key}"), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| versions(v, &format!("{at}[]"), out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for file in PACKAGE_FILES {
        versions(&package(file), file, &mut found);
    }
    for file in [
        "plugins/self-evolve/.claude-plugin/plugin.json",
        "plugins/self-evolve/.codex-plugin/plugin.json",
        "gemini-extension.json",
    ] {
        assert!(found.iter().any(|(at, _)| at == &format!("{file}.version")), "{file} carries no version");
    }
    let wrong: Vec<_> = found.iter().filter(|(_, v)| *v != VERSION).collect();
    assert!(wrong.is_empty(), "versions other than the crate's {VERSION}: {wrong:?}");
}

/// The package's hooks are the ones `self-evolve setup` writes for the same harness (events,
/// matchers, every handler field but the command), and their commands pass the same arguments,
/// only through the launcher.
#[test]
fn the_hooks_are_the_ones_setup_writes() {
    use self_evolve::setup::harness::{Change, Harness, Launch, Places, plan};
    let places = Places {
        user_home: PathBuf::from("/home/u"),
        codex_home: None,
        claude_config_dir: None,
        gemini_cli_home: None,
        hermes_home: None,
    };
    let launch = Launch { binary: PathBuf::from("self-evolve"), home: None };
    for (harness, file) in [
        (Harness::Claude, "plugins/self-evolve/hooks/hooks.json"),
        (Harness::Codex, "plugins/self-evolve/codex/hooks.json"),
        (Harness::Gemini, "hooks/hooks.json"),
    ] {
        let mut setup = BTreeSet::new();
        for change in plan(harness, None, &places, &launch).into_iter().flat_map(|p| p.changes) {
            if let Change::Hooks { hooks, .. } = change {
                for hook in hooks {
                    let mut handler = hook.handler.to_json();
                    let command = handler.as_object_mut().unwrap().remove("command").unwrap();
                    let args = command.as_str().unwrap().strip_prefix("self-evolve").unwrap().to_string();
                    setup.insert((hook.event, hook.matcher, handler.to_string(), args));
                }
            }
        }
        let mut ours = BTreeSet::new();
        for (event, groups) in package(file)["hooks"].as_object().unwrap() {
            for group in groups.as_array().unwrap() {
                let matcher = group["matcher"].as_str().map(str::to_string);
                for handler in group["hooks"].as_array().unwrap() {
                    let mut handler = handler.clone();
                    let command = handler.as_object_mut().unwrap().remove("command").unwrap();
                    // `"<placeholder>/…/bin/self-evolve-launch" ARGS`: the launcher, quoted.
                    let (launcher, args) = command.as_str().unwrap().rsplit_once('"').unwrap();
                    assert!(
                        launcher.starts_with("\"${") && launcher.ends_with("/bin/self-evolve-launch"),
                        "{file}: {command}"
                    );
                    ours.insert((event.clone(), matcher.clone(), handler.to_string(), args.to_string()));
                }
            }
        }
        assert_eq!(ours, setup, "{file}: the hooks `self-evolve setup {}` writes", harness.name());
    }
}

/// The launcher, with `env` only (no variable of the test's own).
fn launch(args: &[&str], env: &[(&str, &Path)], stdin: &[u8]) -> (Output, bool) {
    let mut command = Command::new(launcher());
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn(&mut command);
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || pipe.write_all(&input).is_ok());
    let output = child.wait_with_output().unwrap();
    (output, writer.join().unwrap())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_launcher_is_a_small_posix_sh_script() {
    use std::os::unix::fs::PermissionsExt;
    let script = std::fs::read_to_string(launcher()).unwrap();
    assert!(script.starts_with("#!/bin/sh\n"), "a POSIX sh script");
    assert!(script.lines().count() < 80, "small");
    let mode = std::fs::metadata(launcher()).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "executable by all: {mode:o}");
    let syntax = output(Command::new("sh").arg("-n").arg(launcher()));
    assert!(syntax.status.success(), "{}", text(&syntax.stderr));
}

#[test]
fn the_launcher_runs_the_installed_binary_from_each_place_it_looks() {
    let version = output(Command::new(BIN).arg("--version"));
    assert!(version.status.success());
    let empty = tempfile::tempdir().unwrap();
    // $SELF_EVOLVE_BIN.
    let (out, _) = launch(&["--version"], &[("HOME", empty.path()), ("SELF_EVOLVE_BIN", Path::new(BIN))], b"");
    assert_eq!((out.status.code(), text(&out.stdout)), (Some(0), text(&version.stdout)), "{}", text(&out.stderr));
    // ~/.cargo/bin, when SELF_EVOLVE_BIN names no executable file and PATH has none.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".cargo/bin")).unwrap();
    std::os::unix::fs::symlink(BIN, home.path().join(".cargo/bin/self-evolve")).unwrap();
    for not_a_program in [home.path().join(".cargo"), home.path().join("missing")] {
        let (out, _) = launch(&["--version"], &[("HOME", home.path()), ("SELF_EVOLVE_BIN", &not_a_program)], b"");
        assert_eq!(text(&out.stdout), text(&version.stdout), "{}", text(&out.stderr));
    }
}

#[test]
fn without_the_binary_the_launcher_says_how_to_install_it_and_the_session_goes_on() {
    for system in ["/usr/bin/self-evolve", "/bin/self-evolve"] {
        assert!(!Path::new(system).exists(), "{system} exists: this test needs a machine without it");
    }
    let home = tempfile::tempdir().unwrap();
    let env = [("HOME", home.path())];
    // Larger than a pipe's buffer: the launcher takes the whole event.
    let event = format!("{{\"prompt\": \"{}\"}}", "x".repeat(256 << 10));
    for (args, stdout) in [
        (&["hook"][..], ""),
        (&["hook", "--harness", "codex"][..], ""),
        (&["hook", "--harness", "gemini"][..], "{}\n"),
        (&["hook", "--home", "/x", "--harness=cursor"][..], "{}\n"),
    ] {
        let (out, written) = launch(args, &env, event.as_bytes());
        assert_eq!((out.status.code(), text(&out.stdout).as_str()), (Some(0), stdout), "{args:?}");
        assert!(written, "{args:?}: the launcher closed stdin before the harness wrote the event");
        let stderr = text(&out.stderr);
        for needle in [
            "cargo install self-evolve --locked",
            "./build.sh && cargo install --path cli --locked",
            "self-evolve setup <harness>",
        ] {
            assert!(stderr.contains(needle), "{args:?}: `{needle}` not in:\n{stderr}");
        }
    }
    let (out, _) = launch(&["mcp"], &env, b"");
    assert_eq!((out.status.code(), text(&out.stdout).as_str()), (Some(0), ""));
    assert!(text(&out.stderr).contains("cargo install"), "{}", text(&out.stderr));
    // A person running it by hand gets "command not found".
    let (out, _) = launch(&["--version"], &env, b"");
    assert_eq!((out.status.code(), text(&out.stdout).as_str()), (Some(127), ""));
}

/// Held to start a process (read) or to write an executable (write): see `install`.
static FORKS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// `command` started, never while an executable is being written.
fn spawn(command: &mut Command) -> Child {
    let _starting = FORKS.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    command.spawn().unwrap()
}

/// `command` run to its end, started as `spawn` starts it.
fn output(command: &mut Command) -> std::process::Output {
    spawn(command.stdout(Stdio::piped()).stderr(Stdio::piped())).wait_with_output().unwrap()
}

/// A copy of the package under `dir` (with a space in its path, as an install folder may have),
/// the way a harness installs it: each `(from, to)` of `parts` is copied from the repository to
/// that place in the copy.
fn install(dir: &Path, parts: &[(&str, &str)]) -> PathBuf {
    // No process starts while a copy is open for writing: a child forked meanwhile (by another
    // test's thread) holds the copy's descriptor until it execs, and running the launcher then
    // fails with ETXTBSY ("Text file busy").
    let _copying = FORKS.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    fn copy(from: &Path, to: &Path) {
        if from.is_dir() {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                copy(&e.path(), &to.join(e.file_name()));
            }
        } else {
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(from, to).unwrap(); // keeps the launcher executable
        }
    }
    let root = dir.join("installed plugins/self-evolve");
    for (from, to) in parts {
        copy(&repo().join(from), &root.join(to));
    }
    root
}

/// How one harness runs its package's commands.
struct Runs {
    harness: &'static str,
    /// The hooks file and the manifest with the MCP server (`None`: the package has none), in the
    /// installed copy.
    hooks: &'static str,
    mcp: Option<&'static str>,
    /// What is copied at install, from where in the repository to where in the copy.
    parts: &'static [(&'static str, &'static str)],
    /// The shell a hook command goes through.
    shell: &'static str,
    /// Placeholder → value, filled in by the harness (also exported, where `env` says so).
    placeholders: fn(&Path, &Path, &Path) -> Vec<(&'static str, String)>,
    env: fn(&Path, &Path, &Path) -> Vec<(&'static str, String)>,
    /// The hook events run, each with its documented payload.
    events: &'static [&'static str],
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

const RUNS: [Runs; 3] = [
    Runs {
        harness: "claude",
        hooks: "hooks/hooks.json",
        mcp: Some(".mcp.json"),
        parts: &[("plugins/self-evolve", "")],
        // Shell form (no `args`): `sh -c` on macOS and Linux.
        shell: "sh",
        placeholders: |root, data, project| {
            vec![("CLAUDE_PLUGIN_ROOT", s(root)), ("CLAUDE_PLUGIN_DATA", s(data)), ("CLAUDE_PROJECT_DIR", s(project))]
        },
        env: |root, data, project| {
            vec![
                ("CLAUDE_PLUGIN_ROOT", s(root)),
                ("CLAUDE_PLUGIN_DATA", s(data)),
                ("CLAUDE_PROJECT_DIR", s(project)),
                ("CLAUDECODE", "1".into()),
            ]
        },
        events: &["UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"],
    },
    Runs {
        harness: "codex",
        hooks: "codex/hooks.json",
        mcp: None,
        parts: &[("plugins/self-evolve", "")],
        // `$SHELL -lc`, falling back to /bin/sh.
        shell: "sh",
        placeholders: |root, data, _| {
            vec![
                ("PLUGIN_ROOT", s(root)),
                ("PLUGIN_DATA", s(data)),
                ("CLAUDE_PLUGIN_ROOT", s(root)),
                ("CLAUDE_PLUGIN_DATA", s(data)),
            ]
        },
        env: |root, data, _| {
            vec![
                ("PLUGIN_ROOT", s(root)),
                ("PLUGIN_DATA", s(data)),
                ("CLAUDE_PLUGIN_ROOT", s(root)),
                ("CLAUDE_PLUGIN_DATA", s(data)),
            ]
        },
        events: &["UserPromptSubmit", "PostToolUse", "Stop"],
    },
    Runs {
        harness: "gemini",
        hooks: "hooks/hooks.json",
        mcp: Some("gemini-extension.json"),
        parts: &[
            ("gemini-extension.json", "gemini-extension.json"),
            ("hooks", "hooks"),
            ("plugins/self-evolve", "plugins/self-evolve"),
        ],
        // `bash -c` on Linux and macOS.
        shell: "bash",
        placeholders: |root, _, project| {
            vec![
                ("extensionPath", s(root)),
                ("workspacePath", s(project)),
                ("/", "/".into()),
                ("pathSeparator", "/".into()),
            ]
        },
        env: |_, _, project| {
            vec![
                ("GEMINI_PROJECT_DIR", s(project)),
                ("GEMINI_CWD", s(project)),
                ("GEMINI_SESSION_ID", "8b7a1c2d-0000-4000-8000-000000000001".into()),
                ("CLAUDE_PROJECT_DIR", s(project)),
            ]
        },
        events: &["BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"],
    },
];

/// `text` with every `${NAME}` the harness knows filled in, as plain text; none may be left for
/// the shell (it would expand to nothing).
fn fill(text: &str, placeholders: &[(&str, String)]) -> String {
    let mut out = text.to_string();
    for (name, value) in placeholders {
        out = out.replace(&format!("${{{name}}}"), value);
    }
    assert!(!out.contains("${"), "a placeholder the harness does not fill: {text}");
    out
}

/// A package's installed copy, and the folders its harness gives it.
struct Installed {
    _dir: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    project: PathBuf,
    home: PathBuf,
}

fn installed(runs: &Runs) -> Installed {
    let dir = tempfile::tempdir().unwrap();
    let root = install(dir.path(), runs.parts);
    let (data, project, home) = (dir.path().join("data"), dir.path().join("project"), dir.path().join("dsh home"));
    for d in [&data, &project] {
        std::fs::create_dir_all(d).unwrap();
    }
    Installed { _dir: dir, root, data, project, home }
}

/// A command the package runs, with the harness's variables and ours: the built binary
/// (`SELF_EVOLVE_BIN`), a home of the test's, this build's component.
fn command(program: &str, runs: &Runs, at: &Installed) -> Command {
    let mut command = Command::new(program);
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &at.project)
        .envs((runs.env)(&at.root, &at.data, &at.project))
        .env("SELF_EVOLVE_BIN", BIN)
        .env("SELF_EVOLVE_HOME", &at.home)
        .env("SELF_EVOLVE_WASM", wasm())
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .current_dir(&at.project);
    command
}

#[test]
fn every_hook_command_runs_as_its_harness_runs_it() {
    for runs in &RUNS {
        let at = installed(runs);
        let placeholders = (runs.placeholders)(&at.root, &at.data, &at.project);
        let hooks = read_json(&at.root.join(runs.hooks));
        let mut ran = BTreeSet::new();
        for (event, groups) in hooks["hooks"].as_object().unwrap() {
            let payload = repo().join(format!("cli/tests/fixtures/harness/{}/payloads/{event}.json", runs.harness));
            let payload = std::fs::read(&payload).unwrap_or_else(|e| panic!("{}: {e}", payload.display()));
            for handler in groups.as_array().unwrap().iter().flat_map(|g| g["hooks"].as_array().unwrap()) {
                let line = fill(handler["command"].as_str().unwrap(), &placeholders);
                let mut child = spawn(
                    command(runs.shell, runs, &at)
                        .arg("-c")
                        .arg(&line)
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped()),
                );
                child.stdin.take().unwrap().write_all(&payload).unwrap();
                let out = child.wait_with_output().unwrap();
                let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
                let what = format!("{} {event}: {line}", runs.harness);
                assert_eq!(out.status.code(), Some(0), "{what}\n{stderr}");
                assert!(!stderr.contains("is not installed"), "{what}: the launcher did not find the binary\n{stderr}");
                // Claude Code and Codex: nothing. Gemini CLI parses stdout as JSON (and stderr when
                // stdout is empty): `{}`.
                let expected = if runs.harness == "gemini" { "{}" } else { "" };
                assert_eq!(stdout.trim_end(), expected, "{what}: stdout\n{stderr}");
                ran.insert(event.clone());
            }
        }
        let expected: BTreeSet<String> = runs.events.iter().map(|e| e.to_string()).collect();
        assert_eq!(ran, expected, "{}: the events its hooks run on", runs.harness);
        // The binary ran: it made the home.
        assert!(at.home.join("self-evolve").is_dir(), "{}: no home at {}", runs.harness, at.home.display());
    }
}

/// A stdio MCP server driven raw: newline-delimited JSON-RPC.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(mut command: Command) -> Server {
        let mut child = spawn(command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()));
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Server { stdin: child.stdin.take(), child, lines }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn answer(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left = deadline.checked_duration_since(Instant::now()).expect("an answer within 90 s");
            let line = self.lines.recv_timeout(left).expect("an answer (the server ended?)");
            let value: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
            if value["id"] == json!(id) {
                return value;
            }
        }
    }

    fn finish(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not end when its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn every_mcp_entry_serves_skill_manage() {
    let mut served = Vec::new();
    for runs in RUNS.iter().filter(|r| r.mcp.is_some()) {
        let at = installed(runs);
        let placeholders = (runs.placeholders)(&at.root, &at.data, &at.project);
        let file = read_json(&at.root.join(runs.mcp.unwrap()));
        for (name, entry) in file["mcpServers"].as_object().unwrap() {
            // No shell: the command and each argument are filled in and passed as they are.
            let mut command = command(&fill(entry["command"].as_str().unwrap(), &placeholders), runs, &at);
            for arg in entry["args"].as_array().unwrap() {
                command.arg(fill(arg.as_str().unwrap(), &placeholders));
            }
            for (key, value) in entry["env"].as_object().into_iter().flatten() {
                command.env(key, fill(value.as_str().unwrap(), &placeholders));
            }
            let mut server = Server::start(command);
            server.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": runs.harness, "version": "0"}}}));
            let init = server.answer(1);
            assert!(init["result"]["serverInfo"]["name"].is_string(), "{}: {init}", runs.harness);
            server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
            let list = server.answer(2);
            let tools: Vec<&str> =
                list["result"]["tools"].as_array().into_iter().flatten().filter_map(|t| t["name"].as_str()).collect();
            assert!(tools.contains(&"skill_manage"), "{} {name}: {list}", runs.harness);
            server.finish();
            served.push(format!("{} {name}", runs.harness));
        }
    }
    assert_eq!(served, ["claude self-evolve", "gemini self-evolve"]);
}

/// plugins/README.md follows the docs' rule for shell blocks (`cli/tests/docs.rs`): every one is
/// ```sh no-run, and none runs our own CLI (those belong in a page whose blocks are run).
#[test]
fn the_readme_shows_shell_commands_in_no_run_blocks_only() {
    let readme = std::fs::read_to_string(repo().join("plugins/README.md")).unwrap();
    let mut open: Option<String> = None;
    for (i, line) in readme.lines().enumerate() {
        let trimmed = line.trim_start();
        match (&open, trimmed.strip_prefix("```")) {
            (None, Some(info)) => {
                let word = info.split_whitespace().next().unwrap_or("");
                let shell = ["sh", "bash", "shell", "console", "zsh", "shell-session"].contains(&word);
                assert!(!shell || info.trim() == "sh no-run", "plugins/README.md:{}: ```{info}", i + 1);
                open = Some(info.trim().to_string());
            }
            (Some(_), Some(_)) => open = None,
            (Some(info), None) if info == "sh no-run" => {
                let runs_ours = trimmed.starts_with("self-evolve ") || trimmed.contains("&& self-evolve ");
                assert!(!runs_ours, "plugins/README.md:{}: `{trimmed}` runs our CLI", i + 1);
            }
            _ => {}
        }
    }
    assert!(open.is_none(), "plugins/README.md: a fenced block is never closed");
}

/// Strict JSON (Gemini CLI and Codex read these with plain JSON parsers: no comment, no trailing
/// comma), and no file in the package folders that these tests do not check.
#[test]
fn every_package_file_is_strict_json_and_checked_here() {
    for file in PACKAGE_FILES {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        assert!(serde_json::from_str::<Value>(&text).is_ok(), "{file}: not strict JSON");
    }
    let mut unchecked = Vec::new();
    for dir in ["plugins/self-evolve/.claude-plugin", "plugins/self-evolve/.codex-plugin", "plugins/self-evolve/codex"]
    {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            let rel = format!("{dir}/{}", e.unwrap().file_name().to_string_lossy());
            if !PACKAGE_FILES.contains(&rel.as_str()) {
                unchecked.push(rel);
            }
        }
    }
    assert!(unchecked.is_empty(), "files no test checks: {unchecked:?}");
}
