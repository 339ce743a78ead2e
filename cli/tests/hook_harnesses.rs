//! Each harness's hooks as that harness runs them: `self-evolve setup HARNESS --project` writes
//! the hook commands (Hermes: `setup hermes` into `$HERMES_HOME/config.yaml`, user scope only),
//! and each is run exactly as the harness would — its command string through the harness's shell
//! (`sh -c`, Codex's `$SHELL -lc`, Gemini CLI's `bash -c`), or for Hermes with no shell at all
//! (the argv Python's `shlex.split(os.path.expanduser(command))` makes of it) — in the session's
//! folder, with the harness's environment, a recorded payload (tests/fixtures/harness/) on stdin —
//! for every event setup installs. The hook must exit 0 and print exactly what the harness reads
//! as "go on" (Hermes: nothing); a prompt, a skill read, tool results and a turn's end must reach
//! the plugin (a turn counted, a load and its completed turn in the skill's evidence), and the
//! next due turn must start a review and say so where the harness has a place for it. Also:
//! Cursor running Claude Code's hooks counts nothing twice, Hermes events setup does not install
//! count nothing, and a broken payload or a hook past its budget still answers as the harness
//! expects.

mod live_support;

use live_support::*;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

#[derive(Clone, Copy, PartialEq, Debug)]
enum H {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Hermes,
}

const ALL: [H; 5] = [H::Claude, H::Codex, H::Gemini, H::Cursor, H::Hermes];

impl H {
    fn name(self) -> &'static str {
        match self {
            H::Claude => "claude",
            H::Codex => "codex",
            H::Gemini => "gemini",
            H::Cursor => "cursor",
            H::Hermes => "hermes",
        }
    }

    /// The argv the harness runs a hook command string as.
    fn argv(self, s: &Session, command: &str) -> Vec<String> {
        let shell: &[&str] = match self {
            H::Claude | H::Cursor => &["sh", "-c"],
            // `$SHELL -lc` (a login shell).
            H::Codex => &["sh", "-lc"],
            H::Gemini => &["bash", "-c"],
            // No shell: agent/shell_hooks.py splits the string itself.
            H::Hermes => return hermes_argv(s, command),
        };
        shell.iter().map(|w| w.to_string()).chain([command.to_string()]).collect()
    }

    /// The file setup writes the hooks into (`--project` but for Hermes, which has user scope only).
    fn config(self, s: &Session) -> PathBuf {
        match self {
            H::Claude => s.project.path().join(".claude/settings.json"),
            H::Codex => s.project.path().join(".codex/hooks.json"),
            H::Gemini => s.project.path().join(".gemini/settings.json"),
            H::Cursor => s.project.path().join(".cursor/hooks.json"),
            H::Hermes => hermes_home(s).join("config.yaml"),
        }
    }

    /// The events setup installs, in the order one turn fires them.
    fn turn(self) -> &'static [&'static str] {
        match self {
            H::Claude => &["UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop", "SessionEnd"],
            H::Codex => &["UserPromptSubmit", "PostToolUse", "Stop"],
            H::Gemini => &["BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"],
            H::Cursor => {
                &["beforeSubmitPrompt", "postToolUse", "postToolUseFailure", "afterAgentResponse", "stop", "sessionEnd"]
            }
            // `on_session_end` fires at the end of every turn.
            H::Hermes => &["pre_llm_call", "post_tool_call", "post_llm_call", "on_session_end", "on_session_finalize"],
        }
    }

    fn prompt_event(self) -> &'static str {
        self.turn()[0]
    }

    fn tool_event(self) -> &'static str {
        self.turn()[1]
    }

    fn end_event(self) -> &'static str {
        match self {
            H::Claude | H::Codex => "Stop",
            H::Gemini => "AfterAgent",
            H::Cursor => "stop",
            H::Hermes => "on_session_end",
        }
    }

    /// What stdout must be when the hook has nothing to say.
    fn quiet(self) -> &'static str {
        match self {
            H::Claude | H::Codex | H::Hermes => "",
            H::Gemini | H::Cursor => "{}\n",
        }
    }

    /// The tool payload by which the agent loads the library's `pnpm-usage`, made from a recorded one.
    fn skill_read(self, s: &Session, mut payload: Value) -> Value {
        let file = s.home.path().join("skills/pnpm-usage/SKILL.md");
        let (tool, input) = match self {
            H::Claude => ("Skill", json!({"skill": "pnpm-usage"})),
            // Codex has no read tool: its agent prints the file.
            H::Codex => ("Bash", json!({"command": format!("sed -n '1,200p' {}", file.display())})),
            H::Gemini => ("activate_skill", json!({"name": "pnpm-usage"})),
            H::Cursor => ("Read", json!({"file_path": file})),
            H::Hermes => ("read_file", json!({"path": file})),
        };
        payload["tool_name"] = json!(tool);
        payload["tool_input"] = input;
        payload
    }

    /// The environment the harness gives a hook, beside its own.
    fn env(self, s: &Session, payload: &Value) -> Vec<(&'static str, String)> {
        let project = s.project.path().display().to_string();
        match self {
            H::Claude => vec![("CLAUDE_PROJECT_DIR", project), ("CLAUDECODE", "1".into())],
            H::Codex => Vec::new(),
            H::Gemini => vec![
                ("GEMINI_PROJECT_DIR", project.clone()),
                ("GEMINI_CWD", project.clone()),
                ("GEMINI_SESSION_ID", payload["session_id"].as_str().unwrap_or("").into()),
                ("CLAUDE_PROJECT_DIR", project),
            ],
            H::Cursor => vec![
                ("CURSOR_PROJECT_DIR", project.clone()),
                ("CURSOR_VERSION", payload["cursor_version"].as_str().unwrap_or("1.7.2").into()),
                ("CLAUDE_PROJECT_DIR", project),
            ],
            // The profile's home (hooks.md: "the subprocess also runs with that profile's `HERMES_HOME`").
            H::Hermes => vec![("HERMES_HOME", hermes_home(s).display().to_string())],
        }
    }
}

