//! `/skills log NAME | diff NAME@V | revert NAME [V]`: a skill's version history. The records
//! live in `library::history`; a revert is an ordinary `skill_manage` write made as the
//! operator, so it passes every guard (ownership, format, the credential scan) and is staged
//! when write approval is on.

use super::reply::{answer, table, usage_error};
use crate::active::Active;
use crate::api::CallContext;
use crate::digest::unified_diff;
use crate::host::Host;
use crate::library::history::{self, Version};
use crate::library::skill_manage;
use crate::library::storage::store::{Location, Store};
use serde_json::json;

/// The winning skill of that name and its versions, oldest first.
fn located(host: &impl Host, ctx: &CallContext, name: &str) -> Result<(Location, Vec<Version>), String> {
    crate::library::storage::skillfile::check_name(name)?;
    let store = Store::new(host, &ctx.session);
    let location = store.locate(name).map_err(|e| e.message)?.ok_or_else(|| format!("no skill named `{name}`"))?;
    let versions = history::versions(host, location.scope, &ctx.cwd, name);
    Ok((location, versions))
}

fn size(bytes: Option<u64>) -> String {
    bytes.map_or("-".to_string(), |b| b.to_string())
}

pub(super) fn log(host: &impl Host, ctx: &CallContext, name: &str, json_mode: bool) -> Result<String, String> {
    let (location, versions) = located(host, ctx, name)?;
    let value = json!({"name": name, "scope": location.scope.as_str(), "versions": versions});
    answer(json_mode, value, || {
        if versions.is_empty() {
            return format!("no earlier versions of `{name}` are kept");
        }
        let rows: Vec<Vec<String>> = versions
            .iter()
            .rev()
            .map(|v| {
                vec![
                    v.version.to_string(),
                    v.at.clone(),
                    format!("{} ({})", v.actor, v.by),
                    v.operation.clone(),
                    v.path.clone(),
                    format!("{} -> {}", size(v.before_size), size(v.after_size)),
                    v.reason.clone(),
                ]
            })
            .collect();
        table(&["version", "landed at", "by", "operation", "path", "bytes", "reason"], rows)
    })
}

/// `NAME@V`, V a version number.
pub(super) fn name_at(arg: &str) -> Result<(&str, u64), String> {
    let (name, v) = arg.split_once('@').ok_or_else(|| usage_error("expected `/skills diff NAME@VERSION`"))?;
    let v = v.parse().map_err(|_| usage_error(&format!("`{v}` is not a version number")))?;
    Ok((name, v))
}

fn pick(versions: &[Version], name: &str, v: Option<u64>) -> Result<Version, String> {
    let found = match v {
        Some(v) => versions.iter().find(|x| x.version == v),
        None => versions.last(),
    };
    found.cloned().ok_or_else(|| match v {
        Some(v) => format!("`{name}` has no kept version {v}; `/skills log {name}` lists them"),
        None => format!("no earlier versions of `{name}` are kept"),
    })
}

/// The file as it was before version V landed, against the file now.
pub(super) fn diff(host: &impl Host, ctx: &CallContext, arg: &str, json_mode: bool) -> Result<String, String> {
    let (name, v) = name_at(arg)?;
    let (location, versions) = located(host, ctx, name)?;
    let version = pick(&versions, name, Some(v))?;
    let then = history::before(host, &ctx.cwd, &version).map_err(|e| e.message)?;
    let now = Store::new(host, &ctx.session).read(&location.root, &version.path).ok();
    // The file now may hold what the scanner takes for a credential (pasted by hand): never shown.
    let diff = unified_diff(&version.path, then.as_deref(), now.as_deref());
    let diff = crate::library::guards::scan::redact_secrets(&diff).unwrap_or(diff);
    answer(json_mode, json!({"name": name, "version": v, "path": version.path, "diff": diff}), || diff.clone())
}

