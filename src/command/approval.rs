//! `/skills pending | diff | approve | reject | approval on|off`: staged writes and the switch
//! that stages them. The policy lives in `library::staging::approval`; this file parses and renders.

use super::reply::{answer, table, usage_error};
use crate::active::Active;
use crate::api::CallContext;
use crate::host::{Host, Root};
use crate::library::curation::evaluations;
use crate::library::curation::ledger::Record;
use crate::library::history::Author;
use crate::library::staging::approval::{self, APPROVAL_OVERRIDE};
use crate::library::staging::pending::{self, ARCHIVE};
use crate::library::storage::store::Store;
use serde_json::json;

pub(super) fn diff(host: &impl Host, id: &str, json_mode: bool) -> Result<String, String> {
    let diff = approval::diff(host, id).map_err(|e| e.message)?;
    let evaluation = pending::load(host, id).ok().as_ref().and_then(|m| evaluated(host, m));
    let mut value = json!({"id": id, "diff": diff});
    if let Some(e) = &evaluation {
        value["evaluation"] = evaluation_json(e);
    }
    answer(json_mode, value, || match &evaluation {
        Some(e) => format!("evaluated: {}\n\n{diff}", e.summary(None)),
        None => diff.clone(),
    })
}

/// The evaluation of a staged write's text (`self-evolve eval --pending ID`), if one finished.
fn evaluated(host: &impl Host, manifest: &pending::Manifest) -> Option<evaluations::Evaluation> {
    evaluations::of_staged(host, &manifest.skill, manifest.new_sha256.as_deref()?, manifest.base_sha256.as_deref())
}

/// An evaluation as `--json` gives it, with the line the text answer shows (`summary`), so the
/// console says what the CLI says.
fn evaluation_json(e: &evaluations::Evaluation) -> serde_json::Value {
    let mut value = json!(e);
    value["summary"] = json!(e.summary(None));
    value
}

/// `approve ID [--accept-finding RULE]…`: the id and the accepted rules, each named on its own.
pub(super) fn approve_args<'a>(rest: &[&'a str]) -> Result<(&'a str, Vec<String>), String> {
    let shape = || usage_error("expected `/skills approve ID [--accept-finding RULE]…`");
    let (id, mut flags) = match rest {
        [id, flags @ ..] if !id.starts_with("--") => (*id, flags),
        _ => return Err(shape()),
    };
    let mut accepted = Vec::new();
    while let [flag, rule, more @ ..] = flags {
        if *flag != "--accept-finding" || rule.starts_with("--") {
            return Err(shape());
        }
        accepted.push(rule.to_string());
        flags = more;
    }
    if !flags.is_empty() {
        return Err(shape());
    }
    Ok((id, accepted))
}

pub(super) fn approve(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    id: &str,
    accepted: &[String],
    json_mode: bool,
) -> Result<String, String> {
    let id = resolve_id(host, id)?;
    let author = Author { actor: "operator", by: &ctx.agent, session: &ctx.session, cwd: &ctx.cwd };
    let approved = approval::approve(host, &id, accepted, &author, active.config.history_versions)
        .map_err(|e| format!("{} ({}): {}", e.message, e.code, e.hint))?;
    let manifest = &approved.manifest;
    active.cache.forget(&manifest.root(), &manifest.path);
    let now = host.now_ms();
    let by = format!("operator (session {})", ctx.session);
    let mut records: Vec<Record> = approved
        .acknowledged
        .iter()
        .map(|f| Record::Accepted { skill: &manifest.skill, finding: f, by: &by, ms: now })
        .collect();
    if manifest.operation == "create" {
        records.push(Record::Created(&manifest.skill, now));
    }
    if !records.is_empty()
        && let Err(err) = active.ledger(host).record(host, &records)
    {
        host.log(crate::host::Level::Warn, &format!("could not record the approval in the ledger: {err}"));
    }
    let mut text =
        format!("approved {}: {} {} ({} scope)", manifest.id, manifest.operation, manifest.path, manifest.scope);
    if let Some(folder) = &approved.archived {
        text.push_str(&format!(
            "\narchived `{}` to {folder}; `/skills restore {}` brings it back",
            manifest.skill, manifest.skill
        ));
    }
    if !approved.acknowledged.is_empty() {
        text.push_str(&format!(
            "\naccepted as not credentials (recorded in the ledger and in `metadata.accepted-findings`): {}",
            approved.acknowledged.join(", ")
        ));
    }
    let mut value = json!({
        "approved": manifest.id,
        "path": manifest.path,
        "operation": manifest.operation,
        "accepted": approved.acknowledged,
    });
    if let Some(folder) = &approved.archived {
        value["archive"] = json!(folder);
    }
    answer(json_mode, value, || text)
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
    pending::list(host).last().map(|m| m.id.clone()).ok_or_else(|| "no staged writes".to_string())
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
    let manifests = pending::list(host);
    // An entry a staged archive names waits for the operator's decision on that archive.
    let behind = |id: &str| manifests.iter().find(|a| a.operation == ARCHIVE && a.supersedes.iter().any(|s| s == id));
    // The findings column only when a write is held on credential findings.
    let any_held = manifests.iter().any(|m| !m.held.is_empty());
    let evaluated: Vec<Option<evaluations::Evaluation>> = manifests.iter().map(|m| evaluated(host, m)).collect();
    let rows = manifests
        .iter()
        .zip(&evaluated)
        .map(|(m, evaluation)| {
            let mut row =
                vec![m.id.clone(), m.operation.clone(), m.scope.clone(), m.path.clone(), m.created_at.clone()];
            if any_held {
                let held: Vec<String> = m.held.iter().map(|h| format!("{} (line {})", h.rule, h.line)).collect();
                row.push(if held.is_empty() { "-".to_string() } else { format!("held: {}", held.join(", ")) });
            }
            let mut reason = match behind(&m.id) {
                Some(archive) => format!("(waits behind archive {}) {}", archive.id, m.reason),
                None => m.reason.clone(),
            };
            // An evaluated text says what was found after its reason.
            if let Some(e) = evaluation {
                reason.push_str(&format!(" [evaluated: {}]", e.summary(None)));
            }
            row.push(reason);
            row
        })
        .collect();
    let mut value = serde_json::to_value(&manifests).unwrap_or_default();
    if let Some(entries) = value.as_array_mut() {
        for (entry, e) in entries.iter_mut().zip(&evaluated) {
            if let Some(archive) = entry["id"].as_str().and_then(behind) {
                entry["waitsBehind"] = json!(archive.id);
            }
            if let Some(e) = e {
                entry["evaluation"] = evaluation_json(e);
            }
        }
    }
    answer(json_mode, json!({"pending": value}), || {
        if manifests.is_empty() {
            "no staged writes".to_string()
        } else if any_held {
            table(&["id", "operation", "scope", "path", "staged at", "findings", "reason"], rows)
        } else {
            table(&["id", "operation", "scope", "path", "staged at", "reason"], rows)
        }
    })
}
