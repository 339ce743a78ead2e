//! `self-evolve hook --codex PAYLOAD`: Codex's `notify` program. Codex runs it after each turn
//! with one JSON argument (`{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd",
//! "input-messages": [...], "last-assistant-message"}`); that is a person's messages, the
//! assistant's answer and a completed turn. Codex reports no tool calls to it, so only turns
//! count; Codex's hooks (`--harness codex`, `codex_hooks`) report them and replace it.

use super::deliver::{Action, HookEvent, Outcome, check_session, deliver};
use crate::component::Source;
use anyhow::{Context, Result, bail};
use self_evolve_host::plugin::TurnStatus;
use serde_json::Value;
use std::path::Path;

/// A payload larger than this is not read (Codex passes it as one argument).
const MAX_PAYLOAD_BYTES: usize = 4 << 20;

/// The session and the plugin events of one notification.
pub fn parse(bytes: &[u8]) -> Result<(HookEvent, Vec<Action>)> {
    if bytes.len() > MAX_PAYLOAD_BYTES {
        bail!("the Codex notification is over {MAX_PAYLOAD_BYTES} bytes; ignored");
    }
    let raw: Value = serde_json::from_slice(bytes).context("the Codex notification is not JSON")?;
    let kind = raw["type"].as_str().context("the Codex notification has no `type`")?;
    let session = raw["thread-id"].as_str().filter(|s| !s.is_empty()).unwrap_or("codex").to_string();
    check_session(&session, "thread-id")?;
    let cwd = match raw["cwd"].as_str() {
        Some(cwd) => cwd.to_string(),
        None => std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default(),
    };
    let mut actions = Vec::new();
    if kind == "agent-turn-complete" {
        for message in raw["input-messages"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            actions.push(Action::User(message.to_string()));
        }
        if let Some(said) = raw["last-assistant-message"].as_str() {
            actions.push(Action::Assistant(said.to_string()));
        }
        actions.push(Action::TurnEnd(TurnStatus::Completed));
    }
    let event = HookEvent { session, cwd, transcript: None, name: format!("codex {kind}"), raw, keep_transcript: true };
    Ok((event, actions))
}

pub fn handle(home: &Path, wasm: &Source, bytes: &[u8], busy: &std::sync::Mutex<()>) -> Result<Outcome> {
    let (event, actions) = parse(bytes)?;
    deliver(home, wasm, &event, actions, busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completed_turn_is_its_messages_and_a_turn_end() {
        let payload = serde_json::json!({
            "type": "agent-turn-complete", "thread-id": "t-1", "turn-id": "12", "cwd": "/work/app",
            "input-messages": ["rename the module", "no, keep the old name"],
            "last-assistant-message": "Kept the old name."
        });
        let (event, actions) = parse(payload.to_string().as_bytes()).unwrap();
        assert_eq!((event.session.as_str(), event.cwd.as_str()), ("t-1", "/work/app"));
        assert!(
            matches!(&actions[..], [Action::User(a), Action::User(b), Action::Assistant(c), Action::TurnEnd(TurnStatus::Completed)]
            if a == "rename the module" && b == "no, keep the old name" && c == "Kept the old name.")
        );
        let other = parse(br#"{"type": "approval-requested"}"#).unwrap();
        assert!(other.1.is_empty(), "other notifications count nothing");
        assert_eq!(other.0.session, "codex");
        for bad in [&b"not json"[..], br#"{"no": "type"}"#] {
            assert!(parse(bad).is_err());
        }
    }
}
