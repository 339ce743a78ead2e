//! What the operator asks of past and running loops (`/skills loops`): every saved state and
//! archived run in the state root, newest first, and the verdict a run ended with.

use super::state::{DIR, State};
use crate::host::{Host, Root};
use serde_json::{Value, json};

/// One row per loop: in-progress states, then archived runs; newest first within each.
pub fn list(host: &impl Host) -> Vec<Value> {
    let mut rows = Vec::new();
    for (folder, archived) in [(DIR.to_string(), false), (format!("{DIR}/archive"), true)] {
        let mut found: Vec<Value> = host
            .list_dir(&Root::State, &folder)
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, _)| name.ends_with(".json"))
            .filter_map(|(name, _)| {
                let path = format!("{folder}/{name}");
                let state: State = serde_json::from_slice(&host.read(&Root::State, &path).ok()?).ok()?;
                Some(row(&state, &path, archived))
            })
            .collect();
        found.sort_by(|a, b| b["startedAt"].as_str().cmp(&a["startedAt"].as_str()));
        rows.extend(found);
    }
    rows
}

fn row(state: &State, path: &str, archived: bool) -> Value {
    let status = match (&state.completion, archived) {
        (Some(c), _) => c.clone(),
        (None, _) => format!("waiting for iteration {}", state.iteration + 1),
    };
    json!({
        "session": state.session_id, "mode": state.mode, "status": status, "iterations": state.iteration,
        "maxIter": state.max_iterations, "startedAt": state.started_at, "branch": state.scope.branch,
        "tokens": state.cost_spent_input_tokens + state.cost_spent_output_tokens,
        "independence": state.independence["kind"], "path": path,
        "verdict": state.verdict,
    })
}

/// The newest verdict of a session, if one of its runs ended.
pub fn verdict(host: &impl Host, session: &str) -> Option<String> {
    list(host)
        .into_iter()
        .find(|r| r["session"] == session && r["verdict"].is_string())
        .and_then(|r| r["verdict"].as_str().map(str::to_string))
}
