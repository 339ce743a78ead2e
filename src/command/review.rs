//! `/skills review on|off|now|status` and `/skills loops [verdict SESSION]`: background reviews
//! and review loops, as the operator sees them.

use super::{answer, plain, table, usage_error};
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
