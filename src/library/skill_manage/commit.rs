//! The end every change goes through once its checks passed: stage it (write approval on, or
//! held findings) or write it under the skill's lock as a compare-and-swap with its version
//! record, then note the read and the use in the ledger.

use crate::digest::unified_diff;
use crate::errors::ToolError;
use crate::host::{FsError, Host, Root};
use crate::library::curation::ledger::Record;
use crate::library::guards::finding::Finding;
use crate::library::history;
use crate::library::skill_manage::content::secret_found;
use crate::library::skill_manage::context::Context;
use crate::library::staging::coalesce;
use crate::library::staging::pending::{Change, Held};
use crate::library::storage::store::{Scope, Store, fs_error, skill_lock};
use crate::state_file;
use serde_json::{Value, json};

/// One change to land: where, what it was based on, what it becomes (None: remove), and the
/// credential findings that hold it for the operator (empty for an ordinary write).
pub(super) struct Write<'a> {
    pub(super) operation: &'a str,
    pub(super) name: &'a str,
    pub(super) scope: Scope,
    pub(super) root: &'a Root,
    pub(super) path: &'a str,
    pub(super) old: Option<&'a [u8]>,
    pub(super) new: Option<&'a [u8]>,
    pub(super) reason: &'a str,
    pub(super) held: &'a [Finding],
    /// With approval on: the staged write to this file the new bytes were built on (see
    /// `coalesce::stage_merged`).
    pub(super) built_on: Option<&'a str>,
}

/// Under the skill's lock, `conflict` when `path` is a supporting file of a package whose SKILL.md
/// is gone: another process archived the skill (renamed its folder away) after the guards read
/// it. A new file's compare-and-swap cannot see that (it was absent then and is absent now), and
/// writing it would recreate `NAME/` as a folder without a SKILL.md. A change to the SKILL.md
/// itself needs no such check: the file it was based on is gone, so its own swap fails.
fn refuse_orphan(host: &impl Host, root: &Root, name: &str, path: &str) -> Result<(), ToolError> {
    let skill_md = format!("{name}/SKILL.md");
    if path == skill_md || !path.starts_with(&format!("{name}/")) {
        return Ok(());
    }
    match host.stat(root, &skill_md) {
        Ok(stat) if stat.kind == crate::host::EntryKind::File => Ok(()),
        Ok(_) | Err(FsError::NotFound) => Err(state_file::conflict(name).with_details(json!({
            "resource": name,
            "path": path,
            "missing": skill_md,
            "reason": "the skill was archived or removed by another process since it was read",
        }))),
        Err(err) => Err(fs_error(err, &skill_md)),
    }
}

/// `exists` when a skill of this name is in any scope.
pub(super) fn refuse_existing(store: &Store<impl Host>, name: &str) -> Result<(), ToolError> {
    match store.locate(name)? {
        Some(existing) => Err(ToolError::new(
            "exists",
            format!("the {} already exists", existing.describe()),
            format!("view `{name}` and patch it instead of creating a new one"),
        )
        .with_details(json!({"name": name, "scope": existing.scope.as_str()}))),
        None => Ok(()),
    }
}

