//! The `openai` reviewer engine: an OpenAI-compatible chat-completions tool-calling loop, limited
//! to the tools the plugin allowed, every call run through the caller (so every guard applies).

use crate::home::openai::{Config, clip_chars};
use anyhow::Result;
use self_evolve_host::caps::subagent::Status;
use self_evolve_host::text::visible;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Largest response body read before parsing.
const MAX_RESPONSE_BYTES: u64 = 4 << 20;
/// Largest tool result sent back to the model.
const MAX_TOOL_RESULT_BYTES: usize = 32 << 10;
/// Tool calls run from one reply; the rest are answered "not run".
const MAX_CALLS_PER_REPLY: usize = 32;
/// Characters of an error body quoted in a failure.
const ERROR_BODY_CHARS: usize = 200;
/// A tool the model may call: its name, description and JSON Schema (as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub parameters_schema: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    /// The final answer (trimmed) when completed, else why the run stopped.
    pub text: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Model round trips that got an answer.
    pub turns: u32,
    /// Tool calls the model asked for and was answered on (allowed or not).
    pub tool_calls: u32,
}

/// Why a run stopped early.
struct Stop(Status, String);

fn failed(text: impl Into<String>) -> Stop {
    Stop(Status::Failed, text.into())
}

/// Runs the reviewer: `system` and `user` messages, then tool rounds until the model answers
/// without tool calls. `call(name, arguments)` runs an allowed tool (Ok text or the plugin's
/// error JSON); `abort()` is asked between steps.
pub fn run(
    config: &Config,
    system: &str,
    user: &str,
    tools: &[ToolDef],
    call: &mut dyn FnMut(&str, &str) -> Result<String, String>,
    abort: &dyn Fn() -> bool,
) -> Outcome {
    let started = Instant::now();
    let mut state = State {
        deadline: started.checked_add(config.timeout).unwrap_or(started + Duration::from_secs(86_400 * 365)),
        timeout: config.timeout,
        abort,
        input_tokens: 0,
        output_tokens: 0,
        turns: 0,
        tool_calls: 0,
    };
    let mut key = None;
    let result = match &config.api_key_env {
        Some(var) => match std::env::var(var).map(|v| v.trim().to_string()) {
            Ok(v) if !v.is_empty() => {
                key = Some(v);
                state.converse(config, key.as_deref(), system, user, tools, call)
            }
            _ => Err(failed(format!("the API key variable `{var}` is not set, empty or not UTF-8"))),
        },
        None => state.converse(config, None, system, user, tools, call),
    };
    let (status, mut text) = match result {
        Ok(text) => (Status::Completed, text),
        Err(Stop(status, text)) => (status, text),
    };
    if let Some(key) = key {
        text = text.replace(&key, "[redacted]");
    }
    Outcome {
        status,
        text,
        input_tokens: state.input_tokens,
        output_tokens: state.output_tokens,
        turns: state.turns,
        tool_calls: state.tool_calls,
    }
}

struct State<'a> {
    deadline: Instant,
    timeout: Duration,
    abort: &'a dyn Fn() -> bool,
    input_tokens: u64,
    output_tokens: u64,
    turns: u32,
    tool_calls: u32,
}

struct ToolCall {
    id: String,
    name: String,
    arguments: String,
}

