//! Feedback loops (seed 001): a deterministic state machine a host's workflow engine asks,
//! after every build and check, whether work advances, goes back to its target with findings,
//! asks a judge, pauses for a person, or fails — counting rounds exactly as "Counting rounds".

mod checks;
pub mod spec;

use checks::{Finding, Outcome};
use serde_json::{Value, json};
use spec::{Rule, Spec};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
enum Status {
    Running,
    Paused,
    Passed,
    Failed(String),
}

#[derive(Debug, Clone)]
struct PendingJudge {
    stage: String,
    target: String,
    findings: Vec<Finding>,
    /// The cap is spent: only letting the work stand passes.
    last_round: bool,
}

pub struct Run {
    spec: Spec,
    builds: BTreeMap<String, u32>,
    /// Refinements used per target: shared by every check that sends work there.
    used: BTreeMap<String, u32>,
    /// dag mode with one number: send-backs used across the whole graph.
    global_used: u32,
    /// Per target: findings a judge skipped, with why; later reviews are told.
    skipped: BTreeMap<String, Vec<Value>>,
    pending: Option<PendingJudge>,
    status: Status,
    rounds: Vec<Value>,
}

impl Run {
    pub fn begin(spec_json: &str) -> Result<Run, String> {
        Ok(Run {
            spec: Spec::parse(spec_json)?,
            builds: BTreeMap::new(),
            used: BTreeMap::new(),
            global_used: 0,
            skipped: BTreeMap::new(),
            pending: None,
            status: Status::Running,
            rounds: Vec::new(),
        })
    }

    /// One event from the host: `{"event":"built","stage":S}`, `{"event":"check","stage":S,…}`
    /// or `{"event":"judge","stage":S,"decisions":[…]}`. Returns the decision.
    /// Findings, notes and command output are a check's words, kept in the record and returned
    /// in decisions: redacted whole as they arrive (before a command's tail is cut from its end).
    pub fn report(&mut self, event_json: &str) -> Result<Value, String> {
        let mut event: Value = serde_json::from_str(event_json).map_err(|e| format!("invalid event: {e}"))?;
        crate::library::guards::scan::redact_json(&mut event);
        let stage = event["stage"].as_str().ok_or("an event needs `stage`")?.to_string();
        if self.spec.stage(&stage).is_none() {
            return Err(format!("no stage `{stage}` in this run"));
        }
        match &self.status {
            Status::Passed | Status::Failed(_) => return Err("the run has ended; begin a new one".into()),
            Status::Paused | Status::Running => {}
        }
        match event["event"].as_str() {
            Some("built") => {
                let n = self.builds.entry(stage.clone()).or_default();
                *n += 1;
                Ok(json!({"action": "built", "stage": stage, "run": *n, "skipped": self.skipped_for(&stage)}))
            }
            Some("check") => self.check(&stage, &event),
            Some("judge") => self.judge(&stage, &event),
            other => Err(format!("unknown event {other:?}: use built, check or judge")),
        }
    }

    fn skipped_for(&self, target: &str) -> Vec<Value> {
        self.skipped.get(target).cloned().unwrap_or_default()
    }

    fn check(&mut self, stage: &str, event: &Value) -> Result<Value, String> {
        if self.pending.is_some() {
            return Err("a judge's answer is awaited before the next check".into());
        }
        let spec_stage = self.spec.stage(stage).ok_or("unknown stage")?;
        let check = spec_stage.check.clone().ok_or_else(|| format!("stage `{stage}` has no check"))?;
        let outcome = checks::evaluate(&check, event)?;
        let target = event["target"].as_str().map(str::to_string).or_else(|| spec_stage.target.clone());
        match outcome {
            Outcome::Pass => {
                self.status = Status::Running;
                self.round(stage, "pass", &[], None);
                Ok(self.advance(stage))
            }
            Outcome::Pause(why) => {
                self.status = Status::Paused;
                self.round(stage, "pause", &[], None);
                Ok(json!({"action": "pause", "stage": stage, "reason": why}))
            }
            Outcome::Fail { findings, judged } => {
                self.status = Status::Running;
                let Some(target) = target else {
                    return Ok(self.fail(
                        stage,
                        format!("`{stage}` failed and names no target to send the work back to"),
                        &findings,
                    ));
                };
                if !self.spec.may_send_back(stage, &target) {
                    let listed = self.spec.stage(stage).is_some_and(|s| !s.sends_back_to.is_empty());
                    let why = match (self.spec.mode == "dag", listed) {
                        (true, true) => "among the steps its acceptsKickbackTo lists",
                        (true, false) => "one of its dependencies",
                        (false, _) => "declared in its sendsBackTo",
                    };
                    let reason = format!("`{stage}` may not send work back to `{target}`: `{target}` is not {why}");
                    return Ok(self.fail(stage, reason, &findings));
                }
                let rule = self.spec.rule(&target);
                if let (Rule::Judge { cap }, true) = (rule, judged) {
                    let used = self.used.get(&target).copied().unwrap_or(0);
                    let last_round = cap.is_some_and(|c| used >= c);
                    self.round(stage, "ask-judge", &findings, cap);
                    let decision = json!({
                        "action": "ask-judge", "stage": stage, "target": target,
                        "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
                        "round": used + 1, "limit": cap, "lastRound": last_round,
                        "skipped": self.skipped_for(&target),
                    });
                    self.pending = Some(PendingJudge { stage: stage.to_string(), target, findings, last_round });
                    return Ok(decision);
                }
                Ok(self.send_back(stage, &target, &findings, rule))
            }
        }
    }

