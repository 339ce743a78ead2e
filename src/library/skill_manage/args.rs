//! The `skill_manage` arguments: their shape, and the bound on every field, checked on a
//! borrowed view of the JSON before the real parse (a model can send megabytes in any field).

use crate::config::Limits;
use crate::errors::ToolError;
use serde::Deserialize;
use serde_json::json;
use std::borrow::Cow;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub action: String,
    pub name: Option<String>,
    pub scope: Option<String>,
    pub description: Option<String>,
    pub body: Option<String>,
    pub content: Option<String>,
    pub old_string: Option<String>,
    pub new_string: Option<String>,
    #[serde(default)]
    pub replace_all: bool,
    pub file_path: Option<String>,
    pub reason: Option<String>,
    /// Stage the change for the operator's approval even when writes land directly (a host
    /// replaying a teammate's conflicting edit, an agent unsure of a change).
    #[serde(default)]
    pub stage: bool,
    /// list: the first skill of the page (by name) and the page's size.
    pub offset: Option<u64>,
    pub limit: Option<u64>,
}

/// The arguments' fields, borrowed from the JSON text (no copy unless a value has escapes), so
/// their sizes are known before anything else reads them.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Sizes<'a> {
    #[serde(borrow)]
    action: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    scope: Option<Cow<'a, str>>,
    #[serde(borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow)]
    body: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    old_string: Option<Cow<'a, str>>,
    #[serde(borrow)]
    new_string: Option<Cow<'a, str>>,
    #[serde(borrow)]
    file_path: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
}

/// The most argument text read at all: past this the call is refused unread. Above the largest
/// content `limits.fileBytes` allows (16 MiB) with room for JSON escapes; hosts refuse larger
/// text before handing it to the instance (`too_large_arguments`), so it never costs its memory.
pub const MAX_ARGS_BYTES: usize = 24 << 20;

/// Every argument within its bound, before the real parse: a model can send megabytes in any
/// field, and parsing, copying or quoting that would exhaust the instance's memory.
pub fn check_sizes(args_json: &str, limits: &Limits) -> Result<(), ToolError> {
    field_size("arguments", args_json.len(), MAX_ARGS_BYTES)?;
    // A shape the real parse refuses is left to it, with its own message.
    let Ok(sizes) = serde_json::from_str::<Sizes>(args_json) else { return Ok(()) };
    let content_limit = limits.skill_bytes.max(limits.file_bytes);
    for (field, value, limit) in [
        ("action", &sizes.action, 64),
        ("name", &sizes.name, 256),
        ("scope", &sizes.scope, 64),
        ("description", &sizes.description, 4096),
        ("body", &sizes.body, limits.skill_bytes),
        ("content", &sizes.content, content_limit),
        ("old_string", &sizes.old_string, limits.skill_bytes),
        ("new_string", &sizes.new_string, limits.skill_bytes),
        ("file_path", &sizes.file_path, 4096),
        ("reason", &sizes.reason, 4096),
    ] {
        field_size(field, value.as_ref().map_or(0, |v| v.len()), limit)?;
    }
    Ok(())
}

/// The refusal for arguments past `MAX_ARGS_BYTES`, as JSON: what a host answers itself, without
/// entering the instance, and what the plugin answers when a host let them through.
pub fn too_large_arguments(len: usize) -> ToolError {
    too_large("arguments", len, MAX_ARGS_BYTES)
}

fn too_large(field: &str, len: usize, limit: usize) -> ToolError {
    ToolError::new(
        "too-large",
        format!("`{field}` is {len} bytes; the limit for it is {limit}"),
        "send a shorter value; put long material in references/ files with write_file",
    )
    .with_details(json!({"field": field, "bytes": len, "limit": limit}))
}

/// One argument within its bound, or `too-large` naming it (the value itself is never quoted).
fn field_size(field: &str, len: usize, limit: usize) -> Result<(), ToolError> {
    if len > limit {
        return Err(too_large(field, len, limit));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    /// Hosts answer this refusal themselves (host-test's `too_large_arguments`, the Node host's
    /// `tooLargeArguments`): the text they copy is pinned here.
    #[test]
    fn the_arguments_refusal_hosts_copy() {
        assert_eq!(MAX_ARGS_BYTES, 25_165_824);
        assert_eq!(
            too_large_arguments(30_000_000).to_json(),
            r#"{"code":"too-large","details":{"bytes":30000000,"field":"arguments","limit":25165824},"hint":"send a shorter value; put long material in references/ files with write_file","message":"`arguments` is 30000000 bytes; the limit for it is 25165824"}"#
        );
    }
}
