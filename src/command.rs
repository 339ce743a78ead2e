//! The human `/skills` command: subcommand parsing, aligned tables for people and `--json`
//! for programs. Each subcommand hands off to the module that owns the concept.

use crate::api::CallContext;
use crate::approval;
use crate::host::Host;
use crate::plugin::{APPROVAL_OVERRIDE, Active};
use crate::store::{Layout, Store};
use crate::time;
use serde_json::{Value, json};

pub const USAGE: &str = "usage: /skills <subcommand> [--json]

  list [--scope user|project] [--status STATUS]   skills in both scopes
  show NAME                                       one skill's file and state
  pending                                         staged writes waiting for approval
  diff ID                                         a staged write's unified diff
  approve ID | reject ID                          apply or discard a staged write (ID may be `latest`)
  pin NAME | unpin NAME                           keep a skill out of the curator's reach
  archive NAME | restore NAME                     retire a skill to the archive, or bring it back
  curator [run] [--dry-run]                       the last curator report; `run` runs a pass now
  review on|off|now|status                        background reviews
  loops [verdict SESSION]                         review loops, running and archived; a session's last verdict
  approval on|off                                 stage every write for approval
  help                                            this message

Every subcommand accepts --json.";

struct Args<'a> {
    words: Vec<&'a str>,
    json: bool,
}

fn parse(args: &str) -> Args<'_> {
    let mut words: Vec<&str> = args.split_whitespace().collect();
    let json = words.contains(&"--json");
    words.retain(|w| *w != "--json");
    Args { words, json }
}

fn usage_error(message: &str) -> String {
    format!("{message}\n\n{USAGE}")
}

/// Renders a JSON value or a table, as asked.
fn answer(json_mode: bool, value: Value, text: impl FnOnce() -> String) -> Result<String, String> {
    Ok(if json_mode { value.to_string() } else { text() })
}

pub(crate) fn run(host: &impl Host, active: &mut Active, ctx: &CallContext, args: &str) -> Result<String, String> {
    let a = parse(args);
    let rest = &a.words[a.words.len().min(1)..];
    match a.words.first().copied() {
        None | Some("help") => answer(a.json, json!({"usage": USAGE}), || USAGE.to_string()),
        Some("review") => review(host, active, ctx, rest, a.json),
        Some("loops") => loops(host, rest, a.json),
        Some("approval") => approval_switch(host, rest, a.json),
        Some("pending") => pending(host, rest, a.json),
        Some("diff") => {
            let id = one_arg(rest, "diff ID")?;
            let diff = approval::diff(host, id).map_err(|e| e.message)?;
            answer(a.json, json!({"id": id, "diff": diff}), || diff.clone())
        }
        Some("approve") => {
            let id = resolve_id(host, one_arg(rest, "approve ID")?)?;
            let id = id.as_str();
            let manifest =
                approval::approve(host, id).map_err(|e| format!("{} ({}): {}", e.message, e.code, e.hint))?;
            active.cache.forget(&manifest.root(), &manifest.path);
            let now = host.now_ms();
            let ledger = active.ledger(host);
            if manifest.operation == "create" {
                ledger.record_created(&manifest.skill, now);
            }
            let _ = ledger.save(host);
            let text = format!(
                "approved {}: {} {} ({} scope)",
                manifest.id, manifest.operation, manifest.path, manifest.scope
            );
            answer(
                a.json,
                json!({"approved": manifest.id, "path": manifest.path, "operation": manifest.operation}),
                || text,
            )
        }
        Some("reject") => {
            let id = resolve_id(host, one_arg(rest, "reject ID")?)?;
            let id = id.as_str();
            let manifest = approval::reject(host, id).map_err(|e| e.message)?;
            let text = format!("rejected {}: {} {} discarded", manifest.id, manifest.operation, manifest.path);
            answer(a.json, json!({"rejected": manifest.id}), || text)
        }
        Some("list") => list(host, active, ctx, rest, a.json),
        Some("pin") => pin(host, active, ctx, one_arg(rest, "pin NAME")?, true, a.json),
        Some("unpin") => pin(host, active, ctx, one_arg(rest, "unpin NAME")?, false, a.json),
        Some("archive") => {
            let name = one_arg(rest, "archive NAME")?;
            let (location, skill) = owned_skill(host, ctx, name)?;
            if skill.is_pinned() {
                return Err(format!("`{name}` is pinned; unpin it first"));
            }
            let folder =
                crate::skill_manage::archive_location(host, &ctx.session, &location, "archived by the operator")
                    .map_err(|e| e.message)?;
            active.cache.forget(&location.root, &location.path());
            answer(a.json, json!({"archived": name, "archive": folder}), || format!("archived `{name}` to {folder}"))
        }
        Some("restore") => {
            let name = one_arg(rest, "restore NAME")?;
            let folder = crate::curator::restore(host, name, &mut active.cache)?;
            answer(a.json, json!({"restored": name, "from": folder}), || {
                format!("restored `{name}` from archive/{folder}")
            })
        }
        Some("curator") => curator(host, active, rest, a.json),
        Some("show") => show(host, ctx, one_arg(rest, "show NAME")?, a.json),
        Some(other) => Err(usage_error(&format!("unknown subcommand `{other}`"))),
    }
}

