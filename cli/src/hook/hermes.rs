//! `self-evolve hook --harness hermes`: Hermes Agent's shell hooks (`hooks:` in `config.yaml`,
//! run without a shell, one JSON object on stdin with the event's own fields under `extra`).
//! `pre_llm_call` is a person's message (`extra.user_message`); `post_tool_call` a tool result,
//! failed unless `extra.status` is `ok`, where a `read_file` of a library `SKILL.md` or a
//! `terminal` command printing one registers the read; `post_llm_call` the answer; and
//! `on_session_end`, which despite its name fires at the end of every turn, the turn's end
//! (completed, failed or interrupted). `on_session_finalize` and the rest give the plugin its
//! tick. Hermes reads no stdout on these events, so the hook prints nothing.

use super::deliver::{Action, HookEvent, Outcome};
use super::tool::{self, SkillRoots};
use crate::component::Source;
use anyhow::Result;
use self_evolve_host::plugin::TurnStatus;
use std::path::Path;

/// The plugin events a Hermes hook event maps to (pure, so every case is tested without a
/// process).
pub fn actions(event: &HookEvent, roots: &SkillRoots) -> Vec<Action> {
    let raw = &event.raw;
    let extra = &raw["extra"];
    match event.name.as_str() {
        "pre_llm_call" => extra["user_message"].as_str().map(|m| Action::User(m.to_string())).into_iter().collect(),
        "post_tool_call" => {
            let name = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let ok = extra["status"].as_str() == Some("ok");
            let loaded = match name {
                "read_file" => ["path", "file_path"]
                    .iter()
                    .find_map(|k| input[*k].as_str())
                    .and_then(|f| roots.skill_at(&event.cwd, f)),
                "terminal" => input["command"].as_str().and_then(|c| roots.read_by_shell(&event.cwd, c)),
                _ => None,
            };
            let output = match extra["result"].as_str() {
                Some(result) => result.to_string(),
                None => extra["error_message"].as_str().unwrap_or("").to_string(),
            };
            vec![tool::action(name, input, ok, output, loaded)]
        }
        "post_llm_call" => {
            extra["assistant_response"].as_str().map(|m| Action::Assistant(m.to_string())).into_iter().collect()
        }
        "on_session_end" => {
            let status = if extra["completed"] == true {
                TurnStatus::Completed
            } else if extra["interrupted"] == true {
                TurnStatus::Aborted
            } else {
                TurnStatus::Failed
            };
            vec![Action::TurnEnd(status)]
        }
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
    use serde_json::{Value, json};

    fn fixture(name: &str) -> Value {
        tool::fixture("hermes", name)
    }

    fn map(raw: Value, roots: &SkillRoots) -> Vec<Action> {
        actions(&HookEvent::parse(raw.to_string().as_bytes()).unwrap(), roots)
    }

    #[test]
    fn maps_each_recorded_payload() {
        let home = tempfile::tempdir().unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        assert!(
            matches!(&map(fixture("pre_llm_call"), &r)[..], [Action::User(t)] if t.starts_with("Add a --verbose flag"))
        );
        for (name, ok) in [("post_tool_call", true), ("post_tool_call_error", false), ("post_tool_call_blocked", false)]
        {
            match &map(fixture(name), &r)[..] {
                [Action::Tool(t)] => assert_eq!(t.ok, ok, "{name}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(
            matches!(&map(fixture("post_llm_call"), &r)[..], [Action::Assistant(t)] if t.starts_with("Added --verbose"))
        );
        assert!(matches!(&map(fixture("on_session_end"), &r)[..], [Action::TurnEnd(TurnStatus::Completed)]));
        let mut cut = fixture("on_session_end");
        cut["extra"] = json!({"completed": false, "interrupted": true});
        assert!(matches!(&map(cut, &r)[..], [Action::TurnEnd(TurnStatus::Aborted)]));
        for name in ["on_session_start", "on_session_finalize", "pre_tool_call", "subagent_stop"] {
            assert!(map(fixture(name), &r).is_empty(), "{name}");
        }
    }

    #[test]
    fn reading_a_library_skill_is_a_load() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let skill = home.path().join("skills/pnpm-usage/SKILL.md").display().to_string();
        for (tool, input) in
            [("read_file", json!({"path": skill})), ("terminal", json!({"command": format!("cat {skill}")}))]
        {
            let mut raw = fixture("post_tool_call");
            raw["tool_name"] = json!(tool);
            raw["tool_input"] = input;
            match &map(raw, &r)[..] {
                [Action::Tool(t)] => {
                    assert_eq!((t.tool.as_str(), t.args_json.as_str()), ("skill", r#"{"name":"pnpm-usage"}"#), "{tool}")
                }
                other => panic!("{tool}: {other:?}"),
            }
        }
    }
}
