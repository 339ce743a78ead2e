//! Ending an iteration (seed 003, Steps 6–7): aggregation, the decision, findings history,
//! and for a terminal verdict the markdown, the trail, archival and the locks' release.

use super::aggregate::{self, Aggregation};
use super::findings::Finding;
use super::lenses::Mode;
use super::run::{Run, Step};
use super::state::{self};
use super::verdict::{self, Terminal, Verdict};
use crate::host::{Host, Level};
use crate::rounds;
use serde_json::{Value, json};

impl Run {
    /// Steps 6 and 7.
    pub(super) fn decide(&mut self, host: &impl Host) -> Step {
        let addressed = self.history(|v| v["addressed"].as_bool() == Some(true));
        let kept: Vec<Finding> =
            self.candidates.iter().filter(|c| c.falsified.is_none()).map(|c| c.finding.clone()).collect();
        let input = aggregate::Input {
            corpus: &self.corpus,
            sections: self.diff_sections(),
            mode: self.mode,
            artifact: &self.artifact,
            iteration: self.state.iteration,
            addressed: &addressed,
        };
        let agg = aggregate::aggregate(&input, kept);
        let iteration = self.state.iteration + 1;
        let may_refine = rounds::may_refine(self.state.iteration, rounds::refinements(self.state.max_iterations));
        // Seed 003, Step 7, with two honesty rules: an iteration the ceiling cut short is
        // exhausted (cost discipline), and one where no lens delivered reviewed nothing.
        let terminal = if self.truncated || self.delivered == 0 {
            Some(Terminal::Exhausted)
        } else if agg.actionable.is_empty() {
            Some(Terminal::Clean)
        } else if self.over_ceiling || self.spent() >= self.state.cost_ceiling_input_tokens || !may_refine {
            Some(Terminal::Exhausted)
        } else {
            None
        };
        self.record_history(iteration, &agg, terminal.is_none());
        if let Some(terminal) = terminal {
            let out = self.terminal(host, terminal, &agg, &addressed, Vec::new());
            return Step { decisions: vec![out.to_string()], finished: true };
        }
        self.state.iteration += 1;
        self.state.last_diff_sha = Some(self.sha.clone());
        self.save_spend();
        if let Err(err) = state::save(host, &self.state) {
            host.log(Level::Warn, &format!("review-loop: could not save state: {err}"));
        }
        self.release(host);
        let next = self.state.iteration;
        let max = self.state.max_iterations;
        let mut out = self.decision("continue", &agg, iteration);
        out["next"] = json!({
            "decision": "block",
            "reason": format!("/review-loop --auto --session-id {} --iteration {next} --max-iter {max} --mode {}", self.state.session_id, self.mode.as_str()),
            "systemMessage": format!("Review-loop iter {}/{max}", next + 1),
        });
        out["summary"] = json!(format!(
            "Iteration {iteration}/{max}: {} actionable finding(s) to fix (one fix per finding; a non-obvious fix gets a \
             `REVIEW-LOOP-iter:` tracking comment), then call begin again with the new artifact.",
            agg.actionable.len()
        ));
        Step { decisions: vec![out.to_string()], finished: true }
    }

    fn record_history(&mut self, iteration: u32, agg: &Aggregation, continuing: bool) {
        let entry = |f: &Finding, extra: Value| {
            let mut v = f.to_json();
            v["iteration"] = json!(iteration);
            if let Value::Object(map) = extra {
                for (k, val) in map {
                    v[k] = val;
                }
            }
            v
        };
        let mut items = Vec::new();
        items.extend(agg.actionable.iter().map(|f| entry(f, json!({"class": "actionable", "addressed": continuing}))));
        items.extend(agg.speculative.iter().map(|f| entry(f, json!({"class": "speculative", "addressed": false}))));
        items.extend(agg.dropped.iter().map(|d| entry(&d.finding, json!({"dropped": d.reason, "score": d.score}))));
        items.extend(self.candidates.iter().filter_map(|c| {
            c.falsified.as_ref().map(|e| entry(&c.finding, json!({"dropped": "falsified", "evidence": e})))
        }));
        self.state.findings_history.extend(items);
    }

    fn save_spend(&mut self) {
        let (input, output) = self.totals();
        self.state.cost_spent_input_tokens = input;
        self.state.cost_spent_output_tokens = output;
        self.state.estimated_activations += self.counted.values().filter(|s| s.estimated).count() as u32;
        self.counted.clear();
        self.base = (input, output);
    }

    fn release(&self, host: &impl Host) {
        for lock in &self.locks {
            state::release(host, lock, &self.id);
        }
    }