/// `$HERMES_HOME` of the session's Hermes (its `config.yaml`), inside the test's `HOME`.
fn hermes_home(s: &Session) -> PathBuf {
    s.agent_dir.path().join("hermes-home")
}

/// The argv Hermes runs a hook `command` as: `shlex.split(os.path.expanduser(command))`, no shell.
fn hermes_argv(s: &Session, command: &str) -> Vec<String> {
    let out = Command::new("python3")
        .args(["-c", "import json,os,shlex,sys; print(json.dumps(shlex.split(os.path.expanduser(sys.argv[1]))))"])
        .arg(command)
        .env("HOME", s.agent_dir.path())
        .output()
        .expect("python3 splits the command as Hermes does");
    assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
    let argv: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!argv.is_empty(), "{command}");
    argv
}

fn fixtures(h: H) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harness").join(h.name()).join("payloads")
}

/// The recorded payloads of `event`: `EVENT.json`, then its variants `EVENT.*.json` (Hermes'
/// fixtures: `EVENT_*.json`).
fn payloads(h: H, event: &str) -> Vec<Value> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures(h))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n == &format!("{event}.json")
                || n.starts_with(&format!("{event}."))
                || (h == H::Hermes && n.starts_with(&format!("{event}_")))
        })
        .collect();
    names.sort_by_key(|n| (n.len(), n.clone()));
    assert!(!names.is_empty(), "no {} fixture for {event}", h.name());
    names
        .iter()
        .map(|n| {
            let payload: Value = serde_json::from_str(&std::fs::read_to_string(fixtures(h).join(n)).unwrap()).unwrap();
            assert_eq!(payload["hook_event_name"], event, "{n}");
            payload
        })
        .collect()
}

/// A recorded payload as this session's: its folders and transcript are the test's.
fn localize(s: &Session, mut payload: Value) -> Value {
    let obj = payload.as_object_mut().unwrap();
    for key in ["cwd", "transcript_path"] {
        if obj.contains_key(key) {
            let value = if key == "cwd" { json!(s.project.path()) } else { json!(s.transcript) };
            obj.insert(key.into(), value);
        }
    }
    if obj.contains_key("workspace_roots") {
        obj.insert("workspace_roots".into(), json!([s.project.path()]));
    }
    payload
}

fn session_of(payload: &Value) -> String {
    payload["session_id"].as_str().or(payload["conversation_id"].as_str()).unwrap().to_string()
}

