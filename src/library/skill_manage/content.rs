//! Checks on what a call would write, before anything is written: the Agent Skills format, size
//! limits, credentials (refused, or held for the operator with write approval on) and the lint
//! warnings a result carries.

use crate::errors::ToolError;
use crate::library::guards::acknowledge;
use crate::library::guards::finding::Finding;
use crate::library::guards::lint;
use crate::library::guards::scan;
use crate::library::skill_manage::context::Context;
use crate::library::storage::skillfile::SkillFile;
use serde_json::{Value, json};

/// Checks a whole SKILL.md before it is written: format, size, secrets. Returns the warnings and
/// the credential findings to hold the write on (see `content_secrets`).
pub(super) fn check_skill_text(
    cx: &Context,
    skill: &SkillFile,
    name: &str,
    text: &str,
    acknowledged: &[String],
) -> Result<(Vec<Finding>, Vec<Finding>), ToolError> {
    let violations = skill.validate(Some(name));
    if !violations.is_empty() {
        let details: Vec<Value> = violations.iter().map(|v| json!({"rule": v.rule, "message": v.message})).collect();
        return Err(ToolError::new(
            "invalid-frontmatter",
            format!("the skill breaks the Agent Skills format: {}", violations[0].message),
            "fix the listed rules; unknown settings belong under `metadata`",
        )
        .with_details(json!({"violations": details})));
    }
    check_size(text.len(), cx.config.limits.skill_bytes, "SKILL.md")?;
    let held = content_secrets(cx, text, acknowledged)?;
    let mut warnings = lint::scan_destructive(text);
    warnings.extend(lint::advise(skill.description().unwrap_or_default(), &skill.body));
    Ok((warnings, held))
}

pub(super) fn check_size(len: usize, limit: usize, what: &str) -> Result<(), ToolError> {
    if len > limit {
        return Err(ToolError::new(
            "too-large",
            format!("{what} would be {len} bytes; the limit is {limit}"),
            "keep SKILL.md short and move detail into references/ files",
        )
        .with_details(json!({"bytes": len, "limit": limit})));
    }
    Ok(())
}

/// Credentials in the content that no operator acknowledgement covers. With write approval on
/// they are returned, and the write is *held* for the operator (who may judge a finding false);
/// otherwise the write is refused.
pub(super) fn content_secrets(cx: &Context, text: &str, acknowledged: &[String]) -> Result<Vec<Finding>, ToolError> {
    let found = acknowledge::unacknowledged(scan::scan_secrets(text), acknowledged);
    if found.is_empty() || cx.approval {
        return Ok(found);
    }
    Err(secret_found("content", &found))
}

/// Refuses a credential in any field that is stored, shown or sent (a reason kept in a staged
/// write's manifest, a path that becomes a file name), naming the field.
pub(super) fn scan_field(field: &str, text: &str) -> Result<(), ToolError> {
    let secrets = scan::scan_secrets(text);
    if secrets.is_empty() {
        return Ok(());
    }
    Err(secret_found(field, &secrets))
}

pub(super) fn secret_found(field: &str, secrets: &[Finding]) -> ToolError {
    let findings: Vec<Value> =
        secrets.iter().map(|f| json!({"rule": f.rule, "line": f.line, "message": f.message})).collect();
    ToolError::new(
        "secret-found",
        format!("the {field} holds {} credential(s) ({}); nothing was written", secrets.len(), secrets[0].rule),
        "remove the secret and refer to it by name instead, e.g. `$GITHUB_TOKEN` from the environment",
    )
    .with_details(json!({"field": field, "findings": findings}))
}

fn warnings_json(findings: &[Finding]) -> Vec<Value> {
    findings
        .iter()
        .map(|f| json!({"rule": f.rule, "severity": f.severity.as_str(), "line": f.line, "message": f.message}))
        .collect()
}

pub(super) fn with_warnings(mut result: Value, warnings: &[Finding]) -> Value {
    result["warnings"] = Value::Array(warnings_json(warnings));
    result
}
