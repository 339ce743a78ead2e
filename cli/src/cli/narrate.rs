//! How `self-evolve replay` shows decisions: JSON lines (`--json`), or a narrated timeline, one
//! readable line per decision, credentials redacted and terminal controls made visible.

use anyhow::Result;
use serde_json::Value;
use std::io::Write;

/// `text` on one line, at most `max` characters: its credentials redacted first (a cut through
/// one leaves a piece the scanner no longer knows, and a key's lines are known as lines).
pub fn clip(text: &str, max: usize) -> String {
    let redacted = self_evolve_scan::redact_secrets(text);
    let one_line = redacted.as_deref().unwrap_or(text).replace('\n', " ");
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// What the timeline shows of a line: decisions quote agents, reviewers and files.
fn redacted(text: &str) -> std::borrow::Cow<'_, str> {
    self_evolve_scan::redact_secrets(text).map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
}

/// Prints decisions as JSON lines, or as a readable timeline.
pub struct Narrator {
    json: bool,
}

impl Narrator {
    pub fn new(json: bool) -> Narrator {
        Narrator { json }
    }

    pub fn stamp(t: u64) -> String {
        let s = t / 1000;
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }

    pub fn note(&mut self, out: &mut impl Write, t: u64, text: &str) -> Result<()> {
        if !self.json {
            writeln!(out, "{}  {}", Self::stamp(t), self_evolve_host::text::visible_lines(&redacted(text)))?;
        }
        Ok(())
    }

    pub fn event(&mut self, out: &mut impl Write, t: u64, text: &str) -> Result<()> {
        self.note(out, t, text)
    }

    pub fn decision(&mut self, out: &mut impl Write, t: u64, d: &Value) -> Result<()> {
        if self.json {
            return Ok(());
        }
        let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
        let line = match s("kind").as_str() {
            "review" => match s("action").as_str() {
                "start" => format!(
                    "  ▶ REVIEW started for {} at turn {} ({}) → {}",
                    s("session"),
                    d["turn"],
                    s("reason"),
                    s("activation")
                ),
                "end" => format!("  ◀ reviewer {} {}: {}", s("activation"), s("status"), s("reason")),
                "abort" => format!("  ✖ reviewer {} aborted: {}", s("activation"), s("reason")),
                _ if s("reason").starts_with("not due") => format!("    turn {} · {}", d["turn"], s("reason")),
                _ => format!("  · review skipped at turn {}: {}", d["turn"], s("reason")),
            },
            "gate" => {
                format!("  ? gate → {} ({}, source {}, {} ms)", s("decision"), s("reason"), s("source"), d["latencyMs"])
            }
            "tool" => {
                let who = if s("agent") == "main" { "agent".to_string() } else { format!("reviewer {}", s("agent")) };
                let result = &d["result"];
                let what = if d["ok"] == true {
                    match (result["status"].as_str(), result) {
                        (Some("staged"), _) => format!(
                            "staged {} as {}\n{}",
                            s_of(result, "path"),
                            s_of(result, "id"),
                            indent(result["diff"].as_str().unwrap_or(""))
                        ),
                        (Some(status), _) => format!("{status} {}", s_of(result, "path")),
                        (None, Value::String(text)) => text.clone(),
                        (None, _) if result["content"].is_string() => format!("viewed {}", s_of(result, "path")),
                        (None, _) if result["skills"].is_array() => {
                            format!("listed {} skills", result["skills"].as_array().map_or(0, Vec::len))
                        }
                        _ => "ok".to_string(),
                    }
                } else {
                    match result["code"].as_str() {
                        Some(code) => format!("REFUSED [{code}] {}", result["message"].as_str().unwrap_or("")),
                        None => format!("REFUSED {}", clip(&result.to_string(), 120)),
                    }
                };
                format!("  ✎ {who} {}: {what}", s("tool"))
            }
            "command" => {
                format!("  $ /skills {}\n{}", s("text").trim_start_matches("/skills").trim(), indent(&s("output")))
            }
            "review-loop" => review_loop_line(d),
            // The curator's pass: a skill's lifecycle moved (active → stale → archived, or back).
            "curator" => format!("  ⌛ curator: {} {} → {} ({})", s("skill"), s("from"), s("to"), s("reason")),
            "session" => format!("  ✖ event of session {} {}: {}", s("session"), s("action"), s("reason")),
            _ => format!("  {d}"),
        };
        // Results quote agents and files: hidden characters are shown, not obeyed.
        writeln!(out, "{}{}", Self::stamp(t), self_evolve_host::text::visible_lines(&redacted(&line)))?;
        Ok(())
    }
}

/// A review-loop decision in the timeline.
fn review_loop_line(d: &Value) -> String {
    let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
    let claims = |k: &str| -> String {
        let list = d[k].as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .map(|f| format!("\n            · [{}] {} — {}", s_of(f, "severity"), location(f), s_of(f, "claim")))
            .collect()
    };
    if d.get("refused").is_some() {
        return format!("  ✖ review loop refused: {}", s_of(&d["refused"], "message"));
    }
    if d["event"] == "reviewer" {
        return match d["error"].as_str() {
            Some(error) => format!("    lens {}: {error}", s("lens")),
            None => format!("    lens {}: {} finding(s), {} falsifier(s)", s("lens"), d["findings"], d["falsifiers"]),
        };
    }
    let dropped: Vec<String> = d["dropped"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|f| format!("{} {}", s_of(f, "dropped"), f["score"]))
        .chain(d["falsified"].as_array().map(Vec::as_slice).unwrap_or_default().iter().map(|_| "falsified".to_string()))
        .collect();
    let dropped = if dropped.is_empty() { String::new() } else { format!("; dropped: {}", dropped.join(", ")) };
    match s("outcome").as_str() {
        "dispatched" => {
            let lenses: Vec<String> = d["lenses"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|l| format!("{}→{}", s_of(l, "lens"), s_of(l, "activation")))
                .collect();
            format!(
                "  ▶ REVIEW LOOP {} iteration {}/{} ({}, {}): {}",
                s("session"),
                d["iteration"],
                d["maxIter"],
                s("mode"),
                s("independence"),
                lenses.join(" ")
            )
        }
        "stopped" | "skipped" => format!("  ✖ review loop {}: {}", s("outcome"), s("message")),
        "continue" => format!(
            "  ↻ review loop continues: {} actionable{dropped}{}\n            next: {}",
            d["actionable"].as_array().map_or(0, Vec::len),
            claims("actionable"),
            s_of(&d["next"], "reason")
        ),
        outcome => format!("  ◀ review loop {outcome}{dropped}{}\n{}", claims("actionable"), indent(&s("verdict"))),
    }
}

fn location(f: &Value) -> String {
    match (f["file"].as_str(), f["line"].as_u64()) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.to_string(),
        _ => s_of(f, "lens"),
    }
}

fn s_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or("").to_string()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("            {l}")).collect::<Vec<_>>().join("\n")
}
