//! The `skill_manage` tool (seed 002): this module only orchestrates one call. It bounds and
//! parses the arguments (`args`; the schema the model sees is `spec`), refuses a credential in any
//! stored field, decides whether the change is staged, and hands the action to its file: `read`
//! (list, view), `create`, `rewrite` (patch, edit), `files` (write_file, remove_file), `archive`.
//! Each action finds its skill and runs the mutation guards (`target`), checks the content
//! (`content`), then stages or writes through `commit`. Every refusal is checked before the first
//! write, so a refused call changes nothing.
//!
//! The write path is the library's top floor: it may use every folder below (`curation`,
//! `staging`, `history`, `guards`, `storage`); nothing in the library uses it. `args` and `spec`
//! sit here because they describe this tool and nothing else.

mod archive;
pub mod args;
mod commit;
mod content;
mod context;
mod create;
mod files;
mod read;
mod rewrite;
pub mod spec;
mod target;

pub use context::Context;

use crate::errors::ToolError;
use crate::host::Host;
use crate::library::storage::skillfile::{self, SkillFile, meta};
use crate::library::storage::store::Store;
use args::{Args, check_sizes};
use content::scan_field;
use target::find;

/// Runs one call; the result is the JSON text the model reads. A refusal that quotes what the
/// caller sent (an unknown action or scope, a field the JSON parser names) never carries a
/// credential on: the message goes through the scanner's redaction, as stored text does.
pub fn run(host: &impl Host, cx: &mut Context, args_json: &str) -> Result<String, ToolError> {
    run_call(host, cx, args_json).map_err(|mut refusal| {
        if let Some(clean) = self_evolve_scan::redact_secrets(&refusal.message) {
            refusal.message = clean;
        }
        refusal
    })
}

fn run_call(host: &impl Host, cx: &mut Context, args_json: &str) -> Result<String, ToolError> {
    check_sizes(args_json, &cx.config.limits)?;
    let args: Args = serde_json::from_str(args_json).map_err(|e| {
        ToolError::new(
            "invalid-args",
            format!("the arguments are not valid for skill_manage: {e}"),
            "pass a JSON object matching the tool's schema",
        )
    })?;
    for (field, value) in [("reason", &args.reason), ("file_path", &args.file_path), ("name", &args.name)] {
        if let Some(value) = value {
            scan_field(field, value)?;
        }
    }
    // Staging is the careful side: a caller may always ask for it, never for the reverse; and
    // with `team.othersSkills: stage`, a change to a skill another library created is staged.
    if args.stage || teammates_skill_to_stage(host, cx, &args) {
        cx.approval = true;
    }
    let value = match args.action.as_str() {
        "list" => return read::list(host, cx, &args),
        "view" => read::view(host, cx, &args),
        "create" => create::create(host, cx, &args),
        "patch" => rewrite::patch(host, cx, &args),
        "edit" => rewrite::edit(host, cx, &args),
        "write_file" => files::write_file(host, cx, &args),
        "remove_file" => files::remove_file(host, cx, &args),
        "archive" => archive::archive(host, cx, &args),
        other => Err(ToolError::new(
            "invalid-args",
            format!("unknown action `{other}`"),
            format!("use one of {}", spec::ACTIONS.join(", ")),
        )),
    }?;
    Ok(value.to_string())
}

/// Whether this change is to a skill another team library created while this machine stages
/// such changes (`team.othersSkills: stage`). A skill without a library stamp is this machine's.
fn teammates_skill_to_stage(host: &impl Host, cx: &Context, args: &Args) -> bool {
    let team = &cx.config.team;
    if !team.stage_others || team.library.is_empty() {
        return false;
    }
    if !matches!(args.action.as_str(), "patch" | "edit" | "write_file" | "remove_file" | "archive") {
        return false;
    }
    let Some(name) = args.name.as_deref().filter(|n| skillfile::check_name(n).is_ok()) else { return false };
    let store = Store::new(host, cx.session);
    let Ok(location) = find(&store, name) else { return false };
    let Ok(bytes) = store.read(&location.root, &location.path()) else { return false };
    SkillFile::parse_bytes(&bytes)
        .ok()
        .and_then(|skill| skill.meta(meta::LIBRARY))
        .is_some_and(|library| library != team.library)
}

#[cfg(test)]
#[path = "skill_manage_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "governance_tests.rs"]
mod governance_tests;
