//! A feedback run's spec: stages, what checks them, where a failing check sends work back,
//! and each target's stopping rule. Parsed from JSON and validated before a run begins.

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    /// `workflow` (budgets from each target's `refine`) or `dag` (budgets from `maxKickbacks`).
    #[serde(default = "workflow")]
    pub mode: String,
    pub stages: Vec<Stage>,
    /// dag mode: one number for the whole graph, or a map of per-target budgets.
    #[serde(default)]
    pub max_kickbacks: Option<Value>,
}

fn workflow() -> String {
    "workflow".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Stage {
    pub name: String,
    /// dag mode: the stages this one depends on (its possible send-back targets).
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// The stages this one may send work back to: declared in workflow mode; in dag mode, when
    /// given, it narrows the dependencies to the ones listed (seed 001 calls it
    /// `acceptsKickbackTo`, which is read too).
    #[serde(default, alias = "acceptsKickbackTo")]
    pub sends_back_to: Vec<String>,
    #[serde(default)]
    pub check: Option<Check>,
    /// Where a failing check sends the work; without one, a failing check fails the run.
    #[serde(default)]
    pub target: Option<String>,
    /// The stopping rule when this stage is a target: a number of refinements or a judge.
    #[serde(default)]
    pub refine: Option<Refine>,
    /// A `loop()` body: `max` counts runs, the first included (`max: N+1` ≡ `refine: N`).
    #[serde(default, rename = "loop")]
    pub loop_max: Option<LoopMax>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopMax {
    pub max: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Refine {
    Count(u32),
    Judge { judge: JudgeRule },
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeRule {
    #[serde(default)]
    pub cap: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Check {
    Reviewer,
    Panel {
        reviewers: Vec<String>,
        pass: u32,
        #[serde(default)]
        synthesise: bool,
    },
    Command,
    Person,
    /// A goal check: an unmet requirement counts as a round, without reviews or judge.
    Goal,
}

/// A target's stopping rule, resolved from the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// At most this many refinements (send-backs).
    Refinements(u32),
    /// A judge decides each round; `cap` refinements at most when set.
    Judge { cap: Option<u32> },
}

impl Spec {
    pub fn parse(text: &str) -> Result<Spec, String> {
        let spec: Spec = serde_json::from_str(text).map_err(|e| format!("invalid feedback spec: {e}"))?;
        spec.validate()?;
        Ok(spec)
    }

    pub fn stage(&self, name: &str) -> Option<&Stage> {
        self.stages.iter().find(|s| s.name == name)
    }

    fn validate(&self) -> Result<(), String> {
        if self.mode != "workflow" && self.mode != "dag" {
            return Err(format!("mode must be `workflow` or `dag`, found `{}`", self.mode));
        }
        if self.stages.is_empty() {
            return Err("a spec needs at least one stage".into());
        }
        let mut seen = std::collections::BTreeSet::new();
        for stage in &self.stages {
            if stage.name.is_empty() || !seen.insert(stage.name.as_str()) {
                return Err(format!("stage names must be unique and non-empty (`{}`)", stage.name));
            }
        }
        for stage in &self.stages {
            let known = |n: &String| self.stage(n).is_some();
            for name in stage.depends_on.iter().chain(&stage.sends_back_to).chain(stage.target.iter()) {
                if !known(name) {
                    return Err(format!("stage `{}` names `{name}`, which is not a stage", stage.name));
                }
            }
            if self.mode == "dag"
                && let Some(name) =
                    stage.sends_back_to.iter().find(|n| **n != stage.name && !self.depends_on(&stage.name, n))
            {
                return Err(format!(
                    "stage `{}` lists `{name}` in acceptsKickbackTo, but does not depend on it (a dag step sends work back only to steps it depends on)",
                    stage.name
                ));
            }
            if let Some(Check::Panel { reviewers, pass, .. }) = &stage.check
                && (*pass == 0 || *pass as usize > reviewers.len())
            {
                return Err(format!(
                    "stage `{}`: a panel's pass count must be 1–{} (its reviewers), found {pass}",
                    stage.name,
                    reviewers.len()
                ));
            }
            if stage.refine.is_some() && stage.loop_max.is_some() {
                return Err(format!("stage `{}`: set `refine` or `loop`, not both", stage.name));
            }
            if stage.loop_max.as_ref().is_some_and(|l| l.max == 0) {
                return Err(format!("stage `{}`: `loop.max` counts runs and must be at least 1", stage.name));
            }
        }
        if let Some(budget) = &self.max_kickbacks {
            match budget {
                Value::Number(n) if n.is_u64() => {}
                Value::Object(map) => {
                    for (target, n) in map {
                        if self.stage(target).is_none() || !n.is_u64() {
                            return Err(format!("maxKickbacks.{target}: expected a stage name and a count"));
                        }
                    }
                }
                _ => return Err("maxKickbacks must be a count or a map of stage → count".into()),
            }
        }
        Ok(())
    }

    /// The stopping rule of `target` in this spec's mode.
    pub fn rule(&self, target: &str) -> Rule {
        let stage = self.stage(target);
        if let Some(Refine::Judge { judge }) = stage.and_then(|s| s.refine.as_ref()) {
            return Rule::Judge { cap: judge.cap };
        }
        if let Some(l) = stage.and_then(|s| s.loop_max.as_ref()) {
            return Rule::Refinements(crate::rounds::refinements(l.max));
        }
        if self.mode == "dag" {
            return Rule::Refinements(match &self.max_kickbacks {
                // One budget for the whole graph: enforced across targets by the run.
                Some(Value::Number(n)) => u32::try_from(n.as_u64().unwrap_or(0)).unwrap_or(u32::MAX),
                Some(Value::Object(map)) => map.get(target).and_then(Value::as_u64).map_or(0, |n| n as u32),
                _ => 0,
            });
        }
        match stage.and_then(|s| s.refine.as_ref()) {
            Some(Refine::Count(n)) => Rule::Refinements(*n),
            _ => Rule::Refinements(1),
        }
    }

    /// dag mode with one number: the shared budget across every target.
    pub fn global_budget(&self) -> Option<u32> {
        match (&*self.mode, &self.max_kickbacks) {
            ("dag", Some(Value::Number(n))) => Some(u32::try_from(n.as_u64().unwrap_or(0)).unwrap_or(u32::MAX)),
            _ => None,
        }
    }

    /// Whether `from` may send work back to `to`: declared in workflow mode, a dependency
    /// (direct or through others) in dag mode. A stage may always send back to itself.
    pub fn may_send_back(&self, from: &str, to: &str) -> bool {
        let Some(stage) = self.stage(from) else { return false };
        if from == to {
            return true;
        }
        if self.mode == "dag" {
            // A declared list is the whole permission; without one, any dependency.
            if !stage.sends_back_to.is_empty() {
                return stage.sends_back_to.iter().any(|t| t == to);
            }
            return self.depends_on(from, to);
        }
        stage.sends_back_to.iter().any(|t| t == to) || stage.target.as_deref() == Some(to)
    }

    /// Whether `from` depends on `to`, directly or through other stages (dag mode).
    fn depends_on(&self, from: &str, to: &str) -> bool {
        let Some(stage) = self.stage(from) else { return false };
        let mut stack: Vec<&str> = stage.depends_on.iter().map(String::as_str).collect();
        let mut seen = std::collections::BTreeSet::new();
        while let Some(next) = stack.pop() {
            if next == to {
                return true;
            }
            if seen.insert(next)
                && let Some(s) = self.stage(next)
            {
                stack.extend(s.depends_on.iter().map(String::as_str));
            }
        }
        false
    }

    pub fn names(&self) -> BTreeMap<&str, usize> {
        self.stages.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect()
    }
}
