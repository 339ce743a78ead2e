//! The staged entries under `pending/<id>/` in the state root: a manifest, the new bytes and a
//! unified diff `git apply` accepts. Owns their format (`Manifest`, `Held`, what a caller asks to
//! stage as a `Change`), writing one (`stage`, `stage_archive`), listing, loading, discarding and
//! pruning them. Deciding on one is `approval`; building one on another is `coalesce`.
//!
//! May use `storage` and the crate's utilities; nothing else of the library.

use crate::digest::{sha256_hex, unified_diff};
use crate::errors::ToolError;
use crate::host::{FsError, Host, Root, WriteMode};
use crate::library::storage::store::{Scope, fs_error};
use crate::time;
use serde::{Deserialize, Serialize};
use serde_json::json;

pub const DIR: &str = "pending";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub id: String,
    /// create, patch, edit, write_file, remove_file, archive
    pub operation: String,
    pub skill: String,
    pub scope: String,
    /// The session whose project root a project-scope write targets.
    pub session: String,
    pub agent: String,
    /// Path of the target inside its scope's root (an archive's: the skill's SKILL.md).
    pub path: String,
    /// sha256 of the target when staged; `None` when it did not exist. An archive's target is
    /// the whole skill: the digest of every file (`archive::digest`), which no single file's hash
    /// equals, so a process from before staged archives refuses to approve one as drift (it would
    /// have removed the SKILL.md alone) and to build a change on it.
    pub base_sha256: Option<String>,
    /// sha256 of the new bytes; `None` for a removal or an archive.
    pub new_sha256: Option<String>,
    pub created_ms: u64,
    pub created_at: String,
    pub reason: String,
    /// Credentials the scanner found in the new bytes: a *held* write, which lands only when the
    /// operator accepts each finding's rule (`/skills approve ID --accept-finding RULE`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<Held>,
    /// The staging session's working folder: a project write's history is kept under it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    /// Staged writes to the same file this one replaced (`coalesce`): their changes are in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<String>,
}

/// One finding a held write waits on (never the value: its rule, line and fingerprint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub rule: String,
    pub line: usize,
    pub fingerprint: String,
}

/// The operation of a staged archive.
pub const ARCHIVE: &str = "archive";

impl Manifest {
    pub fn root(&self) -> Root {
        match Scope::from_stored(&self.scope) {
            Scope::Project => Root::ProjectSkills(self.session.clone()),
            Scope::User => Root::UserSkills,
        }
    }
}

/// What to stage: the target, its current bytes and the proposed ones.
pub struct Change<'a> {
    pub operation: &'a str,
    pub skill: &'a str,
    pub scope: Scope,
    pub session: &'a str,
    pub agent: &'a str,
    pub path: &'a str,
    pub old: Option<&'a [u8]>,
    pub new: Option<&'a [u8]>,
    pub reason: &'a str,
    /// Findings to hold the write on (empty for an ordinary staged write).
    pub held: &'a [Held],
    /// Staged writes to the same file whose changes this one carries (see `coalesce`).
    pub supersedes: &'a [String],
    /// The staging session's working folder (see `Manifest::cwd`).
    pub cwd: &'a str,
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

pub(super) fn not_found(id: &str) -> ToolError {
    ToolError::new("not-found", format!("no staged write `{id}`"), "list staged writes with `/skills pending`")
        .with_details(json!({"id": id}))
}

/// Stages a change. Leaves nothing of its own behind when any write fails.
pub fn stage(host: &impl Host, change: &Change) -> Result<Manifest, ToolError> {
    let diff = unified_diff(change.path, change.old, change.new);
    stage_entry(host, change, &diff, change.old.map(sha256_hex))
}

/// Stages an archive of `change.skill` (its SKILL.md the path, no new bytes) whose files have
/// `digest` (the entry's base), shown to the operator as `diff` (see `archive::staged`).
pub fn stage_archive(host: &impl Host, change: &Change, diff: &str, digest: &str) -> Result<Manifest, ToolError> {
    stage_entry(host, &Change { operation: ARCHIVE, new: None, ..*change }, diff, Some(digest.to_string()))
}

fn stage_entry(
    host: &impl Host,
    change: &Change,
    diff: &str,
    base_sha256: Option<String>,
) -> Result<Manifest, ToolError> {
    let now = host.now_ms();
    let new_sha = change.new.map(sha256_hex);
    let seed = sha256_hex(format!("{}\n{}\n{:?}", change.path, change.session, new_sha).as_bytes());
    let mut id = format!("{now}-{}", &seed[..6]);
    let mut n = 1;
    // Never an id it supersedes (a change undone within one millisecond hashes alike).
    while host.stat(&Root::State, &format!("{DIR}/{id}")).is_ok() || change.supersedes.contains(&id) {
        n += 1;
        id = format!("{now}-{}-{n}", &seed[..6]);
    }
    let manifest = Manifest {
        id: id.clone(),
        operation: change.operation.to_string(),
        skill: change.skill.to_string(),
        scope: change.scope.as_str().to_string(),
        session: change.session.to_string(),
        agent: change.agent.to_string(),
        path: change.path.to_string(),
        base_sha256,
        new_sha256: new_sha,
        created_ms: now,
        created_at: time::iso(now),
        reason: change.reason.to_string(),
        held: change.held.to_vec(),
        cwd: change.cwd.to_string(),
        supersedes: change.supersedes.to_vec(),
    };
    let dir = format!("{DIR}/{id}");
    let manifest_bytes =
        serde_json::to_vec_pretty(&manifest).map_err(|e| ToolError::new("io", e.to_string(), "retry"))?;
    let mut files: Vec<(String, &[u8])> = vec![(format!("{dir}/change.diff"), diff.as_bytes())];
    if let Some(new) = change.new {
        files.push((format!("{dir}/new"), new));
    }
    // The manifest goes last: a staged write without one is never listed.
    files.push((format!("{dir}/manifest.json"), &manifest_bytes));
    let mut written: Vec<String> = Vec::new();
    for (path, bytes) in &files {
        if let Err(err) = host.write(&Root::State, path, bytes, WriteMode::CreateNew) {
            for done in &written {
                let _ = host.remove_file(&Root::State, done);
            }
            // Not `pending/`, even when empty now: it is shared, and another process's first stage
            // may have just made it and not yet written into it (an empty one lists nothing).
            let _ = host.remove_dir(&Root::State, &dir);
            return Err(fs_error(err, path));
        }
        written.push(path.to_string());
    }
    Ok(manifest)
}

