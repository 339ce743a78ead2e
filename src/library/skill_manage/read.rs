//! The reading actions: `list` (a page of the merged listing, serialized straight to text) and
//! `view` (a skill's SKILL.md or one supporting file, which marks it read for this agent).

use crate::errors::ToolError;
use crate::host::Host;
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::context::Context;
use crate::library::skill_manage::target::{find, skill_name};
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Layout, Store, check_resource_path};
use serde::Serialize;
use serde_json::{Value, json};

/// One entry of `list`, serialized straight from the listing (no intermediate tree).
#[derive(Serialize)]
struct ListEntry<'a> {
    name: &'a str,
    scope: &'static str,
    layout: &'static str,
    description: &'a str,
    owned: bool,
    pinned: bool,
    status: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Serialize)]
struct ListOutput<'a> {
    skills: Vec<ListEntry<'a>>,
    /// Skills in both scopes; `offset` and, when more follow, `next_offset` place the page.
    total: usize,
    offset: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
    warnings: &'a [String],
}

/// Skills per `list` page unless the call asks otherwise, and the most it may ask for: a tool
/// result is read by a model, and 100 descriptions are already some 25 KB.
const LIST_PAGE: usize = 100;
const LIST_PAGE_MAX: usize = 1000;

/// Serialized straight to text: with thousands of skills an intermediate tree costs more
/// than the listing itself.
pub(super) fn list(host: &impl Host, cx: &mut Context, args: &Args) -> Result<String, ToolError> {
    let offset = args.offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
    let limit = args.limit.map_or(LIST_PAGE, |l| usize::try_from(l).unwrap_or(usize::MAX).clamp(1, LIST_PAGE_MAX));
    let (skills, total, warnings) = Store::new(host, cx.session).list_page(cx.cache, offset, limit);
    let shown = offset.saturating_add(skills.len());
    let next_offset = (shown < total).then_some(shown);
    let entries: Vec<ListEntry> = skills
        .iter()
        .map(|s| ListEntry {
            name: &s.location.name,
            scope: s.location.scope.as_str(),
            layout: if s.location.layout == Layout::Package { "package" } else { "flat" },
            description: &s.summary.description,
            owned: s.summary.owned,
            pinned: s.summary.pinned,
            status: &s.summary.status,
            warnings: &s.summary.warnings,
        })
        .collect();
    serde_json::to_string(&ListOutput { skills: entries, total, offset, next_offset, warnings: &warnings })
        .map_err(|e| ToolError::new("io", format!("could not serialize the listing: {e}"), "retry"))
}

pub(super) fn view(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let store = Store::new(host, cx.session);
    let location = find(&store, name)?;
    let files = match location.layout {
        Layout::Package => store.package_files(&location.root, name)?.into_iter().filter(|f| f != "SKILL.md").collect(),
        Layout::Flat => Vec::new(),
    };
    let (path, bytes) = match &args.file_path {
        Some(file) => {
            check_resource_path(file)?;
            let path = format!("{name}/{file}");
            store.refuse_symlinks(&location.root, &path)?;
            (path.clone(), store.read(&location.root, &path)?)
        }
        None => (location.path(), store.read(&location.root, &location.path())?),
    };
    let content = String::from_utf8(bytes)
        .map_err(|_| ToolError::new("invalid-encoding", format!("`{path}` is not UTF-8 text"), "view another file"))?;
    let (owned, warnings) = match SkillFile::parse(&content) {
        Ok(skill) if args.file_path.is_none() => {
            (skill.is_ours(), skill.validate(Some(name)).into_iter().map(|v| v.message).collect::<Vec<_>>())
        }
        Ok(_) => (false, Vec::new()),
        Err(e) if args.file_path.is_none() => (false, vec![format!("cannot parse: {}", e.message)]),
        Err(_) => (false, Vec::new()),
    };
    cx.reads.mark(cx.session, cx.agent, name);
    Ok(json!({
        "name": name,
        "scope": location.scope.as_str(),
        "path": path,
        "content": content,
        "files": files,
        "owned": owned,
        "warnings": warnings,
    }))
}
