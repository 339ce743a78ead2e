//! Staged writes that build on each other, so an approval queue does not flood: with write
//! approval on, a change to a file that already has a staged write pending is made to the
//! staged content and replaces that entry (one entry per file, its diff against the file on
//! disk), and a staged `create` is refused at staging time when it repeats or nearly repeats a
//! create already staged.
//!
//! A merged entry names the entries it replaces (`supersedes`); they are removed after it is in
//! place, so a crash between the two leaves both, and the older one is hidden from listings
//! and refused at approval with the id that replaced it.
//!
//! A staged archive names the writes staged for the skill's files before it (`supersedes`) but
//! does not remove them: they stay pending, listed and readable, and wait behind it. Approving
//! the archive removes them (the skill leaves whole; approving them after it would find no
//! skill); rejecting it removes the archive alone, and they are pending as they were. While it
//! waits, a change to the skill is refused (`archive-staged`), naming it, and so is approving
//! one of the entries behind it (rejecting one is not). An archive's `supersedes` is therefore
//! not a merge's: its entries are not hidden, refused as `superseded` or pruned as leftovers.
//!
//! Owns: finding the pending entries of one target, reading their staged bytes, the
//! staged-create duplicate check, and staging an archive. Staging itself is `pending::stage`;
//! which entries a merge replaced is `pending::replaced`, since listing hides them.

use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::{Host, Root};
use crate::library::dedupe::{Candidate, closest_among};
use crate::library::staging::archive;
use crate::library::staging::pending::{self, ARCHIVE, Change, DIR, Manifest};
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Location, Scope, Store, fs_error, skill_lock};
use crate::state_file;
use serde_json::json;

/// The staged writes pending for one file, oldest first. A project-scope file is matched
/// within its session (the plugin cannot tell whether two sessions share a project folder).
pub fn pending_for(host: &impl Host, root: &Root, path: &str) -> Vec<Manifest> {
    pending::list(host).into_iter().filter(|m| m.path == path && &m.root() == root).collect()
}

/// Stages `change`, replacing the staged write pending for the same file, whose changes it
/// carries: the caller built the new bytes on that entry's bytes (`built_on`, its id; `None`
/// when there was none). Under the skill's lock, so merges and approvals of one skill take
/// turns; when another process staged or merged meanwhile, the change is refused as a
/// `conflict` and nothing is staged (the caller's bytes would drop the other change).
pub fn stage_merged(
    host: &impl Host,
    change: &Change,
    root: &Root,
    built_on: Option<&str>,
) -> Result<Manifest, ToolError> {
    state_file::with_lock(host, &skill_lock(change.skill), |_| {
        if let Some(archive) = pending_archive(host, root, change.skill) {
            return Err(archive_staged(&archive));
        }
        let earlier = pending_for(host, root, change.path);
        if let Some(last) = earlier.last()
            && last.base_sha256 != change.old.map(sha256_hex)
        {
            return Err(stale(last));
        }
        if earlier.last().map(|m| m.id.as_str()) != built_on {
            return Err(state_file::conflict(change.skill).with_details(json!({
                "resource": change.skill,
                "path": change.path,
                "staged": earlier.last().map(|m| m.id.clone()),
            })));
        }
        let mut supersedes: Vec<String> = Vec::new();
        for m in &earlier {
            supersedes.extend(m.supersedes.iter().cloned());
            supersedes.push(m.id.clone());
        }
        // A change to a skill whose create is still staged is part of that create.
        let operation = if change.old.is_none() && earlier.iter().any(|m| m.operation == "create") {
            "create"
        } else {
            change.operation
        };
        let manifest = pending::stage(host, &Change { operation, supersedes: &supersedes, ..*change })?;
        for m in &earlier {
            pending::discard(host, &m.id);
        }
        Ok(manifest)
    })
}