/// `/skills show NAME@V`: the skill's SKILL.md as it was before version V landed (what `revert
/// NAME V` would bring back), for a paired evaluation of that text against today's. Refused when
/// V changed another file, created the skill, or kept its bytes redacted.
pub(super) fn show_before(host: &impl Host, ctx: &CallContext, arg: &str, json_mode: bool) -> Result<String, String> {
    let (name, v) = name_at(arg)?;
    let (_, versions) = located(host, ctx, name)?;
    let version = pick(&versions, name, Some(v))?;
    if !version.path.ends_with("SKILL.md") {
        return Err(format!("version {v} of `{name}` changed {}, not its SKILL.md", version.path));
    }
    if version.redacted {
        return Err(format!("the text before version {v} of `{name}` held a credential and is kept redacted"));
    }
    let Some(bytes) = history::before(host, &ctx.cwd, &version).map_err(|e| e.message)? else {
        return Err(format!("version {v} created `{name}`: there is no text before it"));
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let value = json!({"name": name, "version": v, "path": version.path, "content": text});
    answer(json_mode, value, || text.clone())
}

/// The file before version A against the file before version B: what versions A up to B changed
/// (either may be the older). Both must be versions of one skill's one file; the kept bytes are
/// checked as `diff NAME@V` checks them, and what looks like a credential is never shown.
pub(super) fn diff_between(
    host: &impl Host,
    ctx: &CallContext,
    from: &str,
    to: &str,
    json_mode: bool,
) -> Result<String, String> {
    let (name, a) = name_at(from)?;
    let (other, b) = name_at(to)?;
    if other != name {
        return Err(usage_error(&format!(
            "`{from}` and `{to}` name two skills; `/skills diff NAME@A NAME@B` compares two versions of one skill"
        )));
    }
    let (_, versions) = located(host, ctx, name)?;
    let (first, second) = (pick(&versions, name, Some(a))?, pick(&versions, name, Some(b))?);
    if first.path != second.path {
        return Err(format!(
            "versions {a} and {b} of `{name}` changed two files ({} and {}); a diff compares one file: \
             `/skills log {name}` shows which versions changed which",
            first.path, second.path
        ));
    }
    let old = history::before(host, &ctx.cwd, &first).map_err(|e| e.message)?;
    let new = history::before(host, &ctx.cwd, &second).map_err(|e| e.message)?;
    let diff = unified_diff(&first.path, old.as_deref(), new.as_deref());
    let diff = crate::library::guards::scan::redact_secrets(&diff).unwrap_or(diff);
    let value = json!({"name": name, "from": a, "to": b, "path": first.path, "diff": diff});
    answer(json_mode, value, || diff.clone())
}

/// What undoes a version that changed only what the operator or the curator owns, if it is one.
fn owned_change(operation: &str, name: &str) -> Option<String> {
    match operation {
        "pin" => Some(format!("unpin it with `/skills unpin {name}`")),
        "unpin" => Some(format!("pin it again with `/skills pin {name}`")),
        "status" => Some("the curator sets the status back to active once the skill is used again".to_string()),
        _ => None,
    }
}

/// Restores the file as it was before version V (default: the newest) through `skill_manage`.
pub(super) fn revert(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    rest: &[&str],
    json_mode: bool,
) -> Result<String, String> {
    let (name, v) = match rest {
        [name] => (*name, None),
        [name, v] => {
            (*name, Some(v.parse::<u64>().map_err(|_| usage_error(&format!("`{v}` is not a version number")))?))
        }
        _ => return Err(usage_error("expected `/skills revert NAME [VERSION]`")),
    };
    let (location, versions) = located(host, ctx, name)?;
    let version = pick(&versions, name, v)?;
    // A write through `skill_manage` keeps the fields the operator and the curator own: going
    // back on one of their changes would change nothing but the stamp.
    if let Some(instead) = owned_change(&version.operation, name) {
        return Err(format!(
            "version {} is a `{}`, which a revert does not undo (a revert writes as the agent does, and keeps \
             the pin and the status as they are); {instead}",
            version.version, version.operation
        ));
    }
    if version.redacted {
        return Err(format!(
            "the file before version {} held a credential and was kept redacted; it cannot be restored",
            version.version
        ));
    }
    let then = history::before(host, &ctx.cwd, &version).map_err(|e| e.message)?;
    let file = version.path.strip_prefix(&format!("{name}/")).filter(|f| *f != "SKILL.md");
    let reason = format!("revert to the file before version {}", version.version);
    // A file that was not UTF-8 cannot go back through a text write without changing it.
    let then = match then.map(String::from_utf8) {
        Some(Err(_)) => {
            return Err(format!("the file before version {} is not UTF-8 text; restore it by hand", version.version));
        }
        other => other.map(|r| r.unwrap_or_default()),
    };
    let args = match (file, then) {
        (None, None) => {
            return Err(format!(
                "version {} created `{name}`; there is no earlier file to go back to (archive the skill instead)",
                version.version
            ));
        }
        (None, Some(text)) => json!({"action": "edit", "name": name, "content": text, "reason": reason}),
        (Some(file), Some(text)) => {
            json!({"action": "write_file", "name": name, "file_path": file, "content": text, "reason": reason})
        }
        (Some(file), None) => json!({"action": "remove_file", "name": name, "file_path": file, "reason": reason}),
    };
    // The operator has read what they revert to: the write's read guard is met by this command.
    let operator = format!("operator:{}", ctx.agent);
    active.reads.mark(&ctx.session, &operator, name);
    let mut cx = active.tool_context(host, &ctx.session, &operator, "operator", &ctx.cwd);
    let out = skill_manage::run(host, &mut cx, &args.to_string())
        .map_err(|e| format!("{} ({}): {}", e.message, e.code, e.hint))?;
    let result: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
    let status = result["status"].as_str().unwrap_or("written").to_string();
    let scope = location.scope.as_str();
    let value =
        json!({"name": name, "reverted": version.version, "path": version.path, "status": status, "result": result});
    answer(json_mode, value, || match status.as_str() {
        "staged" => format!(
            "staged the revert of {} ({scope} scope) to before version {} as {}; approve it with /skills approve",
            version.path,
            version.version,
            result["id"].as_str().unwrap_or("?")
        ),
        _ => format!("reverted {} ({scope} scope) to the file before version {}", version.path, version.version),
    })
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
