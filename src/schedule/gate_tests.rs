//! Tests for the gate on the fake host: the decision table, answers, retries, fallbacks and the breaker.

use super::*;
use crate::fake::FakeHost;
use crate::host::HttpResponse;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// The fields of one gates.jsonl line, exactly the seed's (serde's order: alphabetical).
const SEED_FIELDS: [&str; 12] = [
    "at",
    "choice",
    "confidence",
    "decision",
    "latencyMs",
    "probability",
    "reason",
    "session",
    "source",
    "threshold",
    "toolCalls",
    "turn",
];

fn jev() -> JevConfig {
    JevConfig { endpoint: "gate".into(), cooldown_minutes: 5, timeout_ms: 2_000, confident_no: 0.75 }
}

fn digest() -> Digest {
    Digest { last_user_message: "use pnpm".into(), tool_results_since_review: 7, turn: 3, ..Default::default() }
}

fn ok(body: &str) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse { status: 200, body: body.as_bytes().to_vec() })
}

fn status(code: u16) -> Result<HttpResponse, HttpError> {
    Ok(HttpResponse { status: code, body: Vec::new() })
}

fn host_with(script: Vec<Result<HttpResponse, HttpError>>) -> FakeHost {
    let host = FakeHost::new(1_000);
    host.add_endpoint("gate", true);
    host.http_script.borrow_mut().extend(script);
    host
}

#[test]
fn decision_table() {
    let a = |choice, confidence| Answer { choice, confidence: Some(confidence), probability: None };
    let cases = [
        (Some(a(Choice::No, 0.75)), Verdict::Skip),
        (Some(a(Choice::No, 0.9)), Verdict::Skip),
        (Some(a(Choice::No, 0.74)), Verdict::Review),
        (Some(a(Choice::Yes, 0.99)), Verdict::Review),
        (Some(a(Choice::Unclear, 0.99)), Verdict::Review),
        (None, Verdict::Review),
    ];
    for (answer, expected) in cases {
        assert_eq!(decision_from_answer(answer.as_ref(), 0.75).0, expected, "{answer:?}");
    }
    assert_eq!(decision_from_answer(Some(&a(Choice::No, 0.99)), 1.0).0, Verdict::Review, "1 only observes");
    assert_eq!(decision_from_answer(Some(&a(Choice::Yes, 0.92)), 0.75).1, "yes (confidence 0.92)");
}

