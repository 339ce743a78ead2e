//! Tests for the gate on the fake host: the decision table, answers, retries, fallbacks and the breaker.

use super::*;
use crate::fake::FakeHost;
use crate::host::HttpResponse;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

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
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest());
    assert_eq!(verdict, Verdict::Skip);
    let line: Value = serde_json::to_value(&record).unwrap();
    let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
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
            "turn"
        ]
    );
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
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest());
    assert_eq!((verdict, record.source), (Verdict::Review, "jev"));
    assert_eq!(host.http_requests.borrow().len(), 2);

    let host = host_with(vec![status(500), status(503)]);
    let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest());
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
        let (verdict, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest());
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
        ask(&host, &jev(), &mut breaker, "s1", &digest());
    }
    assert!(breaker.open);
    let (verdict, record) = ask(&host, &jev(), &mut breaker, "s1", &digest());
    assert_eq!((verdict, record.reason.as_str()), (Verdict::Review, "fallback: circuit open"));
    assert_eq!(host.http_requests.borrow().len(), 3, "no call once open");
    assert!(host.logged("circuit is open"));
}

#[test]
fn a_success_resets_the_failure_count() {
    let host = host_with(vec![status(401), status(401), ok(r#"{"choice":"yes"}"#), status(401), status(401)]);
    let mut breaker = Breaker::default();
    for _ in 0..5 {
        ask(&host, &jev(), &mut breaker, "s1", &digest());
    }
    assert!(!breaker.open);
    assert_eq!(breaker.consecutive_failures, 2);
}

#[test]
fn a_credential_in_the_transport_error_never_reaches_the_log() {
    let password = format!("{}{}", "Zr7-kq2", "Lp9xW3");
    let message = format!("proxy https://gate:{password}@proxy.corp.io:8080 refused the connection");
    let host = host_with(vec![Err(HttpError::Network(message))]);
    let (_, record) = ask(&host, &jev(), &mut Breaker::default(), "s1", &digest());
    assert_eq!(record.reason, "fallback: network error");
    assert!(host.logged("gate network error: proxy https://gate:[redacted: password-in-url]@"));
    assert!(!host.logged(&password));
}
