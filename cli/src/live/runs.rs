//! A live reviewer's files in the host's own folder, `<home>/run/reviewers/` (outside every root
//! the plugin sees): `<id>.json` what to run (written once, by `start`), `<id>.pgid` the process
//! group the supervisor started (written once, for an operator to see), `<id>.abort` created by
//! `abort` from any process, `<id>.log` the supervisor's stderr. One writer per file, so no
//! process overwrites another's.
//!
//! Only the supervisor signals a reviewer: it holds the reviewer as its child, so the group id is
//! still the reviewer's when it signals. Any other process asks by creating `<id>.abort`, which
//! the supervisor polls; a group id read back from a file may belong to another process by then
//! (the supervisor died, the reviewer ended, the id was reused).

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: String,
    /// The parent session (the reviewer's calls are made in it, as agent `id`).
    pub session: String,
    pub cwd: String,
    pub transcript: Option<String>,
    pub prompt: String,
    pub tools: Vec<String>,
    pub timeout_ms: u64,
    pub started_ms: u64,
}

pub fn dir(home: &Path) -> PathBuf {
    home.join("run").join("reviewers")
}

/// An id the provider made (`rv-…`): safe as a file name, so never a path.
pub fn valid_id(id: &str) -> bool {
    id.starts_with("rv-") && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

fn path(home: &Path, id: &str, ext: &str) -> Result<PathBuf> {
    if !valid_id(id) {
        bail!("`{}` is not a reviewer id", self_evolve_host::text::visible(id));
    }
    Ok(dir(home).join(format!("{id}.{ext}")))
}

/// Writes the run's spec; refuses to replace one (ids are unique).
pub fn create(home: &Path, run: &Run) -> Result<()> {
    std::fs::create_dir_all(dir(home)).with_context(|| format!("creating {}", dir(home).display()))?;
    let path = path(home, &run.id, "json")?;
    let bytes = serde_json::to_vec(run)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    std::io::Write::write_all(&mut file, &bytes).with_context(|| format!("writing {}", path.display()))
}

pub fn load(home: &Path, id: &str) -> Result<Run> {
    let path = path(home, id, "json")?;
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{} is not a reviewer run", path.display()))
}

pub fn set_pgid(home: &Path, id: &str, pgid: u32) -> Result<()> {
    std::fs::write(path(home, id, "pgid")?, pgid.to_string()).context("recording the reviewer's process group")
}

pub fn mark_aborted(home: &Path, id: &str) -> Result<()> {
    std::fs::write(path(home, id, "abort")?, b"").context("marking the reviewer aborted")
}

pub fn aborted(home: &Path, id: &str) -> bool {
    path(home, id, "abort").is_ok_and(|p| p.exists())
}

pub fn log_path(home: &Path, id: &str) -> Result<PathBuf> {
    path(home, id, "log")
}

/// Files of the host's own folders (`run/reviewers`, `run/sessions`) untouched for a week go.
pub fn prune(home: &Path) {
    const WEEK: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);
    for dir in [dir(home), home.join("run").join("sessions")] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let old = entry.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok());
            if old.is_some_and(|age| age > WEEK) && entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Kills a reviewer's whole process group (the agent CLI and anything it started). Only the
/// supervisor calls it, for the child it has not reaped yet (so the id is still that group's).
pub fn kill_group(pgid: u32) {
    #[cfg(not(unix))]
    let _ = pgid;
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(pgid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// A run for tests: session `s1` in `/tmp`, a one-second timeout.
#[cfg(test)]
pub fn sample(id: &str) -> Run {
    Run {
        id: id.into(),
        session: "s1".into(),
        cwd: "/tmp".into(),
        transcript: None,
        prompt: "review".into(),
        tools: Vec::new(),
        timeout_ms: 1000,
        started_ms: 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_written_once_and_ids_are_never_paths() {
        let home = tempfile::tempdir().unwrap();
        let run = Run { tools: vec!["skill_manage".into()], ..sample("rv-1-2-3") };
        create(home.path(), &run).unwrap();
        assert_eq!(load(home.path(), "rv-1-2-3").unwrap(), run);
        assert!(create(home.path(), &run).is_err(), "an id is used once");
        for bad in ["../x", "rv-../../etc", "act-1", "rv-a/b", ""] {
            assert!(load(home.path(), bad).is_err(), "{bad}");
            assert!(mark_aborted(home.path(), bad).is_err(), "{bad}");
        }
        assert!(!aborted(home.path(), "rv-1-2-3"));
        mark_aborted(home.path(), "rv-1-2-3").unwrap();
        assert!(aborted(home.path(), "rv-1-2-3"));
        set_pgid(home.path(), "rv-1-2-3", 4242).unwrap();
        prune(home.path());
        assert!(load(home.path(), "rv-1-2-3").is_ok(), "a run from today is kept");
    }
}
