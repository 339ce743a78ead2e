//! What a check's result means: one reviewer, a panel with a pass count, a panel whose
//! findings are synthesised and voted on, a command's exit code, a person, a goal check.

use super::spec::Check;
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub id: String,
    pub title: String,
    pub detail: String,
    /// `block` survives a majority rejection in synthesis.
    pub severity: String,
    pub raised_by: Vec<String>,
    /// The judge's reason, once it decided to act on it.
    pub reason: Option<String>,
}

impl Finding {
    pub fn to_json(&self) -> Value {
        let mut v = json!({"id": self.id, "title": self.title, "severity": self.severity});
        if !self.detail.is_empty() {
            v["detail"] = json!(self.detail);
        }
        if !self.raised_by.is_empty() {
            v["raisedBy"] = json!(self.raised_by);
        }
        if let Some(reason) = &self.reason {
            v["reason"] = json!(reason);
        }
        v
    }

    fn from_json(value: &Value, reviewer: &str, index: usize) -> Finding {
        let title = value["title"].as_str().or_else(|| value.as_str()).unwrap_or("(untitled finding)").to_string();
        Finding {
            id: value["id"].as_str().map(str::to_string).unwrap_or_else(|| format!("{reviewer}-{}", index + 1)),
            title,
            detail: value["detail"].as_str().unwrap_or_default().to_string(),
            severity: value["severity"].as_str().unwrap_or("major").to_string(),
            raised_by: if reviewer.is_empty() { vec![] } else { vec![reviewer.to_string()] },
            reason: None,
        }
    }

