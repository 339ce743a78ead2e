//! The live `SubagentProvider`: `start` records the reviewer's run and launches a detached
//! supervisor (`self-evolve reviewer-run`), which outlives the process that started it (a hook
//! exits at once), runs the configured reviewer and delivers its completion to the plugin.
//! `abort` works from any process: it marks the run, and the supervisor, which holds the reviewer
//! as its child, kills the reviewer's process group. No other process signals: a group id read
//! back from a file may name an unrelated process by then (a supervisor killed with -9 never
//! says its reviewer ended).

use crate::component::Source;
use crate::home::host_file::Reviewer;
use crate::live::runs::{self, Run};
use self_evolve_host::caps::subagent::{Outcome, Spec, SubagentProvider};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub struct LiveProvider {
    home: PathBuf,
    reviewer: Reviewer,
    /// The `self-evolve` binary that supervises reviewers (this one, unless an embedder says).
    pub supervisor: Option<PathBuf>,
    /// Passed on so the supervisor loads the same component.
    wasm: Option<PathBuf>,
    /// Per session: its working folder and transcript, as the host last saw them.
    sessions: BTreeMap<String, (String, Option<String>)>,
    /// Supervisors this process started, reaped when they exit (a long-lived host).
    children: Vec<Child>,
    started: u64,
}

impl LiveProvider {
    pub fn new(home: &Path, reviewer: Reviewer, wasm: &Source) -> LiveProvider {
        LiveProvider {
            home: home.to_path_buf(),
            reviewer,
            supervisor: std::env::current_exe().ok(),
            wasm: match wasm {
                Source::File(path) => Some(std::path::absolute(path).unwrap_or_else(|_| path.clone())),
                Source::Embedded => None,
            },
            sessions: BTreeMap::new(),
            children: Vec::new(),
            started: 0,
        }
    }

    /// What the host knows of a session (from the hook event), for the reviewer's seed.
    pub fn note_session(&mut self, session: &str, cwd: &str, transcript: Option<&str>) {
        self.sessions.insert(session.to_string(), (cwd.to_string(), transcript.map(str::to_string)));
    }

    fn new_id(&mut self) -> String {
        self.started += 1;
        let now = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
        format!("rv-{now}-{}-{}", std::process::id(), self.started)
    }
}

impl SubagentProvider for LiveProvider {
    fn start(&mut self, spec: &Spec) -> Result<String, String> {
        if self.reviewer == Reviewer::None {
            return Err(format!(
                "no reviewer is configured: set `reviewer` in {} (see docs/live-sessions.md, \"The reviewer\")",
                self.home.join("host.json").display()
            ));
        }
        let supervisor =
            self.supervisor.clone().ok_or("the self-evolve binary that supervises reviewers is unknown")?;
        runs::prune(&self.home);
        let id = self.new_id();
        let (cwd, transcript) = self.sessions.get(&spec.parent_session).cloned().unwrap_or_default();
        let run = Run {
            id: id.clone(),
            session: spec.parent_session.clone(),
            cwd,
            transcript,
            // The reviewer's input, kept in its run file and written to its stdin: no credential
            // the plugin's prompt may quote (a review loop's diff) goes either way.
            prompt: self_evolve_scan::redact_secrets(&spec.prompt).unwrap_or_else(|| spec.prompt.clone()),
            tools: spec.tools.clone(),
            timeout_ms: u64::from(spec.timeout_ms),
            started_ms: self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock),
        };
        runs::create(&self.home, &run).map_err(|e| format!("{e:#}"))?;
        let log = runs::log_path(&self.home, &id)
            .and_then(|p| std::fs::File::create(p).map_err(Into::into))
            .map_err(|e| format!("creating the reviewer's log: {e:#}"))?;
        let mut command = Command::new(&supervisor);
        command
            .arg("reviewer-run")
            .arg("--home")
            .arg(&self.home)
            .arg("--id")
            .arg(&id)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        if let Some(wasm) = &self.wasm {
            command.env("SELF_EVOLVE_WASM", wasm);
        }
        // Its own process group: the hook's process group may be signalled when the agent's
        // turn ends; the reviewer must outlive it.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().map_err(|e| format!("starting {}: {e}", supervisor.display()))?;
        self.children.push(child);
        Ok(id)
    }

    /// The reviewer is started with exactly `spec.tools`, so a restriction to that list holds
    /// already; any other list is refused (a running agent CLI's tools cannot change).
    fn restrict_tools(&mut self, id: &str, tools: &[String]) -> Result<(), String> {
        let run = runs::load(&self.home, id).map_err(|e| format!("{e:#}"))?;
        if tools.iter().all(|t| run.tools.contains(t)) && run.tools.iter().all(|t| tools.contains(t)) {
            Ok(())
        } else {
            Err(format!("reviewer {id} runs with {:?}; its tools cannot change after it started", run.tools))
        }
    }

    /// A request the supervisor acts on within its poll; with no supervisor left, nothing runs
    /// that could be stopped safely, and nothing is signalled.
    fn abort(&mut self, id: &str) {
        if let Err(err) = runs::mark_aborted(&self.home, id) {
            eprintln!("self-evolve: could not ask reviewer {} to stop: {err:#}", self_evolve_host::text::visible(id));
        }
    }

    /// The supervisor delivers completions itself; this only reaps the ones that exited.
    fn take_finished(&mut self, _now_ms: u64) -> Vec<Outcome> {
        self.children.retain_mut(|child| matches!(child.try_wait(), Ok(None)));
        Vec::new()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A run whose supervisor died (no `.done` ever came) and whose recorded group id now names
    /// an unrelated process group: `abort` asks, and signals nothing.
    #[test]
    fn abort_never_signals_a_group_id_read_back_from_disk() {
        let home = tempfile::tempdir().unwrap();
        let mut unrelated = std::process::Command::new("sleep");
        unrelated.arg("30");
        std::os::unix::process::CommandExt::process_group(&mut unrelated, 0);
        let mut unrelated = unrelated.spawn().unwrap();
        let run = runs::sample("rv-1-2-3");
        runs::create(home.path(), &run).unwrap();
        runs::set_pgid(home.path(), &run.id, unrelated.id()).unwrap();
        let mut provider = LiveProvider::new(home.path(), Reviewer::None, &Source::Embedded);
        provider.abort(&run.id);
        std::thread::sleep(std::time::Duration::from_millis(200));
        let survived = matches!(unrelated.try_wait(), Ok(None));
        let _ = unrelated.kill();
        let _ = unrelated.wait();
        assert!(survived, "abort killed an unrelated process group");
        assert!(runs::aborted(home.path(), &run.id), "the supervisor is asked through the run's files");
    }
}
