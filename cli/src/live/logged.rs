//! What `<state>/live.jsonl` keeps of a decision or a log message: every string with its
//! credentials redacted, then cut to `MAX_CHARS`; a tool's result (what the plugin answered: a
//! whole skill for `view`, a diff for a staged write) reduced to the fields that say what the
//! call did (`RESULT_FIELDS`, each cut to `MAX_RESULT_CHARS`), every other field named by its
//! size. The log is read by people and shipped by support bundles: nothing the plugin, an agent
//! or a reviewer hands back is logged whole.

use serde_json::{Value, json};

/// Longest string a line keeps, in characters; the rest is cut, marked.
pub const MAX_CHARS: usize = 2_000;
/// Longest string of a tool's result that is logged; the rest is cut, marked.
pub const MAX_RESULT_CHARS: usize = 200;
/// The fields of a tool's result that are logged: what the call did, to what, and why not.
pub const RESULT_FIELDS: [&str; 8] = ["status", "id", "name", "path", "scope", "code", "message", "hint"];

/// A decision line as the log keeps it.
pub fn decision(mut value: Value) -> Value {
    if value["kind"] == "tool"
        && let Some(result) = value.get_mut("result")
    {
        *result = result_summary(result);
    }
    scrub(&mut value);
    value
}

/// A message as the log keeps it: redacted, then cut (a cut through a credential would leave a
/// piece the scanner no longer knows).
pub fn text(message: &str) -> String {
    cut(message, MAX_CHARS)
}

/// A tool's result: the fields in `RESULT_FIELDS` when it is an object (strings cut), every
/// other field and any other answer named by its size.
fn result_summary(result: &Value) -> Value {
    match result {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(key, value)| {
                    let kept = match value {
                        Value::String(s) if RESULT_FIELDS.contains(&key.as_str()) => json!(cut(s, MAX_RESULT_CHARS)),
                        Value::Bool(_) | Value::Number(_) | Value::Null => value.clone(),
                        other => size(other),
                    };
                    (key.clone(), kept)
                })
                .collect(),
        ),
        other => size(other),
    }
}

/// What a value is, without it.
fn size(value: &Value) -> Value {
    match value {
        Value::String(s) => json!(format!("[{} characters, not logged]", s.chars().count())),
        Value::Array(items) => json!(format!("[{} item(s), not logged]", items.len())),
        Value::Object(fields) => json!(format!("[{} field(s), not logged]", fields.len())),
        Value::Bool(_) | Value::Number(_) | Value::Null => value.clone(),
    }
}

/// At most `max` characters of `text`, redacted first; marked when cut.
fn cut(text: &str, max: usize) -> String {
    let redacted = self_evolve_scan::redact_secrets(text);
    let text = redacted.as_deref().unwrap_or(text);
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… ({} characters in all)", &text[..at], text.chars().count()),
        None => text.to_string(),
    }
}

fn scrub(value: &mut Value) {
    match value {
        Value::String(s) => *s = text(s),
        Value::Array(items) => items.iter_mut().for_each(scrub),
        Value::Object(fields) => fields.values_mut().for_each(scrub),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_is_logged_by_its_short_fields_and_sizes() {
        let content = format!("---\nname: deploy\n---\n{}", "Use the runbook.\n".repeat(40));
        let view = json!({"kind": "tool", "session": "s1", "tool": "skill_manage", "ok": true,
            "result": {"name": "deploy", "path": "deploy/SKILL.md", "content": content, "files": ["a", "b"]}});
        let kept = decision(view);
        assert_eq!(kept["result"]["name"], "deploy");
        assert_eq!(kept["result"]["path"], "deploy/SKILL.md");
        assert_eq!(kept["result"]["content"], format!("[{} characters, not logged]", content.chars().count()));
        assert_eq!(kept["result"]["files"], "[2 item(s), not logged]");
        // Short or long, a skill's text is never logged; a refusal's message is, cut.
        let short = json!({"kind": "tool", "result": {"content": "Run the deploy.", "owned": false}});
        assert_eq!(decision(short)["result"], json!({"content": "[15 characters, not logged]", "owned": false}));
        let refusal = json!({"kind": "tool", "ok": false,
            "result": {"code": "not-read", "message": "m".repeat(300), "details": {"field": "name"}}});
        let kept = decision(refusal);
        assert_eq!(kept["result"]["code"], "not-read");
        assert!(kept["result"]["message"].as_str().unwrap().ends_with("… (300 characters in all)"));
        assert_eq!(kept["result"]["details"], "[1 field(s), not logged]");
        let text_answer = json!({"kind": "tool", "result": "loaded deploy"});
        assert_eq!(decision(text_answer)["result"], "[13 characters, not logged]");
    }

    #[test]
    fn every_string_is_redacted_then_cut() {
        let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        // The token straddles the cut: cutting first would keep `ghp_` and half of it.
        let long = format!("{} {key} tail", "y".repeat(MAX_CHARS - 20));
        let kept = text(&long);
        assert!(!kept.contains("ghp_Z7QX"), "{kept}");
        let redacted_len = long.chars().count() - key.len() + "[redacted: github-pat]".len();
        assert!(kept.ends_with(&format!("… ({redacted_len} characters in all)")), "{kept}");
        let line = decision(json!({"kind": "review", "action": "end", "reason": format!("saw {key}")}));
        assert_eq!(line["reason"], "saw [redacted: github-pat]");
        assert_eq!(text("plain"), "plain");
    }
}
