//! The actions that change a SKILL.md: `patch` (replace one exact string, or every one) and `edit`
//! (the whole text). Both build on the skill's current bytes (`base`: the disk's, or a staged
//! write's that the change joins), keep its name and the fields the operator owns, re-stamp it,
//! check it and commit it.

use crate::digest::sha256_hex;
use crate::errors::ToolError;
use crate::host::Host;
use crate::library::guards::acknowledge;
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::commit::{Write, commit};
use crate::library::skill_manage::content::{check_size, check_skill_text, with_warnings};
use crate::library::skill_manage::context::Context;
use crate::library::skill_manage::target::{
    mutable, no_such_skill, refuse_staged_archive, required, skill_name, staged_entry,
};
use crate::library::staging::coalesce;
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Layout, Location, Scope};
use crate::time;
use serde_json::{Value, json};

fn replace_checked(text: &str, old: &str, new: &str, replace_all: bool, limit: usize) -> Result<String, ToolError> {
    if old.is_empty() {
        return Err(ToolError::new(
            "invalid-args",
            "`old_string` is empty",
            "copy the exact text to replace from `view`",
        ));
    }
    let count = text.matches(old).count();
    // Sized before it is built: `replace_all` of a one-byte string by a long one could otherwise
    // grow the text past the instance's memory before any bound looked at it.
    let grown = text.len().saturating_add(count.saturating_mul(new.len().saturating_sub(old.len())));
    if count > 0 && (count == 1 || replace_all) {
        check_size(grown, limit, "SKILL.md")?;
    }
    match count {
        0 => Err(ToolError::new(
            "no-match",
            "`old_string` does not occur in the skill",
            "view the skill again and copy the exact text, including whitespace",
        )),
        1 => Ok(text.replacen(old, new, 1)),
        _ if replace_all => Ok(text.replace(old, new)),
        n => Err(ToolError::new(
            "ambiguous",
            format!("`old_string` occurs {n} times"),
            "include more surrounding text so it is unique, or set replace_all",
        )
        .with_details(json!({"occurrences": n}))),
    }
}

/// Re-reads changed text as a skill that must keep its name and the fields the operator or the
/// host owns (`meta::OWNED`, as `previous` has them: the disk's, or a staged write's built on the
/// disk's); re-stamps it.
fn restamp(host: &impl Host, text: &str, name: &str, previous: &SkillFile) -> Result<(SkillFile, String), ToolError> {
    let mut skill = SkillFile::parse(text).map_err(|e| {
        ToolError::new(
            "invalid-frontmatter",
            format!("the result is not a valid SKILL.md: {}", e.message),
            "keep the `---` frontmatter intact",
        )
        .with_details(json!({"line": e.line}))
    })?;
    let refused = |message: String, hint: String| Err(ToolError::new("invalid-frontmatter", message, hint));
    match (skill.name(), previous.name()) {
        (Some(now), _) if now == name => {}
        (None, _) => {
            return refused(
                format!("the result has no `name` in its frontmatter; `{name}` needs `name: {name}`"),
                format!("keep `name: {name}` in the frontmatter"),
            );
        }
        (Some(now), Some(before)) if now == before => {
            return refused(
                format!("the skill's `name` is `{now}` but its folder is `{name}`; a skill's name equals its folder"),
                format!("set `name: {name}` in the frontmatter"),
            );
        }
        (Some(now), _) => {
            return refused(
                format!("the change renames `{name}` to `{now}`; a skill keeps its name"),
                "create a new skill for a new name".to_string(),
            );
        }
    }
    // What the operator or the host owns is not the change's to say, whether its text leaves it
    // out, changes it or adds it: the pin and the status keep the curator's hands where the
    // operator put them, the library decides who may patch the skill, only an operator's approval
    // acknowledges a finding, and the stamp counts on from the file's own version and creation.
    skill.keep_owned(previous);
    skill.stamp(&time::iso(host.now_ms()));
    let text = skill.to_text();
    Ok((skill, text))
}

