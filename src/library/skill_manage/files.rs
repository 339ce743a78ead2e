//! The actions on a package's supporting files: `write_file` (the whole file, replacing a write
//! staged for it) and `remove_file`.

use crate::errors::ToolError;
use crate::host::{FsError, Host};
use crate::library::guards::acknowledge;
use crate::library::guards::lint;
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::commit::{Write, commit};
use crate::library::skill_manage::content::{check_size, content_secrets, with_warnings};
use crate::library::skill_manage::context::Context;
use crate::library::skill_manage::rewrite::{Base, base};
use crate::library::skill_manage::target::{
    mutable, package, refuse_staged_archive, required, skill_name, staged_entry,
};
use crate::library::storage::store::{Store, check_resource_path, fs_error};
use serde_json::Value;

pub(super) fn write_file(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let file = required(&args.file_path, "file_path", "write_file")?;
    let content = required(&args.content, "content", "write_file")?;
    check_resource_path(file)?;
    let Base { location, skill: skill_md, .. } = base(host, cx, name)?;
    package(&location)?;
    check_size(content.len(), cx.config.limits.file_bytes, file)?;
    let held = content_secrets(cx, content, &acknowledge::of(&skill_md))?;
    let warnings = lint::scan_destructive(content);
    let path = format!("{name}/{file}");
    let old = match host.read(&location.root, &path) {
        Ok(bytes) => Some(bytes),
        Err(FsError::NotFound) => None,
        Err(err) => return Err(fs_error(err, &path)),
    };
    // The whole file is replaced: a staged write to it is superseded, not built on.
    let built_on = staged_entry(host, cx, &location.root, &path).map(|m| m.id);
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "write_file",
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: old.as_deref(),
        new: Some(content.as_bytes()),
        reason,
        held: &held,
        built_on: built_on.as_deref(),
    };
    let result = commit(host, cx, write)?;
    Ok(with_warnings(result, &warnings))
}

pub(super) fn remove_file(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let file = required(&args.file_path, "file_path", "remove_file")?;
    check_resource_path(file)?;
    let (location, _, _) = mutable(host, cx, name)?;
    package(&location)?;
    refuse_staged_archive(host, cx, &location)?;
    let path = format!("{name}/{file}");
    Store::new(host, cx.session).refuse_symlinks(&location.root, &path)?;
    let old = host.read(&location.root, &path).map_err(|e| fs_error(e, &path))?;
    // A staged write to the file is superseded by its removal.
    let built_on = staged_entry(host, cx, &location.root, &path).map(|m| m.id);
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "remove_file",
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: Some(&old),
        new: None,
        reason,
        held: &[],
        built_on: built_on.as_deref(),
    };
    commit(host, cx, write)
}
