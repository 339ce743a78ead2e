//! `/skills list | show | pin | unpin | archive | restore | curator`: the library as the operator
//! sees it. Only skills this plugin wrote have a lifecycle here; hand-written ones are shown, never changed.

use super::reply::{answer, plain, table, usage_error};
use crate::active::Active;
use crate::api::CallContext;
use crate::host::Host;
use crate::library::curation::curator;
use crate::library::curation::ledger::Ledger;
use crate::library::history::{self, Author, Landing};
use crate::library::staging::archive;
use crate::library::storage::skillfile::{SkillFile, meta};
use crate::library::storage::store::{Layout, Location, Store};
use crate::time;
use serde_json::{Value, json};

pub(super) fn archive(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    name: &str,
    lock: &mut crate::state_file::Lock,
    json_mode: bool,
) -> Result<String, String> {
    let location = archivable(host, ctx, name)?;
    let folder = archive::archive_location(host, &ctx.session, &location, "archived by the operator", lock)
        .map_err(|e| e.message)?;
    active.cache.forget(&location.root, &location.path());
    answer(json_mode, json!({"archived": name, "archive": folder}), || format!("archived `{name}` to {folder}"))
}

pub(super) fn restore(
    host: &impl Host,
    active: &mut Active,
    name: &str,
    lock: &mut crate::state_file::Lock,
    json_mode: bool,
) -> Result<String, String> {
    let folder = curator::restore(host, name, &mut active.cache, lock)?;
    answer(json_mode, json!({"restored": name, "from": folder}), || format!("restored `{name}` from archive/{folder}"))
}

/// A skill this plugin wrote and nobody pinned: where it is.
pub(super) fn archivable(host: &impl Host, ctx: &CallContext, name: &str) -> Result<Location, String> {
    let (location, skill) = owned_skill(host, ctx, name)?;
    if skill.is_pinned() {
        return Err(format!("`{name}` is pinned; unpin it first"));
    }
    Ok(location)
}

/// A skill this plugin wrote, found the way the tool finds it.
pub(super) fn owned_skill(host: &impl Host, ctx: &CallContext, name: &str) -> Result<(Location, SkillFile), String> {
    let store = Store::new(host, &ctx.session);
    let location = store.locate(name).map_err(|e| e.message)?.ok_or_else(|| format!("no skill named `{name}`"))?;
    let bytes = store.read(&location.root, &location.path()).map_err(|e| e.message)?;
    let skill = SkillFile::parse_bytes(&bytes)
        .ok()
        .filter(|s| s.is_ours())
        .ok_or_else(|| format!("`{name}` was not written by this plugin; its lifecycle is not managed here"))?;
    Ok((location, skill))
}

pub(super) fn pin(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    name: &str,
    on: bool,
    json_mode: bool,
) -> Result<String, String> {
    let (location, mut skill) = owned_skill(host, ctx, name)?;
    let store = Store::new(host, &ctx.session);
    let before = store.read(&location.root, &location.path()).ok();
    if on {
        skill.set_meta(meta::PINNED, "true");
    } else {
        skill.remove_meta(meta::PINNED);
    }
    let after = skill.to_text();
    let author = Author { actor: "operator", by: &ctx.agent, session: &ctx.session, cwd: &ctx.cwd };
    let path = location.path();
    let operation = if on { "pin" } else { "unpin" };
    let landing = Landing {
        skill: name,
        scope: location.scope,
        path: &path,
        operation,
        reason: "",
        before: before.as_deref(),
        after: Some(after.as_bytes()),
    };
    history::around(host, &author, &landing, active.config.history_versions, || {
        store.write_atomic(&location.root, &path, after.as_bytes())
    })
    .map_err(|e| e.message)?;
    active.cache.forget(&location.root, &location.path());
    let text = format!("`{name}` {}", if on { "pinned: the curator will leave it alone" } else { "unpinned" });
    answer(json_mode, json!({"name": name, "pinned": on}), || text)
}