pub(super) fn patch(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let old_string = required(&args.old_string, "old_string", "patch")?;
    let new_string = required(&args.new_string, "new_string", "patch")?;
    let base = base(host, cx, name)?;
    let current = String::from_utf8_lossy(&base.bytes);
    let patched = replace_checked(&current, old_string, new_string, args.replace_all, cx.config.limits.skill_bytes)?;
    rewrite(host, cx, "patch", &base, &patched, args)
}

pub(super) fn edit(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let content = required(&args.content, "content", "edit")?;
    check_size(content.len(), cx.config.limits.skill_bytes, "SKILL.md")?;
    let base = base(host, cx, name)?;
    rewrite(host, cx, "edit", &base, content, args)
}

/// What a change to a skill builds on: where the skill is, its SKILL.md on disk (`None` for a
/// create still staged), and the SKILL.md the change applies to: with write approval on and a
/// staged write pending for it, that write's bytes (the change joins it), else the disk's.
pub(super) struct Base {
    pub(super) location: Location,
    pub(super) disk: Option<Vec<u8>>,
    pub(super) built_on: Option<String>,
    pub(super) bytes: Vec<u8>,
    pub(super) skill: SkillFile,
}

pub(super) fn base(host: &impl Host, cx: &Context, name: &str) -> Result<Base, ToolError> {
    let (location, disk, skill) = match mutable(host, cx, name) {
        Ok((location, bytes, skill)) => (location, Some(bytes), Some(skill)),
        // A skill this agent created with approval on exists only as a staged create.
        Err(err) if err.code == "not-found" && cx.approval && cx.reads.has_read(cx.session, cx.agent, name) => {
            let Some(staged) = coalesce::pending_create(host, cx.session, name) else { return Err(err) };
            let scope = Scope::from_stored(&staged.scope);
            (Location { scope, layout: Layout::Package, root: staged.root(), name: name.to_string() }, None, None)
        }
        Err(err) => return Err(err),
    };
    refuse_staged_archive(host, cx, &location)?;
    let pending = staged_entry(host, cx, &location.root, &location.path());
    let staged = match &pending {
        Some(manifest) => coalesce::staged_bytes(host, manifest)?,
        None => None,
    };
    // A staged write made against a file that has changed since is not built on: approving
    // the merge would land over the newer file without the drift check its base gives.
    if let Some(manifest) = &pending
        && manifest.base_sha256 != disk.as_deref().map(sha256_hex)
    {
        return Err(coalesce::stale(manifest));
    }
    let built_on = pending.map(|m| m.id);
    let (bytes, skill) = match (staged, disk.clone(), skill) {
        (Some(bytes), _, _) => {
            let skill = SkillFile::parse_bytes(&bytes).map_err(|e| {
                ToolError::new(
                    "invalid-frontmatter",
                    format!("the staged SKILL.md of `{name}` does not parse: {}", e.message),
                    "ask the operator to reject the staged write, then make the change again",
                )
            })?;
            (bytes, skill)
        }
        (None, Some(bytes), Some(skill)) => (bytes, skill),
        _ => return Err(no_such_skill(name)),
    };
    Ok(Base { location, disk, built_on, bytes, skill })
}

/// The shared end of `patch` and `edit`: re-stamp the new text, check it, stage or write it.
fn rewrite(
    host: &impl Host,
    cx: &mut Context,
    operation: &str,
    base: &Base,
    new_text: &str,
    args: &Args,
) -> Result<Value, ToolError> {
    let location = &base.location;
    let name = location.name.as_str();
    let (skill, text) = restamp(host, new_text, name, &base.skill)?;
    let (warnings, held) = check_skill_text(cx, &skill, name, &text, &acknowledge::of(&base.skill))?;
    let reason = args.reason.as_deref().unwrap_or_default();
    let path = location.path();
    let write = Write {
        operation,
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: base.disk.as_deref(),
        new: Some(text.as_bytes()),
        reason,
        held: &held,
        built_on: base.built_on.as_deref(),
    };
    let result = commit(host, cx, write)?;
    Ok(with_warnings(result, &warnings))
}
