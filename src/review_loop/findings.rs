//! Findings: what a lens reviewer's JSON reply, a falsifier's verdict and a failed command
//! become. Model output is parsed leniently (a code fence or a sentence around the JSON is
//! tolerated) but never trusted: a reply without a findings array is one recorded failure.

use serde_json::{Value, json};

/// The category of the one meta-finding that is never falsified nor drift-guarded.
pub const CHECKLIST_UNAVAILABLE: &str = "checklist-unavailable";
pub const EXECUTION_LENS: &str = "execution-grounded";
pub const EXECUTION_FAILURE: &str = "execution-failure";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn parse(text: &str) -> Option<Severity> {
        match text.trim().to_ascii_lowercase().as_str() {
            "low" | "minor" | "info" | "nit" => Some(Severity::Low),
            "medium" | "moderate" | "major" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            "critical" | "blocker" => Some(Severity::Critical),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The lens that raised it (`execution-grounded` for a failed command).
    pub lens: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub claim: String,
    pub severity: Severity,
    /// 0–100, as the reviewer gave it (69.5 stays 69.5: the seed's filter is `< 70`).
    pub confidence: f64,
    pub load_bearing: bool,
    pub category: String,
    pub fix: Option<String>,
    /// Deliverable mode: the quoted passage and the heading of its section.
    pub passage: Option<String>,
    pub section: Option<String>,
}

impl Finding {
    pub fn is_execution(&self) -> bool {
        self.lens == EXECUTION_LENS
    }

    pub fn is_checklist_unavailable(&self) -> bool {
        self.category == CHECKLIST_UNAVAILABLE
    }

    /// `path:line`, `path`, or the lens when the finding cites no file (a failed command).
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{f}:{l}"),
            (Some(f), None) => f.clone(),
            _ => self.lens.clone(),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "lens": self.lens, "claim": self.claim, "severity": self.severity.as_str(),
            "confidence": confidence_json(self.confidence), "load_bearing": self.load_bearing, "category": self.category,
        });
        for (key, value) in
            [("file", &self.file), ("fix", &self.fix), ("passage", &self.passage), ("section", &self.section)]
        {
            if let Some(text) = value {
                v[key] = json!(text);
            }
        }
        if let Some(line) = self.line {
            v["line"] = json!(line);
        }
        v
    }

    /// Reads a finding back from state (written by `to_json`).
    pub fn from_json(value: &Value) -> Option<Finding> {
        parse_item(value, value["lens"].as_str().unwrap_or("unknown")).ok()
    }
}

/// One non-zero exit → a high, confidence-100, load-bearing finding (seed 003, Step 4).
pub fn from_command(name: &str, exit_code: i32, stderr_tail: &str) -> Option<Finding> {
    if exit_code == 0 {
        return None;
    }
    let tail: String =
        stderr_tail.trim().lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join(" | ");
    let tail: String = tail.chars().take(400).collect();
    let claim = if tail.is_empty() {
        format!("`{name}` failed with exit code {exit_code}")
    } else {
        format!("`{name}` failed with exit code {exit_code}: {tail}")
    };
    Some(Finding {
        lens: EXECUTION_LENS.into(),
        file: None,
        line: None,
        claim,
        severity: Severity::High,
        confidence: 100.0,
        load_bearing: true,
        category: EXECUTION_FAILURE.into(),
        fix: Some(format!("make `{name}` pass")),
        passage: None,
        section: None,
    })
}

/// What one reviewer reply yielded.
#[derive(Debug, Default)]
pub struct Parsed {
    pub findings: Vec<Finding>,
    /// Items that were not findings (no claim, unknown severity, not an object), with why.
    pub rejected: Vec<String>,
    /// Findings beyond the mode's cap, dropped in the order given.
    pub over_cap: usize,
}

/// Largest reply considered: a reviewer that writes more is not following the instruction.
const MAX_REPLY: usize = 512 * 1024;

