//! `self-evolve hook --harness codex`: Codex's hooks (`hooks.json`, run through `$SHELL -lc` in
//! the session's folder), whose payloads have Claude Code's shape (`session_id`, `cwd`,
//! `hook_event_name`, `transcript_path`). `UserPromptSubmit` is a person's message; `PostToolUse`
//! a tool result; `Stop` the last message and a completed turn (not when Codex continues because
//! a stop hook asked it to); `SessionEnd` and the rest give the plugin its tick.
//!
//! Codex has no read tool and no skill tool: an agent reads a `SKILL.md` with a shell command,
//! which registers the read. One `PostToolUse` serves success and failure: a `Bash` result is the
//! output alone (no exit status), so only an MCP result's `isError` marks a failure.

use super::deliver::{Action, HookEvent, Outcome};
use super::tool::{self, SkillRoots};
use crate::component::Source;
use anyhow::Result;
use serde_json::Value;
use std::path::Path;

/// The plugin events a Codex hook event maps to (pure, so every case is tested without a process).
pub fn actions(event: &HookEvent, roots: &SkillRoots) -> Vec<Action> {
    let raw = &event.raw;
    match event.name.as_str() {
        "UserPromptSubmit" => raw["prompt"].as_str().map(|p| Action::User(p.to_string())).into_iter().collect(),
        "PostToolUse" => {
            let name = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let loaded = match name {
                "Bash" => input["command"].as_str().and_then(|c| roots.read_by_shell(&event.cwd, c)),
                _ => None,
            };
            let response = &raw["tool_response"];
            let ok = response["isError"] != true;
            let output = match response {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            vec![tool::action(name, input, ok, output, loaded)]
        }
        // Codex continuing because a stop hook said so ends the same turn again.
        "Stop" if raw["stop_hook_active"] == true => Vec::new(),
        // The transcript is Codex's rollout, not Claude Code's: the message comes from the payload.
        "Stop" => tool::answered(raw["last_assistant_message"].as_str().map(str::to_string)),
        _ => Vec::new(),
    }
}

/// Handles one event end to end (see `claude::handle`).
pub fn handle(home: &Path, wasm: &Source, bytes: &[u8], busy: &std::sync::Mutex<()>) -> Result<Outcome> {
    tool::handle(home, wasm, bytes, busy, HookEvent::parse, actions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use self_evolve_host::plugin::TurnStatus;
    use serde_json::json;

    fn fixture(name: &str) -> Value {
        tool::fixture("codex", name)
    }

    fn map(raw: Value, roots: &SkillRoots) -> Vec<Action> {
        actions(&HookEvent::parse(raw.to_string().as_bytes()).unwrap(), roots)
    }

    #[test]
    fn maps_each_recorded_payload() {
        let home = tempfile::tempdir().unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let prompt = map(fixture("UserPromptSubmit"), &r);
        assert!(matches!(&prompt[..], [Action::User(t)] if t.starts_with("Add a --verbose flag")));
        for (name, ok) in [("PostToolUse", true), ("PostToolUse.failure", true), ("PostToolUse.mcp", true)] {
            match &map(fixture(name), &r)[..] {
                [Action::Tool(t)] => assert!(t.tool != "skill" && t.ok == ok && !t.output.is_empty(), "{name}: {t:?}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        let stop = map(fixture("Stop"), &r);
        assert!(
            matches!(&stop[..], [Action::Assistant(t), Action::TurnEnd(TurnStatus::Completed)] if t.starts_with("Added"))
        );
        let mut again = fixture("Stop");
        again["stop_hook_active"] = json!(true);
        assert!(map(again, &r).is_empty());
        for name in ["SessionStart", "SessionEnd", "PreToolUse"] {
            assert!(map(fixture(name), &r).is_empty(), "{name}");
        }
    }

    #[test]
    fn a_shell_read_of_a_library_skill_is_a_load_and_an_mcp_error_a_failure() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let mut read = fixture("PostToolUse");
        let file = home.path().join("skills/pnpm-usage/SKILL.md");
        read["tool_input"]["command"] = json!(format!("sed -n '1,200p' {}", file.display()));
        assert!(
            matches!(&map(read, &r)[..], [Action::Tool(t)] if t.tool == "skill" && t.args_json.contains("pnpm-usage"))
        );
        let mut failed = fixture("PostToolUse.mcp");
        failed["tool_response"]["isError"] = json!(true);
        assert!(matches!(&map(failed, &r)[..], [Action::Tool(t)] if t.tool == "mcp__filesystem__read_file" && !t.ok));
    }
}
