//! The `create` action: a new skill in the scope asked for, refused when its name exists anywhere,
//! when a folder of that name holds someone's files, or when it nearly repeats a skill on disk or
//! a create already staged; stamped as this plugin's and committed.

use crate::errors::ToolError;
use crate::host::Host;
use crate::library::skill_manage::args::Args;
use crate::library::skill_manage::commit::{Write, commit, refuse_existing};
use crate::library::skill_manage::content::{check_skill_text, with_warnings};
use crate::library::skill_manage::context::Context;
use crate::library::skill_manage::target::{required, skill_name};
use crate::library::staging::coalesce;
use crate::library::storage::frontmatter::Value as Yaml;
use crate::library::storage::skillfile::{SkillFile, meta};
use crate::library::storage::store::{Layout, Location, Scope, Store, refuse_foreign_folder};
use crate::time;
use serde_json::{Value, json};

pub(super) fn create(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let description = required(&args.description, "description", "create")?;
    let body = args.body.as_deref().unwrap_or_default();
    let scope = match args.scope.as_deref() {
        None | Some("user") => Scope::User,
        Some("project") => Scope::Project,
        Some(other) => {
            return Err(ToolError::new("invalid-args", format!("unknown scope `{other}`"), "use `user` or `project`"));
        }
    };
    let store = Store::new(host, cx.session);
    let root = store.root_of(scope).ok_or_else(|| {
        ToolError::new(
            "no-scope",
            format!("the {} skills folder is not available in this session", scope.as_str()),
            "create the skill in the other scope",
        )
    })?;
    refuse_existing(&store, name)?;
    store.refuse_symlinks(&root, name)?;
    refuse_foreign_folder(&store, &root, scope, name)?;
    let (closest, exists) = store.closest(cx.cache, name, description, 3, cx.config.duplicate_threshold);
    // Another process created this very name between the existence check and this one.
    if exists {
        return Err(ToolError::new(
            "exists",
            format!("`{name}` was created meanwhile (by another session or process)"),
            format!("view `{name}` and patch it instead of creating a new one"),
        )
        .with_details(json!({"name": name})));
    }
    if closest.first().is_some_and(|m| m.score >= cx.config.duplicate_threshold) {
        let list: Vec<Value> = closest.iter().map(|m| json!({"name": m.name, "score": m.score})).collect();
        return Err(ToolError::new(
            "duplicate",
            format!("`{name}` looks like a duplicate of `{}` (similarity {:.2})", closest[0].name, closest[0].score),
            format!("view `{}` and patch it instead; one class-level skill per lesson", closest[0].name),
        )
        .with_details(json!({"closest": list, "threshold": cx.config.duplicate_threshold})));
    }
    if cx.approval {
        coalesce::refuse_staged_duplicate(host, cx.session, name, description, cx.config.duplicate_threshold)?;
    }
    let mut skill = SkillFile {
        fields: vec![("name".into(), Yaml::str(name)), ("description".into(), Yaml::str(description))],
        body: if body.is_empty() || body.ends_with('\n') { body.to_string() } else { format!("{body}\n") },
    };
    skill.stamp(&time::iso(host.now_ms()));
    if !cx.config.team.library.is_empty() {
        skill.set_meta(meta::LIBRARY, &cx.config.team.library);
    }
    let text = skill.to_text();
    let (warnings, held) = check_skill_text(cx, &skill, name, &text, &[])?;
    let path = format!("{name}/SKILL.md");
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "create",
        name,
        scope,
        root: &root,
        path: &path,
        old: None,
        new: Some(text.as_bytes()),
        reason,
        held: &held,
        built_on: None,
    };
    let result = commit(host, cx, write)?;
    if result["status"] == "written" {
        let location = Location { scope, layout: Layout::Package, root: root.clone(), name: name.to_string() };
        store.note_created(cx.cache, &location, description);
    }
    Ok(with_warnings(result, &warnings))
}