/// Every staged write, oldest first. Unreadable entries are skipped, and so are entries a
/// merged one replaced (left behind only by a crash between the two steps of a merge); entries a
/// staged archive names are listed (they wait behind it, see `coalesce`).
pub fn list(host: &impl Host) -> Vec<Manifest> {
    let all = all_entries(host);
    let replaced = replaced(&all);
    let mut out: Vec<Manifest> = all.iter().filter(|m| !replaced.contains(m.id.as_str())).cloned().collect();
    out.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then_with(|| a.id.cmp(&b.id)));
    out
}

pub fn load(host: &impl Host, id: &str) -> Result<Manifest, ToolError> {
    if !valid_id(id) {
        return Err(not_found(id));
    }
    let bytes = host.read(&Root::State, &format!("{DIR}/{id}/manifest.json")).map_err(|_| not_found(id))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ToolError::new(
            "io",
            format!("staged write `{id}` has a corrupt manifest: {e}"),
            "reject it and stage the change again",
        )
    })
}

pub fn discard(host: &impl Host, id: &str) {
    let dir = format!("{DIR}/{id}");
    // The manifest first: an entry half removed by a crash is no longer listed.
    for file in ["manifest.json", "change.diff", "new"] {
        let _ = host.remove_file(&Root::State, &format!("{dir}/{file}"));
    }
    let _ = host.remove_dir(&Root::State, &dir);
}

/// Removes staged writes older than `ttl_days`, and entries a merged one replaced (a crash
/// between a merge's two steps leaves them); returns their ids.
pub fn prune(host: &impl Host, ttl_days: u64) -> Vec<String> {
    let cutoff = host.now_ms().saturating_sub(ttl_days * time::MS_PER_DAY);
    let all = all_entries(host);
    let replaced = replaced(&all);
    let old: Vec<String> = all
        .iter()
        .filter(|m| m.created_ms < cutoff || replaced.contains(m.id.as_str()))
        .map(|m| m.id.clone())
        .collect();
    for id in &old {
        discard(host, id);
    }
    discard_orphans(host);
    old
}

/// A staged entry's files are written before its manifest, and the manifest is removed first:
/// a process killed in between leaves a folder no listing sees, holding the staged content (a
/// held write's credential too). Past this age nobody is still writing it.
pub(super) const ORPHAN_GRACE_MS: u64 = 10 * 60 * 1000;

/// Removes entry folders without a manifest once they are past `ORPHAN_GRACE_MS`.
fn discard_orphans(host: &impl Host) {
    let Ok(entries) = host.list_dir(&Root::State, DIR) else { return };
    let now = host.now_ms();
    for (id, _) in entries {
        let dir = format!("{DIR}/{id}");
        let orphan = matches!(host.stat(&Root::State, &format!("{dir}/manifest.json")), Err(FsError::NotFound));
        // When it was last written: its newest file, or the folder when it is empty.
        let written = ["change.diff", "new"]
            .iter()
            .filter_map(|f| host.stat(&Root::State, &format!("{dir}/{f}")).ok().map(|s| s.modified_ms))
            .max()
            .or_else(|| host.stat(&Root::State, &dir).ok().map(|s| s.modified_ms));
        let old = written.is_some_and(|at| now.saturating_sub(at) > ORPHAN_GRACE_MS);
        if orphan && old {
            discard(host, &id);
        }
    }
}

/// Every readable entry, superseded ones included.
pub fn all_entries(host: &impl Host) -> Vec<Manifest> {
    let Ok(entries) = host.list_dir(&Root::State, DIR) else { return Vec::new() };
    entries.into_iter().filter_map(|(id, _)| load(host, &id).ok()).collect()
}

/// The entry that replaced `id`, when a merge replaced it (or left it behind in a crash). Not
/// an archive: the entries it names stay pending behind it (`waiting_behind`).
pub fn superseded_by(host: &impl Host, id: &str) -> Option<String> {
    all_entries(host).into_iter().find(|m| m.operation != ARCHIVE && m.supersedes.iter().any(|s| s == id)).map(|m| m.id)
}

/// The ids the entries name as replaced: entries a crash left behind mid-merge. Not those an
/// archive names, which are pending until it is approved.
pub fn replaced(entries: &[Manifest]) -> std::collections::HashSet<&str> {
    entries.iter().filter(|m| m.operation != ARCHIVE).flat_map(|m| m.supersedes.iter().map(String::as_str)).collect()
}
