//! The `archive` action: the skill leaves the library for `archive/` in the state root, at once
//! (`staging::archive::archive_location`) or, with write approval on, staged for the operator.

use crate::errors::ToolError;
use crate::host::Host;
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::commit::write_change;
use crate::library::skill_manage::context::Context;
use crate::library::skill_manage::target::{mutable, skill_name};
use crate::library::staging::archive::archive_location;
use crate::library::staging::coalesce;
use crate::library::staging::pending::ARCHIVE;
use crate::library::storage::store::{Store, skill_lock};
use crate::state_file;
use serde_json::{Value, json};

/// Moves a skill into `archive/` in the state root (never deletes; `/skills restore` brings it
/// back). Under the approval rule as every change: with write approval on, staged for the
/// operator, who approves it (then it is made as here) or rejects it (the skill stays).
pub(super) fn archive(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let (location, bytes, skill) = match mutable(host, cx, name) {
        // A skill created with approval on is not in the library until its create is approved.
        Err(err) if err.code == "not-found" && cx.approval => match coalesce::pending_create(host, cx.session, name) {
            Some(create) => {
                return Err(ToolError::new(
                    "not-found",
                    format!("`{name}` exists only as a staged create (`{}`); there is nothing to archive", create.id),
                    format!("ask the operator to reject `{}` (`/skills reject {}`) instead", create.id, create.id),
                )
                .with_details(json!({"name": name, "staged": create.id})));
            }
            None => return Err(err),
        },
        found => found?,
    };
    if skill.is_pinned() {
        return Err(ToolError::new("pinned", format!("`{name}` is pinned"), "ask the operator to unpin it first"));
    }
    if cx.approval {
        let path = location.path();
        let reason = args.reason.as_deref().unwrap_or_default();
        let change = write_change(cx, ARCHIVE, name, location.scope, &path, Some(&bytes), None, reason);
        let (manifest, files) = coalesce::stage_archive(host, &change, &location)?;
        cx.reads.mark(cx.session, cx.agent, name);
        let mut staged = json!({
            "status": "staged",
            "id": manifest.id,
            "name": name,
            "path": path,
            "scope": location.scope.as_str(),
            "files": files,
            "note": "an operator must approve this archive (/skills approve ID) before the skill leaves the library",
        });
        // Writes staged for the skill's files before it are part of what leaves: gone now.
        if !manifest.supersedes.is_empty() {
            staged["supersedes"] = json!(manifest.supersedes);
        }
        return Ok(staged);
    }
    let reason = args.reason.as_deref().unwrap_or("archived by the agent");
    let archived = state_file::with_lock(host, &skill_lock(name), |lock| {
        // The skill as it was judged, or a conflict: another process may have changed it.
        let store = Store::new(host, cx.session);
        if store.read(&location.root, &location.path()).ok().as_deref() != Some(bytes.as_slice()) {
            return Err(state_file::conflict(name));
        }
        archive_location(host, cx.session, &location, reason, lock)
    })?;
    cx.cache.forget(&location.root, &location.path());
    Ok(json!({"status": "archived", "name": name, "archive": archived}))
}
