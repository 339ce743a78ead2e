//! The skill a call names, and whether it may be changed: a valid name, the winning location,
//! the mutation guards (ours, read first), a package for supporting files, and what write
//! approval has pending for it (an archive that blocks it, the staged entry a change joins).

use crate::errors::ToolError;
use crate::host::{Host, Root};
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::context::Context;
use crate::library::staging::coalesce;
use crate::library::staging::pending::Manifest;
use crate::library::storage::skillfile::{self, SkillFile};
use crate::library::storage::store::{Layout, Location, Store};
use serde_json::json;

pub(super) fn required<'a>(value: &'a Option<String>, field: &str, action: &str) -> Result<&'a str, ToolError> {
    value.as_deref().ok_or_else(|| {
        ToolError::new("invalid-args", format!("`{action}` needs `{field}`"), format!("add `{field}` to the arguments"))
    })
}

pub(super) fn skill_name(args: &Args) -> Result<&str, ToolError> {
    let name = required(&args.name, "name", &args.action)?;
    skillfile::check_name(name).map_err(|why| {
        ToolError::new(
            "invalid-name",
            why,
            "use 1–64 lowercase letters, digits and single hyphens, e.g. `deploy-with-docker`",
        )
        .with_details(json!({"name": name}))
    })?;
    Ok(name)
}

pub(super) fn find(store: &Store<impl Host>, name: &str) -> Result<Location, ToolError> {
    store.locate(name)?.ok_or_else(|| no_such_skill(name))
}

pub(super) fn no_such_skill(name: &str) -> ToolError {
    ToolError::new(
        "not-found",
        format!("no skill named `{name}` in either scope"),
        "call skill_manage with action `list` to see the skills",
    )
    .with_details(json!({"name": name}))
}

/// With write approval on, `archive-staged` while an archive of the skill waits for the operator
/// (`coalesce::stage_merged` checks again under the skill's lock).
pub(super) fn refuse_staged_archive(host: &impl Host, cx: &Context, location: &Location) -> Result<(), ToolError> {
    match coalesce::pending_archive(host, &location.root, &location.name) {
        Some(archive) if cx.approval => Err(coalesce::archive_staged(&archive)),
        _ => Ok(()),
    }
}

/// With write approval on, the staged write pending for this file, if any (a change to the
/// file joins it; see `coalesce`).
pub(super) fn staged_entry(host: &impl Host, cx: &Context, root: &Root, path: &str) -> Option<Manifest> {
    if cx.approval { coalesce::pending_for(host, root, path).pop() } else { None }
}

/// The mutation guards: the winning skill exists, is ours, and this agent has read it.
pub(super) fn mutable(host: &impl Host, cx: &Context, name: &str) -> Result<(Location, Vec<u8>, SkillFile), ToolError> {
    let store = Store::new(host, cx.session);
    let location = find(&store, name)?;
    let bytes = store.read(&location.root, &location.path())?;
    if let Err(err) = std::str::from_utf8(&bytes) {
        // A skill of ours with a bad byte is an encoding problem, not a question of ownership.
        if SkillFile::parse(&String::from_utf8_lossy(&bytes)).is_ok_and(|s| s.is_ours()) {
            let line = bytes[..err.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(ToolError::new(
                "invalid-encoding",
                format!("{} is not valid UTF-8 at line {line}", location.describe()),
                "ask the operator to fix or remove the bad byte; the plugin will not rewrite a file it cannot read exactly",
            )
            .with_details(json!({"name": name, "path": location.path(), "line": line})));
        }
    }
    let skill = SkillFile::parse_bytes(&bytes).ok().filter(SkillFile::is_ours).ok_or_else(|| {
        ToolError::new(
            "not-owned",
            format!(
                "the {} was not written by this plugin; bundled, installed and hand-written skills are read-only",
                location.describe()
            ),
            "create a new class-level skill instead, or ask the operator to change this one",
        )
        .with_details(json!({"name": name, "scope": location.scope.as_str(), "path": location.path()}))
    })?;
    if !cx.reads.has_read(cx.session, cx.agent, name) {
        return Err(ToolError::new(
            "not-read",
            format!("read `{name}` before changing it"),
            format!("call skill_manage with {{\"action\":\"view\",\"name\":\"{name}\"}} first, then retry"),
        )
        .with_details(json!({"name": name, "read": cx.reads.read_by(cx.session, cx.agent)})));
    }
    Ok((location, bytes, skill))
}

pub(super) fn package(location: &Location) -> Result<(), ToolError> {
    if location.layout == Layout::Flat {
        return Err(ToolError::new(
            "not-a-package",
            format!("`{}` is a flat skill ({}) and cannot hold supporting files", location.name, location.path()),
            "put the material in the skill body instead",
        ));
    }
    Ok(())
}
