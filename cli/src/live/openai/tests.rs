//! The openai loop against scripted servers on 127.0.0.1: tool rounds, refusals, bounds,
//! retries, credentials, timeouts and aborts.

use super::*;
use self_evolve_host::testing::{Reply, ScriptedServer};
use std::cell::{Cell, RefCell};

fn config_for(server: &ScriptedServer) -> Config {
    let mut config = Config::new(format!("{}/v1", server.url()), "gpt-test");
    config.timeout = Duration::from_secs(10);
    config.request_timeout = Duration::from_secs(5);
    config
}

fn tools() -> Vec<ToolDef> {
    ["skill_view", "skill_manage"]
        .iter()
        .map(|name| ToolDef {
            name: name.to_string(),
            description: format!("the {name} tool"),
            parameters_schema: r#"{"type":"object","properties":{"name":{"type":"string"}}}"#.into(),
        })
        .collect()
}

/// A reply asking for `(id, name, arguments)` calls.
fn calls(list: &[(&str, &str, &str)], tokens: u64) -> Reply {
    let calls: Vec<Value> = list
        .iter()
        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
        .collect();
    Reply::ok(
        json!({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": tokens / 2}})
        .to_string(),
    )
}

fn answer(text: &str) -> Reply {
    Reply::ok(
        json!({"choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

/// Runs with a `call` that records what it was asked and answers `result`.
fn run_recording(config: &Config, result: Result<String, String>) -> (Outcome, Vec<(String, String)>) {
    let seen = RefCell::new(Vec::new());
    let mut call = |name: &str, args: &str| {
        seen.borrow_mut().push((name.to_string(), args.to_string()));
        result.clone()
    };
    let outcome = run(config, "You review skills.", "Review this session.", &tools(), &mut call, &|| false);
    (outcome, seen.into_inner())
}

fn body(request: &self_evolve_host::testing::Received) -> Value {
    serde_json::from_slice(&request.body).expect("the client sends JSON")
}

#[test]
fn a_tool_result_goes_back_to_the_model_and_the_final_answer_completes() {
    let server = ScriptedServer::start(vec![
        calls(&[("call_1", "skill_view", r#"{"name":"git"}"#)], 100),
        answer("  patched git  "),
    ])
    .unwrap();
    let (outcome, seen) = run_recording(&config_for(&server), Ok("skill text".into()));
    assert_eq!(outcome.status, Status::Completed, "{}", outcome.text);
    assert_eq!(outcome.text, "patched git");
    assert_eq!((outcome.turns, outcome.tool_calls, outcome.input_tokens, outcome.output_tokens), (2, 1, 110, 55));
    assert_eq!(seen, vec![("skill_view".to_string(), r#"{"name":"git"}"#.to_string())]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!((requests[0].method.as_str(), requests[0].path.as_str()), ("POST", "/v1/chat/completions"));
    assert_eq!(requests[0].header("authorization"), None, "no key configured, none sent");
    let first = body(&requests[0]);
    assert_eq!(first["model"], "gpt-test");
    assert_eq!(first["tool_choice"], "auto");
    assert_eq!(first["tools"][1]["function"]["name"], "skill_manage");
    assert_eq!(first["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(first["messages"][0], json!({"role": "system", "content": "You review skills."}));
    assert_eq!(first["messages"][1], json!({"role": "user", "content": "Review this session."}));
    let messages = body(&requests[1])["messages"].clone();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[2]["tool_calls"][0]["function"]["arguments"], r#"{"name":"git"}"#);
    assert_eq!(messages[3], json!({"role": "tool", "tool_call_id": "call_1", "content": "skill text"}));
}

#[test]
fn a_tool_the_plugin_did_not_allow_never_reaches_call() {
    let server =
        ScriptedServer::start(vec![calls(&[("c1", "bash", r#"{"cmd":"rm -rf /"}"#)], 10), answer("done")]).unwrap();
    let (outcome, seen) = run_recording(&config_for(&server), Ok("ran".into()));
    assert_eq!((outcome.status, outcome.tool_calls), (Status::Completed, 1));
    assert!(seen.is_empty(), "{seen:?}");
    let tool = &body(&server.requests()[1])["messages"][3];
    assert_eq!(tool["tool_call_id"], "c1");
    let text = tool["content"].as_str().unwrap();
    assert!(text.contains("`bash` is not allowed") && text.contains("skill_view, skill_manage"), "{text}");
}

#[test]
fn bad_arguments_are_refused_and_plugin_errors_are_passed_back() {
    let error = r#"{"code":"conflict","message":"view again"}"#;
    let server = ScriptedServer::start(vec![
        calls(&[("a", "skill_view", "{not json"), ("b", "skill_manage", r#"{"name":"x"}"#)], 10),
        answer(""),
    ])
    .unwrap();
    let (outcome, seen) = run_recording(&config_for(&server), Err(error.into()));
    assert_eq!((outcome.status, outcome.text.as_str(), outcome.tool_calls), (Status::Completed, "", 2));
    assert_eq!(seen, vec![("skill_manage".to_string(), r#"{"name":"x"}"#.to_string())]);
    let messages = body(&server.requests()[1])["messages"].clone();
    assert!(messages[3]["content"].as_str().unwrap().contains("not valid JSON"), "{}", messages[3]);
    assert_eq!(messages[4], json!({"role": "tool", "tool_call_id": "b", "content": error}));
}

#[test]
fn the_turn_limit_stops_a_model_that_never_answers() {
    let call = || calls(&[("c", "skill_view", "{}")], 10);
    let server = ScriptedServer::start(vec![call(), call(), call()]).unwrap();
    let mut config = config_for(&server);
    config.max_turns = 2;
    let (outcome, seen) = run_recording(&config, Ok("x".into()));
    assert_eq!(outcome.status, Status::Failed);
    assert!(outcome.text.contains("turn limit 2 reached"), "{}", outcome.text);
    assert_eq!((outcome.turns, seen.len(), server.requests().len()), (2, 1, 2), "the last reply's calls are not run");
}

#[test]
fn the_token_limit_stops_the_run_before_its_calls() {
    let server = ScriptedServer::start(vec![calls(&[("c", "skill_view", "{}")], 80), answer("late")]).unwrap();
    let mut config = config_for(&server);
    config.max_tokens = 100;
    let (outcome, seen) = run_recording(&config, Ok("x".into()));
    assert_eq!(outcome.status, Status::Failed);
    assert!(outcome.text.contains("token limit 100 exceeded: 120 tokens"), "{}", outcome.text);
    assert_eq!((outcome.input_tokens, outcome.output_tokens), (80, 40));
    assert!(seen.is_empty());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_429_is_retried_once_after_a_pause() {
    let server = ScriptedServer::start(vec![Reply::status(429), answer("ok")]).unwrap();
    let started = Instant::now();
    let (outcome, _) = run_recording(&config_for(&server), Ok(String::new()));
    assert_eq!((outcome.status, outcome.text.as_str(), outcome.turns), (Status::Completed, "ok", 1));
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_5xx_twice_fails_with_the_status_and_a_visible_body() {
    let broken = || Reply::Status { status: 500, body: "boom\u{1b}[2J".repeat(100), delay: Duration::ZERO };
    let server = ScriptedServer::start(vec![broken(), broken(), answer("never")]).unwrap();
    let (outcome, _) = run_recording(&config_for(&server), Ok(String::new()));
    assert_eq!(outcome.status, Status::Failed);
    assert!(outcome.text.starts_with("HTTP 500: boom\\u{1b}[2J"), "{}", outcome.text);
    assert!(!outcome.text.contains('\u{1b}') && outcome.text.chars().count() < 400, "{}", outcome.text);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn the_key_goes_in_the_header_and_never_into_the_outcome() {
    let (var, key) = ("SE_TEST_OPENAI_KEY_LIVE_7F3A", "sk-live-test-0123456789abcdef");
    // SAFETY: set_var is unsafe in edition 2024 because other threads may read the environment
    // concurrently; this variable name is unique to this test.
    unsafe { std::env::set_var(var, key) };
    let echo = Reply::Status { status: 401, body: format!(r#"{{"error":"bad key {key}"}}"#), delay: Duration::ZERO };
    let server = ScriptedServer::start(vec![answer("fine"), echo, answer("no retry")]).unwrap();
    let mut config = config_for(&server);
    config.api_key_env = Some(var.into());
    let (outcome, _) = run_recording(&config, Ok(String::new()));
    assert_eq!(outcome.status, Status::Completed);
    let (failed, _) = run_recording(&config, Ok(String::new()));
    assert_eq!(failed.status, Status::Failed);
    assert!(failed.text.starts_with("HTTP 401") && failed.text.contains("[redacted]"), "{}", failed.text);
    assert!(!failed.text.contains(key) && !format!("{failed:?}").contains(key));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "a 401 is not retried");
    assert!(requests.iter().all(|r| r.header("authorization") == Some(&format!("Bearer {key}")[..])));
}

#[test]
fn a_named_but_missing_key_fails_before_any_request() {
    let server = ScriptedServer::start(vec![answer("never")]).unwrap();
    let mut config = config_for(&server);
    config.api_key_env = Some("SE_TEST_OPENAI_KEY_UNSET_91C2".into());
    let (outcome, _) = run_recording(&config, Ok(String::new()));
    assert_eq!(outcome.status, Status::Failed);
    assert!(outcome.text.contains("SE_TEST_OPENAI_KEY_UNSET_91C2"), "{}", outcome.text);
    assert!(server.requests().is_empty());
}

#[test]
fn a_slow_server_times_the_run_out_and_a_slow_request_fails_it() {
    let server = ScriptedServer::start(vec![Reply::slow(r#"{"choices":[]}"#, Duration::from_secs(3))]).unwrap();
    let mut config = config_for(&server);
    config.timeout = Duration::from_millis(300);
    let started = Instant::now();
    let (outcome, _) = run_recording(&config, Ok(String::new()));
    assert_eq!(outcome.status, Status::TimedOut, "{}", outcome.text);
    assert!(started.elapsed() < Duration::from_millis(1500));

    let server = ScriptedServer::start(vec![Reply::slow(r#"{"choices":[]}"#, Duration::from_secs(3))]).unwrap();
    let mut config = config_for(&server);
    config.request_timeout = Duration::from_millis(200);
    let (outcome, _) = run_recording(&config, Ok(String::new()));
    assert_eq!(outcome.status, Status::Failed);
    assert!(outcome.text.contains("request timed out after 200 ms"), "{}", outcome.text);
}

#[test]
fn abort_is_honoured_between_steps() {
    let server =
        ScriptedServer::start(vec![calls(&[("a", "skill_view", "{}"), ("b", "skill_view", "{}")], 10)]).unwrap();
    let aborted = Cell::new(false);
    let mut calls_made = 0;
    let mut call = |_: &str, _: &str| {
        calls_made += 1;
        aborted.set(true);
        Ok(String::new())
    };
    let outcome = run(&config_for(&server), "s", "u", &tools(), &mut call, &|| aborted.get());
    assert_eq!((outcome.status, outcome.turns, calls_made), (Status::Aborted, 1, 1));
    assert_eq!(server.requests().len(), 1);

    let outcome = run(&config_for(&server), "s", "u", &tools(), &mut |_, _| Ok(String::new()), &|| true);
    assert_eq!((outcome.status, outcome.turns), (Status::Aborted, 0));
}

#[test]
fn malformed_answers_and_dead_servers_fail_by_name() {
    let server = ScriptedServer::start(vec![Reply::ok("<html>"), Reply::ok(r#"{"choices":[]}"#)]).unwrap();
    let (outcome, _) = run_recording(&config_for(&server), Ok(String::new()));
    assert!(outcome.status == Status::Failed && outcome.text.contains("not JSON"), "{}", outcome.text);
    let (outcome, _) = run_recording(&config_for(&server), Ok(String::new()));
    assert!(outcome.status == Status::Failed && outcome.text.contains("choices[0].message"), "{}", outcome.text);

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut config = Config::new(format!("http://127.0.0.1:{port}/v1"), "m");
    config.timeout = Duration::from_secs(5);
    let outcome = run(&config, "s", "u", &[], &mut |_, _| Ok(String::new()), &|| false);
    assert!(outcome.status == Status::Failed && outcome.text.starts_with("network error"), "{}", outcome.text);
}

#[test]
fn long_results_are_clipped_on_a_char_boundary() {
    let long = "é".repeat(40_000);
    let clipped = clip(&long);
    assert!(clipped.len() <= MAX_TOOL_RESULT_BYTES && clipped.ends_with("[clipped: 80000 bytes in all]"));
    assert_eq!(clip("short"), "short");
}

#[test]
fn config_from_json_reads_defaults_and_refuses_unknown_keys() {
    let config = Config::from_json(&json!({"baseUrl": "https://api.openai.com/v1", "model": "gpt-5-mini"})).unwrap();
    assert_eq!(config, Config::new("https://api.openai.com/v1", "gpt-5-mini"));
    let full = json!({"baseUrl": "http://127.0.0.1:8080/v1", "model": "m", "apiKeyEnv": "OPENAI_API_KEY",
        "maxTurns": 3, "maxTokens": 500, "timeoutMs": 9000, "requestTimeoutMs": 2000});
    let config = Config::from_json(&full).unwrap();
    assert_eq!(config.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
    assert_eq!((config.max_turns, config.max_tokens), (3, 500));
    assert_eq!((config.timeout, config.request_timeout), (Duration::from_secs(9), Duration::from_secs(2)));
    for (bad, needle) in [
        (json!({"baseUrl": "https://x/v1", "model": "m", "apiKey": "sk-1"}), "unknown key `apiKey`"),
        (json!({"model": "m"}), "`baseUrl` is required"),
        (json!({"baseUrl": "ftp://x", "model": "m"}), "`baseUrl` must be an http(s) URL"),
        (json!({"baseUrl": "https://x", "model": ""}), "`model` must be a non-empty string"),
        (json!({"baseUrl": "https://x", "model": "m", "maxTurns": 0}), "`maxTurns` must be a positive integer"),
        (json!({"baseUrl": "https://x", "model": "m", "timeoutMs": "5s"}), "`timeoutMs` must be a positive integer"),
        (json!({"baseUrl": "https://x", "model": "m", "apiKeyEnv": "MY KEY"}), "`apiKeyEnv` must name"),
        (json!([]), "must be a JSON object"),
    ] {
        let err = Config::from_json(&bad).unwrap_err().to_string();
        assert!(err.contains(needle), "{err} / {needle}");
    }
}