/// The staged archive of skill `name` in `root`, if one waits.
pub fn pending_archive(host: &impl Host, root: &Root, name: &str) -> Option<Manifest> {
    pending::list(host).into_iter().find(|m| m.operation == ARCHIVE && m.skill == name && &m.root() == root)
}

/// A change asked for while an archive of its skill waits for the operator.
pub fn archive_staged(archive: &Manifest) -> ToolError {
    ToolError::new(
        "archive-staged",
        format!(
            "`{}` is staged to be archived (`{}`); no change to it is staged while that waits",
            archive.skill, archive.id
        ),
        format!(
            "ask the operator to reject the archive (`/skills reject {}`) to keep the skill, then make the change again",
            archive.id
        ),
    )
    .with_details(json!({"id": archive.id, "name": archive.skill}))
}

/// Stages an archive of the skill at `location` (`change`: its SKILL.md as the caller judged
/// it in `old`, the agent, the reason), under the skill's lock: refused while an archive of it
/// waits, and as a `conflict` when the skill changed since the caller read it. Names the writes
/// staged for the skill's files in `supersedes` and leaves them pending: nothing is discarded
/// before the operator decides (see `approval::approve` and `approval::reject`).
pub fn stage_archive(
    host: &impl Host,
    change: &Change,
    location: &Location,
) -> Result<(Manifest, Vec<String>), ToolError> {
    let root = &location.root;
    state_file::with_lock(host, &skill_lock(change.skill), |_| {
        if let Some(archive) = pending_archive(host, root, change.skill) {
            return Err(archive_staged(&archive));
        }
        let store = Store::new(host, change.session);
        if store.read(root, change.path).ok().as_deref() != change.old {
            return Err(state_file::conflict(change.skill));
        }
        let staged = archive::staged(&store, location, change.reason)?;
        let folder = format!("{}/", location.name);
        let earlier: Vec<Manifest> = pending::list(host)
            .into_iter()
            .filter(|m| &m.root() == root && (m.path == change.path || m.path.starts_with(&folder)))
            .collect();
        let mut supersedes: Vec<String> = Vec::new();
        for m in &earlier {
            supersedes.extend(m.supersedes.iter().cloned());
            supersedes.push(m.id.clone());
        }
        let change = Change { supersedes: &supersedes, ..*change };
        let manifest = pending::stage_archive(host, &change, &staged.diff, &staged.digest)?;
        Ok((manifest, staged.files))
    })
}

/// A staged write whose file changed after it was staged: nothing may be merged into it.
pub fn stale(manifest: &Manifest) -> ToolError {
    ToolError::new(
        "drift",
        format!(
            "`{}` changed since `{}` was staged; a change cannot join that staged write",
            manifest.path, manifest.id
        ),
        format!(
            "ask the operator to reject `{}` (or approve it after reading its diff), then make the change again",
            manifest.id
        ),
    )
    .with_details(json!({"id": manifest.id, "path": manifest.path}))
}

/// The bytes a pending entry would write (`None` for a removal), checked against its manifest.
pub fn staged_bytes(host: &impl Host, manifest: &Manifest) -> Result<Option<Vec<u8>>, ToolError> {
    if manifest.new_sha256.is_none() {
        return Ok(None);
    }
    let bytes = host.read(&Root::State, &format!("{DIR}/{}/new", manifest.id)).map_err(|e| fs_error(e, "new"))?;
    if Some(sha256_hex(&bytes)) != manifest.new_sha256 {
        return Err(ToolError::new(
            "drift",
            format!("the staged bytes of `{}` were modified", manifest.id),
            "ask the operator to reject it; then make the change again",
        )
        .with_details(json!({"id": manifest.id})));
    }
    Ok(Some(bytes))
}

/// The newest staged create of `name`, in any scope this session can see.
pub fn pending_create(host: &impl Host, session: &str, name: &str) -> Option<Manifest> {
    pending::list(host).into_iter().rfind(|m| {
        m.operation == "create" && m.skill == name && (m.scope == Scope::User.as_str() || m.session == session)
    })
}

