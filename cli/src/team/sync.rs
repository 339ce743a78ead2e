//! `self-evolve sync`: commit what landed, fetch, replay local commits onto the remote branch,
//! scan every file of every outgoing commit with the plugin's scanner, push. An unreachable
//! remote is reported and local work goes on; a credential stops the push and is named by
//! commit, file, line and rule, never shown.

use super::stage::Conflict;
use crate::git::{git, git_bytes, tree};
use crate::home::git_config::GitConfig;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

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
    /// Files both sides changed where git could not merge every local edit: the merged version
    /// is on disk (the remote's lines where both changed the same ones) and the local edits it
    /// lacks are a staged write against it (`/skills pending`), or, when the plugin refused to
    /// stage them, the local version is kept in `kept` for a person to redo. Both `staged` and
    /// `kept` when an edit could only be added after a teammate's lines (`why` says so).
    pub conflicts: Vec<Conflict>,
    /// Near-duplicates among the skills that arrived and the library (the checker's words).
    pub duplicates: Vec<String>,
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
            crate::home::user_skills(home).display(),
            crate::home::user_skills(home).display()
        )
    };
    // One sync or commit at a time in this home (two rebases in one tree undo each other).
    let _lock = crate::git::lock_tree(home, Duration::from_secs(60))?;
    let mut report = Report { committed: crate::git::commit_landed_locked(home, &root, config)?, ..Report::default() };
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
        let mut remote_empty = false;
        if let Err(err) = git(&root, &["fetch", "-q", &config.remote, &config.branch]) {
            // An empty remote has no branch yet: the first push makes it.
            remote_empty =
                git(&root, &["ls-remote", "--heads", &config.remote]).is_ok_and(|heads| heads.trim().is_empty());
            if !remote_empty {
                // git's stderr (a `remote:` line, a URL) is printed and may be logged: redacted.
                let why = format!("{err:#}");
                report.offline = Some(self_evolve_scan::redact_secrets(&why).unwrap_or(why));
                return Ok(());
            }
        }
        // A remote emptied since the last fetch still has its old branch here: nothing of that
        // is on the remote now, so everything goes out, and everything is scanned.
        let has_remote = !remote_empty
            && git(&root, &["rev-parse", "--verify", "-q", &format!("refs/remotes/{remote_ref}")]).is_ok();
        if has_remote {
            report.pulled = count(&root, &format!("HEAD..{remote_ref}"))?;
            for file in names(&root, &["diff", "--name-only", "-z", &format!("HEAD...{remote_ref}")])? {
                let top = file.split('/').next().unwrap_or(&file);
                let skill = top.strip_suffix(".md").unwrap_or(top).to_string();
                if !top.starts_with('.') && !incoming.contains(&skill) {
                    incoming.push(skill);
                }
            }
            rebase_onto(home, wasm, &root, remote_ref, report)?;
        }
        let range = if has_remote { format!("{remote_ref}..HEAD") } else { "HEAD".to_string() };
        let outgoing: Vec<String> =
            git(&root, &["rev-list", "--reverse", &range])?.lines().map(str::to_string).collect();
        let leaks = scan(&root, &outgoing)?;
        if !leaks.is_empty() {
            let list: Vec<String> = leaks
                .iter()
                .map(|l| format!("{} {}:{} ({})", l.commit, self_evolve_host::text::visible(&l.file), l.line, l.rule))
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

/// Local commits replayed onto `remote_ref`. Where both sides changed a file, git merges what
/// it can and the remote's lines land where both changed the same lines; this machine's edits
/// the merged file lacks become a staged write against it (or are kept for a person): never
/// conflict markers in a SKILL.md, never a dropped edit, never a staged write that takes out
/// a teammate's merged line. Every local version of such a file is
/// saved under `run/conflicts/` before anything is replayed, so a crash or a refusal after
/// this point loses nothing; a replay git cannot settle (a file removed on one side and changed
/// on the other, a file that became a folder) is undone, and says so.
fn rebase_onto(
    home: &Path,
    wasm: &crate::component::Source,
    root: &Path,
    remote_ref: &str,
    report: &mut Report,
) -> Result<()> {
    let base = git(root, &["merge-base", "HEAD", remote_ref]).with_context(|| {
        format!("this library and {remote_ref} share no history: was it cloned from the team's remote?")
    })?;
    let base = base.trim();
    // This machine's commit before the replay: what it changed is read from it afterwards.
    let before = git(root, &["rev-parse", "--verify", "HEAD"])?;
    let before = before.trim();
    let ours: BTreeSet<String> =
        names(root, &["diff", "--name-only", "-z", "--no-renames", base, "HEAD"])?.into_iter().collect();
    let theirs: BTreeSet<String> =
        names(root, &["diff", "--name-only", "-z", "--no-renames", base, remote_ref])?.into_iter().collect();
    let both: Vec<String> = ours.intersection(&theirs).cloned().collect();
    let mut local: Vec<super::stage::Local> = Vec::new();
    for file in &both {
        let content = git_bytes(root, &["cat-file", "blob", &format!("HEAD:{file}")]).ok();
        local.push(super::stage::Local { file: file.clone(), content, kept: None });
    }
    super::stage::keep_all(home, &mut local)?;
    let strategy: &[&str] = if both.is_empty() { &[] } else { &["-X", "ours"] };
    let mut args = vec!["rebase", "-q"];
    args.extend_from_slice(strategy);
    args.push(remote_ref);
    if let Err(err) = git(root, &args) {
        let undone = git(root, &["rebase", "--abort"]);
        let kept: Vec<String> = local.iter().filter_map(|l| l.kept.clone()).collect();
        bail!(
            "sync could not replay this library's commits onto {remote_ref} ({err:#}){}; {}{}. Settle it by hand: \
             `git -C {} rebase {remote_ref}`",
            if undone.is_ok() { ", so it was undone and your commits are as they were" } else { "" },
            if undone.is_ok() { "nothing was lost" } else { "the rebase could not be undone either: see `git status`" },
            if kept.is_empty() { String::new() } else { format!(" (copies of your versions: {})", kept.join(", ")) },
            root.display()
        );
    }
    // What git merged is settled; what it could not is this machine's edits that the merged
    // file lacks, put on the merged file (never the whole local version against it).
    let blob = |rev: &str, file: &str| git_bytes(root, &["cat-file", "blob", &format!("{rev}:{file}")]).ok();
    let mut left = Vec::with_capacity(local.len());
    for l in local {
        let (at_base, merged) = (blob(base, &l.file), blob("HEAD", &l.file));
        let versions = super::merge::Versions {
            file: &l.file,
            base_rev: base,
            local_rev: before,
            merged_rev: "HEAD",
            base: at_base.as_deref(),
            local: l.content.as_deref(),
            merged: merged.as_deref(),
        };
        let outcome = super::merge::unmerged(root, &versions);
        left.push((l, outcome));
    }
    report.conflicts.extend(super::stage::stage_local(home, wasm, left)?);
    Ok(())
}

/// A `-z` list of names from git; a name that is not UTF-8 is kept as git's bytes would read
/// lossily (it is only shown and compared, never passed back as a path).
fn names(root: &Path, args: &[&str]) -> Result<Vec<String>> {
    let out = git_bytes(root, args)?;
    Ok(out.split(|&b| b == 0).filter(|n| !n.is_empty()).map(|n| String::from_utf8_lossy(n).into_owned()).collect())
}

/// The checker's near-duplicate findings that name a skill that just arrived.
fn arrived_duplicates(home: &Path, wasm: &crate::component::Source, root: &Path, incoming: &[String]) -> Vec<String> {
    let Ok(mut live) = crate::live::open(home, wasm) else { return Vec::new() };
    let findings = crate::check::duplicates(&mut live.plugin, &[root.to_path_buf()]).unwrap_or_default();
    findings
        .into_iter()
        .filter(|f| {
            incoming.iter().any(|name| f.path.contains(&format!("/{name}/")) || f.message.contains(name.as_str()))
        })
        .map(|f| {
            format!("{}: {}", self_evolve_host::text::visible(&f.path), self_evolve_host::text::visible(&f.message))
        })
        .collect()
}

fn count(root: &Path, range: &str) -> Result<usize> {
    Ok(git(root, &["rev-list", "--count", range])?.trim().parse().unwrap_or(0))
}

/// The largest file an outgoing commit may carry: past this, the push stops unscanned.
const MAX_SCANNED_FILE: u64 = 64 << 20;

/// Everything an outgoing commit sends, through the scanner: every file it adds or changes (as
/// its blob, against each parent, so a merge's own resolution is read too), every path, and its
/// message and author and committer lines. Anything that cannot be read stops the push.
pub fn scan(root: &Path, commits: &[String]) -> Result<Vec<Leak>> {
    let mut leaks = Vec::new();
    let mut blobs: Vec<(String, String, String)> = Vec::new(); // (commit, path, blob)
    for commit in commits {
        let short: String = commit.chars().take(12).collect();
        let header = git(root, &["log", "-1", "--format=%an <%ae>%n%cn <%ce>%n%B", commit])?;
        leaks_in(&short, "(commit message)", &header, &mut leaks);
        let raw = git_bytes(
            root,
            &["diff-tree", "-r", "-z", "-m", "--root", "--no-commit-id", "--no-renames", "--raw", commit],
        )?;
        let mut fields = raw.split(|&b| b == 0).filter(|f| !f.is_empty());
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            // `:old-mode new-mode old-blob new-blob status`
            let meta = String::from_utf8_lossy(meta);
            let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let path = String::from_utf8_lossy(path).into_owned();
            leaks_in(&short, "(file name)", &path, &mut leaks);
            match parts.as_slice() {
                [_, _, _, _, status] if status.starts_with('D') => {}
                // A submodule's commit: nothing of its content goes out with this push.
                [_, "160000", _, _, _] => {}
                [_, _, _, blob, _] => blobs.push((short.clone(), path, blob.to_string())),
                _ => bail!("not pushed: git described {short}'s changes in a form sync does not read ({meta})"),
            }
        }
    }
    let contents = read_blobs(root, blobs.iter().map(|(_, _, blob)| blob.as_str()))?;
    for ((commit, path, _), content) in blobs.iter().zip(contents) {
        let Some(content) = content else {
            bail!(
                "not pushed: {} in {commit} is over {} MiB, too large to scan; remove it from the history",
                self_evolve_host::text::visible(path),
                MAX_SCANNED_FILE >> 20
            )
        };
        leaks_in(commit, path, &String::from_utf8_lossy(&content), &mut leaks);
    }
    Ok(leaks)
}