/// `latest` names the newest staged write.
fn resolve_id(host: &impl Host, id: &str) -> Result<String, String> {
    if id != "latest" {
        return Ok(id.to_string());
    }
    approval::list(host).last().map(|m| m.id.clone()).ok_or_else(|| "no staged writes".to_string())
}

/// A skill this plugin wrote, found the way the tool finds it.
fn owned_skill(
    host: &impl Host,
    ctx: &CallContext,
    name: &str,
) -> Result<(crate::store::Location, crate::skillfile::SkillFile), String> {
    let store = Store::new(host, &ctx.session);
    let location = store.locate(name).map_err(|e| e.message)?.ok_or_else(|| format!("no skill named `{name}`"))?;
    let bytes = store.read(&location.root, &location.path()).map_err(|e| e.message)?;
    let skill = crate::skillfile::SkillFile::parse_bytes(&bytes)
        .ok()
        .filter(|s| s.is_ours())
        .ok_or_else(|| format!("`{name}` was not written by this plugin; its lifecycle is not managed here"))?;
    Ok((location, skill))
}

fn pin(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    name: &str,
    on: bool,
    json_mode: bool,
) -> Result<String, String> {
    let (location, mut skill) = owned_skill(host, ctx, name)?;
    if on {
        skill.set_meta(crate::skillfile::meta::PINNED, "true");
    } else {
        skill.remove_meta(crate::skillfile::meta::PINNED);
    }
    Store::new(host, &ctx.session)
        .write_atomic(&location.root, &location.path(), skill.to_text().as_bytes())
        .map_err(|e| e.message)?;
    active.cache.forget(&location.root, &location.path());
    let text = format!("`{name}` {}", if on { "pinned: the curator will leave it alone" } else { "unpinned" });
    answer(json_mode, json!({"name": name, "pinned": on}), || text)
}

fn curator(host: &impl Host, active: &mut Active, rest: &[&str], json_mode: bool) -> Result<String, String> {
    let (run, dry_run) = match rest {
        [] => (false, false),
        ["--dry-run"] => (true, true),
        ["run"] => (true, false),
        ["run", "--dry-run"] | ["--dry-run", "run"] => (true, true),
        _ => return Err(usage_error("expected `/skills curator [run] [--dry-run]`")),
    };
    let report = if run {
        let config = active.config.curator.clone();
        let ledger = active.ledger.get_or_insert_with(|| crate::ledger::Ledger::load(host));
        crate::curator::pass(host, &config, ledger, &mut active.cache, dry_run)
    } else {
        crate::curator::last_report(host)
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
        for e in &report.errors {
            out.push_str(&format!("\nerror: {e}"));
        }
        out
    })
}

fn one_arg<'a>(rest: &[&'a str], shape: &str) -> Result<&'a str, String> {
    match rest {
        [one] => Ok(one),
        _ => Err(usage_error(&format!("expected `/skills {shape}`"))),
    }
}

fn review(
    host: &impl Host,
    active: &mut Active,
    ctx: &CallContext,
    rest: &[&str],
    json_mode: bool,
) -> Result<String, String> {
    match rest {
        ["on"] | ["off"] => {
            let on = rest[0] == "on";
            active.review.set_enabled(host, on)?;
            let text = format!("background reviews {} (saved in review.json)", if on { "on" } else { "off" });
            answer(json_mode, json!({"enabled": on}), || text)
        }
        ["now"] => {
            if !active.review_ready {
                return Err(
                    "reviews need the host's agents and subagents services, which this host does not offer".into()
                );
            }
            let decisions = active.review.review_now(host, &active.config, &ctx.session);
            let parsed: Vec<Value> = decisions.iter().filter_map(|d| serde_json::from_str(d).ok()).collect();
            let started = parsed.iter().find(|d| d["action"] == "start");
            let text = match started {
                Some(d) => format!("review started ({})", d["activation"].as_str().unwrap_or("?")),
                None => format!(
                    "review not started: {}",
                    parsed.last().and_then(|d| d["reason"].as_str()).unwrap_or("no reason given")
                ),
            };
            answer(json_mode, json!({"decisions": parsed}), || text)
        }
        ["status"] => {
            let status = active.review.status(&active.config, &ctx.session, host.now_ms());
            let text = table(
                &["setting", "value"],
                status
                    .as_object()
                    .map(|o| o.iter().map(|(k, v)| vec![k.clone(), plain(v)]).collect())
                    .unwrap_or_default(),
            );
            answer(json_mode, status, || text)
        }
        _ => Err(usage_error("expected `/skills review on|off|now|status`")),
    }
}

