//! `self-evolve hook --harness cursor`: Cursor's hooks (`hooks.json`, run from the project's
//! root). A payload names its conversation (`conversation_id`, the session here) and its
//! `workspace_roots`, not a `cwd`, outside tool events. `beforeSubmitPrompt` is a person's
//! message; `postToolUse` and `postToolUseFailure` a tool result, where a `Read` of a library
//! `SKILL.md` (or a `Shell` command printing one) registers the read; `afterAgentResponse` the
//! assistant's message; `stop` the turn's end, completed, aborted or failed as its `status` says
//! (not when a stop hook's follow-up made it, `loop_count` > 0); `sessionEnd` and the rest give
//! the plugin its tick. Cursor reads stdout as one JSON object and has no field for a message to
//! the user on these events, so the hook prints `{}` (`super::Harness::stdout`).

use super::deliver::{Action, HookEvent, Outcome, check_session};
use super::tool::{self, SkillRoots};
use crate::component::Source;
use anyhow::{Context, Result};
use self_evolve_host::plugin::TurnStatus;
use serde_json::Value;
use std::path::Path;

pub fn parse(bytes: &[u8]) -> Result<HookEvent> {
    let raw: Value = serde_json::from_slice(bytes).context("the Cursor hook event on stdin is not JSON")?;
    let text = |key: &str| raw.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
    // `session_id` equals `conversation_id` where Cursor sends both.
    let (session, field) = match text("conversation_id") {
        Some(id) => (id, "conversation_id"),
        None => (text("session_id").context("the hook event has no `conversation_id`")?, "session_id"),
    };
    let name = text("hook_event_name").context("the hook event has no `hook_event_name`")?;
    check_session(&session, field)?;
    // Only tool events carry `cwd`; the workspace's first root is the session's folder.
    let cwd = text("cwd").or_else(|| raw["workspace_roots"][0].as_str().map(str::to_string)).unwrap_or_default();
    Ok(HookEvent { session, cwd, transcript: None, name, raw, keep_transcript: true })
}

/// The plugin events a Cursor hook event maps to (pure, so every case is tested without a process).
pub fn actions(event: &HookEvent, roots: &SkillRoots) -> Vec<Action> {
    let raw = &event.raw;
    match event.name.as_str() {
        "beforeSubmitPrompt" => raw["prompt"].as_str().map(|p| Action::User(p.to_string())).into_iter().collect(),
        "postToolUse" | "postToolUseFailure" => {
            let ok = event.name == "postToolUse";
            let name = raw["tool_name"].as_str().unwrap_or("unknown");
            let input = &raw["tool_input"];
            let loaded = match name {
                // The docs show no `Read` input: the path's usual names are tried.
                "Read" => ["file_path", "path", "target_file"]
                    .iter()
                    .find_map(|k| input[*k].as_str())
                    .and_then(|f| roots.skill_at(&event.cwd, f)),
                "Shell" => input["command"].as_str().and_then(|c| roots.read_by_shell(&event.cwd, c)),
                _ => None,
            };
            // `tool_output` is the result as a JSON string; a failure has `error_message` instead.
            let output = match (&raw["tool_output"], &raw["error_message"]) {
                (Value::String(s), _) | (_, Value::String(s)) => s.clone(),
                (Value::Null, _) => String::new(),
                (other, _) => other.to_string(),
            };
            vec![tool::action(name, input, ok, output, loaded)]
        }
        "afterAgentResponse" => raw["text"].as_str().map(|t| Action::Assistant(t.to_string())).into_iter().collect(),
        // A stop hook's `followup_message` started this loop: its turn ended (and counted) already.
        "stop" if raw["loop_count"].as_u64().is_some_and(|n| n > 0) => Vec::new(),
        "stop" => {
            let status = match raw["status"].as_str() {
                Some("aborted") => TurnStatus::Aborted,
                Some("error") => TurnStatus::Failed,
                // `completed`, or a status this version does not know: the loop ended.
                _ => TurnStatus::Completed,
            };
            vec![Action::TurnEnd(status)]
        }
        _ => Vec::new(),
    }
}