    fn decision(&self, outcome: &str, agg: &Aggregation, iteration: u32) -> Value {
        let (input, output) = self.totals();
        let list = |fs: &[Finding]| fs.iter().map(Finding::to_json).collect::<Vec<_>>();
        let falsified: Vec<Value> = self
            .candidates
            .iter()
            .filter_map(|c| {
                c.falsified.as_ref().map(|e| json!({"claim": c.finding.claim, "lens": c.finding.lens, "evidence": e}))
            })
            .collect();
        let estimated = self.state.estimated_activations + self.counted.values().filter(|s| s.estimated).count() as u32;
        json!({
            "kind": "review-loop", "run": self.id, "session": self.state.session_id, "mode": self.mode.as_str(),
            "iteration": iteration,
            "maxIter": self.state.max_iterations, "outcome": outcome, "independence": self.independence.as_str(),
            "actionable": list(&agg.actionable), "speculative": list(&agg.speculative),
            "dropped": agg.dropped.iter().map(|d| d.to_json()).collect::<Vec<_>>(), "falsified": falsified,
            "failures": self.failures,
            "tokens": {"input": input, "output": output, "ceiling": self.state.cost_ceiling_input_tokens, "estimatedActivations": estimated},
        })
    }

    /// A terminal verdict: completion, verdict, trail, archive, locks released.
    pub(super) fn terminal(
        &mut self,
        host: &impl Host,
        terminal: Terminal,
        agg: &Aggregation,
        fixed: &[Finding],
        warnings: Vec<String>,
    ) -> Value {
        let outcome = match terminal {
            Terminal::Clean if self.independence.is_independent() && !self.incomplete() => "review-clean",
            Terminal::Clean => "no-blocking-findings",
            Terminal::Exhausted => "review-exhausted",
            Terminal::Stalled => "review-stalled",
        };
        // A stall is found before the iteration runs: the last one reviewed is the one counted.
        let iterations = self.state.iteration + u32::from(terminal != Terminal::Stalled);
        let mut out = self.decision(outcome, agg, iterations);
        self.save_spend();
        let verdict = Verdict {
            terminal,
            mode: self.mode,
            branch: &self.state.scope.branch,
            commit: self.commit.as_deref(),
            uncommitted: self.uncommitted,
            iterations,
            lenses: &self.lenses,
            independence: &self.independence,
            ack: self.ack.as_deref(),
            fixed,
            unresolved: &agg.actionable,
            speculative: &agg.speculative,
            degraded: &self.degraded(),
            incomplete: self.incomplete(),
        };
        let markdown = verdict.markdown(None);
        // Claim mode posts only when the analysis lives in files (seed: tied to an open PR).
        let trail = if self.mode == Mode::Claim && self.state.scope.files.is_empty() {
            json!({"skipped": "claim mode without files has no PR to post to"})
        } else {
            verdict::post(host, &verdict)
        };
        self.state.completion = Some(outcome.to_string());
        self.state.verdict = Some(markdown.clone());
        let archived = state::archive(host, &self.state, self.started_ms);
        self.release(host);
        out["verdictLine"] = json!(verdict.line());
        out["verdict"] = json!(markdown);
        out["trail"] = trail;
        match archived {
            Ok(path) => out["archived"] = json!(path),
            Err(err) => out["archiveError"] = json!(err.to_string()),
        }
        if !warnings.is_empty() {
            out["warnings"] = json!(warnings);
        }
        let (input, output) = self.totals();
        out["summary"] = json!(format!(
            "{}: {} lens(es), {} unresolved actionable, {} speculative, {} dropped, {} falsified; {} tokens of plan usage \
             (API-equivalent) of {}.",
            verdict.line(),
            self.lenses.len(),
            agg.actionable.len(),
            agg.speculative.len(),
            agg.dropped.len(),
            self.candidates.iter().filter(|c| c.falsified.is_some()).count(),
            input + output,
            self.state.cost_ceiling_input_tokens
        ));
        out
    }

    /// A lens or the execution check did not deliver: the review is not whole, so it may not
    /// say `review-clean` (a failed falsifier only keeps its finding, which weakens nothing).
    pub(super) fn incomplete(&self) -> bool {
        self.failures.iter().any(|f| f.get("lens").is_some() && f.get("error").is_some())
    }

    /// Failed lenses, the ceiling, and an iteration where no lens delivered, in words.
    fn degraded(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .failures
            .iter()
            .filter_map(|f| Some(format!("lens `{}`: {}", f["lens"].as_str()?, f["error"].as_str()?)))
            .collect();
        let falsifiers = self.failures.iter().filter(|f| f.get("falsifier").is_some()).count();
        if falsifiers > 0 {
            out.push(format!("{falsifiers} finding(s) kept unfalsified (falsifier failed or was cut)"));
        }
        if self.truncated {
            out.push(format!("the token ceiling ({}) cut the iteration short", self.state.cost_ceiling_input_tokens));
        }
        if self.delivered == 0 && !self.prompts.is_empty() {
            out.push("no lens delivered a review".into());
        }
        out
    }
}
