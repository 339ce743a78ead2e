//! The operator's side of staged writes: reading one (`diff`), approving it (re-hashing the
//! target, refusing on drift, re-running the write path's guards, accepting held findings) or
//! rejecting it, and the runtime override of `writeApproval`. An approved archive is made through
//! the same moves as an immediate one (`archive::archive_location`). The entries themselves are
//! `pending`.

use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::{FsError, Host, Root};
use crate::library::guards::acknowledge;
use crate::library::guards::scan;
use crate::library::history;
use crate::library::staging::archive;
use crate::library::staging::coalesce;
use crate::library::staging::pending::{ARCHIVE, DIR, Manifest, discard, load, not_found, superseded_by};
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Scope, Store, fs_error, refuse_foreign_folder, skill_lock};
use serde_json::json;

/// A landed staged write, and the findings the operator acknowledged with it.
#[derive(Debug)]
pub struct Approved {
    pub manifest: Manifest,
    pub acknowledged: Vec<String>,
    /// An approved archive: the folder under the state root the skill moved to.
    pub archived: Option<String>,
}

/// A staged write that is not (or no longer) there: when a merge replaced it, says by what.
fn missing(host: &impl Host, id: &str) -> ToolError {
    match superseded_by(host, id) {
        Some(by) => ToolError::new(
            "superseded",
            format!("staged write `{id}` was merged into `{by}` with a later change to the same file"),
            format!("read `/skills diff {by}` and approve or reject that one"),
        )
        .with_details(json!({"id": id, "supersededBy": by})),
        None => not_found(id),
    }
}

/// Loads an entry the operator names: one a merge replaced is refused with its successor.
fn load_current(host: &impl Host, id: &str) -> Result<Manifest, ToolError> {
    let manifest = load(host, id).map_err(|e| if e.code == "not-found" { missing(host, id) } else { e })?;
    match superseded_by(host, id) {
        Some(_) => Err(missing(host, id)),
        None => Ok(manifest),
    }
}