/// Handles one event end to end (see `claude::handle`).
pub fn handle(home: &Path, wasm: &Source, bytes: &[u8], busy: &std::sync::Mutex<()>) -> Result<Outcome> {
    tool::handle(home, wasm, bytes, busy, parse, actions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fixture(name: &str) -> Value {
        tool::fixture("cursor", name)
    }

    fn map(raw: Value, roots: &SkillRoots) -> Vec<Action> {
        actions(&parse(raw.to_string().as_bytes()).unwrap(), roots)
    }

    #[test]
    fn the_conversation_is_the_session_and_the_first_workspace_root_its_folder() {
        let event = parse(fixture("stop").to_string().as_bytes()).unwrap();
        assert_eq!((event.session.as_str(), event.cwd.as_str()), ("3f2b6c1e-8d4a-4f0b-9c7e-5a1d2e3b4c5f", "/project"));
        // Cursor's own transcript is not Claude Code's shape: the host keeps its own copy.
        assert!(event.transcript.is_none() && event.keep_transcript);
        let mut bare = fixture("sessionEnd");
        bare.as_object_mut().unwrap().remove("conversation_id");
        assert_eq!(parse(bare.to_string().as_bytes()).unwrap().session, "3f2b6c1e-8d4a-4f0b-9c7e-5a1d2e3b4c5f");
        for bad in [fixture("workspaceOpen"), json!({"conversation_id": "--x", "hook_event_name": "stop"})] {
            assert!(parse(bad.to_string().as_bytes()).is_err(), "{bad}");
        }
        assert!(parse(b"not json").is_err());
    }

    #[test]
    fn maps_each_recorded_payload() {
        let home = tempfile::tempdir().unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let prompt = map(fixture("beforeSubmitPrompt"), &r);
        assert!(matches!(&prompt[..], [Action::User(t)] if t == "Add a unit test for parseConfig"));
        match &map(fixture("postToolUse"), &r)[..] {
            [Action::Tool(t)] => assert!(t.tool == "Shell" && t.ok && t.output.contains("exitCode"), "{t:?}"),
            other => panic!("{other:?}"),
        }
        match &map(fixture("postToolUseFailure"), &r)[..] {
            [Action::Tool(t)] => assert!(t.tool == "Shell" && !t.ok && t.output.contains("timed out"), "{t:?}"),
            other => panic!("{other:?}"),
        }
        let said = map(fixture("afterAgentResponse"), &r);
        assert!(matches!(&said[..], [Action::Assistant(t)] if t.starts_with("I added a unit test")));
        assert!(matches!(&map(fixture("stop"), &r)[..], [Action::TurnEnd(TurnStatus::Completed)]));
        for (status, expected) in [("aborted", TurnStatus::Aborted), ("error", TurnStatus::Failed)] {
            let mut stop = fixture("stop");
            stop["status"] = json!(status);
            assert!(matches!(&map(stop, &r)[..], [Action::TurnEnd(s)] if *s == expected), "{status}");
        }
        let mut followed = fixture("stop");
        followed["loop_count"] = json!(1);
        assert!(map(followed, &r).is_empty());
        for name in
            ["sessionStart", "sessionEnd", "preToolUse", "afterAgentThought", "afterShellExecution", "preCompact"]
        {
            assert!(map(fixture(name), &r).is_empty(), "{name}");
        }
    }

    #[test]
    fn reading_a_library_skill_is_a_load() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        let r = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let file = home.path().join("skills/pnpm-usage/SKILL.md");
        for (tool, input) in
            [("Read", json!({"file_path": file})), ("Shell", json!({"command": format!("cat {}", file.display())}))]
        {
            let mut raw = fixture("postToolUse");
            raw["tool_name"] = json!(tool);
            raw["tool_input"] = input;
            let got = map(raw, &r);
            assert!(
                matches!(&got[..], [Action::Tool(t)] if t.tool == "skill" && t.args_json.contains("pnpm-usage")),
                "{tool}: {got:?}"
            );
        }
    }
}
