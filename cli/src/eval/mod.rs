//! `self-evolve eval SUITE`: does a skill help? Every task of a suite runs in two arms that differ
//! only in the library the agent sees (`arms`), repeatedly, each run in a fresh copy of the
//! task's folder (`run`); the report compares the arms pair by pair (`stats`). Results are kept
//! line by line under the state root as they come, so an interrupted evaluation resumes where it
//! stopped; a finished one leaves a summary per skill in `eval/evidence.jsonl`.

pub mod arms;
pub mod report;
pub mod run;
pub mod stats;
pub mod suite;
pub mod usage;

use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Options {
    pub suite: PathBuf,
    pub home: PathBuf,
    /// The agent command template; else the suite's `agent:`.
    pub agent: Option<String>,
    pub skill: Option<String>,
    pub library: bool,
    /// Arms: `NAME@V` now against before version V.
    pub against: Option<String>,
    /// Arms: a staged write of a SKILL.md (its id, or `latest`) against the library as it is.
    pub pending: Option<String>,
    pub wasm: crate::component::Source,
    pub repeat: u32,
    pub jobs: usize,
    pub timeout: Duration,
    /// At most this many new runs (a budget); the rest waits for the next invocation.
    pub max_runs: Option<u64>,
    /// No new run starts past this.
    pub max_time: Option<Duration>,
    /// No new run starts once this invocation's runs reported this many tokens.
    pub max_tokens: Option<u64>,
    pub pass_env: Vec<String>,
}

/// One finished run, as kept in `runs.jsonl`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Record {
    pub task: String,
    pub arm: String,
    pub rep: u32,
    #[serde(flatten)]
    pub outcome: run::Outcome,
}

/// Where an evaluation's results live: one folder per suite, agent and arms.
fn results_dir(home: &Path, suite: &suite::Suite, template: &[String], arms: &[arms::Arm; 2]) -> PathBuf {
    let mut key = format!("{}\n{}\n{}\n{}", suite.sha256, template.join("\u{1f}"), arms[0].label, arms[1].label);
    let commits: Vec<&str> = suite.tasks.iter().filter_map(|t| t.git_ref.as_deref()).collect();
    if !commits.is_empty() {
        key = format!("{key}\n{}", commits.join(","));
    }
    crate::home::state(home).join("eval").join(&suite::sha256_hex(key.as_bytes())[..16])
}