fn approval_switch(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
    let on = match rest {
        ["on"] => true,
        ["off"] => false,
        _ => return Err(usage_error("expected `/skills approval on|off`")),
    };
    Store::new(host, "")
        .write_atomic(&crate::host::Root::State, APPROVAL_OVERRIDE, json!({"enabled": on}).to_string().as_bytes())
        .map_err(|e| e.message)?;
    let text = format!("write approval {} (saved in approval.json)", if on { "on: writes are staged" } else { "off" });
    answer(json_mode, json!({"enabled": on}), || text)
}

fn loops(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
    use crate::review_loop::history;
    match rest {
        [] => {
            let rows = history::list(host);
            let cells = |r: &Value, k: &str| match &r[k] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let table_rows = rows
                .iter()
                .map(|r| {
                    ["session", "mode", "status", "iterations", "tokens", "independence", "startedAt"]
                        .iter()
                        .map(|k| cells(r, k))
                        .collect()
                })
                .collect();
            answer(json_mode, json!({"loops": rows}), || {
                if rows.is_empty() {
                    "no review loops yet".to_string()
                } else {
                    table(&["session", "mode", "status", "iterations", "tokens", "independence", "started"], table_rows)
                }
            })
        }
        ["verdict", session] => match history::verdict(host, session) {
            Some(text) => answer(json_mode, json!({"session": session, "verdict": text}), || text.clone()),
            None => Err(format!("session `{session}` has no finished review loop; `/skills loops` lists them")),
        },
        _ => Err(usage_error("usage: /skills loops [verdict SESSION]")),
    }
}

fn pending(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
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

fn list(
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
    let (skills, warnings) = Store::new(host, &ctx.session).list(&mut active.cache);
    let ledger = active.ledger(host).clone();
    let selected: Vec<_> = skills
        .iter()
        .filter(|s| scope.is_none_or(|want| s.location.scope.as_str() == want))
        .filter(|s| status.is_none_or(|want| s.summary.status == want))
        .collect();
    let entries: Vec<Value> = selected
        .iter()
        .map(|s| {
            let usage = ledger.skills.get(&s.location.name);
            json!({
                "name": s.location.name,
                "scope": s.location.scope.as_str(),
                "status": s.summary.status,
                "pinned": s.summary.pinned,
                "owner": if s.summary.owned { "self-evolve" } else { "other" },
                "uses": usage.map_or(0, |u| u.uses),
                "lastUse": usage.and_then(|u| u.last_used_ms).map(time::iso),
                "warnings": s.summary.warnings,
            })
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
            ]
        })
        .collect();
    answer(json_mode, json!({"skills": entries, "warnings": warnings}), || {
        let mut out = table(&["name", "scope", "status", "pinned", "owner", "uses", "last use"], rows);
        for w in &warnings {
            out.push_str(&format!("\nwarning: {w}"));
        }
        out
    })
}

fn show(host: &impl Host, ctx: &CallContext, name: &str, json_mode: bool) -> Result<String, String> {
    let store = Store::new(host, &ctx.session);
    let location = store.locate(name).map_err(|e| e.message)?.ok_or_else(|| format!("no skill named `{name}`"))?;
    let bytes = store.read(&location.root, &location.path()).map_err(|e| e.message)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let files = match location.layout {
        Layout::Package => store.package_files(&location.root, name).map_err(|e| e.message)?,
        Layout::Flat => vec![],
    };
    let value = json!({"name": name, "scope": location.scope.as_str(), "path": location.path(), "files": files, "content": text});
    answer(json_mode, value, || format!("{} ({} scope)\n\n{text}", location.path(), location.scope.as_str()))
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// Columns padded to their widest cell; the last column is not padded.
pub fn table(headers: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let line = |cells: Vec<String>| {
        let n = cells.len();
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i + 1 == n {
                out.push_str(&cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = vec![line(headers.iter().map(|h| h.to_string()).collect())];
    out.extend(rows.into_iter().map(line));
    out.join("\n")
}