/// Refuses a create that repeats one already staged where this session can see it (user scope,
/// or this session's project): the same name (`exists`), or a name and description at least
/// `threshold` alike (`duplicate`, the error a direct create gets for a skill on disk).
pub fn refuse_staged_duplicate(
    host: &impl Host,
    session: &str,
    name: &str,
    description: &str,
    threshold: f64,
) -> Result<(), ToolError> {
    let creates: Vec<Manifest> = pending::list(host)
        .into_iter()
        .filter(|m| m.operation == "create" && (m.scope == Scope::User.as_str() || m.session == session))
        .collect();
    if let Some(same) = creates.iter().find(|m| m.skill == name) {
        return Err(ToolError::new(
            "exists",
            format!("a create of `{name}` is already staged (`{}`)", same.id),
            format!(
                "patch `{name}` to change the staged skill, or ask the operator to approve or reject `{}`",
                same.id
            ),
        )
        .with_details(json!({"name": name, "staged": same.id})));
    }
    let mut staged: Vec<(Candidate, &str)> = Vec::new();
    for m in &creates {
        let description = staged_bytes(host, m)
            .ok()
            .flatten()
            .and_then(|bytes| SkillFile::parse_bytes(&bytes).ok())
            .and_then(|skill| skill.description().map(str::to_string))
            .unwrap_or_default();
        staged.push((Candidate { name: m.skill.clone(), description }, m.id.as_str()));
    }
    let candidates: Vec<Candidate> = staged.iter().map(|(c, _)| c.clone()).collect();
    let proposed = Candidate { name: name.to_string(), description: description.to_string() };
    let closest = closest_among(&candidates, &proposed, 3);
    let Some(best) = closest.first().filter(|m| m.score >= threshold) else { return Ok(()) };
    let id_of = |skill: &str| staged.iter().find(|(c, _)| c.name == skill).map_or("", |(_, id)| *id);
    let list: Vec<serde_json::Value> =
        closest.iter().map(|m| json!({"name": m.name, "score": m.score, "staged": id_of(&m.name)})).collect();
    Err(ToolError::new(
        "duplicate",
        format!(
            "`{name}` looks like a duplicate of `{}`, staged as `{}` (similarity {:.2})",
            best.name,
            id_of(&best.name),
            best.score
        ),
        format!("patch `{}` instead (the change joins its staged create); one class-level skill per lesson", best.name),
    )
    .with_details(json!({"closest": list, "threshold": threshold})))
}

/// The staged archive `manifest` waits behind: one of the same skill (in the same root), or one
/// that names it in `supersedes`. `None` for an archive itself.
pub fn waiting_behind(host: &impl Host, manifest: &Manifest) -> Option<Manifest> {
    if manifest.operation == ARCHIVE {
        return None;
    }
    pending_archive(host, &manifest.root(), &manifest.skill).or_else(|| {
        pending::list(host).into_iter().find(|m| m.operation == ARCHIVE && m.supersedes.contains(&manifest.id))
    })
}

/// Approving an entry that waits behind a staged archive of its skill: the operator decides the
/// archive first.
pub fn behind_archive(manifest: &Manifest, archive: &Manifest) -> ToolError {
    ToolError::new(
        "archive-staged",
        format!(
            "`{}` waits behind the staged archive of `{}` (`{}`); it is kept, and is not applied while that waits",
            manifest.id, archive.skill, archive.id
        ),
        format!(
            "reject the archive (`/skills reject {}`) to keep the skill, then approve `{}`; approving the archive discards `{}`",
            archive.id, manifest.id, manifest.id
        ),
    )
    .with_details(json!({"id": archive.id, "name": archive.skill, "waiting": manifest.id}))
}

#[cfg(test)]
#[path = "coalesce_tests.rs"]
mod tests;
