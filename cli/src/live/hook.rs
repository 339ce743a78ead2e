//! `self-evolve hook`: one Claude Code hook event (JSON on stdin) mapped to the plugin's events,
//! in a process of its own. `UserPromptSubmit` is a person's message; `PostToolUse` (and
//! `PostToolUseFailure`) a tool result, where a `Skill` use or a `Read` of a `SKILL.md` in the
//! library registers the read; `Stop` the assistant's last message and a completed turn (not
//! when Claude Code continues because a stop hook asked it to); `SubagentStop`, `SessionEnd` and
//! the rest only give the plugin its tick. It never blocks the agent: it prints nothing unless
//! configured, always exits 0, and answers within `hook.budgetMs`.

use crate::cli::home;
use crate::component::Source;
use anyhow::{Context, Result, bail};
use self_evolve_host::plugin::{CallContext, Origin, ToolEvent, TurnStatus};
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// A hook event larger than this is dropped unread (tool responses can be large; the plugin never
/// needs more than `MAX_EVENT_TEXT_BYTES` of one, and parsing costs many times the input).
pub const MAX_INPUT_BYTES: u64 = 8 << 20;
/// Tool arguments and output passed on are clipped to this (the plugin keeps no output).
const MAX_FIELD_BYTES: usize = 64 << 10;

/// What one hook event asks of the plugin.
#[derive(Debug, Clone)]
pub enum Action {
    User(String),
    Assistant(String),
    Tool(ToolEvent),
    TurnEnd,
}

/// The fields of a hook event the mapping reads.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub session: String,
    pub cwd: String,
    pub transcript: Option<String>,
    pub name: String,
    pub raw: Value,
}

pub fn parse(bytes: &[u8]) -> Result<HookEvent> {
    let raw: Value = serde_json::from_slice(bytes).context("the hook event on stdin is not JSON")?;
    let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
    let session = text("session_id").filter(|s| !s.is_empty()).context("the hook event has no `session_id`")?;
    let name = text("hook_event_name").context("the hook event has no `hook_event_name`")?;
    check_session(&session, "session_id")?;
    Ok(HookEvent {
        session,
        cwd: text("cwd").unwrap_or_default(),
        transcript: text("transcript_path").filter(|p| !p.is_empty()),
        name,
        raw,
    })
}

