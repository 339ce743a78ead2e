//! Live sessions, a service: the plugin driven by a real agent, one short process per event, with
//! real reviewers. `provider` starts reviewers detached through `supervise`, which runs an agent
//! CLI (`command`) or an OpenAI-compatible tool loop (`openai`) and delivers the completion;
//! `transcript` seeds them with the parent conversation; `runs` keeps a reviewer's files;
//! `logged` is what `live.jsonl` keeps of a decision or a message. The front doors that feed it
//! events are `hook/` (Claude Code, Codex) and `self-evolve event`.
//!
//! Decisions persist in the state root (the plugin's session state), so the processes of one
//! session decide exactly what one long-lived process would. Uses `git/` (a landed change is
//! committed) and the home; never a front door.

pub mod logged;
pub mod openai;
pub mod provider;
pub mod runs;
pub mod supervise;
pub mod transcript;

use crate::component::Source;
use crate::home;
use anyhow::{Result, anyhow};
use self_evolve_host::caps::fs::{FsConfig, ProjectRoots};
use self_evolve_host::caps::log::{Captured, LogSink};
use self_evolve_host::{HostConfig, Plugin};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What a live process offers the plugin: an agent with tools and commands, and subagents.
pub const SERVICES: [&str; 4] = ["tools", "commands", "agents", "subagents"];

/// The plugin as a live process holds it.
pub struct Live {
    pub plugin: Plugin,
    pub provider: Arc<Mutex<provider::LiveProvider>>,
    pub logs: Captured,
    pub home: PathBuf,
    pub host_file: crate::home::host_file::HostFile,
}

/// Roots of a live process: the home's user and state roots, and each session's project found
/// from its working folder (the nearest `.git` or `.dsh` above it), confined as every host does.
pub fn fs_config(home: &Path) -> FsConfig {
    FsConfig {
        user_skills: Some(home::user_skills(home)),
        state: Some(home::state(home)),
        projects: ProjectRoots::default(),
        ..FsConfig::default()
    }
}

/// Loads the component for `home` with the operator's config and host config, as a live process.
pub fn open(home: &Path, wasm: &Source) -> Result<Live> {
    let host_file = crate::home::host_file::HostFile::load(home)?;
    let provider = Arc::new(Mutex::new(provider::LiveProvider::new(home, host_file.reviewer.clone(), wasm)));
    let (log, logs) = LogSink::capturing();
    let config = HostConfig {
        fs: fs_config(home),
        http: host_file.http.clone(),
        subagents: Box::new(provider.clone()),
        log,
        ..HostConfig::default()
    };
    let mut plugin = Plugin::from_bytes(&wasm.bytes()?, config)?;
    let services: Vec<String> = SERVICES.iter().map(|s| s.to_string()).collect();
    plugin
        .init(&home::operator_config(home)?, &services)?
        .map_err(|e| anyhow!("the operator's config, key `{}`: {}", e.key, e.message))?;
    Ok(Live { plugin, provider, logs, home: home.to_path_buf(), host_file })
}

impl Live {
    /// Appends `what` (decisions, the plugin's log, errors) to `<state>/live.jsonl`, one JSON
    /// object per line; a failed append is reported on stderr, never fatal.
    pub fn record(&self, source: &str, decisions: &[String]) {
        let logs: Vec<(self_evolve_host::caps::log::Level, String)> =
            self.logs.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default();
        let mut lines = String::new();
        // A team library: what this process landed becomes commits (pushed by `sync`).
        if let Some(git) = &self.host_file.git {
            match crate::git::commit_landed(&self.home, git) {
                Ok(made) if !made.is_empty() => {
                    lines.push_str(&entry(source, "info", &format!("committed: {}", made.join("; "))))
                }
                Ok(_) => {}
                Err(err) => lines.push_str(&entry(source, "warn", &format!("git commit: {err:#}"))),
            }
        }
        let at = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
        for d in decisions {
            let decision: serde_json::Value = serde_json::from_str(d).unwrap_or(serde_json::Value::String(d.clone()));
            let decision = logged::decision(decision);
            lines.push_str(&serde_json::json!({"at": at, "source": source, "decision": decision}).to_string());
            lines.push('\n');
        }
        for (level, message) in logs {
            lines.push_str(&entry(source, level.as_str(), &message));
        }
        append_log(&self.home, &lines);
    }
}

/// One log line of `live.jsonl`: when, which process, how bad, what (redacted and cut, see
/// `logged`).
pub(crate) fn entry(source: &str, level: &str, message: &str) -> String {
    let at = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
    let message = logged::text(message);
    format!("{}\n", serde_json::json!({"at": at, "source": source, "level": level, "log": message}))
}

/// Appends one log line to `<state>/live.jsonl` (for what happens outside a plugin call).
pub fn log(home: &Path, source: &str, level: &str, message: &str) {
    append_log(home, &entry(source, level, message));
}

const MAX_LOG_BYTES: u64 = 16 << 20;

/// One append to `<state>/live.jsonl`.
pub fn append_log(home: &Path, lines: &str) {
    if lines.is_empty() {
        return;
    }
    let path = home::state(home).join("live.jsonl");
    // Past 16 MiB the log starts over; the previous one is kept as live.jsonl.1.
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(&path, path.with_extension("jsonl.1"));
    }
    // Never blocks: a FIFO or device at the log's path is skipped, never opened for good.
    let appended = std::fs::create_dir_all(home::state(home))
        .and_then(|_| crate::home::files::append_log(&path, lines.as_bytes()));
    if let Err(err) = appended {
        eprintln!(
            "self-evolve: could not append to {}",
            self_evolve_host::text::shown_error(&format!("{}: {err}", path.display()))
        );
    }
}