/// Runs (or resumes) the evaluation; the report of every run on record.
pub fn evaluate(options: &Options, interrupted: &Arc<AtomicBool>, children: &run::Children) -> Result<report::Report> {
    let suite = suite::load(&options.suite)?;
    let from_host = || crate::home::host_file::HostFile::load(&options.home).ok().and_then(|f| f.eval_agent);
    let Some(template) = options.agent.clone().or_else(|| suite.agent.clone()).or_else(from_host) else {
        bail!(
            "no agent command: give --agent 'claude -p {{prompt}}' (any command; {{prompt}} is the task's prompt), \
             `agent:` in the suite, or `eval.agent` in host.json"
        );
    };
    let mut words = run::words(&template)?;
    // `./my-agent {prompt}` names a program where the evaluation was started, not in a run's copy.
    if words[0].contains('/') && Path::new(&words[0]).is_relative() {
        words[0] = std::path::absolute(&words[0])?.to_string_lossy().into_owned();
    }
    // What a finished evaluation is evidence about: a skill against its absence, or a staged
    // version against what it would replace.
    let (arms, subject) = match (&options.against, &options.pending) {
        (Some(at), _) => (arms::against(&options.home, at, &options.wasm)?, None),
        (None, Some(id)) => {
            let staged = arms::staged(&options.home, id, &options.wasm)?;
            let subject =
                Subject::Staged { skill: staged.skill, id: staged.id, sha256: staged.sha256, base: staged.base_sha256 };
            (staged.arms, Some(subject))
        }
        (None, None) => {
            let arms = arms::arms(&options.home, options.skill.as_deref(), options.library)?;
            (arms, options.skill.clone().map(Subject::Skill))
        }
    };
    // Each ref is resolved once, here: every run of the evaluation works at the same commit
    // (a branch that moves meanwhile does not split the pairs), and the results are kept per
    // commit (a resume after it moved starts afresh).
    let mut suite = suite;
    for task in &mut suite.tasks {
        if let Some(git_ref) = &task.git_ref {
            let commit = run::commit_of(&task.folder, git_ref).with_context(|| format!("task `{}`", task.id))?;
            task.git_ref = Some(commit);
        }
    }
    let dir = results_dir(&options.home, &suite, &words, &arms);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let runs_path = dir.join("runs.jsonl");
    let mut done = read_runs(&runs_path)?;
    // The agent command as every file of the state root keeps it: any credential in it redacted.
    let agent_kept = self_evolve_scan::redact_secrets(&template).unwrap_or_else(|| template.clone());
    std::fs::write(
        dir.join("eval.json"),
        serde_json::to_vec_pretty(&serde_json::json!({"suite": options.suite, "suiteSha256": suite.sha256,
            "agent": agent_kept, "arms": [arms[0].label, arms[1].label]}))?,
    )?;

    let homes = tempfile::Builder::new().prefix("self-evolve-eval-homes-").tempdir()?;
    let arm_homes: Vec<PathBuf> = arms.iter().map(|arm| homes.path().join(arm.name)).collect();
    for (arm, home) in arms.iter().zip(&arm_homes) {
        arms::seed(&options.home, arm, home)?;
    }
    // Repetition by repetition, and within one, the arms of a task back to back: drift over the
    // evaluation (a rate limit, a model update) falls on both arms alike.
    let mut queue = VecDeque::new();
    for rep in 0..options.repeat {
        for (t, task) in suite.tasks.iter().enumerate() {
            for (a, arm) in arms.iter().enumerate() {
                if !done.contains_key(&(task.id.clone(), arm.name.to_string(), rep)) {
                    queue.push_back((t, a, rep));
                }
            }
        }
    }
    if let Some(max) = options.max_runs {
        queue.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    }
    let queue = Mutex::new(queue);
    let file = Mutex::new(std::fs::OpenOptions::new().create(true).append(true).open(&runs_path)?);
    let results = Mutex::new(Vec::new());
    let stop_at = options.max_time.map(|t| Instant::now() + t);
    // Tokens the runs of this invocation reported: a budget checked before each new run (runs
    // under way finish, so it can be passed by what they use).
    let spent = AtomicU64::new(0);
    let over_budget = || options.max_tokens.is_some_and(|max| spent.load(Ordering::SeqCst) >= max);
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.max(1) {
            scope.spawn(|| {
                loop {
                    if interrupted.load(Ordering::SeqCst)
                        || stop_at.is_some_and(|t| Instant::now() >= t)
                        || over_budget()
                    {
                        return;
                    }
                    let Some((t, a, rep)) = queue.lock().ok().and_then(|mut q| q.pop_front()) else { return };
                    let setup = run::Setup {
                        template: &words,
                        home: &arm_homes[a],
                        pass_env: &options.pass_env,
                        timeout: options.timeout,
                        children,
                    };
                    let outcome = match run::run(&suite.tasks[t], &setup) {
                        Ok(outcome) => outcome,
                        Err(err) => {
                            let status = format!("error: {err:#}");
                            run::Outcome { success: false, status, agent_exit: None, ms: 0, tokens: None }
                        }
                    };
                    let used = outcome.tokens.map_or(0, |t| t.total());
                    let _ = spent.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| Some(s.saturating_add(used)));
                    // A run cut short by an interrupt is not a result.
                    if interrupted.load(Ordering::SeqCst) {
                        return;
                    }
                    let record =
                        Record { task: suite.tasks[t].id.clone(), arm: arms[a].name.to_string(), rep, outcome };
                    // One write per line: another evaluation of the same suite appending at once
                    // (O_APPEND) never tears it.
                    if let (Ok(mut file), Ok(line)) = (file.lock(), serde_json::to_string(&record)) {
                        let _ = file.write_all(format!("{line}\n").as_bytes());
                    }
                    if let Ok(mut results) = results.lock() {
                        results.push(record);
                    }
                }
            });
        }
    });
    for record in results.into_inner().unwrap_or_default() {
        done.insert((record.task.clone(), record.arm.clone(), record.rep), record.outcome);
    }
    let report = report::build(&suite, &template, &arms, options.repeat, &done);
    // The report as the console shows it (`self-evolve ui`, Evaluations) and the evidence keep
    // it: the agent redacted; replaced whole (a console never reads half of one).
    let kept = report::Report { agent: agent_kept, ..report.clone() };
    crate::home::files::write_atomic(&dir.join("report.json"), &serde_json::to_vec_pretty(&kept)?)?;
    if options.max_tokens.is_some() && done.values().any(|o| o.tokens.is_none()) {
        eprintln!(
            "self-evolve eval: some runs reported no tokens (no `usage` line in what the agent printed), so \
             --max-tokens could not count them; give --max-runs too (docs/eval.md, Tokens)"
        );
    }
    if let (true, Some(subject)) = (report.complete, &subject) {
        record_evidence(&options.home, subject, &kept)?;
    }
    Ok(report)
}