/// A session id as agents make them (UUIDs, `cc-1`): 1–256 of `A-Z a-z 0-9 . _ : -`, not
/// starting with `-`. It reaches a reviewer's command line (`{session}`) and its environment, so
/// anything else (a flag, a space, a control character) is refused where it enters.
pub fn check_session(session: &str, field: &str) -> Result<()> {
    if session.len() > 256 {
        bail!("`{field}` is over 256 bytes");
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-');
    if session.is_empty() || session.starts_with('-') || !session.bytes().all(allowed) {
        bail!(
            "`{field}` `{}` is not a session id (1-256 of A-Z a-z 0-9 . _ : -, not starting with `-`); event ignored",
            self_evolve_host::text::visible(session)
        );
    }
    Ok(())
}

/// A name a library skill can have (the plugin's rule: 1-64 of `a-z 0-9 -`, no leading, trailing
/// or doubled `-`). Anything else is no skill of the library, so its use registers no read.
fn is_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Where the library's skills live for this event: the user's folder and the project's.
pub struct SkillRoots {
    pub folders: Vec<PathBuf>,
}

impl SkillRoots {
    pub fn for_event(home: &Path, cwd: &str) -> SkillRoots {
        let mut folders = vec![home::user_skills(home)];
        let project = Path::new(cwd).ancestors().find(|d| d.join(".git").exists() || d.join(".dsh").is_dir());
        if let Some(project) = project {
            folders.push(project.join(".dsh/skills"));
        }
        SkillRoots { folders: folders.into_iter().map(|f| std::fs::canonicalize(&f).unwrap_or(f)).collect() }
    }

    /// The skill a `SKILL.md` path names, when it is one of the library's (`<root>/<name>/SKILL.md`).
    fn skill_of(&self, file: &str) -> Option<String> {
        let path = Path::new(file);
        if path.file_name()? != "SKILL.md" {
            return None;
        }
        let folder = path.parent()?;
        let root = std::fs::canonicalize(folder.parent()?).ok()?;
        self.folders.contains(&root).then(|| folder.file_name()?.to_str().map(str::to_string)).flatten()
    }
}

fn clip(text: String) -> String {
    if text.len() <= MAX_FIELD_BYTES {
        return text;
    }
    let mut cut = MAX_FIELD_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

/// The plugin events a hook event maps to (pure, so every case is tested without a process).
pub fn actions(event: &HookEvent, roots: &SkillRoots) -> Vec<Action> {
    let raw = &event.raw;
    match event.name.as_str() {
        "UserPromptSubmit" => match raw["prompt"].as_str() {
            Some(prompt) => vec![Action::User(prompt.to_string())],
            None => Vec::new(),
        },
        "PostToolUse" | "PostToolUseFailure" => {
            let ok = event.name == "PostToolUse";
            let tool = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let loaded = match tool {
                "Skill" => ["skill", "command", "name"].iter().find_map(|k| input[*k].as_str().map(str::to_string)),
                "Read" => input["file_path"].as_str().and_then(|f| roots.skill_of(f)),
                _ => None,
            }
            .filter(|name| is_skill_name(name));
            let event = match loaded {
                // A skill loaded: the plugin's `skill` tool event registers the read.
                Some(name) => ToolEvent {
                    tool: "skill".into(),
                    args_json: serde_json::json!({"name": name}).to_string(),
                    ok,
                    output: String::new(),
                },
                None => ToolEvent {
                    tool: tool.to_string(),
                    args_json: clip(input.to_string()),
                    ok,
                    output: clip(match &raw["tool_response"] {
                        Value::String(s) => s.clone(),
                        Value::Null => raw["error"].as_str().unwrap_or("").to_string(),
                        other => other.to_string(),
                    }),
                },
            };
            vec![Action::Tool(event)]
        }
        // Claude Code continuing because a stop hook said so ends the same turn again.
        "Stop" if raw["stop_hook_active"] == true => Vec::new(),
        "Stop" => {
            let said = raw["last_assistant_message"].as_str().map(str::to_string).or_else(|| {
                event.transcript.as_deref().and_then(|t| super::transcript::last_assistant_text(Path::new(t)))
            });
            let mut out: Vec<Action> = said.into_iter().map(Action::Assistant).collect();
            out.push(Action::TurnEnd);
            out
        }
        _ => Vec::new(),
    }
}

/// What a hook process printed and decided.
pub struct Outcome {
    pub stdout: String,
    pub decisions: Vec<String>,
}

/// Handles one event end to end: the plugin's events, its tick, the log. Each call into the
/// plugin holds `busy`, so the budget's watchdog never stops the process in the middle of one
/// (a review started but not yet recorded).
pub fn handle(home: &Path, wasm: &Source, bytes: &[u8], busy: &std::sync::Mutex<()>) -> Result<Outcome> {
    let event = parse(bytes)?;
    let actions = actions(&event, &SkillRoots::for_event(home, &event.cwd));
    deliver(home, wasm, &event, actions, busy)
}

/// The plugin's side of one hook event: its actions in `event`'s session, the tick, the log.
pub fn deliver(
    home: &Path,
    wasm: &Source,
    event: &HookEvent,
    actions: Vec<Action>,
    busy: &std::sync::Mutex<()>,
) -> Result<Outcome> {
    let mut live = guarded(busy, || super::open(home, wasm))?;
    if let Ok(mut provider) = live.provider.lock() {
        provider.note_session(&event.session, &event.cwd, event.transcript.as_deref());
    }
    // A reviewer that is itself an agent with hooks (`claude -p` run by the `command` provider)
    // fires them too: its turns are a subagent's in the parent session (its own `session_id` is
    // the fork's), never counted toward a review of their own.
    let reviewer = std::env::var("SELF_EVOLVE_ACTIVATION").ok().filter(|a| !a.is_empty());
    let parent = std::env::var("SELF_EVOLVE_SESSION").ok().filter(|s| !s.is_empty() && reviewer.is_some());
    let ctx = CallContext {
        session: parent.unwrap_or_else(|| event.session.clone()),
        agent: reviewer.clone().unwrap_or_else(|| "main".into()),
        origin: if reviewer.is_some() { Origin::Subagent } else { Origin::User },
        depth: u32::from(reviewer.is_some()),
        cwd: event.cwd.clone(),
    };
    let mut decisions = Vec::new();
    let mut errors = Vec::new();
    // A failed tick (a curator pass past its deadline) is logged; the event is delivered anyway.
    match guarded(busy, || live.plugin.tick()) {
        Ok(more) => decisions.extend(more),
        Err(err) => errors.push(format!("tick: {err}")),
    }
    for action in actions {
        let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
        let more = match action {
            Action::User(text) => {
                live.plugin.user_message(&ctx, self_evolve_host::plugin::clip_event_text(&text), true)?
            }
            Action::Assistant(text) => {
                live.plugin.assistant_message(&ctx, self_evolve_host::plugin::clip_event_text(&text))?
            }
            Action::Tool(tool) => live.plugin.tool_result(&ctx, &tool)?,
            Action::TurnEnd => live.plugin.turn_end(&ctx, TurnStatus::Completed)?,
        };
        decisions.extend(more);
    }
    match guarded(busy, || live.plugin.pump_activations()) {
        Ok(more) => decisions.extend(more),
        Err(err) => errors.push(format!("reaping reviewers: {err}")),
    }
    live.record(&format!("hook {}", event.name), &decisions);
    for error in errors {
        super::log(home, "hook", "error", &error);
    }
    let started = decisions
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|d| d["kind"] == "review" && d["action"] == "start");
    let stdout = match started {
        Some(d) if live.host_file.hook.system_message => serde_json::json!({
            "systemMessage": format!("self-evolve: background skill review started ({})", d["activation"].as_str().unwrap_or("?"))
        })
        .to_string(),
        _ => String::new(),
    };
    Ok(Outcome { stdout, decisions })
}

/// Runs one plugin call holding `busy`: the watchdog waits for it (each call is bounded by its
/// own deadline) instead of exiting with the session's lock file left behind.
fn guarded<T>(busy: &std::sync::Mutex<()>, call: impl FnOnce() -> T) -> T {
    let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
    call()
}

/// The budget before `host.json` says otherwise.
const DEFAULT_BUDGET_MS: u64 = 10_000;

/// Exits the process, with status 0, once `budget_ms` (which may change) has passed since it
/// started, never during a plugin call (`busy`). It is started before anything is read, so
/// whatever sits at a path (a FIFO, a device) the hook answers in time; its only I/O on the way
/// out is one non-blocking append to the log.
fn start_watchdog(
    home: &Path,
    busy: std::sync::Arc<std::sync::Mutex<()>>,
    budget_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    let home = home.to_path_buf();
    let started = std::time::Instant::now();
    std::thread::spawn(move || {
        let budget = loop {
            let budget = std::time::Duration::from_millis(budget_ms.load(std::sync::atomic::Ordering::Relaxed));
            let Some(left) = budget.checked_sub(started.elapsed()).filter(|d| !d.is_zero()) else { break budget };
            std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
        };
        let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
        super::append_log(
            &home,
            &super::entry(
                "hook",
                "warn",
                &format!("the hook ran past its {} ms budget and stopped", budget.as_millis()),
            ),
        );
        std::process::exit(0);
    });
}

/// `self-evolve hook`: reads stdin (or, for Codex's `notify`, the payload argument), handles it
/// within the budget, exits 0 whatever happens.
pub fn main(home: &Path, wasm: &Source, codex_payload: Option<String>) {
    let busy = std::sync::Arc::new(std::sync::Mutex::new(()));
    let budget_ms = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(DEFAULT_BUDGET_MS));
    start_watchdog(home, busy.clone(), budget_ms.clone());
    if let Ok(file) = super::config::HostFile::load(home)
        && !file.hook.budget.is_zero()
    {
        let ms = u64::try_from(file.hook.budget.as_millis()).unwrap_or(u64::MAX);
        budget_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }
    let codex = codex_payload.is_some();
    let outcome = match codex_payload {
        Some(payload) => super::codex::handle(home, wasm, payload.as_bytes(), &busy),
        None => {
            let mut bytes = Vec::new();
            match std::io::stdin().lock().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes) {
                Err(err) => Err(anyhow::anyhow!("reading the hook event: {err}")),
                Ok(_) if bytes.len() as u64 > MAX_INPUT_BYTES => {
                    Err(anyhow::anyhow!("the hook event is over {MAX_INPUT_BYTES} bytes; ignored"))
                }
                Ok(_) => handle(home, wasm, &bytes, &busy),
            }
        }
    };
    match outcome {
        // Codex reads nothing back from its `notify` program.
        Ok(outcome) if !codex && !outcome.stdout.is_empty() => crate::say!("{}", outcome.stdout),
        Ok(_) => {}
        Err(err) => {
            // An error may quote what the event carried: shown as the log keeps it.
            let message = super::logged::text(&format!("{err:#}"));
            super::log(home, "hook", "error", &message);
            eprintln!("self-evolve hook: {message}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(raw: Value) -> HookEvent {
        parse(raw.to_string().as_bytes()).unwrap()
    }

    fn roots(home: &Path) -> SkillRoots {
        SkillRoots::for_event(home, "/nonexistent-cwd")
    }

    #[test]
    fn maps_each_hook_event_to_the_plugins() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        let base = json!({"session_id": "s1", "cwd": "/nonexistent-cwd", "transcript_path": ""});
        let with = |extra: Value| {
            let mut v = base.clone();
            v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            event(v)
        };
        let r = roots(home.path());
        let prompt = actions(&with(json!({"hook_event_name": "UserPromptSubmit", "prompt": "use pnpm"})), &r);
        assert!(matches!(&prompt[..], [Action::User(t)] if t == "use pnpm"));

        let skill = actions(
            &with(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": "pnpm-usage"}}),
            ),
            &r,
        );
        match &skill[..] {
            [Action::Tool(t)] => {
                assert_eq!((t.tool.as_str(), t.args_json.as_str()), ("skill", r#"{"name":"pnpm-usage"}"#))
            }
            other => panic!("{other:?}"),
        }
        let file = home.path().join("skills/pnpm-usage/SKILL.md");
        let read = actions(
            &with(json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": file}})),
            &r,
        );
        assert!(matches!(&read[..], [Action::Tool(t)] if t.tool == "skill" && t.args_json.contains("pnpm-usage")));
        // A SKILL.md outside the library is an ordinary read.
        let elsewhere = actions(
            &with(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": "/tmp/x/SKILL.md"}}),
            ),
            &r,
        );
        assert!(matches!(&elsewhere[..], [Action::Tool(t)] if t.tool == "Read"));
        let failed = actions(
            &with(
                json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": "x"}, "error": "boom"}),
            ),
            &r,
        );
        assert!(matches!(&failed[..], [Action::Tool(t)] if !t.ok && t.output == "boom"));

        let stop = actions(&with(json!({"hook_event_name": "Stop", "last_assistant_message": "done"})), &r);
        assert!(matches!(&stop[..], [Action::Assistant(t), Action::TurnEnd] if t == "done"));
        assert!(actions(&with(json!({"hook_event_name": "Stop", "stop_hook_active": true})), &r).is_empty());
        for name in ["SubagentStop", "SessionEnd", "SessionStart", "PreToolUse", "Notification"] {
            assert!(actions(&with(json!({"hook_event_name": name})), &r).is_empty(), "{name}");
        }
    }

    #[test]
    fn refuses_events_it_cannot_place() {
        for (bad, needle) in [
            (json!({"hook_event_name": "Stop"}), "session_id"),
            (json!({"session_id": "s1"}), "hook_event_name"),
            (json!({"session_id": "x".repeat(300), "hook_event_name": "Stop"}), "256"),
        ] {
            let err = format!("{:#}", parse(bad.to_string().as_bytes()).unwrap_err());
            assert!(err.contains(needle), "{err}");
        }
        assert!(parse(b"not json").is_err());
    }

    /// A session id reaches the reviewer's command line (`{session}`) and environment: only ids
    /// as agents make them pass.
    #[test]
    fn a_session_id_that_could_be_a_flag_is_refused() {
        for good in ["s1", "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0", "cc.1:main_2"] {
            assert!(parse(json!({"session_id": good, "hook_event_name": "Stop"}).to_string().as_bytes()).is_ok());
        }
        for bad in ["--dangerously-skip-permissions", "-x", "a b", "a\nb", "a/b", "$(id)"] {
            let err = format!(
                "{:#}",
                parse(json!({"session_id": bad, "hook_event_name": "Stop"}).to_string().as_bytes()).unwrap_err()
            );
            assert!(err.contains("not a session id"), "{err}");
            let codex = json!({"type": "agent-turn-complete", "thread-id": bad});
            assert!(super::super::codex::parse(codex.to_string().as_bytes()).is_err(), "{bad}");
        }
    }

    /// Only a name a library skill can have registers a read; anything else (a 400,000-byte
    /// string, a plugin's `ns:name`) is an ordinary tool event, its input clipped.
    #[test]
    fn a_skill_use_registers_a_read_only_for_a_skill_name() {
        let home = tempfile::tempdir().unwrap();
        let r = roots(home.path());
        for name in ["x".repeat(400_000), "Pnpm".into(), "ns:pdf".into(), "-a".into(), "a--b".into()] {
            let event = event(
                json!({"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Skill", "tool_input": {"skill": name}}),
            );
            match &actions(&event, &r)[..] {
                [Action::Tool(t)] => {
                    assert_eq!(t.tool, "Skill");
                    assert!(t.args_json.len() <= MAX_FIELD_BYTES);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn long_tool_fields_are_clipped_on_a_character_boundary() {
        let text = "é".repeat(MAX_FIELD_BYTES);
        let clipped = clip(text);
        assert!(clipped.len() <= MAX_FIELD_BYTES && clipped.chars().all(|c| c == 'é'));
    }
}