/// The findings array of a reviewer's reply, or why there is none.
pub fn parse_reply(text: &str, lens: &str, cap: usize) -> Result<Parsed, String> {
    if text.len() > MAX_REPLY {
        return Err(format!("reply of {} bytes is larger than {MAX_REPLY}", text.len()));
    }
    let value = extract_json(text, '[', ']')
        .or_else(|| extract_json(text, '{', '}').filter(|v| v["findings"].is_array()))
        .ok_or_else(|| "the reply holds no JSON array of findings".to_string())?;
    let items = match &value {
        Value::Array(items) => items.clone(),
        other => other["findings"].as_array().cloned().unwrap_or_default(),
    };
    let mut parsed = Parsed::default();
    for (i, item) in items.iter().enumerate() {
        match parse_item(item, lens) {
            Ok(finding) if parsed.findings.len() < cap => parsed.findings.push(finding),
            Ok(_) => parsed.over_cap += 1,
            Err(why) => parsed.rejected.push(format!("item {}: {why}", i + 1)),
        }
    }
    Ok(parsed)
}

fn parse_item(item: &Value, lens: &str) -> Result<Finding, String> {
    if !item.is_object() {
        return Err("not an object".into());
    }
    let text = |key: &str| item[key].as_str().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let claim = text("claim").ok_or("no `claim`")?;
    let severity_text = text("severity").ok_or("no `severity`")?;
    let severity = Severity::parse(&severity_text).ok_or_else(|| format!("unknown severity `{severity_text}`"))?;
    // Kept as given (clamped to 0–100): the filter compares the value itself. A number and the
    // same number as text ("69.5", "69.5%") read alike; NaN or infinity reads as unstated.
    let given = match &item["confidence"] {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse::<f64>().ok(),
        _ => None,
    };
    // Unstated confidence is low confidence: the filter from iteration 2 decides.
    let confidence = given.filter(|c| c.is_finite()).map_or(0.0, |c| c.clamp(0.0, 100.0));
    let load_bearing = match &item["load_bearing"] {
        Value::Bool(b) => *b,
        _ => item["loadBearing"].as_bool().unwrap_or(false),
    };
    let line = item["line"].as_u64().and_then(|l| u32::try_from(l).ok()).filter(|l| *l > 0);
    Ok(Finding {
        lens: lens.to_string(),
        file: text("file"),
        line,
        claim,
        severity,
        confidence,
        load_bearing,
        category: text("category").unwrap_or_else(|| "general".into()),
        fix: text("fix"),
        passage: text("passage"),
        section: text("section"),
    })
}

/// A falsifier's answer: `Some(evidence)` when it disproved the finding.
pub fn parse_falsifier(text: &str) -> Result<Option<String>, String> {
    let value = extract_json(text, '{', '}').ok_or("the reply holds no JSON object")?;
    match value["falsified"].as_bool() {
        Some(true) => Ok(Some(value["evidence"].as_str().unwrap_or("").trim().to_string())),
        Some(false) => Ok(None),
        None => Err("the reply has no boolean `falsified`".into()),
    }
}

/// The first `open … close` span of `text` that parses as JSON, trying each opening from the
/// left with the last closing (models wrap JSON in fences and sentences).
fn extract_json(text: &str, open: char, close: char) -> Option<Value> {
    let end = text.rfind(close)?;
    for (start, _) in text.match_indices(open).take(16) {
        if start >= end {
            break;
        }
        if let Ok(value) = serde_json::from_str::<Value>(&text[start..=end]) {
            return Some(value);
        }
    }
    None
}