/// Each credential in `text` as a leak of `commit`'s `file` (never the value).
fn leaks_in(commit: &str, file: &str, text: &str, leaks: &mut Vec<Leak>) {
    for finding in self_evolve_scan::scan_secrets(text) {
        leaks.push(Leak {
            commit: commit.to_string(),
            file: file.to_string(),
            line: u32::try_from(finding.line).unwrap_or(u32::MAX),
            rule: finding.rule.to_string(),
        });
    }
}

/// The blobs named, through one `git cat-file --batch`; `None` for one over `MAX_SCANNED_FILE`.
fn read_blobs<'a>(root: &Path, blobs: impl Iterator<Item = &'a str>) -> Result<Vec<Option<Vec<u8>>>> {
    let names: Vec<String> = blobs.map(|b| format!("{b}\n")).collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let mut child = crate::git::git_command(root, &["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("running git cat-file")?;
    let mut stdin = child.stdin.take().context("git cat-file's input")?;
    let count = names.len();
    // Written from another thread: git answers while it reads, and a full pipe would stall both.
    let writer = std::thread::spawn(move || {
        for name in names {
            if stdin.write_all(name.as_bytes()).is_err() {
                break;
            }
        }
    });
    let mut out = BufReader::new(child.stdout.take().context("git cat-file's output")?);
    let mut contents = Vec::with_capacity(count);
    for _ in 0..count {
        let mut header = String::new();
        out.read_line(&mut header).context("reading git cat-file")?;
        // `<sha> blob <size>`, or `<name> missing`
        let size: u64 = match header.split_whitespace().collect::<Vec<_>>().as_slice() {
            [_, "blob", size] => size.parse().context("git cat-file's size")?,
            _ => {
                let _ = child.kill();
                bail!(
                    "not pushed: an outgoing file could not be read ({})",
                    self_evolve_host::text::visible(header.trim())
                );
            }
        };
        if size > MAX_SCANNED_FILE {
            std::io::copy(&mut (&mut out).take(size + 1), &mut std::io::sink()).context("reading git cat-file")?;
            contents.push(None);
        } else {
            let mut content = Vec::new();
            (&mut out).take(size).read_to_end(&mut content).context("reading git cat-file")?;
            let mut newline = [0u8; 1];
            out.read_exact(&mut newline).context("reading git cat-file")?;
            contents.push(Some(content));
        }
    }
    let _ = writer.join();
    let _ = child.wait();
    Ok(contents)
}
