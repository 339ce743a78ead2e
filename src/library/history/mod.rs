//! Version history of the skills the plugin owns: every landed write keeps the file's previous
//! bytes in the state root, with who changed it (agent, reviewer or operator), when and why, so
//! an operator can read the log (`/skills log NAME`), compare a version with the file now
//! (`/skills diff NAME@V`) and go back (`/skills revert NAME [V]`, through the guarded write
//! path). Bounded: the newest `historyVersions` records per skill (default 20).
//!
//! Layout: `history/<key>/<skill>/<V>.json` (the record, written last) and `<V>.before` (the
//! bytes before write V; absent when the file did not exist; `<V>.redacted` instead when they
//! held a credential). `<key>` is `user`, or
//! `project-<hash of the session's folder>` (sessions in one folder share a project's history,
//! as they share its listing index). Records are made under the skill's lock, before the write
//! they describe lands: a crash between the two leaves a record whose bytes equal the file's,
//! never a landed write without one.
//!
//! Owns: the record format, numbering, pruning and reading. Callers say what landed.
//!
//! May use `guards` (a credential in replaced bytes is kept redacted) and `storage`; nothing above.

use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::{Host, Root, WriteMode};
use crate::library::storage::store::{Scope, fs_error};
use crate::time;
use serde::{Deserialize, Serialize};

pub const DIR: &str = "history";
/// Records kept per skill unless the operator's config says otherwise.
pub const DEFAULT_VERSIONS: usize = 20;

/// One landed write: the file it changed, what was there before (kept as `<V>.before`), who.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub version: u64,
    pub skill: String,
    pub scope: String,
    /// The file inside its scope's root.
    pub path: String,
    /// create, patch, edit, write_file, remove_file, pin, unpin, status (the curator's); a
    /// revert is the edit or file write it makes, with its reason saying so
    pub operation: String,
    /// agent, reviewer or operator
    pub actor: String,
    /// The agent id, or the operator's session.
    pub by: String,
    pub session: String,
    pub reason: String,
    pub at_ms: u64,
    pub at: String,
    /// Size and hash of the bytes before the write; `None` when the file did not exist.
    pub before_size: Option<u64>,
    pub before_sha256: Option<String>,
    /// Size after the write; `None` when it removed the file.
    pub after_size: Option<u64>,
    /// The replaced bytes held something the scanner takes for a credential (pasted by hand,
    /// or accepted by an operator): they are kept with it redacted, so this version can be
    /// read and compared but not restored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
}

/// Who made a write, for its record.
#[derive(Debug, Clone, Copy)]
pub struct Author<'a> {
    pub actor: &'a str,
    pub by: &'a str,
    pub session: &'a str,
    /// The session's working folder (a project's history is keyed by it).
    pub cwd: &'a str,
}

/// What landed, as the caller knows it.
pub struct Landing<'a> {
    pub skill: &'a str,
    pub scope: Scope,
    pub path: &'a str,
    pub operation: &'a str,
    pub reason: &'a str,
    pub before: Option<&'a [u8]>,
    pub after: Option<&'a [u8]>,
}

/// The history folder of a scope: `user`, or the project's key from the session's folder
/// (`None` when the session has none: that project's writes keep no history).
pub fn key(scope: Scope, cwd: &str) -> Option<String> {
    match scope {
        Scope::User => Some("user".to_string()),
        Scope::Project if cwd.is_empty() => None,
        Scope::Project => Some(crate::library::storage::list_index::project_key(cwd)),
    }
}

fn folder(key: &str, skill: &str) -> String {
    format!("{DIR}/{key}/{skill}")
}

/// Runs `write`, the write `landing` describes, with its record: made before the write lands
/// (under the caller's lock on the skill), taken back if the write fails.
pub fn around<T>(
    host: &impl Host,
    author: &Author,
    landing: &Landing,
    keep: usize,
    write: impl FnOnce() -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let kept = record(host, author, landing, keep)?;
    let written = write();
    if written.is_err() {
        forget(host, kept);
    }
    written
}

