//! The `skill_manage` tool as the agent sees it: its name, actions and JSON Schema.
//! Its behaviour lives in `skill_manage.rs`; this file only describes it.

use crate::api::ToolSpec;
use serde_json::json;

pub const SKILL_MANAGE: &str = "skill_manage";

pub const ACTIONS: &[&str] = &["create", "view", "list", "patch", "edit", "write_file", "remove_file", "archive"];

/// The published tools; built once (hosts may ask every turn).
pub fn specs() -> Vec<ToolSpec> {
    static SPECS: std::sync::OnceLock<Vec<ToolSpec>> = std::sync::OnceLock::new();
    SPECS
        .get_or_init(|| {
            vec![ToolSpec {
                name: SKILL_MANAGE.to_string(),
                description: "Create, read and improve SKILL.md skills in the user or project skill library. \
                    View a skill before changing it; patch an existing skill before creating a new one; \
                    one class-level skill per lesson; never include secrets or machine-specific trivia."
                    .to_string(),
                parameters_schema: skill_manage_schema().to_string(),
            }]
        })
        .clone()
}

fn skill_manage_schema() -> serde_json::Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": false,
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": ACTIONS,
                "description": "create: new skill; view: read one (registers the read); list: skills by name, a page at a time; patch: replace an exact string; edit: replace the whole SKILL.md; write_file/remove_file: supporting files; archive: retire a skill"},
            "name": {"type": "string", "pattern": "^[a-z0-9]+(-[a-z0-9]+)*$", "maxLength": 64,
                "description": "Skill name: lowercase letters, digits and single hyphens; equals its folder name"},
            "scope": {"type": "string", "enum": ["user", "project"],
                "description": "Where a new skill goes (default user). Existing skills are found in both scopes, project first"},
            "description": {"type": "string", "minLength": 1, "maxLength": 1024,
                "description": "create: what the skill does and when to use it"},
            "body": {"type": "string", "description": "create: the Markdown body after the frontmatter"},
            "content": {"type": "string", "description": "edit: the whole new SKILL.md; write_file: the file's content"},
            "old_string": {"type": "string", "description": "patch: exact text to replace (must be unique unless replace_all)"},
            "new_string": {"type": "string", "description": "patch: replacement text"},
            "replace_all": {"type": "boolean", "default": false},
            "file_path": {"type": "string",
                "description": "write_file/remove_file/view: path under references/, templates/, scripts/ or assets/"},
            "reason": {"type": "string", "description": "Why this change: shown to the operator with staged writes"},
            "stage": {"type": "boolean", "default": false, "description": "Stage this change for the operator's approval even when writes land directly"},
            "offset": {"type": "integer", "minimum": 0, "default": 0,
                "description": "list: skip this many skills (by name); the result's next_offset continues"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100,
                "description": "list: at most this many skills"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn skill_manage_schema_is_valid_json_listing_every_action() {
        let specs = specs();
        assert_eq!(specs.len(), 1);
        let schema: serde_json::Value = serde_json::from_str(&specs[0].parameters_schema).unwrap();
        let actions = schema["properties"]["action"]["enum"].as_array().unwrap();
        assert_eq!(actions.len(), ACTIONS.len());
        assert_eq!(schema["required"][0], "action");
    }
}
