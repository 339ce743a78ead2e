//! `self-evolve hook --harness gemini`: Gemini CLI's hooks (`settings.json`, run through
//! `bash -c` in the session's folder). `BeforeAgent` is a person's message; `AfterTool` a tool
//! result, failed when `tool_response.error` is there (a shell command's non-zero exit is no
//! error to Gemini CLI), where `activate_skill` or a `read_file` of a library `SKILL.md`
//! registers the read; `AfterAgent` the answer and a completed turn (not when a hook made Gemini
//! CLI retry it); `SessionEnd` and the rest give the plugin its tick. Gemini CLI reads stdout as
//! one JSON object, so the hook always prints one (`super::Harness::stdout`).

use super::deliver::{Action, HookEvent, Outcome};
use super::tool::{self, SkillRoots};
use crate::component::Source;
use anyhow::Result;
use serde_json::Value;
use std::path::Path;

/// A tool's text for the model: `llmContent`, a string or a list of parts (`[{"text": …}]`).
fn content(response: &Value) -> String {
    match &response["llmContent"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The plugin events a Gemini CLI hook event maps to (pure, so every case is tested without a
/// process).
pub fn actions(event: &HookEvent, roots: &SkillRoots) -> Vec<Action> {
    let raw = &event.raw;
    match event.name.as_str() {
        "BeforeAgent" => raw["prompt"].as_str().map(|p| Action::User(p.to_string())).into_iter().collect(),
        "AfterTool" => {
            let name = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let response = &raw["tool_response"];
            let error = &response["error"];
            let ok = error.is_null();
            let loaded = match name {
                "activate_skill" => input["name"].as_str().map(str::to_string),
                // `absolute_path` in releases before `file_path`; relative paths are the session's.
                "read_file" => ["file_path", "absolute_path"]
                    .iter()
                    .find_map(|k| input[*k].as_str())
                    .and_then(|f| roots.skill_at(&event.cwd, f)),
                "run_shell_command" => input["command"].as_str().and_then(|c| roots.read_by_shell(&event.cwd, c)),
                _ => None,
            };
            let output = if ok { content(response) } else { error["message"].as_str().unwrap_or("").to_string() };
            vec![tool::action(name, input, ok, output, loaded)]
        }
        // A hook refused the answer and Gemini CLI retries the same turn.
        "AfterAgent" if raw["stop_hook_active"] == true => Vec::new(),
        "AfterAgent" => tool::answered(raw["prompt_response"].as_str().map(str::to_string)),
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
        tool::fixture("gemini", name)
    }

    fn map(raw: Value, roots: &SkillRoots) -> Vec<Action> {
        actions(&HookEvent::parse(raw.to_string().as_bytes()).unwrap(), roots)
    }

    #[test]
    fn maps_each_recorded_payload() {
        let home = tempfile::tempdir().unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let prompt = map(fixture("BeforeAgent"), &r);
        assert!(matches!(&prompt[..], [Action::User(t)] if t == "Run the tests and fix any failures"));
        for (name, tool, ok, output) in [
            ("AfterTool", "read_file", true, "fn main()"),
            ("AfterTool.error", "read_file", false, "File not found: "),
            ("AfterTool.shell-nonzero", "run_shell_command", true, "<untrusted_context>"),
            ("AfterTool.mcp", "mcp_self-evolve_record", true, "recorded"),
        ] {
            match &map(fixture(name), &r)[..] {
                [Action::Tool(t)] => {
                    assert_eq!((t.tool.as_str(), t.ok), (tool, ok), "{name}");
                    assert!(t.output.starts_with(output), "{name}: {}", t.output);
                }
                other => panic!("{name}: {other:?}"),
            }
        }
        let done = map(fixture("AfterAgent"), &r);
        assert!(
            matches!(&done[..], [Action::Assistant(t), Action::TurnEnd(TurnStatus::Completed)] if t.starts_with("All 42 tests"))
        );
        let mut retried = fixture("AfterAgent");
        retried["stop_hook_active"] = json!(true);
        assert!(map(retried, &r).is_empty());
        for name in ["SessionStart", "SessionEnd", "BeforeTool", "Notification", "PreCompress"] {
            assert!(map(fixture(name), &r).is_empty(), "{name}");
        }
    }

    #[test]
    fn activating_or_reading_a_library_skill_is_a_load() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let load = |tool: &str, input: Value| {
            let mut raw = fixture("AfterTool");
            raw["tool_name"] = json!(tool);
            raw["tool_input"] = input;
            raw["cwd"] = json!(home.path());
            map(raw, &r)
        };
        for (tool, input) in [
            ("activate_skill", json!({"name": "pnpm-usage"})),
            ("read_file", json!({"file_path": "skills/pnpm-usage/SKILL.md"})),
            ("run_shell_command", json!({"command": "cat skills/pnpm-usage/SKILL.md"})),
        ] {
            let got = load(tool, input);
            assert!(
                matches!(&got[..], [Action::Tool(t)] if t.tool == "skill" && t.args_json.contains("pnpm-usage")),
                "{tool}: {got:?}"
            );
        }
        let other = load("read_file", json!({"file_path": "src/main.rs"}));
        assert!(matches!(&other[..], [Action::Tool(t)] if t.tool == "read_file"));
    }
}