/// Records a write about to land, then keeps only the newest `keep` records of the skill; says
/// which record it made, for `forget` should the write fail. A write whose bytes do not change
/// the file is not a version.
fn record(host: &impl Host, author: &Author, landing: &Landing, keep: usize) -> Result<Option<Kept>, ToolError> {
    if landing.before == landing.after || keep == 0 {
        return Ok(None);
    }
    let Some(key) = key(landing.scope, author.cwd) else { return Ok(None) };
    // Never a credential into the state root: a value pasted by hand, or one an operator
    // accepted, is kept redacted.
    let redacted =
        landing.before.and_then(|b| crate::library::guards::scan::redact_secrets(&String::from_utf8_lossy(b)));
    let before: Option<&[u8]> = match &redacted {
        Some(text) => Some(text.as_bytes()),
        None => landing.before,
    };
    let dir = folder(&key, landing.skill);
    let existing = numbers(host, &dir);
    let version = existing.last().map_or(1, |v| v + 1);
    let now = host.now_ms();
    let record = Version {
        version,
        skill: landing.skill.to_string(),
        scope: landing.scope.as_str().to_string(),
        path: landing.path.to_string(),
        operation: landing.operation.to_string(),
        actor: author.actor.to_string(),
        by: author.by.to_string(),
        session: author.session.to_string(),
        reason: landing.reason.to_string(),
        at_ms: now,
        at: time::iso(now),
        before_size: landing.before.map(|b| b.len() as u64),
        before_sha256: before.map(sha256_hex),
        after_size: landing.after.map(|b| b.len() as u64),
        redacted: redacted.is_some(),
    };
    let json = serde_json::to_vec_pretty(&record).map_err(|e| ToolError::new("io", e.to_string(), "retry"))?;
    // Redacted bytes go under another name: a process from before redaction (which would not
    // know the record's `redacted`) finds no bytes to restore, rather than restoring these.
    let before_path = format!("{dir}/{version}.{}", if redacted.is_some() { "redacted" } else { "before" });
    if let Some(before) = before {
        // A `.before` without its record is a crash's leftover under a number never used.
        let _ = host.remove_file(&Root::State, &before_path);
        host.write(&Root::State, &before_path, before, WriteMode::CreateNew).map_err(|e| fs_error(e, &before_path))?;
    }
    let record_path = format!("{dir}/{version}.json");
    if let Err(err) = host.write(&Root::State, &record_path, &json, WriteMode::CreateNew) {
        let _ = host.remove_file(&Root::State, &before_path);
        return Err(fs_error(err, &record_path));
    }
    let mut kept = existing;
    kept.push(version);
    for old in &kept[..kept.len().saturating_sub(keep)] {
        for ending in ["json", "before", "redacted"] {
            let _ = host.remove_file(&Root::State, &format!("{dir}/{old}.{ending}"));
        }
    }
    Ok(Some(Kept { dir, version }))
}

/// A record `record` made.
struct Kept {
    dir: String,
    version: u64,
}

/// Removes a record whose write did not land (an I/O failure after it was made).
fn forget(host: &impl Host, kept: Option<Kept>) {
    if let Some(Kept { dir, version }) = kept {
        for ending in ["json", "before", "redacted"] {
            let _ = host.remove_file(&Root::State, &format!("{dir}/{version}.{ending}"));
        }
    }
}

/// The record numbers in a skill's folder, ascending.
fn numbers(host: &impl Host, dir: &str) -> Vec<u64> {
    let Ok(entries) = host.list_dir(&Root::State, dir) else { return Vec::new() };
    let mut out: Vec<u64> = entries.iter().filter_map(|(name, _)| name.strip_suffix(".json")?.parse().ok()).collect();
    out.sort_unstable();
    out
}

/// A skill's records, oldest first (unreadable ones skipped).
pub fn versions(host: &impl Host, scope: Scope, cwd: &str, skill: &str) -> Vec<Version> {
    let Some(key) = key(scope, cwd) else { return Vec::new() };
    let dir = folder(&key, skill);
    numbers(host, &dir)
        .into_iter()
        .filter_map(|v| host.read(&Root::State, &format!("{dir}/{v}.json")).ok())
        .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
        .collect()
}

/// The bytes a version replaced (`None`: the write created the file), checked against its record.
pub fn before(host: &impl Host, cwd: &str, version: &Version) -> Result<Option<Vec<u8>>, ToolError> {
    let Some(expected) = &version.before_sha256 else { return Ok(None) };
    let key = key(Scope::from_stored(&version.scope), cwd).unwrap_or_default();
    let ending = if version.redacted { "redacted" } else { "before" };
    let path = format!("{}/{}.{ending}", folder(&key, &version.skill), version.version);
    let bytes = host.read(&Root::State, &path).map_err(|e| fs_error(e, &path))?;
    if &sha256_hex(&bytes) != expected {
        return Err(ToolError::new(
            "drift",
            format!("the kept bytes of `{}` version {} were modified", version.skill, version.version),
            "choose another version",
        ));
    }
    Ok(Some(bytes))
}

/// The operator of the unit tests.
#[cfg(test)]
pub const TEST_OPERATOR: Author<'static> = Author { actor: "operator", by: "main", session: "s1", cwd: "" };

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
