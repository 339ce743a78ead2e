//! Claude Code's hook events (JSON on stdin) mapped to the plugin's events. `UserPromptSubmit` is
//! a person's message; `PostToolUse` (and `PostToolUseFailure`) a tool result, where a `Skill` use
//! or a `Read` of a `SKILL.md` in the library registers the read; `Stop` the assistant's last
//! message and a completed turn (not when Claude Code continues because a stop hook asked it to);
//! `SubagentStop`, `SessionEnd` and the rest only give the plugin its tick. Cursor runs Claude
//! Code's hooks too, by default, with its own payload: such an event is left alone here, since
//! `--harness cursor` delivers it already.

use super::deliver::{Action, HookEvent, Outcome, deliver};
use super::tool::{self, SkillRoots};
use crate::component::Source;
use anyhow::Result;
use serde_json::Value;
use std::path::Path;

/// A Claude Code payload (Codex's and Gemini CLI's have its shape).
pub fn parse(bytes: &[u8]) -> Result<HookEvent> {
    HookEvent::parse(bytes)
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
            let name = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let loaded = match name {
                "Skill" => ["skill", "command", "name"].iter().find_map(|k| input[*k].as_str().map(str::to_string)),
                "Read" => input["file_path"].as_str().and_then(|f| roots.skill_of(f)),
                _ => None,
            };
            let output = match &raw["tool_response"] {
                Value::String(s) => s.clone(),
                Value::Null => raw["error"].as_str().unwrap_or("").to_string(),
                other => other.to_string(),
            };
            vec![tool::action(name, input, ok, output, loaded)]
        }
        // Claude Code continuing because a stop hook said so ends the same turn again.
        "Stop" if raw["stop_hook_active"] == true => Vec::new(),
        "Stop" => {
            let said = raw["last_assistant_message"].as_str().map(str::to_string).or_else(|| {
                event.transcript.as_deref().and_then(|t| crate::live::transcript::last_assistant_text(Path::new(t)))
            });
            tool::answered(said)
        }
        _ => Vec::new(),
    }
}

/// Whether Cursor runs this hook (its `cursor_version` in the payload, or `CURSOR_VERSION` in
/// the environment Cursor gives every hook): the same event reaches `--harness cursor`, and
/// counting it twice would make turns due twice as fast.
pub fn from_cursor(bytes: &[u8], env_version: Option<&str>) -> bool {
    if env_version.is_some_and(|v| !v.is_empty()) {
        return true;
    }
    serde_json::from_slice::<Value>(bytes).is_ok_and(|raw| raw.get("cursor_version").is_some_and(|v| !v.is_null()))
}

/// Handles one event end to end: the plugin's events, its tick, the log. Each call into the
/// plugin holds `busy`, so the budget's watchdog never stops the process in the middle of one
/// (a review started but not yet recorded).
pub fn handle(home: &Path, wasm: &Source, bytes: &[u8], busy: &std::sync::Mutex<()>) -> Result<Outcome> {
    if from_cursor(bytes, std::env::var("CURSOR_VERSION").ok().as_deref()) {
        return Ok(Outcome::ignored());
    }
    let event = parse(bytes)?;
    let actions = actions(&event, &SkillRoots::for_event(home, &event.cwd));
    deliver(home, wasm, &event, actions, busy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use self_evolve_host::plugin::TurnStatus;
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
        assert!(matches!(&stop[..], [Action::Assistant(t), Action::TurnEnd(TurnStatus::Completed)] if t == "done"));
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
            assert!(crate::hook::codex::parse(codex.to_string().as_bytes()).is_err(), "{bad}");
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
                    assert!(t.args_json.len() <= tool::MAX_FIELD_BYTES);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Cursor runs Claude Code's hooks with its own payload, or at least its environment.
    #[test]
    fn an_event_cursor_sends_to_claude_codes_hooks_is_left_alone() {
        let claude = json!({"session_id": "s1", "hook_event_name": "Stop"}).to_string();
        let cursor = json!({"session_id": "s1", "hook_event_name": "Stop", "cursor_version": "1.7.2"}).to_string();
        assert!(!from_cursor(claude.as_bytes(), None));
        assert!(!from_cursor(claude.as_bytes(), Some("")));
        assert!(from_cursor(claude.as_bytes(), Some("1.7.2")));
        assert!(from_cursor(cursor.as_bytes(), None));
        assert!(!from_cursor(b"not json", None));
    }
}
