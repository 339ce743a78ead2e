//! `self-evolve sync`: the team library's sync (`team::sync`) and its report, as text for a
//! person or one JSON document (`--json`).

use anyhow::{Context, Result};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn run(home: &Path, wasm: &crate::component::Source, json: bool) -> Result<ExitCode> {
    let host_file = crate::home::host_file::HostFile::load(home)?;
    let git = host_file
        .git
        .with_context(|| format!("{} has no `git` block: see docs/team-sync.md", home.join("host.json").display()))?;
    let report = crate::team::sync::sync(home, &git, wasm)?;
    if json {
        crate::say!("{}", self_evolve_host::text::visible_json(&serde_json::to_string(&report)?));
    } else {
        // File and skill names come from a repository teammates write: shown, not obeyed.
        let shown = |text: &str| self_evolve_host::text::visible(text).into_owned();
        for line in &report.committed {
            crate::say!("committed  {}", shown(line));
        }
        match &report.offline {
            Some(why) => {
                crate::say!("offline    {}; local work is kept and goes out on the next sync", shown(why))
            }
            None => {
                crate::say!("pulled     {} commit(s)\npushed     {} commit(s)", report.pulled, report.pushed)
            }
        }
        for c in &report.conflicts {
            match (&c.staged, &c.kept) {
                (Some(id), _) => crate::say!(
                    "conflict   {} (the merged version is on disk; your edits git could not merge are staged as {id}: `self-evolve skills diff {id}`{})",
                    shown(&c.file),
                    c.kept
                        .as_deref()
                        .map(|k| format!("; your whole version is kept at {}", shown(k)))
                        .unwrap_or_default()
                ),
                (None, Some(kept)) => crate::say!(
                    "conflict   {} (the merged version is on disk; yours is kept at {}: {})",
                    shown(&c.file),
                    shown(kept),
                    shown(c.why.as_deref().unwrap_or(""))
                ),
                // Kept before the replay, so this is only a version that was removed here.
                (None, None) => crate::say!(
                    "conflict   {} (the merged version is on disk; yours removed it: {})",
                    shown(&c.file),
                    shown(c.why.as_deref().unwrap_or(""))
                ),
            }
        }
        for d in &report.duplicates {
            crate::say!("duplicate  {}", shown(d));
        }
    }
    Ok(ExitCode::SUCCESS)
}