impl State<'_> {
    fn converse(
        &mut self,
        config: &Config,
        key: Option<&str>,
        system: &str,
        user: &str,
        tools: &[ToolDef],
        call: &mut dyn FnMut(&str, &str) -> Result<String, String>,
    ) -> Result<String, Stop> {
        let mut tool_json = Vec::with_capacity(tools.len());
        for tool in tools {
            let schema: Value = serde_json::from_str(&tool.parameters_schema).map_err(|e| {
                failed(format!("tool `{}` has a parameters schema that is not JSON: {e}", visible(&tool.name)))
            })?;
            tool_json.push(json!({"type": "function", "function": {
                "name": tool.name, "description": tool.description, "parameters": schema}}));
        }
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        let mut messages = vec![json!({"role": "system", "content": system}), json!({"role": "user", "content": user})];
        while self.turns < config.max_turns {
            self.check()?;
            let mut body = json!({"model": config.model, "messages": messages});
            if !tool_json.is_empty() {
                // An empty tools list (or tool_choice without tools) is refused by the API.
                body["tools"] = Value::Array(tool_json.clone());
                body["tool_choice"] = json!("auto");
            }
            let reply = self.post(config, &url, key, body.to_string().as_bytes())?;
            self.turns += 1;
            let usage = |field: &str| reply.pointer(&format!("/usage/{field}")).and_then(Value::as_u64).unwrap_or(0);
            self.input_tokens = self.input_tokens.saturating_add(usage("prompt_tokens"));
            self.output_tokens = self.output_tokens.saturating_add(usage("completion_tokens"));
            let used = self.input_tokens.saturating_add(self.output_tokens);
            if used > config.max_tokens {
                return Err(failed(format!("token limit {} exceeded: {used} tokens used", config.max_tokens)));
            }
            self.check()?;
            let message = reply
                .pointer("/choices/0/message")
                .filter(|m| m.is_object())
                .ok_or_else(|| failed("the response has no `choices[0].message` object"))?;
            let content = message.get("content").and_then(Value::as_str);
            let calls = tool_calls(message, self.turns)?;
            if calls.is_empty() {
                return Ok(content.unwrap_or_default().trim().to_string());
            }
            if self.turns >= config.max_turns {
                break; // Its results could never reach the model: leave these calls unrun.
            }
            messages.push(json!({"role": "assistant", "content": content, "tool_calls": calls.iter().map(|c| json!({
                "id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>()}));
            for (i, c) in calls.iter().enumerate() {
                self.check()?;
                self.tool_calls += 1;
                let result = if i >= MAX_CALLS_PER_REPLY {
                    format!("not run: at most {MAX_CALLS_PER_REPLY} tool calls are run from one reply")
                } else if !tools.iter().any(|t| t.name == c.name) {
                    format!("tool `{}` is not allowed here; allowed: {}", clip_chars(&c.name, 100), names(tools))
                } else if let Err(e) = serde_json::from_str::<Value>(&c.arguments) {
                    format!("the arguments for `{}` are not valid JSON: {e}", c.name)
                } else {
                    call(&c.name, &c.arguments).unwrap_or_else(|err| err)
                };
                messages.push(json!({"role": "tool", "tool_call_id": c.id, "content": clip(&result)}));
            }
        }
        Err(failed(format!("turn limit {} reached without a final answer", config.max_turns)))
    }

    /// Stops the run when the caller aborted or the run's time is up.
    fn check(&self) -> Result<(), Stop> {
        if (self.abort)() {
            return Err(Stop(Status::Aborted, "aborted".into()));
        }
        self.left().map(|_| ())
    }

    fn left(&self) -> Result<Duration, Stop> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Stop(Status::TimedOut, format!("timed out after {} ms", self.timeout.as_millis())));
        }
        Ok(left)
    }

    /// One POST, retried once on 429 or 5xx; the parsed JSON body of a 2xx answer.
    fn post(&mut self, config: &Config, url: &str, key: Option<&str>, body: &[u8]) -> Result<Value, Stop> {
        let mut retried = false;
        loop {
            self.check()?;
            let left = self.left()?;
            let attempt = config.request_timeout.min(left);
            let (status, retry_after, bytes) = match attempt_once(url, key, body, attempt) {
                Ok(answer) => answer,
                Err(Attempt::Timeout) if attempt >= left => {
                    return Err(Stop(Status::TimedOut, format!("timed out after {} ms", self.timeout.as_millis())));
                }
                Err(Attempt::Timeout) => {
                    return Err(failed(format!("request timed out after {} ms", attempt.as_millis())));
                }
                Err(Attempt::TooLarge) => {
                    return Err(failed(format!("response body over {} MiB", MAX_RESPONSE_BYTES >> 20)));
                }
                Err(Attempt::Network(e)) => return Err(failed(format!("network error: {}", visible(&e)))),
            };
            if (200..300).contains(&status) {
                return serde_json::from_slice(&bytes).map_err(|e| failed(format!("the response is not JSON: {e}")));
            }
            if (status == 429 || (500..600).contains(&status)) && !retried {
                retried = true;
                let pause = retry_after.map_or(Duration::from_millis(200), |s| Duration::from_secs(s.min(2)));
                let until = Instant::now() + pause;
                while Instant::now() < until {
                    self.check()?;
                    std::thread::sleep(Duration::from_millis(10).min(until.saturating_duration_since(Instant::now())));
                }
                continue;
            }
            // A server may echo the request: redacted whole before the quote is cut from it.
            let text = String::from_utf8_lossy(&bytes);
            let text = self_evolve_scan::redact_secrets(&text).map_or(text, std::borrow::Cow::Owned);
            return Err(failed(format!("HTTP {status}: {}", visible(&clip_chars(&text, ERROR_BODY_CHARS)))));
        }
    }
}

/// The reply's tool calls; ids are made up for servers that send none.
fn tool_calls(message: &Value, turn: u32) -> Result<Vec<ToolCall>, Stop> {
    let list = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(failed("`choices[0].message.tool_calls` is not an array")),
    };
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let function = c.get("function");
            ToolCall {
                id: c.get("id").and_then(Value::as_str).map_or_else(|| format!("call_{turn}_{i}"), str::to_string),
                name: function.and_then(|f| f.get("name")).and_then(Value::as_str).unwrap_or_default().to_string(),
                arguments: match function.and_then(|f| f.get("arguments")) {
                    Some(Value::String(s)) => s.clone(),
                    None | Some(Value::Null) => String::new(),
                    Some(other) => other.to_string(),
                },
            }
        })
        .collect())
}

