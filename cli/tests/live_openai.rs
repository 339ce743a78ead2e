//! The `openai` reviewer provider end to end: a due turn in a hook process starts the detached
//! supervisor, which runs the tool loop against an OpenAI-compatible server on 127.0.0.1 (scripted
//! with tool calls), makes each call through the plugin as the reviewer, and delivers the
//! completion. The key stays in the host's environment; the model sees only the allowed tools.

mod live_support;

use live_support::*;
use self_evolve_host::testing::{Reply, ScriptedServer};
use serde_json::{Value, json};

const KEY_VAR: &str = "SELF_EVOLVE_LIVE_OPENAI_TEST_KEY";

fn calls(list: &[(&str, &str, Value)]) -> Reply {
    let calls: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
        .collect();
    Reply::ok(
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 50}})
        .to_string(),
    )
}

#[test]
fn an_openai_reviewer_patches_through_the_plugin_with_only_the_allowed_tools() {
    let server = ScriptedServer::start(vec![
        // Tries a tool it was not given, and a patch before reading: both refused.
        calls(&[
            ("c1", "bash", json!({"command": "rm -rf /"})),
            ("c2", "skill_manage", json!({"action": "patch", "name": "pnpm-usage", "old_string": "Use pnpm.", "new_string": "Use pnpm; never npm."})),
        ]),
        calls(&[("c3", "skill", json!({"name": "pnpm-usage"}))]),
        calls(&[("c4", "skill_manage", json!({"action": "patch", "name": "pnpm-usage", "old_string": "Use pnpm.", "new_string": "Use pnpm; never npm."}))]),
        Reply::ok(json!({"choices": [{"message": {"role": "assistant", "content": "patched pnpm-usage"}}]}).to_string()),
    ])
    .unwrap();
    let key = "sk-live-test-0123456789";
    // SAFETY: only this test (its own process) reads this variable.
    unsafe { std::env::set_var(KEY_VAR, key) };
    let url = format!("{}/v1", server.url());
    let s = session_with(
        |_| json!({"reviewer": {"provider": "openai", "baseUrl": url, "model": "test-model", "apiKeyEnv": KEY_VAR}}),
    );
    hook(&s, "UserPromptSubmit", json!({"prompt": "one"}));
    hook(&s, "Stop", json!({}));
    turn(&s, "no — always pnpm here");
    let end = wait_for_end(&s);
    assert_eq!(
        (end["status"].as_str(), end["reason"].as_str()),
        (Some("completed"), Some("patched pnpm-usage")),
        "{end}"
    );
    assert!(skill_text(&s).contains("Use pnpm; never npm."), "{}", skill_text(&s));

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].header("authorization"), Some(format!("Bearer {key}").as_str()));
    let offered: Vec<&str> =
        first["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert_eq!(offered, ["skill_manage", "skill"], "exactly the tools the plugin allowed");
    let conversation = first["messages"].to_string();
    assert!(
        conversation.contains("no skill update") && conversation.contains("always use pnpm here"),
        "{conversation}"
    );
    // The refusals went back to the model as tool results; nothing ran for `bash`.
    let second = String::from_utf8_lossy(&requests[1].body).into_owned();
    assert!(second.contains("not allowed") && second.contains("not-read"), "{second}");
    // The key never reached the plugin's state or logs.
    for entry in walk(s.home.path()) {
        let text = std::fs::read(&entry).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&text).contains(key), "{} holds the key", entry.display());
    }
    // The tokens the loop spent are in the review's record (three answers carried usage).
    let reviews = cli(&s).args(["skills", "--home"]).arg(s.home.path()).args(["reviews", "--json"]).output().unwrap();
    let reviews = String::from_utf8_lossy(&reviews.stdout);
    assert!(reviews.contains("\"inputTokens\":3000") && reviews.contains("\"outputTokens\":150"), "{reviews}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}