/// The runs on record, by (task, arm, repetition); a torn last line (an interrupt mid-write) is
/// skipped.
fn read_runs(path: &Path) -> Result<BTreeMap<(String, String, u32), run::Outcome>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Record>(line).ok())
        .map(|r| ((r.task, r.arm, r.rep), r.outcome))
        .collect())
}

/// What an evaluation is evidence about.
enum Subject {
    /// A skill of the library, with it against without it.
    Skill(String),
    /// A staged write's SKILL.md (by its sha256) against what it would replace (`base`).
    Staged { skill: String, id: String, sha256: String, base: Option<String> },
}

/// One line per finished evaluation of a skill: what it was measured on (the suite, the agent
/// command as `report` holds it, credentials redacted, the skill's text by its sha256) and what
/// was found; `/skills show` shows the newest of a skill, `/skills pending` and `diff` the one of a
/// staged text, and the curator flags a negative one.
fn record_evidence(home: &Path, subject: &Subject, report: &report::Report) -> Result<()> {
    // A staged text's evaluation goes to a file of its own: a plugin from before staged
    // evaluations reads evidence.jsonl alone and would take one for the skill's own.
    let (skill, kind, version, staged, base, file) = match subject {
        Subject::Skill(skill) => {
            let text = std::fs::read(crate::home::user_skills(home).join(skill).join("SKILL.md"));
            (skill, "skill", text.ok().map(|b| suite::sha256_hex(&b)), None, None, "evidence.jsonl")
        }
        Subject::Staged { skill, id, sha256, base } => {
            (skill, "staged", Some(sha256.clone()), Some(id), base.as_deref(), "staged.jsonl")
        }
    };
    let path = crate::home::state(home).join("eval").join(file);
    let line = serde_json::json!({
        "skill": skill, "kind": kind, "staged": staged, "baseSha256": base, "suiteSha256": report.suite_sha256,
        "agent": report.agent,
        "version": version, "tokens": [report.tokens[0].total, report.tokens[1].total],
        "arms": report.arms, "pairs": report.overall.pairs, "difference": report.overall.difference,
        "interval": report.overall.interval, "pValue": report.overall.p_value, "verdict": report.overall.verdict,
        "at": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0),
    });
    crate::home::files::append_log(&path, format!("{line}\n").as_bytes())
        .with_context(|| format!("appending to {}", path.display()))
}
