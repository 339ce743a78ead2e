//! `/skills pending | diff | approve | reject | approval on|off`: staged writes and the switch
//! that stages them. The policy lives in `library::approval`; this file parses and renders.

use super::{answer, table, usage_error};
use crate::active::Active;
use crate::host::{Host, Root};
use crate::library::approval::{self, APPROVAL_OVERRIDE};
use crate::library::ledger::Record;
use crate::library::store::Store;
use serde_json::json;

pub(super) fn diff(host: &impl Host, id: &str, json_mode: bool) -> Result<String, String> {
    let diff = approval::diff(host, id).map_err(|e| e.message)?;
    answer(json_mode, json!({"id": id, "diff": diff}), || diff.clone())
}

pub(super) fn approve(host: &impl Host, active: &mut Active, id: &str, json_mode: bool) -> Result<String, String> {
    let id = resolve_id(host, id)?;
    let manifest = approval::approve(host, &id).map_err(|e| format!("{} ({}): {}", e.message, e.code, e.hint))?;
    active.cache.forget(&manifest.root(), &manifest.path);
    let now = host.now_ms();
    if manifest.operation == "create" {
        let _ = active.ledger(host).record(host, &[Record::Created(&manifest.skill, now)]);
    }
    let text = format!("approved {}: {} {} ({} scope)", manifest.id, manifest.operation, manifest.path, manifest.scope);
    answer(json_mode, json!({"approved": manifest.id, "path": manifest.path, "operation": manifest.operation}), || text)
}

pub(super) fn reject(host: &impl Host, id: &str, json_mode: bool) -> Result<String, String> {
    let id = resolve_id(host, id)?;
    let manifest = approval::reject(host, &id).map_err(|e| e.message)?;
    let text = format!("rejected {}: {} {} discarded", manifest.id, manifest.operation, manifest.path);
    answer(json_mode, json!({"rejected": manifest.id}), || text)
}

/// `latest` names the newest staged write.
fn resolve_id(host: &impl Host, id: &str) -> Result<String, String> {
    if id != "latest" {
        return Ok(id.to_string());
    }
    approval::list(host).last().map(|m| m.id.clone()).ok_or_else(|| "no staged writes".to_string())
}

pub(super) fn switch(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
    let on = match rest {
        ["on"] => true,
        ["off"] => false,
        _ => return Err(usage_error("expected `/skills approval on|off`")),
    };
    Store::new(host, "")
        .write_atomic(&Root::State, APPROVAL_OVERRIDE, json!({"enabled": on}).to_string().as_bytes())
        .map_err(|e| e.message)?;
    let text = format!("write approval {} (saved in approval.json)", if on { "on: writes are staged" } else { "off" });
    answer(json_mode, json!({"enabled": on}), || text)
}

pub(super) fn pending(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
    if !rest.is_empty() {
        return Err(usage_error("`/skills pending` takes no arguments"));
    }
    let manifests = approval::list(host);
    let rows = manifests
        .iter()
        .map(|m| {
            vec![
                m.id.clone(),
                m.operation.clone(),
                m.scope.clone(),
                m.path.clone(),
                m.created_at.clone(),
                m.reason.clone(),
            ]
        })
        .collect();
    let value = serde_json::to_value(&manifests).unwrap_or_default();
    answer(json_mode, json!({"pending": value}), || {
        if manifests.is_empty() {
            "no staged writes".to_string()
        } else {
            table(&["id", "operation", "scope", "path", "staged at", "reason"], rows)
        }
    })
}
