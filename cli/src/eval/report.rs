//! What an evaluation found: per task and overall, each arm's success rate with its interval,
//! and the paired comparison (`stats::paired`) with a verdict only where the pairs support one.
//! As a table for the terminal, or as JSON.

use super::run::Outcome;
use super::stats::{self, Paired};
use super::{arms::Arm, suite::Suite};
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    pub successes: u64,
    pub runs: u64,
    pub interval: (f64, f64),
}

/// The tokens an arm's runs reported (`usage`); runs that printed none are not counted.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArmTokens {
    pub input: u64,
    pub output: u64,
    pub total: u64,
    /// Runs that reported their tokens.
    pub runs: u64,
}

fn tokens(outcomes: &[&Outcome]) -> ArmTokens {
    let mut out = ArmTokens::default();
    for t in outcomes.iter().filter_map(|o| o.tokens) {
        out.input = out.input.saturating_add(t.input);
        out.output = out.output.saturating_add(t.output);
        out.total = out.total.saturating_add(t.total());
        out.runs += 1;
    }
    out
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskReport {
    pub id: String,
    pub skills: Vec<String>,
    pub a: Rate,
    pub b: Rate,
    pub paired: Paired,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub suite_sha256: String,
    pub agent: String,
    pub arms: [String; 2],
    pub repeat: u32,
    /// Every run of every task in both arms is on record.
    pub complete: bool,
    /// Runs that ended in a timeout or an error, not in a check's answer.
    pub not_checked: u64,
    pub a: Rate,
    pub b: Rate,
    pub overall: Paired,
    /// Arm A's and arm B's reported tokens.
    pub tokens: [ArmTokens; 2],
    pub tasks: Vec<TaskReport>,
}

fn rate(outcomes: &[&Outcome]) -> Rate {
    let successes = outcomes.iter().filter(|o| o.success).count() as u64;
    let runs = outcomes.len() as u64;
    Rate { successes, runs, interval: stats::wilson(successes, runs) }
}

/// The report of the runs on record.
pub fn build(
    suite: &Suite,
    agent: &str,
    arms: &[Arm; 2],
    repeat: u32,
    done: &BTreeMap<(String, String, u32), Outcome>,
) -> Report {
    let (mut all_a, mut all_b, mut all_pairs) = (Vec::new(), Vec::new(), Vec::new());
    let mut tasks = Vec::new();
    for task in &suite.tasks {
        let get = |arm: &str, rep: u32| done.get(&(task.id.clone(), arm.to_string(), rep));
        let a: Vec<&Outcome> = (0..repeat).filter_map(|r| get(arms[0].name, r)).collect();
        let b: Vec<&Outcome> = (0..repeat).filter_map(|r| get(arms[1].name, r)).collect();
        let pairs: Vec<(bool, bool)> =
            (0..repeat).filter_map(|r| Some((get(arms[0].name, r)?.success, get(arms[1].name, r)?.success))).collect();
        all_a.extend(a.iter().copied());
        all_b.extend(b.iter().copied());
        all_pairs.extend(pairs.iter().copied());
        tasks.push(TaskReport {
            id: task.id.clone(),
            skills: task.skills.clone(),
            a: rate(&a),
            b: rate(&b),
            paired: stats::paired(&pairs),
        });
    }
    let expected = suite.tasks.len() as u64 * u64::from(repeat);
    let not_checked =
        all_a.iter().chain(&all_b).filter(|o| !matches!(o.status.as_str(), "passed" | "failed")).count() as u64;
    Report {
        suite_sha256: suite.sha256.clone(),
        agent: agent.to_string(),
        arms: [arms[0].label.clone(), arms[1].label.clone()],
        repeat,
        complete: all_pairs.len() as u64 == expected,
        not_checked,
        a: rate(&all_a),
        b: rate(&all_b),
        overall: stats::paired(&all_pairs),
        tokens: [tokens(&all_a), tokens(&all_b)],
        tasks,
    }
}

fn percent(rate: &Rate) -> String {
    if rate.runs == 0 {
        return "—".into();
    }
    format!(
        "{}/{} {:.0}% [{:.0}–{:.0}]",
        rate.successes,
        rate.runs,
        100.0 * rate.successes as f64 / rate.runs as f64,
        100.0 * rate.interval.0,
        100.0 * rate.interval.1
    )
}

fn verdict(paired: &Paired, arms: &[String; 2]) -> String {
    match paired.verdict {
        "a-better" => format!("{} helps (p {:.3})", arms[0], paired.p_value),
        "b-better" => format!("{} does better (p {:.3})", arms[1], paired.p_value),
        _ => match paired.pairs_to_decide {
            Some(n) => format!("inconclusive (p {:.2}; ~{n} pairs would decide at this rate)", paired.p_value),
            None => format!("inconclusive (p {:.2})", paired.p_value),
        },
    }
}

/// The report as a terminal table.
pub fn table(report: &Report) -> String {
    let mut out = format!(
        "A: {}    B: {}    ({} repetitions per task and arm)\n\n",
        report.arms[0], report.arms[1], report.repeat
    );
    out += &format!(
        "{:<24} {:>22} {:>22} {:>16}  verdict\n",
        "task", "A success [95%]", "B success [95%]", "A − B paired"
    );
    let row = |label: &str, a: &Rate, b: &Rate, paired: &Paired| {
        format!(
            "{label:<24} {:>22} {:>22} {:>+15.0}%  {}\n",
            percent(a),
            percent(b),
            100.0 * paired.difference,
            verdict(paired, &report.arms)
        )
    };
    for task in &report.tasks {
        out += &row(&task.id, &task.a, &task.b, &task.paired);
    }
    out += &row("overall", &report.a, &report.b, &report.overall);
    out += &format!(
        "\npaired difference {:+.0}% [{:+.0}%, {:+.0}%] over {} pairs ({} only A succeeded, {} only B)\n",
        100.0 * report.overall.difference,
        100.0 * report.overall.interval.0,
        100.0 * report.overall.interval.1,
        report.overall.pairs,
        report.overall.only_a,
        report.overall.only_b
    );
    if report.tokens.iter().any(|t| t.runs > 0) {
        let arm = |t: &ArmTokens| match t.runs {
            0 => "none reported".to_string(),
            n => format!("{} over {n} runs ({} a run)", t.total, t.total / n),
        };
        out += &format!("tokens reported: A {}; B {}\n", arm(&report.tokens[0]), arm(&report.tokens[1]));
    }
    if report.not_checked > 0 {
        out += &format!("{} runs ended in a timeout or an error and count as failures\n", report.not_checked);
    }
    if !report.complete {
        out += "incomplete: run the same command again to finish (runs on record are kept)\n";
    }
    out
}