    fn judge(&mut self, stage: &str, event: &Value) -> Result<Value, String> {
        let pending = match &self.pending {
            Some(p) if p.stage == stage => p.clone(),
            _ => return Err(format!("no judge's answer is awaited for `{stage}`")),
        };
        let decisions = event["decisions"].as_array().ok_or("a judge event needs `decisions`")?;
        let mut acted = Vec::new();
        for finding in &pending.findings {
            let decision = decisions
                .iter()
                .find(|d| d["finding"].as_str() == Some(finding.id.as_str()))
                .ok_or_else(|| format!("the judge did not decide finding `{}`", finding.id))?;
            let act = decision["act"].as_bool().ok_or("each decision needs `act`: true or false")?;
            let reason = decision["reason"].as_str().map(str::to_string).unwrap_or_else(|| {
                if act { "act: it must be fixed before the work can stand" } else { "skip: not worth another round" }
                    .to_string()
            });
            if act {
                acted.push(Finding { reason: Some(reason), ..finding.clone() });
            } else {
                let mut skipped = finding.to_json();
                skipped["reason"] = json!(reason);
                self.skipped.entry(pending.target.clone()).or_default().push(skipped);
            }
        }
        self.pending = None;
        if acted.is_empty() {
            self.round(stage, "judge: work stands", &[], None);
            return Ok(self.advance(stage));
        }
        if pending.last_round {
            let reason = format!("the judge acted on findings of the last round `{}`'s cap allows", pending.target);
            return Ok(self.fail(stage, reason, &acted));
        }
        let rule = self.spec.rule(&pending.target);
        Ok(self.send_back(stage, &pending.target, &acted, rule))
    }

    fn send_back(&mut self, stage: &str, target: &str, findings: &[Finding], rule: Rule) -> Value {
        let used = self.used.get(target).copied().unwrap_or(0);
        let limit = match rule {
            Rule::Refinements(n) => Some(n),
            Rule::Judge { cap } => cap,
        };
        let global = self.spec.global_budget();
        let exhausted = limit.is_some_and(|l| !crate::rounds::may_refine(used, l))
            || global.is_some_and(|g| !crate::rounds::may_refine(self.global_used, g));
        if exhausted {
            let reason = match global {
                Some(g) if self.global_used >= g => format!("the graph's {g} send-back(s) are spent"),
                _ => format!("`{target}` has used its {} refinement(s)", limit.unwrap_or(0)),
            };
            return self.fail(stage, reason, findings);
        }
        self.used.insert(target.to_string(), used + 1);
        self.global_used += 1;
        self.round(stage, "send-back", findings, limit);
        json!({
            "action": "send-back", "from": stage, "to": target,
            "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
            "round": used + 1, "limit": limit, "skipped": self.skipped_for(target),
        })
    }

    /// The check of `stage` passed: the next stage, or the end of the run.
    fn advance(&mut self, stage: &str) -> Value {
        let names = self.spec.names();
        let index = names.get(stage).copied().unwrap_or(0);
        let later_check = self.spec.stages[index + 1..].iter().any(|s| s.check.is_some());
        if later_check {
            let next = &self.spec.stages[index + 1].name;
            return json!({"action": "advance", "stage": stage, "next": next});
        }
        self.status = Status::Passed;
        let mut done = self.summary();
        done["action"] = json!("done");
        done
    }

    fn fail(&mut self, stage: &str, reason: String, findings: &[Finding]) -> Value {
        self.round(stage, "fail", findings, None);
        self.status = Status::Failed(reason.clone());
        json!({"action": "fail", "stage": stage, "reason": reason,
            "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>()})
    }

    fn round(&mut self, stage: &str, outcome: &str, findings: &[Finding], limit: Option<u32>) {
        let target = self.spec.stage(stage).and_then(|s| s.target.clone());
        let count = target.as_ref().and_then(|t| self.used.get(t)).copied().unwrap_or(0);
        self.rounds.push(json!({
            "stage": stage, "outcome": outcome, "target": target, "count": count, "limit": limit,
            "builds": self.builds.clone(),
            "findings": findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
        }));
    }

    /// `{"status": …, "<stage>Runs": n, …}` — the seed's example record shape.
    pub fn summary(&self) -> Value {
        let mut out = serde_json::Map::new();
        let status = match &self.status {
            Status::Running => "running",
            Status::Paused => "paused",
            Status::Passed => "pass",
            Status::Failed(_) => "fail",
        };
        out.insert("status".into(), json!(status));
        for (stage, n) in &self.builds {
            out.insert(format!("{}Runs", camel(stage)), json!(n));
        }
        Value::Object(out)
    }

    /// Every round with its findings, count and limit; a stopped run says why.
    pub fn record(&self) -> Value {
        let mut record = self.summary();
        record["rounds"] = json!(self.rounds);
        if let Status::Failed(reason) = &self.status {
            record["reason"] = json!(reason);
        }
        record["skipped"] = json!(self.skipped);
        record
    }
}

fn camel(name: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in name.chars() {
        if c == '-' || c == '_' || c == ' ' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests;
