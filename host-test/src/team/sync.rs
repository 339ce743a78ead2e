//! `self-evolve sync`: commit what landed, fetch, replay local commits onto the remote branch,
//! scan every file of every outgoing commit with the plugin's scanner, push. An unreachable
//! remote is reported and local work goes on; a credential stops the push and is named by
//! commit, file, line and rule, never shown.

use super::{GitConfig, commit_landed, git, tree};
use anyhow::{Result, bail};
use serde::Serialize;
use std::path::Path;

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Commits made for changes that had landed since the last one.
    pub committed: Vec<String>,
    /// Why the remote could not be reached (then nothing else was done).
    pub offline: Option<String>,
    /// Commits that arrived from the remote.
    pub pulled: usize,
    /// Local commits pushed.
    pub pushed: usize,
    /// Files both sides changed: the remote version is on disk and the local change is a staged
    /// write against it (`/skills pending`), or, when the plugin refused to stage it, kept in
    /// `kept` for a person to redo.
    pub conflicts: Vec<Conflict>,
    /// Near-duplicates among the skills that arrived and the library (the checker's words).
    pub duplicates: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub file: String,
    /// The staged write's id.
    pub staged: Option<String>,
    /// Where the local version was kept when it could not be staged, and why.
    pub kept: Option<String>,
    pub why: Option<String>,
}

/// A credential in an outgoing commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leak {
    pub commit: String,
    pub file: String,
    pub line: u32,
    pub rule: String,
}

pub fn sync(home: &Path, config: &GitConfig, wasm: &crate::component::Source) -> Result<Report> {
    let Some(root) = tree(home) else {
        bail!(
            "{} is not a git working tree: clone your team's library there (git clone URL {})",
            crate::cli::home::user_skills(home).display(),
            crate::cli::home::user_skills(home).display()
        )
    };
    let mut report = Report { committed: commit_landed(home, config)?, ..Report::default() };
    let remote_ref = format!("{}/{}", config.remote, config.branch);
    let mut incoming: Vec<String> = Vec::new();
    let result = replay(home, config, wasm, &root, &remote_ref, &mut report, &mut incoming);
    if result.is_ok() && report.offline.is_none() && !incoming.is_empty() {
        report.duplicates = arrived_duplicates(home, wasm, &root, &incoming);
    }
    result.map(|()| report)
}

/// Fetch, replay onto the remote branch, scan, push (once more if someone pushed in between).
fn replay(
    home: &Path,
    config: &GitConfig,
    wasm: &crate::component::Source,
    root: &Path,
    remote_ref: &str,
    report: &mut Report,
    incoming: &mut Vec<String>,
) -> Result<()> {
    let root = root.to_path_buf();
    for attempt in 0..2 {
        if let Err(err) = git(&root, &["fetch", "-q", &config.remote, &config.branch]) {
            // An empty remote has no branch yet: the first push makes it.
            let empty =
                git(&root, &["ls-remote", "--heads", &config.remote]).is_ok_and(|heads| heads.trim().is_empty());
            if !empty {
                report.offline = Some(format!("{err:#}"));
                return Ok(());
            }
        }
        let has_remote = git(&root, &["rev-parse", "--verify", "-q", &format!("refs/remotes/{remote_ref}")]).is_ok();
        if has_remote {
            report.pulled = count(&root, &format!("HEAD..{remote_ref}"))?;
            let arrived = git(&root, &["diff", "--name-only", &format!("HEAD...{remote_ref}")]).unwrap_or_default();
            for file in arrived.lines() {
                let top = file.split('/').next().unwrap_or(file);
                let skill = top.strip_suffix(".md").unwrap_or(top).to_string();
                if !top.starts_with('.') && !incoming.contains(&skill) {
                    incoming.push(skill);
                }
            }
            if git(&root, &["rebase", "-q", remote_ref]).is_err() {
                // Never conflict markers in a SKILL.md, never a dropped edit: the remote version
                // of each file both sides changed lands, and the local one becomes a staged write.
                let conflicted = git(&root, &["diff", "--name-only", "--diff-filter=U"]).unwrap_or_default();
                let files: Vec<String> = conflicted.lines().map(str::to_string).collect();
                git(&root, &["rebase", "--abort"])?;
                let local: Vec<(String, Option<String>)> =
                    files.iter().map(|f| (f.clone(), git(&root, &["show", &format!("HEAD:{f}")]).ok())).collect();
                git(&root, &["rebase", "-q", "-X", "ours", remote_ref])?;
                report.conflicts = super::stage::stage_local(home, wasm, &local)?;
            }
        }
        let range = if has_remote { format!("{remote_ref}..HEAD") } else { "HEAD".to_string() };
        let outgoing: Vec<String> =
            git(&root, &["rev-list", "--reverse", &range])?.lines().map(str::to_string).collect();
        let leaks = scan(&root, &outgoing)?;
        if !leaks.is_empty() {
            let list: Vec<String> = leaks
                .iter()
                .map(|l| format!("{} {}:{} ({})", l.commit, crate::text::visible(&l.file), l.line, l.rule))
                .collect();
            bail!(
                "not pushed: {} credential(s) in outgoing commits: {}. Remove them from the history \
                 (e.g. `git rebase -i`) and sync again; the values are not shown",
                leaks.len(),
                list.join(", ")
            );
        }
        if outgoing.is_empty() {
            return Ok(());
        }
        match git(&root, &["push", "-q", &config.remote, &format!("HEAD:{}", config.branch)]) {
            Ok(_) => {
                report.pushed = outgoing.len();
                return Ok(());
            }
            // Someone pushed in between: fetch and replay once more.
            Err(err) if attempt == 0 => {
                let _ = err;
            }
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// The checker's near-duplicate findings that name a skill that just arrived.
fn arrived_duplicates(home: &Path, wasm: &crate::component::Source, root: &Path, incoming: &[String]) -> Vec<String> {
    let Ok(mut live) = crate::live::open(home, wasm) else { return Vec::new() };
    let findings = crate::cli::check::duplicates(&mut live.plugin, &[root.to_path_buf()]).unwrap_or_default();
    findings
        .into_iter()
        .filter(|f| {
            incoming.iter().any(|name| f.path.contains(&format!("/{name}/")) || f.message.contains(name.as_str()))
        })
        .map(|f| format!("{}: {}", crate::text::visible(&f.path), crate::text::visible(&f.message)))
        .collect()
}

fn count(root: &Path, range: &str) -> Result<usize> {
    Ok(git(root, &["rev-list", "--count", range])?.trim().parse().unwrap_or(0))
}

/// Every file every outgoing commit touches, as that commit has it, through the scanner.
pub fn scan(root: &Path, commits: &[String]) -> Result<Vec<Leak>> {
    let mut leaks = Vec::new();
    for commit in commits {
        let files = git(root, &["diff-tree", "--no-commit-id", "--name-only", "-r", "--root", "-z", commit])?;
        for file in files.split('\0').filter(|f| !f.is_empty()) {
            // Removed in this commit: nothing of it goes out.
            let Ok(text) = git(root, &["show", &format!("{commit}:{file}")]) else { continue };
            for finding in self_evolve_scan::scan_secrets(&text) {
                leaks.push(Leak {
                    commit: commit.chars().take(12).collect(),
                    file: file.to_string(),
                    line: u32::try_from(finding.line).unwrap_or(u32::MAX),
                    rule: finding.rule.to_string(),
                });
            }
        }
    }
    Ok(leaks)
}