#[test]
fn answers_parse_strictly() {
    assert_eq!(parse_answer(br#"{"choice":"No","confidence":0.8}"#).unwrap().choice, Choice::No);
    for bad in [
        &b"not json"[..],
        br#"{"choice":"maybe"}"#,
        br#"{"confidence":0.9}"#,
        br#"{"choice":"no","confidence":1.5}"#,
        br#"{"choice":"no","confidence":"high"}"#,
    ] {
        assert_eq!(parse_answer(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn a_confident_no_skips_and_the_record_has_the_seed_fields() {
    let host = host_with(vec![ok(r#"{"choice":"no","confidence":0.92,"probability":0.95}"#)]);
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!(verdict, Verdict::Skip);
    let line: Value = serde_json::to_value(&record).unwrap();
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, SEED_FIELDS);
    assert_eq!(line["source"], "jev");
    assert_eq!(line["toolCalls"], 7);
    assert_eq!(line["threshold"], 0.75);
    assert_eq!(line["at"], "1970-01-01T00:00:01.000Z");
    let body: Value = serde_json::from_slice(&host.http_requests.borrow()[0].body).unwrap();
    assert_eq!(body["choices"], json!(["yes", "no", "unclear"]));
    assert_eq!(body["digest"]["lastUserMessage"], "use pnpm");
}

#[test]
fn retries_once_on_429_and_5xx_then_falls_back() {
    let host = host_with(vec![status(429), ok(r#"{"choice":"yes","confidence":0.6}"#)]);
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!((verdict, record.source), (Verdict::Review, "jev"));
    assert_eq!(host.http_requests.borrow().len(), 2);

    let host = host_with(vec![status(500), status(503)]);
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!(verdict, Verdict::Review);
    assert_eq!(record.source, "counters");
    assert_eq!(record.reason, "fallback: http 503 after one retry");
    assert_eq!(host.http_requests.borrow().len(), 2, "exactly one retry");
}

#[test]
fn other_failures_fall_back_without_retry() {
    let cases = [
        (status(401), "fallback: http 401"),
        (Err(HttpError::Timeout), "fallback: timeout after 2000 ms"),
        (Err(HttpError::Network("connection reset".into())), "fallback: network error"),
        (ok("{not json"), "fallback: malformed answer"),
    ];
    for (response, reason) in cases {
        let host = host_with(vec![response]);
        let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest(), None);
        assert_eq!((verdict, record.source, record.reason.as_str()), (Verdict::Review, "counters", reason));
        assert_eq!(host.http_requests.borrow().len(), 1);
        assert_eq!(record.choice, None);
    }
}

#[test]
fn three_consecutive_failures_open_the_breaker() {
    let host = host_with(vec![status(401), status(401), status(401), ok(r#"{"choice":"no","confidence":1}"#)]);
    let mut breaker = Breaker::default();
    for _ in 0..3 {
        ask(&host, &jev(), &mut breaker, "s1", &digest(), None);
    }
    assert!(breaker.open);
    let (verdict, record) = ask(&host, &jev(), &mut breaker, "s1", &digest(), None);
    assert_eq!((verdict, record.reason.as_str()), (Verdict::Review, "fallback: circuit open"));
    assert_eq!(host.http_requests.borrow().len(), 3, "no call once open");
    assert!(host.logged("circuit is open"));
}

#[test]
fn a_success_resets_the_failure_count() {
    let host = host_with(vec![status(401), status(401), ok(r#"{"choice":"yes"}"#), status(401), status(401)]);
    let mut breaker = Breaker::default();
    for _ in 0..5 {
        ask(&host, &jev(), &mut breaker, "s1", &digest(), None);
    }
    assert!(!breaker.open);
    assert_eq!(breaker.consecutive_failures, 2);
}

#[test]
fn a_credential_in_the_transport_error_never_reaches_the_log() {
    let password = format!("{}{}", "Zr7-kq2", "Lp9xW3");
    let message = format!("proxy https://gate:{password}@proxy.corp.io:8080 refused the connection");
    let host = host_with(vec![Err(HttpError::Network(message))]);
    let (_, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!(record.reason, "fallback: network error");
    assert!(host.logged("gate network error: proxy https://gate:[redacted: password-in-url]@"));
    assert!(!host.logged(&password));
}

// ---- the openai gate: same retry, breaker, mapping and record; its own request and answer ----

/// The defaults (`config/tests.rs` pins each value).
fn openai() -> OpenAiConfig {
    crate::config::Config::default().review.openai
}

/// A chat completion as OpenAI returns it (`refusal: null` included) with `content`.
fn completion(content: Value) -> Result<HttpResponse, HttpError> {
    let body = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": null},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    });
    ok(&body.to_string())
}

fn llm_with(script: Vec<Result<HttpResponse, HttpError>>) -> FakeHost {
    let host = FakeHost::new(1_000);
    host.add_endpoint("llm", true);
    host.http_script.borrow_mut().extend(script);
    host
}

#[test]
fn openai_posts_one_chat_completion_with_the_question_and_the_digest_only() {
    let host = llm_with(vec![completion(json!(r#"{"choice":"yes","confidence":0.9}"#))]);
    ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
    let requests = host.http_requests.borrow();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(
        (request.endpoint.as_str(), request.path.as_str(), request.timeout_ms),
        ("llm", "/chat/completions", 2_000)
    );
    assert_eq!(
        request.headers,
        [("content-type".to_string(), "application/json".to_string())],
        "the host adds the key"
    );
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["max_tokens", "messages", "model", "response_format", "temperature"]);
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0], json!({"role": "system", "content": OPENAI_INSTRUCTIONS}));
    assert!(OPENAI_INSTRUCTIONS.contains(r#"{"choice": "yes" | "no" | "unclear", "confidence""#));
    assert_eq!(messages[1]["role"], "user");
    let user = messages[1]["content"].as_str().unwrap();
    assert!(user.starts_with(QUESTION), "{user}");
    assert!(user.ends_with(&serde_json::to_string(&digest()).unwrap()), "the digest, whole, as JSON: {user}");
    assert!(!request.body.windows(2).any(|w| w == b"s1"), "no session id leaves for a third party");

    let other =
        OpenAiConfig { model: "llama3.1:8b".into(), path: "/v1/chat/completions".into(), max_tokens: 64, ..openai() };
    let host = llm_with(vec![completion(json!(r#"{"choice":"yes"}"#))]);
    ask(&host, &other, &mut Breaker::default(), "s1", &digest(), None);
    let body: Value = serde_json::from_slice(&host.http_requests.borrow()[0].body).unwrap();
    assert_eq!((body["model"].as_str(), body["max_tokens"].as_u64()), (Some("llama3.1:8b"), Some(64)));
    assert_eq!(host.http_requests.borrow()[0].path, "/v1/chat/completions");
}

#[test]
fn openai_answers_map_through_the_seed_table() {
    let cases = [
        (r#"{"choice":"no","confidence":0.92}"#, Verdict::Skip, "no (confidence 0.92)", Some("no")),
        (r#"{"choice":"no","confidence":0.75}"#, Verdict::Skip, "no (confidence 0.75)", Some("no")),
        (r#"{"choice":"no","confidence":0.6}"#, Verdict::Review, "no (confidence 0.60)", Some("no")),
        (r#"{"choice":"no"}"#, Verdict::Review, "no (confidence 0.00)", Some("no")),
        (r#"{"choice":"yes","confidence":0.99}"#, Verdict::Review, "yes (confidence 0.99)", Some("yes")),
        (r#"{"choice":"unclear","confidence":0.99}"#, Verdict::Review, "unclear (confidence 0.99)", Some("unclear")),
    ];
    for (content, verdict, reason, choice) in cases {
        let host = llm_with(vec![completion(json!(content))]);
        let (got, record) = ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
        assert_eq!((got, record.source, record.reason.as_str(), record.choice), (verdict, "openai", reason, choice));
        assert_eq!(record.decision, if verdict == Verdict::Skip { "skip" } else { "review" });
        assert_eq!(record.threshold, 0.75);
    }
    // The threshold is the openai block's own.
    let strict = OpenAiConfig { confident_no: 1.0, ..openai() };
    let host = llm_with(vec![completion(json!(r#"{"choice":"no","confidence":0.99}"#))]);
    let (verdict, record) = ask(&host, &strict, &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!((verdict, record.threshold), (Verdict::Review, 1.0));
}

#[test]
fn openai_accepts_the_answer_fenced_or_padded() {
    for content in [
        "```json\n{\"choice\":\"no\",\"confidence\":0.9}\n```",
        "```JSON\n{\"choice\":\"no\",\"confidence\":0.9}```",
        "```\n{\"choice\":\"no\",\"confidence\":0.9}\n```",
        "  \n{\"choice\":\"no\",\"confidence\":0.9}\n\n",
        "\n```json\n  {\"choice\": \"No\", \"confidence\": 0.9}\n```\n",
    ] {
        let host = llm_with(vec![completion(json!(content))]);
        let (verdict, record) = ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
        assert_eq!((verdict, record.source), (Verdict::Skip, "openai"), "{content:?}");
    }
}

#[test]
fn openai_malformed_completions_fall_back_to_review() {
    let wrap = |message: Value| ok(&json!({"choices": [{"index": 0, "message": message}]}).to_string());
    let answer = r#"{"choice":"no","confidence":0.95}"#;
    let cases: Vec<(&str, Result<HttpResponse, HttpError>)> = vec![
        ("prose around the JSON", completion(json!(format!("Sure! {answer}")))),
        ("an unclosed fence", completion(json!(format!("```json\n{answer}")))),
        ("a fence with text after it", completion(json!(format!("```json\n{answer}\n``` done")))),
        ("an empty content", completion(json!(""))),
        ("a null content", completion(Value::Null)),
        ("content as an object", completion(json!({"choice": "no", "confidence": 0.95}))),
        ("content as parts", completion(json!([{"type": "text", "text": answer}]))),
        ("a choice outside the three", completion(json!(r#"{"choice":"skip","confidence":0.95}"#))),
        ("a confidence past 1", completion(json!(r#"{"choice":"no","confidence":95}"#))),
        ("a refusal", wrap(json!({"role": "assistant", "content": answer, "refusal": "I can't help with that."}))),
        ("no message", ok(r#"{"choices":[{"index":0}]}"#)),
        ("no choices", ok(r#"{"id":"x","object":"chat.completion"}"#)),
        ("empty choices", ok(r#"{"choices":[]}"#)),
        ("choices not a list", ok(&json!({"choices": {"message": {"content": answer}}}).to_string())),
        ("an error object with 200", ok(r#"{"error":{"message":"invalid model","type":"invalid_request_error"}}"#)),
        ("a non-JSON body", ok("<html>Bad gateway</html>")),
        ("an empty body", ok("")),
        ("the jev shape", ok(answer)),
        ("content past its bound", completion(json!(format!("{answer}{}", " ".repeat(MAX_CONTENT_BYTES))))),
        (
            "a body past its bound",
            wrap(json!({"role": "assistant", "content": answer, "padding": "x".repeat(MAX_COMPLETION_BYTES)})),
        ),
    ];
    for (what, response) in cases {
        let host = llm_with(vec![response]);
        let mut breaker = Breaker::default();
        let (verdict, record) = ask(&host, &openai(), &mut breaker, "s1", &digest(), None);
        assert_eq!(
            (verdict, record.source, record.reason.as_str(), record.choice),
            (Verdict::Review, "counters", "fallback: malformed answer", None),
            "{what}"
        );
        assert_eq!(host.http_requests.borrow().len(), 1, "{what}: no retry");
        assert_eq!(breaker.consecutive_failures, 1, "{what}: counts as a failure");
    }
}

#[test]
fn openai_parse_completion_reads_only_the_first_choice() {
    let body = json!({"choices": [
        {"message": {"content": r#"{"choice":"yes","confidence":0.6}"#}},
        {"message": {"content": r#"{"choice":"no","confidence":0.99}"#}},
    ]});
    let answer = parse_completion(body.to_string().as_bytes()).unwrap();
    assert_eq!((answer.choice, answer.confidence), (Choice::Yes, Some(0.6)));
}

#[test]
fn openai_retries_once_on_429_and_5xx_then_falls_back() {
    let host = llm_with(vec![status(429), completion(json!(r#"{"choice":"no","confidence":0.9}"#))]);
    let (verdict, record) = ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
    assert_eq!((verdict, record.source), (Verdict::Skip, "openai"));
    let requests = host.http_requests.borrow();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0], requests[1], "the retry posts the same request");
    drop(requests);

    let host = llm_with(vec![status(500), status(500)]);
    let mut breaker = Breaker::default();
    let (verdict, record) = ask(&host, &openai(), &mut breaker, "s1", &digest(), None);
    assert_eq!(
        (verdict, record.source, record.reason.as_str()),
        (Verdict::Review, "counters", "fallback: http 500 after one retry")
    );
    assert_eq!(host.http_requests.borrow().len(), 2, "exactly one retry");
    assert_eq!(breaker.consecutive_failures, 1);

    for (response, reason) in [
        (status(400), "fallback: http 400"),
        (status(401), "fallback: http 401"),
        (Err(HttpError::Timeout), "fallback: timeout after 2000 ms"),
        (Err(HttpError::Network("dns".into())), "fallback: network error"),
    ] {
        let host = llm_with(vec![response]);
        let (verdict, record) = ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
        assert_eq!((verdict, record.reason.as_str()), (Verdict::Review, reason));
        assert_eq!(host.http_requests.borrow().len(), 1, "{reason}: no retry");
    }
}

#[test]
fn openai_three_consecutive_failures_open_the_breaker() {
    let host = llm_with(vec![
        completion(json!("not json")),
        status(503),
        status(503),
        Err(HttpError::Timeout),
        completion(json!(r#"{"choice":"no","confidence":1}"#)),
    ]);
    let mut breaker = Breaker::default();
    for _ in 0..3 {
        assert_eq!(ask(&host, &openai(), &mut breaker, "s1", &digest(), None).0, Verdict::Review);
    }
    assert!(breaker.open);
    assert_eq!(host.http_requests.borrow().len(), 4);
    let (verdict, record) = ask(&host, &openai(), &mut breaker, "s1", &digest(), None);
    assert_eq!((verdict, record.reason.as_str()), (Verdict::Review, "fallback: circuit open"));
    assert_eq!(host.http_requests.borrow().len(), 4, "no call once open");
    assert!(host.logged("circuit is open"));
}

#[test]
fn openai_decisions_append_the_seed_fields_with_source_openai() {
    let host = llm_with(vec![completion(json!(r#"{"choice":"no","confidence":0.8}"#))]);
    let (_, record) = ask(&host, &openai(), &mut Breaker::default(), "s1", &digest(), None);
    append(&host, &record);
    let log = String::from_utf8(host.file(&Root::State, LOG_PATH).unwrap()).unwrap();
    let line: Value = serde_json::from_str(log.trim_end()).unwrap();
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, SEED_FIELDS);
    assert_eq!(
        (&line["source"], &line["decision"], &line["choice"], &line["confidence"]),
        (&json!("openai"), &json!("skip"), &json!("no"), &json!(0.8))
    );
    assert_eq!((&line["probability"], &line["toolCalls"], &line["turn"]), (&Value::Null, &json!(7), &json!(3)));
}

#[test]
fn each_attempt_renews_the_session_lock_the_call_is_held_under() {
    let host = llm_with(vec![status(503), completion(json!(r#"{"choice":"yes","confidence":0.9}"#))]);
    let gate = OpenAiConfig { timeout_ms: MAX_ATTEMPT_MS_UNDER_LOCK, ..openai() };
    host.http_latency_ms.set(u64::from(MAX_ATTEMPT_MS_UNDER_LOCK));
    let path = format!("locks/{}.lock", crate::schedule::sessions::lock_name("s1"));
    let mut lock = crate::state_file::lock(&host, &crate::schedule::sessions::lock_name("s1")).unwrap();
    // The event's own work before the gate took 3 s.
    host.advance(3_000);
    let (_, record) = ask(&host, &gate, &mut Breaker::default(), "s1", &digest(), Some(&mut lock));
    assert_eq!(record.source, "openai");
    // Renewed before the first attempt (at 4 000) and before the retry (at 8 000).
    let stamp = String::from_utf8(host.file(&Root::State, &path).unwrap()).unwrap();
    assert!(stamp.starts_with("8000-"), "{stamp}");
    lock.release(&host);
    assert!(host.file(&Root::State, &path).is_none());
}

// ---- the gate in the flow: the scheduler and the plugin's activation ----

mod in_the_flow {
    use super::*;
    // Named here too: a glob import's `test` and the prelude's would be ambiguous on wasm32.
    use crate::api::{CallContext, Origin, ToolEvent, TurnStatus};
    use crate::config::Config;
    use crate::plugin::Plugin;
    use crate::schedule::scheduler::Scheduler;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const SECRET: &str = "AKIA-TOOL-OUTPUT-NEVER-SENT";

    fn ctx() -> CallContext {
        CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
    }

    fn bash() -> ToolEvent {
        ToolEvent { tool: "bash".into(), args_json: "{}".into(), ok: true, output: SECRET.into() }
    }

    fn kinds(decisions: &[String]) -> Vec<(String, String)> {
        decisions
            .iter()
            .map(|d| {
                let v: Value = serde_json::from_str(d).unwrap();
                (v["kind"].as_str().unwrap_or("").to_string(), v["action"].as_str().unwrap_or("").to_string())
            })
            .collect()
    }

    #[test]
    fn a_due_turn_with_the_openai_gate_asks_the_endpoint_once_per_window() {
        let host = llm_with(vec![completion(json!(r#"{"choice":"no","confidence":0.9}"#))]);
        let config = Config::parse(r#"{"review":{"turnInterval":1,"gate":"openai"}}"#).unwrap();
        let mut s = Scheduler { gate_active: true, ..Default::default() };
        s.user_message(&ctx(), "please use pnpm", true);
        s.tool_result(&ctx(), &bash(), None);
        let out = s.turn_end(&host, &config, &ctx(), TurnStatus::Completed);
        let gate_line: Value = serde_json::from_str(&out[0]).unwrap();
        assert_eq!((&gate_line["kind"], &gate_line["source"]), (&json!("gate"), &json!("openai")));
        assert_eq!(kinds(&out)[1], ("review".to_string(), "skip".to_string()));
        assert!(host.started.borrow().is_empty(), "a confident no cancels the review");
        let request = host.http_requests.borrow()[0].clone();
        assert_eq!((request.endpoint.as_str(), request.path.as_str()), ("llm", "/chat/completions"));
        let body = String::from_utf8(request.body).unwrap();
        assert!(body.contains("please use pnpm") && !body.contains(SECRET), "{body}");
        assert_eq!(s.status(&config, "s1", host.now_ms())["gate"], "openai");

        // Within openai.cooldownMinutes: no second call, the review runs.
        let out = s.turn_end(&host, &config, &ctx(), TurnStatus::Completed);
        assert_eq!(kinds(&out)[1].1, "start");
        assert_eq!(host.http_requests.borrow().len(), 1);
        let log = String::from_utf8(host.file(&Root::State, LOG_PATH).unwrap()).unwrap();
        assert!(log.contains("one call per session per openai.cooldownMinutes"), "{log}");

        // Past the window (and the review's own cooldown) it asks again.
        host.advance(config.review.cooldown_minutes * 60_000);
        host.http_script.borrow_mut().push_back(completion(json!(r#"{"choice":"yes","confidence":0.9}"#)));
        s.sessions.get_mut("s1").unwrap().in_flight = None;
        s.turn_end(&host, &config, &ctx(), TurnStatus::Completed);
        assert_eq!(host.http_requests.borrow().len(), 2);
    }

    #[test]
    fn the_status_names_the_openai_gate_and_its_state() {
        let config = Config::parse(r#"{"review":{"gate":"openai"}}"#).unwrap();
        let mut s = Scheduler::default();
        assert_eq!(s.status(&config, "s1", 0)["gate"], "counters (openai unavailable)");
        s.gate_active = true;
        s.breaker.open = true;
        assert_eq!(s.status(&config, "s1", 0)["gate"], "openai (circuit open: falling back to counters)");
    }

    fn plugin(host: FakeHost) -> (Plugin<FakeHost>, crate::api::InitReport) {
        let mut plugin = Plugin::new(host);
        let report = plugin
            .init(r#"{"review":{"turnInterval":1,"gate":"openai"}}"#, &["agents".into(), "subagents".into()])
            .unwrap();
        (plugin, report)
    }

    fn gate_part(report: &crate::api::InitReport) -> crate::api::Part {
        report.parts.iter().find(|p| p.name == "gate").cloned().unwrap()
    }

    #[test]
    fn the_plugin_activates_the_openai_gate_when_the_host_serves_its_endpoint() {
        let (mut plugin, report) = plugin(llm_with(vec![completion(json!(r#"{"choice":"yes","confidence":0.9}"#))]));
        let part = gate_part(&report);
        assert_eq!((part.state, part.detail.as_str()), (crate::api::PartState::Active, "openai via endpoint `llm`"));
        plugin.tool_result(&ctx(), &bash());
        let out = plugin.turn_end(&ctx(), TurnStatus::Completed);
        assert_eq!(kinds(&out), [("gate".into(), "".into()), ("review".into(), "start".into())]);
        let requests = plugin.host().http_requests.borrow();
        assert_eq!((requests.len(), requests[0].endpoint.as_str()), (1, "llm"));
        assert!(!String::from_utf8_lossy(&requests[0].body).contains(SECRET));
    }

    #[test]
    fn a_slow_gate_call_keeps_the_sessions_lock_from_going_stale() {
        let host = llm_with(vec![status(503), completion(json!(r#"{"choice":"yes","confidence":0.9}"#))]);
        host.http_latency_ms.set(u64::from(MAX_ATTEMPT_MS_UNDER_LOCK));
        let mut plugin = Plugin::new(host);
        plugin
            .init(
                r#"{"review":{"turnInterval":1,"gate":"openai","openai":{"timeoutMs":4000}}}"#,
                &["agents".into(), "subagents".into()],
            )
            .unwrap();
        plugin.tool_result(&ctx(), &bash());
        // Another process looks at the session 3 s after the two attempts (8 s) ended, while the
        // event still holds the session: 11 s after it took the lock, 7 s after it renewed it.
        let broken = std::rc::Rc::new(std::cell::Cell::new(false));
        let seen = broken.clone();
        plugin.host().interleave(LOG_PATH, move |host| {
            host.advance(3_000);
            let lock = crate::state_file::try_lock(host, &crate::schedule::sessions::lock_name("s1"));
            seen.set(lock.is_some());
        });
        let out = plugin.turn_end(&ctx(), TurnStatus::Completed);
        assert_eq!(kinds(&out), [("gate".into(), "".into()), ("review".into(), "start".into())]);
        assert_eq!(plugin.host().http_requests.borrow().len(), 2);
        assert!(!broken.get(), "another process broke the session's lock during the event");
        assert!(!plugin.host().logged("breaking the stale lock"));
        let path = format!("{}/{}.lock", crate::state_file::LOCK_DIR, crate::schedule::sessions::lock_name("s1"));
        assert!(plugin.host().file(&Root::State, &path).is_none(), "released");
    }

    #[test]
    fn without_the_endpoint_or_its_key_the_openai_gate_stays_on_counters() {
        let no_key = FakeHost::new(0);
        no_key.add_endpoint("llm", false);
        for (host, why) in [
            (FakeHost::new(0), "the host has no HTTP endpoint named `llm`"),
            (no_key, "the host has no credential for endpoint `llm`"),
        ] {
            let (mut plugin, report) = plugin(host);
            let part = gate_part(&report);
            assert_eq!(
                (part.state, part.missing.clone()),
                (crate::api::PartState::Pending, vec!["http:llm".to_string()])
            );
            let warning = format!("review.gate is openai but {why}: the gate stays on counters");
            assert!(report.warnings.contains(&warning), "{:?}", report.warnings);
            let out = plugin.turn_end(&ctx(), TurnStatus::Completed);
            assert_eq!(kinds(&out), [("review".into(), "start".into())], "no gate line");
            assert!(plugin.host().http_requests.borrow().is_empty());
        }
    }
}