/// Runs `self-evolve setup HARNESS --project` (Hermes: `setup hermes`, its user scope) and returns
/// the hook command it installed for each event, in the harness's own config file.
fn install(s: &Session, h: H) -> Vec<(String, String)> {
    let mut setup = cli(s);
    setup.args(["setup", h.name()]);
    if h != H::Hermes {
        setup.arg("--project").arg(s.project.path());
    }
    let out = setup
        .arg("--home")
        .arg(s.home.path())
        .env("HOME", s.agent_dir.path())
        .env("HERMES_HOME", hermes_home(s))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(h.config(s)).unwrap();
    let mut installed = Vec::new();
    if h == H::Hermes {
        assert!(!s.agent_dir.path().join(".hermes").exists(), "$HERMES_HOME moves the whole folder");
        let docs = yaml_rust2::YamlLoader::load_from_str(&text).unwrap();
        let config = &docs[0];
        assert!(config["mcp_servers"]["self-evolve"]["command"].as_str().is_some(), "{text}");
        // `hooks:` maps each event to a list of `{command, timeout}` items.
        let hooks = config["hooks"].as_hash().unwrap_or_else(|| panic!("no hooks: in {text}"));
        for (event, items) in hooks {
            for item in items.as_vec().unwrap() {
                assert_eq!(item["timeout"].as_i64(), Some(30), "{text}");
                installed.push((event.as_str().unwrap().to_string(), item["command"].as_str().unwrap().to_string()));
            }
        }
        return installed;
    }
    let config: Value = serde_json::from_str(&text).unwrap();
    for (event, groups) in config["hooks"].as_object().unwrap() {
        for group in groups.as_array().unwrap() {
            // Cursor's entries are flat; the others group handlers under a matcher.
            let handlers = match h {
                H::Cursor => vec![group.clone()],
                _ => group["hooks"].as_array().unwrap().clone(),
            };
            for handler in handlers {
                installed.push((event.clone(), handler["command"].as_str().unwrap().to_string()));
            }
        }
    }
    installed
}

/// The hook command `command` as `h` starts it, in the session's folder.
fn spawn(s: &Session, h: H, command: &str) -> Command {
    let argv = h.argv(s, command);
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(s.project.path())
        // Whatever runs these tests (an agent among them) lends the hook nothing of its own.
        .env_remove("SELF_EVOLVE_WASM")
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_AGENT")
        .env_remove("CURSOR_VERSION")
        .env_remove("CLAUDECODE")
        .env_remove("HERMES_HOME")
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"));
    cmd
}