/// A confidence as JSON: a whole value as an integer (`90`, as decision lines always showed it),
/// anything else as given (`69.5`).
fn confidence_json(confidence: f64) -> Value {
    if confidence.fract() == 0.0 && (0.0..=100.0).contains(&confidence) {
        json!(confidence as u64)
    } else {
        json!(confidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn a_fractional_confidence_is_kept_and_shown_as_given() {
        for given in ["69.5", "\"69.5\"", "\"69.5%\""] {
            let reply = format!("[{{\"claim\":\"c\",\"severity\":\"high\",\"confidence\":{given}}}]");
            let f = &parse_reply(&reply, "adversarial", 10).unwrap().findings[0];
            assert_eq!(f.confidence, 69.5, "{given}");
            assert_eq!(f.to_json()["confidence"], json!(69.5), "{given}");
        }
        for (given, read) in [("\"NaN\"", 0.0), ("\"inf\"", 0.0), ("250", 100.0), ("-3", 0.0), ("90", 90.0)] {
            let reply = format!("[{{\"claim\":\"c\",\"severity\":\"high\",\"confidence\":{given}}}]");
            let f = &parse_reply(&reply, "adversarial", 10).unwrap().findings[0];
            assert_eq!(f.confidence, read, "{given}");
        }
        let whole = &parse_reply(r#"[{"claim":"c","severity":"high","confidence":90}]"#, "adversarial", 10).unwrap();
        assert_eq!(whole.findings[0].to_json()["confidence"].to_string(), "90", "a whole value stays an integer");
    }

    #[test]
    fn a_fenced_reply_with_a_sentence_parses() {
        let reply = "Here you go:\n```json\n[{\"file\":\"src/a.rs\",\"line\":3,\"claim\":\"off by one\",\"severity\":\"High\",\"confidence\":80,\"load_bearing\":true,\"category\":\"bug\"}]\n```";
        let parsed = parse_reply(reply, "adversarial", 10).unwrap();
        assert_eq!(parsed.findings.len(), 1);
        let f = &parsed.findings[0];
        assert_eq!(
            (f.severity, f.confidence, f.load_bearing, f.location().as_str()),
            (Severity::High, 80.0, true, "src/a.rs:3")
        );
    }

    #[test]
    fn malformed_replies_and_items_are_reported_not_fatal() {
        assert!(parse_reply("I could not review this.", "simplicity", 10).is_err());
        assert!(parse_reply("[{\"claim\": ", "simplicity", 10).is_err());
        let parsed = parse_reply(
            r#"[{"claim":"x","severity":"weird"},{"severity":"low"},3,{"claim":"ok","severity":"low"}]"#,
            "simplicity",
            10,
        )
        .unwrap();
        assert_eq!(parsed.findings.len(), 1);
        assert_eq!(parsed.rejected.len(), 3);
        assert!(parsed.rejected[0].contains("unknown severity"));
    }

    #[test]
    fn the_cap_keeps_the_first_findings() {
        let items: Vec<String> = (0..7).map(|i| format!(r#"{{"claim":"c{i}","severity":"low"}}"#)).collect();
        let parsed = parse_reply(&format!("[{}]", items.join(",")), "claim-method", 6).unwrap();
        assert_eq!((parsed.findings.len(), parsed.over_cap), (6, 1));
        assert_eq!(parse_reply("[]", "x", 5).unwrap().findings.len(), 0);
    }

    #[test]
    fn falsifier_answers() {
        assert_eq!(
            parse_falsifier(r#"{"falsified": true, "evidence": "line 3 is a comment"}"#).unwrap().as_deref(),
            Some("line 3 is a comment")
        );
        assert_eq!(parse_falsifier(r#"```{"falsified": false}```"#).unwrap(), None);
        assert!(parse_falsifier("probably fine").is_err());
        assert!(parse_falsifier(r#"{"falsified": "yes"}"#).is_err());
    }

    #[test]
    fn only_failed_commands_become_findings() {
        assert!(from_command("lint", 0, "").is_none());
        let f =
            from_command("test", 101, "running 3 tests\nthread panicked at src/a.rs:3\nerror: test failed").unwrap();
        assert_eq!(
            (f.severity, f.confidence, f.load_bearing, f.category.as_str()),
            (Severity::High, 100.0, true, "execution-failure")
        );
        assert!(f.claim.contains("exit code 101") && f.claim.contains("test failed"), "{}", f.claim);
    }
}