    /// What makes two findings "the same problem": an explicit `key`, else the title's words.
    fn key(value: &Value) -> String {
        match value["key"].as_str() {
            Some(k) => k.to_string(),
            None => value["title"]
                .as_str()
                .unwrap_or_default()
                .to_lowercase()
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Pass,
    Pause(String),
    /// `judged`: a judge may decide these (a goal check's unmet requirement goes back without one).
    Fail {
        findings: Vec<Finding>,
        judged: bool,
    },
}

fn findings_of(value: &Value, reviewer: &str) -> Vec<Finding> {
    value["findings"]
        .as_array()
        .map(|list| list.iter().enumerate().map(|(i, f)| Finding::from_json(f, reviewer, i)).collect())
        .unwrap_or_default()
}

pub fn evaluate(check: &Check, event: &Value) -> Result<Outcome, String> {
    match check {
        Check::Reviewer => {
            let pass = event["pass"].as_bool().ok_or("a reviewer's result needs `pass`")?;
            Ok(if pass {
                Outcome::Pass
            } else {
                Outcome::Fail { findings: findings_of(event, "reviewer"), judged: true }
            })
        }
        Check::Panel { reviewers, pass, synthesise } => panel(reviewers, *pass, *synthesise, event),
        Check::Command => {
            let code = event["exitCode"].as_i64().ok_or("a command's result needs `exitCode`")?;
            if code == 0 {
                return Ok(Outcome::Pass);
            }
            let output = event["output"].as_str().unwrap_or_default();
            let tail: String = output.chars().rev().take(2_000).collect::<Vec<_>>().into_iter().rev().collect();
            let finding = Finding {
                id: "command".into(),
                title: format!("the command exited with {code}"),
                detail: tail,
                severity: "block".into(),
                raised_by: vec![],
                reason: None,
            };
            Ok(Outcome::Fail { findings: vec![finding], judged: true })
        }
        Check::Person => match event["answer"].as_str() {
            Some("yes") => Ok(Outcome::Pass),
            Some("no") => {
                let note = event["note"].as_str().unwrap_or("the person said no");
                let finding = Finding {
                    id: "person".into(),
                    title: note.to_string(),
                    detail: String::new(),
                    severity: "block".into(),
                    raised_by: vec!["person".into()],
                    reason: None,
                };
                Ok(Outcome::Fail { findings: vec![finding], judged: true })
            }
            Some("silence") | None => Ok(Outcome::Pause("waiting for a person's answer".into())),
            Some(other) => Err(format!("a person answers yes, no or silence, not `{other}`")),
        },
        Check::Goal => {
            if event["met"].as_bool().ok_or("a goal check's result needs `met`")? {
                return Ok(Outcome::Pass);
            }
            let requirement = event["requirement"].as_str().unwrap_or("a goal requirement is unmet");
            let finding = Finding {
                id: "goal".into(),
                title: requirement.to_string(),
                detail: String::new(),
                severity: "block".into(),
                raised_by: vec![],
                reason: None,
            };
            Ok(Outcome::Fail { findings: vec![finding], judged: false })
        }
    }
}

/// Votes: `[{"reviewer", "pass", "findings"}]`; with synthesis also
/// `ballots: [{"reviewer", "finding": KEY, "accept"}]`.
fn panel(reviewers: &[String], pass: u32, synthesise: bool, event: &Value) -> Result<Outcome, String> {
    let votes = event["votes"].as_array().ok_or("a panel's result needs `votes`")?;
    let mut passes = 0;
    let mut raised: Vec<(String, Value, String)> = Vec::new(); // (key, finding, reviewer)
    let mut voted = std::collections::BTreeSet::new();
    for vote in votes {
        let reviewer = vote["reviewer"].as_str().ok_or("each vote needs `reviewer`")?;
        if !reviewers.iter().any(|r| r == reviewer) || !voted.insert(reviewer.to_string()) {
            return Err(format!("`{reviewer}` is not a reviewer of this panel, or voted twice"));
        }
        if vote["pass"].as_bool().ok_or("each vote needs `pass`")? {
            passes += 1;
        }
        for f in vote["findings"].as_array().into_iter().flatten() {
            raised.push((Finding::key(f), f.clone(), reviewer.to_string()));
        }
    }
    if passes >= pass {
        return Ok(Outcome::Pass);
    }
    if !synthesise {
        let findings: Vec<Finding> = votes
            .iter()
            .filter(|v| v["pass"] == false)
            .flat_map(|v| findings_of(v, v["reviewer"].as_str().unwrap_or_default()))
            .collect();
        return Ok(Outcome::Fail { findings, judged: true });
    }
    // Merge findings naming the same problem.
    let mut merged: Vec<(String, Finding)> = Vec::new();
    for (key, value, reviewer) in raised {
        match merged.iter_mut().find(|(k, _)| *k == key) {
            Some((_, f)) => {
                if !f.raised_by.contains(&reviewer) {
                    f.raised_by.push(reviewer);
                }
                if value["severity"] == "block" {
                    f.severity = "block".into();
                }
            }
            None => {
                let mut f = Finding::from_json(&value, &reviewer, merged.len());
                f.id = if value["id"].is_string() { f.id } else { format!("f{}", merged.len() + 1) };
                merged.push((key, f));
            }
        }
    }
    // Each reviewer votes once on each finding it did not raise; most reject → dropped, unless a block.
    let ballots = event["ballots"].as_array().cloned().unwrap_or_default();
    let kept: Vec<Finding> = merged
        .into_iter()
        .filter(|(key, f)| {
            let eligible: Vec<&String> = reviewers.iter().filter(|r| !f.raised_by.contains(r)).collect();
            let mut counted = std::collections::BTreeSet::new();
            let rejects = ballots
                .iter()
                .filter(|b| b["finding"].as_str() == Some(key.as_str()) || b["finding"].as_str() == Some(f.id.as_str()))
                .filter(|b| b["reviewer"].as_str().is_some_and(|r| eligible.iter().any(|e| *e == r)))
                .filter(|b| counted.insert(b["reviewer"].as_str().unwrap_or_default().to_string()))
                .filter(|b| b["accept"] == false)
                .count();
            f.severity == "block" || rejects * 2 <= eligible.len()
        })
        .map(|(_, f)| f)
        .collect();
    if kept.is_empty() {
        return Ok(Outcome::Pass);
    }
    Ok(Outcome::Fail { findings: kept, judged: true })
}