pub fn diff(host: &impl Host, id: &str) -> Result<String, ToolError> {
    load_current(host, id)?;
    let bytes = host.read(&Root::State, &format!("{DIR}/{id}/change.diff")).map_err(|_| not_found(id))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Applies a staged write if its target is unchanged since staging. `accepted` names the rules
/// whose findings the operator judges are not credentials (`--accept-finding RULE`); they are
/// acknowledged in the skill's metadata as the write lands.
/// The write is kept in the version history as the operator's (`author`, `keep` records). An
/// archive is made as an immediate one is (`approve_archive`), and discards the entries staged
/// before it for the skill; one of those is refused while the archive waits (`archive-staged`).
pub fn approve(
    host: &impl Host,
    id: &str,
    accepted: &[String],
    author: &history::Author,
    keep: usize,
) -> Result<Approved, ToolError> {
    let skill = load_current(host, id)?.skill;
    // Under the skill's lock, and only if the staged write is still there: two operators (or
    // processes) approving the same id apply it once, and a merge cannot replace it meanwhile.
    crate::state_file::with_lock(host, &skill_lock(&skill), |lock| {
        let manifest = load_current(host, id)?;
        if manifest.operation == ARCHIVE {
            return approve_archive(host, id, manifest, accepted, lock);
        }
        if let Some(archive) = coalesce::waiting_behind(host, &manifest) {
            return Err(coalesce::behind_archive(&manifest, &archive));
        }
        apply(host, id, manifest, accepted, author, keep)
    })
}

/// The project root of a staged write's session, when the host maps it now.
fn mapped(host: &impl Host, manifest: &Manifest) -> Result<Root, ToolError> {
    let root = manifest.root();
    if !host.has_root(&root) {
        return Err(ToolError::new(
            "no-project",
            format!("the project of session `{}` is not mapped by the host now", manifest.session),
            "approve it from a session in that project",
        ));
    }
    Ok(root)
}

/// Archives the skill of a staged archive, under its `lock`, if it is still the skill this
/// plugin wrote that the operator read: its files unchanged since staging (else `drift`), not
/// pinned meanwhile. Through `archive::archive_location`, as the agent's immediate archive: the
/// same moves, its note carrying the agent's reason, no version record (the skill leaves whole
/// and `/skills restore` brings it back).
fn approve_archive(
    host: &impl Host,
    id: &str,
    manifest: Manifest,
    accepted: &[String],
    lock: &mut crate::state_file::Lock,
) -> Result<Approved, ToolError> {
    if !accepted.is_empty() {
        return Err(nothing_to_accept(&manifest, accepted));
    }
    let root = mapped(host, &manifest)?;
    let store = Store::new(host, &manifest.session);
    recheck(&store, &manifest)?;
    let name = manifest.skill.as_str();
    let Some(location) = store.locate(name)? else { return Err(gone(&manifest)) };
    let current = store.read(&root, &location.path())?;
    if SkillFile::parse_bytes(&current).is_ok_and(|s| s.is_pinned()) {
        return Err(ToolError::new(
            "pinned",
            format!("`{name}` was pinned since its archive `{id}` was staged"),
            format!("reject `{id}`; or unpin `{name}` first (`/skills unpin {name}`), then ask for the archive again"),
        )
        .with_details(json!({"id": id, "name": name})));
    }
    let digest = archive::digest(&store, &location)?;
    if location.path() != manifest.path || Some(digest) != manifest.base_sha256 {
        return Err(ToolError::new(
            "drift",
            format!("`{name}` changed since its archive was staged; the staged archive is kept for inspection"),
            format!("read `/skills show {name}`, then reject `{id}`; the agent can ask for the archive again"),
        )
        .with_details(json!({"id": id, "name": name, "path": manifest.path})));
    }
    let reason = if manifest.reason.is_empty() { "archived by the agent" } else { manifest.reason.as_str() };
    let folder = archive::archive_location(host, &manifest.session, &location, reason, lock)?;
    discard(host, id);
    for old in &manifest.supersedes {
        discard(host, old);
    }
    Ok(Approved { manifest, acknowledged: Vec::new(), archived: Some(folder) })
}

/// The skill of a staged change is not there any more.
fn gone(manifest: &Manifest) -> ToolError {
    ToolError::new("not-found", format!("the skill `{}` no longer exists", manifest.skill), "reject this staged write")
        .with_details(json!({"id": manifest.id, "name": manifest.skill}))
}

fn apply(
    host: &impl Host,
    id: &str,
    manifest: Manifest,
    accepted: &[String],
    author: &history::Author,
    keep: usize,
) -> Result<Approved, ToolError> {
    let root = mapped(host, &manifest)?;
    let current_bytes = match host.read(&root, &manifest.path) {
        Ok(bytes) => Some(bytes),
        Err(FsError::NotFound) => None,
        Err(err) => return Err(fs_error(err, &manifest.path)),
    };
    let current = current_bytes.as_deref().map(sha256_hex);
    if current != manifest.base_sha256 {
        return Err(ToolError::new(
            "drift",
            format!("`{}` changed since this write was staged; the staged write is kept for inspection", manifest.path),
            "read the diff, then reject it and stage the change again against the current file",
        )
        .with_details(
            json!({"id": id, "path": manifest.path, "staged_base": manifest.base_sha256, "current": current}),
        ));
    }
    let store = Store::new(host, &manifest.session);
    let author = history::Author { cwd: if manifest.cwd.is_empty() { author.cwd } else { &manifest.cwd }, ..*author };
    let landing = |after| history::Landing {
        skill: &manifest.skill,
        scope: Scope::from_stored(&manifest.scope),
        path: &manifest.path,
        operation: &manifest.operation,
        reason: &manifest.reason,
        before: current_bytes.as_deref(),
        after,
    };
    let mut acknowledged = Vec::new();
    match &manifest.new_sha256 {
        Some(_) => {
            let new = host.read(&Root::State, &format!("{DIR}/{id}/new")).map_err(|e| fs_error(e, "new"))?;
            if Some(sha256_hex(&new)) != manifest.new_sha256 {
                return Err(ToolError::new("drift", "the staged bytes were modified", "reject it and stage again"));
            }
            recheck(&store, &manifest)?;
            acknowledged = accept_findings(&store, &manifest, &new, accepted)?;
            history::around(host, &author, &landing(Some(&new)), keep, || {
                if acknowledged.is_empty() {
                    store.write_atomic(&root, &manifest.path, &new)
                } else {
                    write_acknowledged(&store, &manifest, &new, &acknowledged)
                }
            })?;
        }
        None => {
            if !accepted.is_empty() {
                return Err(nothing_to_accept(&manifest, accepted));
            }
            recheck(&store, &manifest)?;
            history::around(host, &author, &landing(None), keep, || {
                host.remove_file(&root, &manifest.path).map_err(|e| fs_error(e, &manifest.path))
            })?;
            if let Some((dir, _)) = manifest.path.rsplit_once('/') {
                store.remove_empty_dirs(&root, dir);
            }
        }
    }
    discard(host, id);
    for old in &manifest.supersedes {
        discard(host, old);
    }
    Ok(Approved { manifest, acknowledged, archived: None })
}

/// The skill file of a staged write's skill (`NAME/SKILL.md` or the flat `NAME.md`), and
/// whether the staged path is that file.
fn skill_file_path(manifest: &Manifest) -> (String, bool) {
    let flat = format!("{}.md", manifest.skill);
    let package = format!("{}/SKILL.md", manifest.skill);
    let path = if manifest.path == flat { flat } else { package };
    let same = manifest.path == path;
    (path, same)
}

/// The acknowledgements already on disk for the staged write's skill.
fn acknowledged_on_disk<H: Host>(store: &Store<'_, H>, manifest: &Manifest) -> (Option<SkillFile>, Vec<String>) {
    let (path, _) = skill_file_path(manifest);
    let skill = store.read(&manifest.root(), &path).ok().and_then(|bytes| SkillFile::parse_bytes(&bytes).ok());
    let acks = skill.as_ref().map(acknowledge::of).unwrap_or_default();
    (skill, acks)
}

/// The scanner's findings in the staged bytes, as the direct write would see them (already
/// acknowledged values skipped): none, or each one's rule named in `accepted`. Returns the
/// fingerprints to acknowledge; refuses `secret-found` while a finding's rule is not accepted,
/// and `invalid-args` for an accepted rule that found nothing (a typo must not pass silently).
fn accept_findings<H: Host>(
    store: &Store<'_, H>,
    manifest: &Manifest,
    new: &[u8],
    accepted: &[String],
) -> Result<Vec<String>, ToolError> {
    let (_, on_disk) = acknowledged_on_disk(store, manifest);
    let findings = acknowledge::unacknowledged(scan::scan_secrets(&String::from_utf8_lossy(new)), &on_disk);
    let waiting: Vec<&str> = {
        let mut rules: Vec<&str> =
            findings.iter().map(|f| f.rule).filter(|r| !accepted.iter().any(|a| a == r)).collect();
        rules.sort_unstable();
        rules.dedup();
        rules
    };
    if !waiting.is_empty() {
        let lines: Vec<serde_json::Value> =
            findings.iter().map(|f| json!({"rule": f.rule, "line": f.line, "message": f.message})).collect();
        return Err(ToolError::new(
            "secret-found",
            format!(
                "the staged content holds {} credential finding(s) ({}); nothing was written",
                findings.len(),
                waiting.join(", ")
            ),
            format!(
                "reject it; or, only if these are not credentials, approve with {}",
                waiting.iter().map(|r| format!("--accept-finding {r}")).collect::<Vec<_>>().join(" ")
            ),
        )
        .with_details(json!({"id": manifest.id, "field": "content", "findings": lines, "rules": waiting})));
    }
    if let Some(extra) = accepted.iter().find(|a| !findings.iter().any(|f| f.rule == a.as_str())) {
        return Err(nothing_to_accept(manifest, std::slice::from_ref(extra)));
    }
    let mut fingerprints: Vec<String> = findings.into_iter().filter_map(|f| f.fingerprint).collect();
    fingerprints.sort();
    fingerprints.dedup();
    Ok(fingerprints)
}

fn nothing_to_accept(manifest: &Manifest, accepted: &[String]) -> ToolError {
    ToolError::new(
        "invalid-args",
        format!(
            "the staged write `{}` has no finding of rule {} to accept; nothing was written",
            manifest.id,
            accepted.join(", ")
        ),
        "approve it without --accept-finding, or name the rules `/skills pending` shows for it",
    )
    .with_details(json!({"id": manifest.id, "rules": accepted}))
}

/// Lands a held write with its acknowledgements: into the new bytes when they are the skill
/// file, else into the skill file beside them (same lock, skill file last).
fn write_acknowledged<H: Host>(
    store: &Store<'_, H>,
    manifest: &Manifest,
    new: &[u8],
    fingerprints: &[String],
) -> Result<(), ToolError> {
    let root = manifest.root();
    let (skill_path, same) = skill_file_path(manifest);
    let unreadable = |what: &str| {
        ToolError::new(
            "invalid-frontmatter",
            format!("{what} is not a valid SKILL.md; the acknowledgement has nowhere to go"),
            "reject this staged write",
        )
    };
    if same {
        let mut skill = SkillFile::parse_bytes(new).map_err(|_| unreadable("the staged content"))?;
        acknowledge::add(&mut skill, fingerprints);
        return store.write_atomic(&root, &manifest.path, skill.to_text().as_bytes());
    }
    let (Some(mut skill), _) = acknowledged_on_disk(store, manifest) else {
        return Err(unreadable(&format!("`{skill_path}`")));
    };
    acknowledge::add(&mut skill, fingerprints);
    store.write_atomic(&root, &manifest.path, new)?;
    store.write_atomic(&root, &skill_path, skill.to_text().as_bytes())
}

/// The guards a direct write runs, run again at approval time (the library may have changed
/// since staging), refusing with the same codes: a create whose name now exists anywhere, a change
/// to a skill that is no longer ours or no longer the one that wins its name. (Credentials are
/// checked by `accept_findings`, which also takes the operator's acceptances.)
fn recheck<H: Host>(store: &Store<'_, H>, manifest: &Manifest) -> Result<(), ToolError> {
    let name = manifest.skill.as_str();
    let existing = store.locate(name)?;
    if manifest.operation == "create" {
        if let Some(existing) = existing {
            return Err(ToolError::new(
                "exists",
                format!("the {} exists now; approving would create a second `{name}`", existing.describe()),
                "reject this staged write; patch the existing skill instead",
            )
            .with_details(json!({"id": manifest.id, "name": name, "scope": existing.scope.as_str()})));
        }
        // Files put in a folder of that name since the create was staged: approving would adopt them.
        let scope = Scope::from_stored(&manifest.scope);
        refuse_foreign_folder(store, &manifest.root(), scope, name)?;
    } else {
        let Some(location) = existing else { return Err(gone(manifest)) };
        let ours = store
            .read(&location.root, &location.path())
            .ok()
            .and_then(|bytes| SkillFile::parse_bytes(&bytes).ok())
            .is_some_and(|skill| skill.is_ours());
        if location.root != manifest.root() || !ours {
            return Err(ToolError::new(
                "not-owned",
                format!(
                    "the {} is not a skill this plugin wrote any more (taken over, or shadowed by one in another scope)",
                    location.describe()
                ),
                "reject this staged write; hand-written skills are read-only",
            )
            .with_details(json!({"id": manifest.id, "name": name, "scope": location.scope.as_str()})));
        }
    }
    Ok(())
}

pub fn reject(host: &impl Host, id: &str) -> Result<Manifest, ToolError> {
    let skill = load_current(host, id)?.skill;
    crate::state_file::with_lock(host, &skill_lock(&skill), |_| {
        let manifest = load_current(host, id)?;
        discard(host, id);
        // Entries a merge replaced, should a crash have left one: they must not come back. Not
        // those a rejected archive named: they wait behind it, and are pending again as they were.
        if manifest.operation != ARCHIVE {
            for old in &manifest.supersedes {
                discard(host, old);
            }
        }
        Ok(manifest)
    })
}

/// Runtime override of `writeApproval` (`/skills approval on|off`), in the state root.
pub const APPROVAL_OVERRIDE: &str = "approval.json";

/// `{"enabled": bool}` in approval.json, when present and valid.
pub fn approval_override(host: &impl Host) -> Option<bool> {
    let bytes = host.read(&Root::State, APPROVAL_OVERRIDE).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()?.get("enabled")?.as_bool()
}

#[cfg(test)]
#[path = "approval_tests.rs"]
mod tests;
