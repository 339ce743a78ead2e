//! `/skills review on|off|now|status` and `/skills loops [verdict SESSION]`: background reviews
//! and review loops, as the operator sees them.

use super::reply::{answer, one_line, plain, table, usage_error};
use crate::active::Active;
use crate::api::CallContext;
use crate::host::Host;
use crate::review_loop::history;
use serde_json::{Value, json};

pub(super) fn review(
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
            let scope = active.enter(host, &ctx.session, false).map_err(|e| e.message)?;
            let decisions = active.review.review_now(host, &active.config, &ctx.session);
            active.leave(host, scope);
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
            let scope = active.enter(host, &ctx.session, false).map_err(|e| e.message)?;
            active.review.refresh_breaker(host);
            let status = active.review.status(&active.config, &ctx.session, host.now_ms());
            active.leave(host, scope);
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

pub(super) fn loops(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
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

/// `/skills reviews [ID]`: the audit trail of background reviews and curator passes, newest
/// first; with an id, one record and its child's calls.
pub(super) fn reviews(host: &impl Host, rest: &[&str], json_mode: bool) -> Result<String, String> {
    use crate::schedule::audit;
    match rest {
        [] => {
            let records = audit::list(host);
            let value = json!({"reviews": records});
            answer(json_mode, value, || {
                if records.is_empty() {
                    return "no background review or curator pass is on record".to_string();
                }
                let rows: Vec<Vec<String>> = records
                    .iter()
                    .rev()
                    .map(|r| {
                        let took =
                            r.ended_ms.map_or("-".to_string(), |e| format!("{} ms", e.saturating_sub(r.started_ms)));
                        let calls =
                            if r.kind == "review" { audit::call_count(host, &r.id).to_string() } else { "-".into() };
                        vec![
                            r.id.clone(),
                            r.kind.clone(),
                            r.session.clone(),
                            r.started_at.clone(),
                            took,
                            r.status.clone(),
                            calls,
                            r.reason.clone(),
                        ]
                    })
                    .collect();
                table(&["id", "kind", "session", "started", "took", "status", "calls", "why"], rows)
            })
        }
        [id] => {
            let record =
                audit::load(host, id).ok_or_else(|| format!("no review or curator pass `{id}` is on record"))?;
            let calls = audit::calls(host, id);
            let value = json!({"review": record, "calls": calls});
            answer(json_mode, value.clone(), || {
                let mut out = format!(
                    "{} {} (session {}, turn {}), started {}: {}\nwhy: {}\n",
                    record.kind,
                    record.id,
                    record.session,
                    record.turn,
                    record.started_at,
                    record.status,
                    record.reason
                );
                if let (Some(input), Some(output)) = (record.input_tokens, record.output_tokens) {
                    out.push_str(&format!("tokens: {input} in, {output} out\n"));
                }
                if let Some(sha) = &record.prompt_sha256 {
                    out.push_str(&format!(
                        "prompt: {} bytes, sha256 {sha}; tools {:?}\n",
                        record.prompt_bytes, record.tools
                    ));
                }
                for call in &calls {
                    let answer = &call["answer"];
                    let what = if call["ok"] == true {
                        match (answer["status"].as_str(), answer["id"].as_str()) {
                            (Some(status), Some(id)) => format!("{status} as {id}"),
                            (Some(status), None) => status.to_string(),
                            _ => "ok".to_string(),
                        }
                    } else {
                        format!("refused [{}] {}", plain(&answer["code"]), plain(&answer["message"]))
                    };
                    let file = call["file_path"].as_str().map(|f| format!(" {f}")).unwrap_or_default();
                    let line = format!(
                        "{} {} {}{file}: {what}",
                        plain(&call["at"]),
                        plain(&call["action"]),
                        plain(&call["name"])
                    );
                    out.push_str(&format!("  {}\n", one_line(&line)));
                }
                if let Some(answer) = &record.answer {
                    // The reviewer's own text: its lines are indented under `answer:`, so none
                    // can pass for a call line.
                    out.push_str(&format!("answer: {}\n", answer.replace('\n', "\n        ")));
                }
                if !record.changes.is_null() {
                    out.push_str(&format!("changes: {}\n", record.changes));
                }
                out
            })
        }
        _ => Err(usage_error("expected `/skills reviews [ID]`")),
    }
}