/// Stages or writes the change; records the read and the use. A change with held findings is
/// staged as a held write and answered with `secret-found` naming it.
pub(super) fn commit(host: &impl Host, cx: &mut Context, write: Write) -> Result<Value, ToolError> {
    let Write { operation, name, scope, root, path, old, new, reason, held, built_on } = write;
    if !held.is_empty() {
        let change = write_change(cx, operation, name, scope, path, old, new, reason);
        return Err(hold(host, &change, root, built_on, held));
    }
    let store = Store::new(host, cx.session);
    store.refuse_symlinks(root, path)?;
    let result = if cx.approval {
        let change = write_change(cx, operation, name, scope, path, old, new, reason);
        let manifest = coalesce::stage_merged(host, &change, root, built_on)?;
        let mut staged = json!({
            "status": "staged",
            "id": manifest.id,
            "path": path,
            "scope": scope.as_str(),
            "diff": unified_diff(path, old, new),
            "note": "an operator must approve this write (/skills approve ID) before it takes effect",
        });
        // A change that joined staged writes to the same file names them: they are gone now.
        if !manifest.supersedes.is_empty() {
            staged["supersedes"] = json!(manifest.supersedes);
        }
        staged
    } else {
        // Compare and swap under the skill's lock: every process that changes this skill takes
        // it, and what this change was based on must still be what is on disk (a person's editor
        // takes no lock). The guards before ran without it, so a refusal leaves no trace.
        state_file::with_lock(host, &skill_lock(name), |_| {
            let current = match host.read(root, path) {
                Ok(bytes) => Some(bytes),
                Err(FsError::NotFound) => None,
                Err(err) => return Err(fs_error(err, path)),
            };
            if current.as_deref() != old {
                return Err(state_file::conflict(name).with_details(json!({"resource": name, "path": path})));
            }
            refuse_orphan(host, root, name, path)?;
            // The name in the other scope, created by another process since the guards ran,
            // would shadow this skill or be shadowed by it: taken (both scopes share this lock).
            if operation == "create" {
                refuse_existing(&store, name)?;
            }
            let author = history::Author { actor: cx.actor, by: cx.agent, session: cx.session, cwd: cx.cwd };
            let landing = history::Landing { skill: name, scope, path, operation, reason, before: old, after: new };
            history::around(host, &author, &landing, cx.config.history_versions, || match new {
                Some(bytes) => store.write_atomic(root, path, bytes),
                None => host.remove_file(root, path).map_err(|e| fs_error(e, path)).map(|()| {
                    if let Some((dir, _)) = path.rsplit_once('/') {
                        store.remove_empty_dirs(root, dir);
                    }
                }),
            })
        })?;
        if operation == "create" {
            cx.cache.forget_file(root, path);
        } else {
            cx.cache.forget(root, path);
        }
        json!({"status": "written", "path": path, "scope": scope.as_str()})
    };
    let now = host.now_ms();
    cx.reads.mark(cx.session, cx.agent, name);
    let mut records = vec![Record::Used(name, now)];
    if operation == "create" {
        records.insert(0, Record::Created(name, now));
    }
    if let Err(err) = cx.ledger.record(host, &records) {
        host.log(crate::host::Level::Warn, &format!("could not record the use in the ledger: {err}"));
    }
    Ok(result)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write_change<'a>(
    cx: &'a Context,
    operation: &'a str,
    name: &'a str,
    scope: Scope,
    path: &'a str,
    old: Option<&'a [u8]>,
    new: Option<&'a [u8]>,
    reason: &'a str,
) -> Change<'a> {
    Change {
        operation,
        skill: name,
        scope,
        session: cx.session,
        agent: cx.agent,
        path,
        old,
        new,
        reason,
        held: &[],
        supersedes: &[],
        cwd: cx.cwd,
    }
}

/// Stages a write the scanner refused as a held write (write approval is on): nothing lands,
/// and the operator can accept each finding the agent could not have known was false.
fn hold(host: &impl Host, change: &Change, root: &Root, built_on: Option<&str>, findings: &[Finding]) -> ToolError {
    let held: Vec<Held> = findings
        .iter()
        .map(|f| Held {
            rule: f.rule.to_string(),
            line: f.line,
            fingerprint: f.fingerprint.clone().unwrap_or_default(),
        })
        .collect();
    let mut refused = secret_found("content", findings);
    match coalesce::stage_merged(host, &Change { held: &held, ..*change }, root, built_on) {
        Ok(manifest) => {
            refused.details["held"] = json!(manifest.id);
            refused.hint = format!(
                "remove the secret and refer to it by name instead (e.g. `$GITHUB_TOKEN`); the write is held as `{}` \
                 for the operator, who can land it only by accepting the finding if it is not a credential",
                manifest.id
            );
            refused
        }
        Err(err) => err,
    }
}