/// The hook command `command` run as `h` runs it, with `stdin`, in the session's folder.
fn run(s: &Session, h: H, command: &str, stdin: &[u8], env: &[(&'static str, String)]) -> Output {
    let mut child = spawn(s, h, command)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} cannot start {command}: {e}", h.name()));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Runs one payload and checks the answer is what `h` reads as "go on"; returns stdout.
fn hook(s: &Session, h: H, command: &str, payload: &Value) -> String {
    let out = run(s, h, command, payload.to_string().as_bytes(), &h.env(s, payload));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{} {}: exit {:?}: {stderr}", h.name(), payload["hook_event_name"], out.status);
    // Hermes only logs a hook's stderr.
    if h != H::Hermes {
        assert!(stderr.is_empty(), "{} {}: {stderr}", h.name(), payload["hook_event_name"]);
    }
    if !stdout.is_empty() {
        let answer: Value = serde_json::from_str(&stdout).expect("stdout is one JSON object");
        assert!(answer.is_object(), "{stdout}");
    }
    stdout
}

/// The payload that ends a turn, as the turn's first end (Claude Code's recorded `Stop` is a
/// continuation a stop hook asked for, which counts nothing).
fn turn_end(h: H, s: &Session) -> Value {
    let mut end = localize(s, payloads(h, h.end_event()).remove(0));
    if end.get("stop_hook_active").is_some() {
        end["stop_hook_active"] = json!(false);
    }
    end
}

fn skill_evidence(s: &Session) -> Value {
    let out = cli(s).args(["skills", "list", "--json", "--home"]).arg(s.home.path()).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    list["skills"].as_array().unwrap().iter().find(|k| k["name"] == "pnpm-usage").unwrap()["evidence"].clone()
}

fn reviews_of(s: &Session, session: &str) -> Vec<(String, String)> {
    decisions(s)
        .iter()
        .filter(|d| d["kind"] == "review" && d["session"] == session)
        .map(|d| (d["action"].as_str().unwrap_or("").to_string(), d["reason"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// One harness end to end: every installed event's recorded payloads, then a second, due turn.
fn a_turn_reaches_the_plugin(h: H) {
    let s = session("none", 30_000);
    let installed = install(&s, h);
    let mut events: Vec<&str> = installed.iter().map(|(e, _)| e.as_str()).collect();
    events.sort_unstable();
    let mut expected = h.turn().to_vec();
    expected.sort_unstable();
    assert_eq!(events, expected, "the events setup installs for {}", h.name());
    let command = |event: &str| installed.iter().find(|(e, _)| e == event).unwrap().1.clone();

    let session = session_of(&payloads(h, h.prompt_event())[0]);
    let mut tools = 0;
    for event in h.turn() {
        let mut recorded: Vec<Value> = payloads(h, event).into_iter().map(|p| localize(&s, p)).collect();
        if *event == h.end_event() {
            recorded = vec![turn_end(h, &s)];
        }
        if *event == h.tool_event() {
            recorded.insert(0, h.skill_read(&s, recorded[0].clone()));
        }
        if event.to_lowercase().contains("tool") {
            tools += recorded.len();
        }
        for payload in recorded {
            assert_eq!(session_of(&payload), session, "one session across the fixtures");
            assert_eq!(hook(&s, h, &command(event), &payload), h.quiet(), "{} {event}", h.name());
        }
    }
    // The turn was counted with every tool result, in the harness's session.
    let reviews = reviews_of(&s, &session);
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let counted = format!("not due (turns 1/2, tool calls {tools}/");
    assert!(reviews[0].0 == "skip" && reviews[0].1.starts_with(&counted), "{} {reviews:?}", h.name());
    // The skill was loaded, and the turn that loaded it completed.
    let evidence = skill_evidence(&s);
    assert_eq!((evidence["loads"].as_u64(), evidence["completed"].as_u64()), (Some(1), Some(1)), "{evidence}");

    // The second turn is due: the review starts, and the hook says so where the harness shows it.
    let prompt = localize(&s, payloads(h, h.prompt_event()).remove(0));
    assert_eq!(hook(&s, h, &command(h.prompt_event()), &prompt), h.quiet());
    let said = hook(&s, h, &command(h.end_event()), &turn_end(h, &s));
    let reviews = reviews_of(&s, &session);
    assert_eq!(reviews.last().map(|r| r.0.as_str()), Some("start"), "{reviews:?}");
    if h == H::Cursor {
        // Cursor has no field for a message to the user on `stop` (`followup_message` would be
        // sent to the agent as the person's next prompt).
        assert_eq!(said, "{}\n");
    } else if h == H::Hermes {
        // Hermes reads no stdout on `on_session_end`.
        assert_eq!(said, "");
    } else {
        let said: Value = serde_json::from_str(&said).unwrap();
        assert!(said["systemMessage"].as_str().unwrap().contains("background skill review started"), "{said}");
        assert_eq!(said.as_object().unwrap().len(), 1, "Codex refuses a key it does not know: {said}");
    }
    let end = wait_for_end(&s);
    assert_eq!((end["session"].as_str(), end["status"].as_str()), (Some(session.as_str()), Some("completed")), "{end}");
    // The reviewer was seeded with the conversation: Claude Code's own transcript, or for the
    // others (whose transcripts are in shapes of their own) the one the host kept from the hooks.
    let said_by_person = match h {
        H::Claude => "always use pnpm here".to_string(),
        H::Hermes => prompt["extra"]["user_message"].as_str().unwrap().to_string(),
        _ => prompt["prompt"].as_str().unwrap().to_string(),
    };
    let seeds: String = std::fs::read_dir(s.agent_dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("prompt-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(seeds.contains(&said_by_person), "{}: the reviewer's prompt lacks {said_by_person:?}:\n{seeds}", h.name());
}

#[test]
fn claude_code_hooks_run_as_claude_code_runs_them() {
    a_turn_reaches_the_plugin(H::Claude);
}

#[test]
fn codex_hooks_run_as_codex_runs_them() {
    a_turn_reaches_the_plugin(H::Codex);
}

#[test]
fn gemini_cli_hooks_run_as_gemini_cli_runs_them() {
    a_turn_reaches_the_plugin(H::Gemini);
}

#[test]
fn cursor_hooks_run_as_cursor_runs_them() {
    a_turn_reaches_the_plugin(H::Cursor);
}

#[test]
fn hermes_hooks_run_as_hermes_runs_them() {
    a_turn_reaches_the_plugin(H::Hermes);
}

/// Hermes events setup does not install, routed to the hook anyway (a person's own `hooks:`
/// entry), are answered with nothing — which lets `pre_tool_call` run its tool and `pre_verify`
/// end the turn — and count nothing: the next turn is the first, with no tool call.
#[test]
fn hermes_events_setup_does_not_install_count_nothing() {
    let s = session("none", 30_000);
    let installed = install(&s, H::Hermes);
    let command = &installed[0].1;
    let mut others = Vec::new();
    for entry in std::fs::read_dir(fixtures(H::Hermes)).unwrap().flatten() {
        let payload: Value = serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
        let event = payload["hook_event_name"].as_str().unwrap().to_string();
        if !H::Hermes.turn().contains(&event.as_str()) {
            others.push((event, localize(&s, payload)));
        }
    }
    others.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = others.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["on_session_reset", "on_session_start", "pre_tool_call", "pre_verify", "subagent_stop"]);
    for (event, payload) in &others {
        assert_eq!(hook(&s, H::Hermes, command, payload), "", "{event}");
    }
    assert!(
        reviews_of(&s, "sess_abc123").is_empty() && reviews_of(&s, "sess_def456").is_empty(),
        "{:?}",
        decisions(&s)
    );
    let prompt = localize(&s, payloads(H::Hermes, "pre_llm_call").remove(0));
    assert_eq!(hook(&s, H::Hermes, command, &prompt), "");
    assert_eq!(hook(&s, H::Hermes, command, &turn_end(H::Hermes, &s)), "");
    let reviews = reviews_of(&s, "sess_abc123");
    assert!(reviews.len() == 1 && reviews[0].1.starts_with("not due (turns 1/2, tool calls 0/"), "{reviews:?}");
}

/// Cursor runs Claude Code's hooks too (on by default), with its own payload and environment:
/// those events are Cursor's own hooks' already, so Claude Code's hook counts none of them.
#[test]
fn claude_code_hooks_that_cursor_runs_count_nothing() {
    let s = session("none", 30_000);
    let installed = install(&s, H::Claude);
    let command = &installed[0].1;
    let prompt = localize(&s, payloads(H::Claude, "UserPromptSubmit").remove(0));
    let stop = turn_end(H::Claude, &s);
    let cursor_env =
        vec![("CURSOR_VERSION", "1.7.2".to_string()), ("CLAUDE_PROJECT_DIR", s.project.path().display().to_string())];
    for _ in 0..2 {
        // The payload says so…
        for payload in [&prompt, &stop] {
            let mut payload = payload.clone();
            payload["cursor_version"] = json!("1.7.2");
            let out = run(&s, H::Claude, command, payload.to_string().as_bytes(), &[]);
            assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        }
        // …or only the environment Cursor gives its hooks does.
        for payload in [&prompt, &stop] {
            let out = run(&s, H::Claude, command, payload.to_string().as_bytes(), &cursor_env);
            assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        }
    }
    assert!(reviews_of(&s, "abc123").is_empty(), "{:?}", decisions(&s));
    // The same payloads from Claude Code itself count.
    hook(&s, H::Claude, command, &prompt);
    hook(&s, H::Claude, command, &stop);
    let reviews = reviews_of(&s, "abc123");
    assert!(reviews.len() == 1 && reviews[0].1.starts_with("not due (turns 1/2"), "{reviews:?}");
}

/// Whatever arrives, the harness gets its answer and the agent goes on; the log keeps the error.
#[test]
fn a_broken_payload_still_answers_as_each_harness_expects() {
    for h in ALL {
        let s = session("none", 30_000);
        let installed = install(&s, h);
        let command = &installed[0].1;
        let no_session = json!({"hook_event_name": h.prompt_event(), "prompt": "hi"}).to_string();
        let bad_session = json!({"session_id": "--x", "conversation_id": "--x", "hook_event_name": h.end_event()});
        for input in ["not json", "", "[]", "{}", &no_session, &bad_session.to_string(), "{\"session_id\": "] {
            let out = run(&s, h, command, input.as_bytes(), &h.env(&s, &json!({})));
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{} {input}", h.name());
            assert_eq!(stdout, h.quiet(), "{} {input}", h.name());
            if matches!(h, H::Gemini | H::Cursor) {
                assert!(out.stderr.is_empty(), "{} {input}: stderr stays quiet", h.name());
            }
        }
        let log = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap();
        assert!(log.contains("\"level\":\"error\""), "{log}");
    }
}

/// A hook that cannot finish (here: stdin never closes) stops at `hook.budgetMs` and still
/// prints its harness's answer.
#[test]
fn a_hook_past_its_budget_still_answers_as_each_harness_expects() {
    for h in ALL {
        let s = session_with(|_| json!({"hook": {"budgetMs": 100}}));
        let installed = install(&s, h);
        let mut child = spawn(&s, h, &installed[0].1)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held open until the hook has exited.
        let stdin = child.stdin.take();
        let started = std::time::Instant::now();
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{}", h.name());
        assert!(out.status.success(), "{}", h.name());
        assert_eq!(String::from_utf8_lossy(&out.stdout), h.quiet(), "{}", h.name());
        let log = std::fs::read_to_string(s.home.path().join("self-evolve/live.jsonl")).unwrap();
        assert!(log.contains("budget and stopped"), "{log}");
    }
}