pub(super) fn curator(host: &impl Host, active: &mut Active, rest: &[&str], json_mode: bool) -> Result<String, String> {
    let (run, dry_run) = match rest {
        [] => (false, false),
        ["--dry-run"] => (true, true),
        ["run"] => (true, false),
        ["run", "--dry-run"] | ["--dry-run", "run"] => (true, true),
        _ => return Err(usage_error("expected `/skills curator [run] [--dry-run]`")),
    };
    let report = if run {
        // A pass that moves skills runs under the lock a tick's pass takes: two passes at once
        // would each decide on what the other is moving. A dry run moves nothing.
        let mut lock = if dry_run { None } else { curator::take_pass_lock(host)? };
        let config = active.config.curator.clone();
        let ledger = active.ledger.get_or_insert_with(|| Ledger::load(host));
        let history_versions = active.config.history_versions;
        let report = curator::pass(host, &config, ledger, &mut active.cache, dry_run, history_versions, lock.as_mut());
        if !dry_run {
            crate::schedule::audit::curator_pass(host, &report);
        }
        if let Some(lock) = lock {
            lock.release(host);
        }
        report
    } else {
        curator::last_report(host)
            .ok_or_else(|| "the curator has not run yet; `/skills curator run` runs it now".to_string())?
    };
    let value = serde_json::to_value(&report).unwrap_or_default();
    answer(json_mode, value, || {
        let mut out = format!(
            "curator pass at {}{}: {} skill(s) checked, {} change(s)\n",
            report.at,
            if report.dry_run { " (dry run: nothing changed)" } else { "" },
            report.checked,
            report.changes.len()
        );
        if !report.changes.is_empty() {
            let rows = report
                .changes
                .iter()
                .map(|c| vec![c.name.clone(), c.from.clone(), c.to.clone(), c.reason.clone()])
                .collect();
            out.push_str(&table(&["skill", "from", "to", "why"], rows));
        }
        for flag in &report.flagged {
            out.push_str(&format!("\nflagged `{}`: {}", flag.name, flag.reason));
        }
        for e in &report.errors {
            out.push_str(&format!("\nerror: {e}"));
        }
        out
    })
}

pub(super) fn list(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    rest: &[&str],
    json_mode: bool,
) -> Result<String, String> {
    let (mut scope, mut status) = (None, None);
    let mut words = rest.iter();
    while let Some(word) = words.next() {
        match *word {
            "--scope" => scope = Some(*words.next().ok_or_else(|| usage_error("--scope needs user or project"))?),
            "--status" => status = Some(*words.next().ok_or_else(|| usage_error("--status needs a value"))?),
            other => return Err(usage_error(&format!("unknown argument `{other}` for list"))),
        }
    }
    if let Some(s) = scope
        && s != "user"
        && s != "project"
    {
        return Err(usage_error(&format!("unknown scope `{s}`: use user or project")));
    }
    active.cache.note_cwd(&ctx.session, &ctx.cwd);
    let (skills, warnings) = Store::new(host, &ctx.session).list(&mut active.cache);
    // What every process recorded, not this process's copy.
    let ledger = Ledger::load(host);
    active.ledger = Some(ledger.clone());
    let selected: Vec<_> = skills
        .iter()
        .filter(|s| scope.is_none_or(|want| s.location.scope.as_str() == want))
        .filter(|s| status.is_none_or(|want| s.summary.status == want))
        .collect();
    let entries: Vec<Value> = selected
        .iter()
        .map(|s| {
            let usage = ledger.skills.get(&s.location.name);
            let mut entry = json!({
                "name": s.location.name,
                "scope": s.location.scope.as_str(),
                "status": s.summary.status,
                "pinned": s.summary.pinned,
                "owner": if s.summary.owned { "self-evolve" } else { "other" },
                "uses": usage.map_or(0, |u| u.uses),
                "lastUse": usage.and_then(|u| u.last_used_ms).map(time::iso),
                "warnings": s.summary.warnings,
            });
            if let Some(evidence) = usage.map(|u| u.evidence).filter(|e| !e.is_empty()) {
                entry["evidence"] = json!(evidence);
            }
            entry
        })
        .collect();
    let rows = entries
        .iter()
        .map(|e| {
            vec![
                plain(&e["name"]),
                plain(&e["scope"]),
                plain(&e["status"]),
                if e["pinned"] == true { "yes".into() } else { "".into() },
                plain(&e["owner"]),
                plain(&e["uses"]),
                e["lastUse"].as_str().map(|s| s[..10].to_string()).unwrap_or_else(|| "never".into()),
                evidence_text(&e["evidence"]),
            ]
        })
        .collect();
    answer(json_mode, json!({"skills": entries, "warnings": warnings}), || {
        let mut out =
            table(&["name", "scope", "status", "pinned", "owner", "uses", "last use", "after its loads"], rows);
        for w in &warnings {
            out.push_str(&format!("\nwarning: {w}"));
        }
        out
    })
}