enum Attempt {
    Timeout,
    TooLarge,
    Network(String),
}

/// One HTTP attempt: status, Retry-After seconds and the body (capped).
fn attempt_once(
    url: &str,
    key: Option<&str>,
    body: &[u8],
    timeout: Duration,
) -> Result<(u16, Option<u64>, Vec<u8>), Attempt> {
    let agent = self_evolve_host::caps::http::agent(timeout);
    let mut request = agent.post(url).header("content-type", "application/json");
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    let mut response = request.send(body).map_err(attempt_error)?;
    let status = response.status().as_u16();
    let retry_after =
        response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let bytes = response.body_mut().with_config().limit(MAX_RESPONSE_BYTES).read_to_vec().map_err(attempt_error)?;
    Ok((status, retry_after, bytes))
}

fn attempt_error(err: ureq::Error) -> Attempt {
    match err {
        ureq::Error::Timeout(_) => Attempt::Timeout,
        ureq::Error::Io(io) if matches!(io.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {
            Attempt::Timeout
        }
        ureq::Error::BodyExceedsLimit(_) => Attempt::TooLarge,
        other => Attempt::Network(clip_chars(&other.to_string(), ERROR_BODY_CHARS)),
    }
}

fn names(tools: &[ToolDef]) -> String {
    if tools.is_empty() {
        return "none".into();
    }
    tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join(", ")
}

/// A tool result cut to 32 KiB on a char boundary, saying so.
fn clip(text: &str) -> String {
    if text.len() <= MAX_TOOL_RESULT_BYTES {
        return text.to_string();
    }
    let note = format!("\n[clipped: {} bytes in all]", text.len());
    let mut end = MAX_TOOL_RESULT_BYTES - note.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{note}", &text[..end])
}

#[cfg(test)]
mod tests;
