//! The gate: whether a due review is worth paying for. `counters` always says yes; `jev` asks
//! the host's named endpoint one three-way question over the digest and maps the answer with
//! `decisionFromAnswer`. Failures fall back to reviewing; three in a row open a breaker.

use crate::config::JevConfig;
use crate::host::{Host, HttpError, HttpRequest, Level, Root, WriteMode};
use crate::schedule::digest::Digest;
use crate::time;
use serde::Serialize;
use serde_json::{Value, json};

pub const QUESTION: &str = "Does this turn contain a durable, reusable lesson — a correction or standing preference, \
a non-trivial procedure that succeeded after trial and error, or a loaded skill that proved wrong?";
pub const CHOICES: [&str; 3] = ["yes", "no", "unclear"];
pub const LOG_PATH: &str = "gates.jsonl";
/// Path on the gate endpoint the request is posted to.
pub const ENDPOINT_PATH: &str = "/choice";
/// Consecutive failures that open the breaker.
pub const BREAKER_THRESHOLD: u32 = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Yes,
    No,
    Unclear,
}

impl Choice {
    pub fn as_str(self) -> &'static str {
        match self {
            Choice::Yes => "yes",
            Choice::No => "no",
            Choice::Unclear => "unclear",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub choice: Choice,
    pub confidence: Option<f64>,
    pub probability: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Review,
    Skip,
}

/// The seed's table: only a confident `no` skips; everything else reviews.
pub fn decision_from_answer(answer: Option<&Answer>, confident_no: f64) -> (Verdict, String) {
    match answer {
        None => (Verdict::Review, "fallback: missing or malformed answer".into()),
        Some(a) => {
            let confidence = a.confidence.unwrap_or(0.0);
            let reason = format!("{} (confidence {confidence:.2})", a.choice.as_str());
            match a.choice {
                Choice::No if confidence >= confident_no => (Verdict::Skip, reason),
                _ => (Verdict::Review, reason),
            }
        }
    }
}

/// Reads `{"choice": "yes"|"no"|"unclear", "confidence": 0..1, "probability": 0..1}`.
pub fn parse_answer(body: &[u8]) -> Option<Answer> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let choice = match value.get("choice")?.as_str()?.trim().to_ascii_lowercase().as_str() {
        "yes" => Choice::Yes,
        "no" => Choice::No,
        "unclear" => Choice::Unclear,
        _ => return None,
    };
    let unit = |key: &str| -> Result<Option<f64>, ()> {
        match value.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_f64().filter(|f| (0.0..=1.0).contains(f)).map(Some).ok_or(()),
        }
    };
    Some(Answer { choice, confidence: unit("confidence").ok()?, probability: unit("probability").ok()? })
}

/// One line of gates.jsonl, with exactly the seed's fields.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateRecord {
    pub at: String,
    pub session: String,
    pub turn: u64,
    pub decision: &'static str,
    pub source: &'static str,
    pub reason: String,
    pub choice: Option<&'static str>,
    pub confidence: Option<f64>,
    pub probability: Option<f64>,
    pub tool_calls: u64,
    pub latency_ms: u64,
    pub threshold: f64,
}

/// The breaker and the per-session call windows live in `review`; this is one call.
#[derive(Debug, Default)]
pub struct Breaker {
    pub consecutive_failures: u32,
    pub open: bool,
}

impl Breaker {
    fn failed(&mut self, host: &impl Host) {
        self.consecutive_failures += 1;
        if self.consecutive_failures >= BREAKER_THRESHOLD && !self.open {
            self.open = true;
            host.log(
                Level::Warn,
                &format!("gate: {BREAKER_THRESHOLD} consecutive failures; the circuit is open until restart, reviews fall back to counters"),
            );
        }
    }
}

/// Asks the gate once (retrying 429/5xx once). Returns the record to log.
pub fn ask(
    host: &impl Host,
    jev: &JevConfig,
    breaker: &mut Breaker,
    session: &str,
    digest: &Digest,
) -> (Verdict, GateRecord) {
    let started = host.now_ms();
    let record = |verdict: Verdict, source: &'static str, reason: String, answer: Option<&Answer>| GateRecord {
        at: time::iso(host.now_ms()),
        session: session.to_string(),
        turn: digest.turn,
        decision: if verdict == Verdict::Skip { "skip" } else { "review" },
        source,
        reason,
        choice: answer.map(|a| a.choice.as_str()),
        confidence: answer.and_then(|a| a.confidence),
        probability: answer.and_then(|a| a.probability),
        tool_calls: digest.tool_results_since_review,
        latency_ms: host.now_ms().saturating_sub(started),
        threshold: jev.confident_no,
    };
    if breaker.open {
        return (Verdict::Review, record(Verdict::Review, "counters", "fallback: circuit open".into(), None));
    }
    let body = json!({
        "question": QUESTION,
        "choices": CHOICES,
        "session": session,
        "digest": digest,
    })
    .to_string()
    .into_bytes();
    let request = HttpRequest {
        endpoint: jev.endpoint.clone(),
        path: ENDPOINT_PATH.into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body,
        timeout_ms: jev.timeout_ms,
    };
    let mut outcome = host.http_post(&request);
    if let Ok(response) = &outcome
        && (response.status == 429 || response.status >= 500)
    {
        outcome = host.http_post(&request);
    }
    let failure = match outcome {
        Ok(response) if (200..300).contains(&response.status) => match parse_answer(&response.body) {
            Some(answer) => {
                breaker.consecutive_failures = 0;
                let (verdict, reason) = decision_from_answer(Some(&answer), jev.confident_no);
                return (verdict, record(verdict, "jev", reason, Some(&answer)));
            }
            None => "fallback: malformed answer".to_string(),
        },
        Ok(response) if response.status == 429 || response.status >= 500 => {
            format!("fallback: http {} after one retry", response.status)
        }
        Ok(response) => format!("fallback: http {}", response.status),
        Err(HttpError::Timeout) => format!("fallback: timeout after {} ms", jev.timeout_ms),
        Err(HttpError::NoCredential) => "fallback: no credential".into(),
        Err(HttpError::Denied) => "fallback: endpoint denied by the host".into(),
        Err(HttpError::Network(msg)) => {
            // The transport's own words differ between hosts: they go to the log, not the record,
            // without a credential a URL in them might carry.
            let msg = crate::library::scan::redact_secrets(&msg).unwrap_or(msg);
            host.log(Level::Info, &format!("gate network error: {}", crate::schedule::digest::truncate(&msg, 200)));
            "fallback: network error".into()
        }
    };
    breaker.failed(host);
    host.log(Level::Info, &format!("gate {failure}; reviewing"));
    (Verdict::Review, record(Verdict::Review, "counters", failure, None))
}

/// Appends one line to gates.jsonl; a failed append is logged, never fatal.
pub fn append(host: &impl Host, record: &GateRecord) {
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    if let Err(err) = host.write(&Root::State, LOG_PATH, line.as_bytes(), WriteMode::Append) {
        host.log(Level::Warn, &format!("could not append to {LOG_PATH}: {err}"));
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