/// `12 loads: 9 completed, 1 failed, 2 corrected`, or empty when it was never loaded.
fn evidence_text(evidence: &Value) -> String {
    let n = |key: &str| evidence[key].as_u64().unwrap_or(0);
    if n("loads") == 0 {
        return String::new();
    }
    let mut parts = vec![format!("{} completed", n("completed"))];
    for key in ["failed", "aborted", "corrected"] {
        if n(key) > 0 {
            parts.push(format!("{} {key}", n(key)));
        }
    }
    format!("{} load(s): {}", n("loads"), parts.join(", "))
}

pub(super) fn show(host: &impl Host, ctx: &CallContext, name: &str, json_mode: bool) -> Result<String, String> {
    let store = Store::new(host, &ctx.session);
    let location = store.locate(name).map_err(|e| e.message)?.ok_or_else(|| format!("no skill named `{name}`"))?;
    let bytes = store.read(&location.root, &location.path()).map_err(|e| e.message)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let files = match location.layout {
        Layout::Package => store.package_files(&location.root, name).map_err(|e| e.message)?,
        Layout::Flat => vec![],
    };
    // Status and pinned as the listing reads them (`listing::summarize`): the frontmatter parsed
    // by `SkillFile`, so a page never has to guess them from the text (a description's block
    // scalar may hold a line `status: archived`); a file that does not parse is `invalid`.
    let (status, pinned) = match SkillFile::parse_bytes(&bytes) {
        Ok(skill) => (skill.status(), skill.is_pinned()),
        Err(_) => ("invalid".to_string(), false),
    };
    let mut value = json!({
        "name": name,
        "scope": location.scope.as_str(),
        "path": location.path(),
        "files": files,
        "status": status,
        "pinned": pinned,
        "content": text,
    });
    let evidence = Ledger::load(host).skills.get(name).map(|u| u.evidence).filter(|e| !e.is_empty());
    if let Some(evidence) = evidence {
        value["evidence"] = json!(evidence);
    }
    let after = evidence_text(&value["evidence"]);
    let evaluation = crate::library::curation::evaluations::latest(host).remove(name);
    let evaluated = evaluation.as_ref().map(|v| v.summary(Some(&crate::digest::sha256_hex(&bytes))));
    if let Some(v) = &evaluation {
        value["evaluation"] = json!(v);
    }
    answer(json_mode, value, || {
        let after = if after.is_empty() { String::new() } else { format!("after its loads: {after}\n") };
        let evaluated = evaluated.map(|e| format!("evaluated: {e}\n")).unwrap_or_default();
        format!("{} ({} scope)\n{after}{evaluated}\n{text}", location.path(), location.scope.as_str())
    })
}

#[cfg(test)]
#[path = "skills_tests.rs"]
mod skills_tests;
