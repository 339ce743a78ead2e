//! `self-evolve event`: events in the replay line format (DESIGN.md, "Replay format") on stdin,
//! for harnesses that are not Claude Code. Each line is handled as it arrives, on the system
//! clock (`t` may be left out and is ignored), and its decisions are printed as JSON lines; a
//! process per event decides what one process would, since session state is on disk.

use crate::cli::replay::{Event, context};
use crate::component::Source;
use crate::plugin::{ToolEvent, TurnStatus};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::Path;

/// Handles every line of `input`; returns whether every line was an event it could handle.
pub fn run(home: &Path, wasm: &Source, cwd: &str, input: impl BufRead, out: &mut impl Write) -> Result<bool> {
    let mut live = super::open(home, wasm)?;
    let mut all_ok = true;
    let mut reader = input;
    let mut buf = Vec::new();
    for n in 1u64.. {
        let more = crate::cli::input::next_line(&mut reader, &mut buf, crate::cli::input::MAX_LINE_BYTES)
            .with_context(|| format!("stdin:{n}"))?;
        if !more {
            break;
        }
        let text = String::from_utf8_lossy(&buf);
        if text.trim().is_empty() {
            continue;
        }
        let decisions = match parse(&text) {
            Ok(event) => handle(&mut live, cwd, &event)?,
            Err(err) => {
                all_ok = false;
                vec![json!({"kind": "event", "line": n, "ok": false, "error": format!("{err:#}")}).to_string()]
            }
        };
        live.record("event", &decisions);
        for line in decisions {
            writeln!(out, "{line}")?;
        }
    }
    Ok(all_ok)
}

fn parse(line: &str) -> Result<Event> {
    let mut value: Value = serde_json::from_str(line).context("not JSON")?;
    if let Some(obj) = value.as_object_mut() {
        obj.entry("t").or_insert(json!(0));
    }
    let event: Event = serde_json::from_value(value).context("not an event line (see DESIGN.md, \"Replay format\")")?;
    match event {
        Event::Config { .. } | Event::Reviewer { .. } | Event::ReviewLoop(_) => {
            anyhow::bail!("`config`, `reviewer` and `review-loop` lines belong to replays, not live events")
        }
        event => Ok(event),
    }
}

fn handle(live: &mut super::Live, cwd: &str, event: &Event) -> Result<Vec<String>> {
    let session = match event {
        Event::User { session, .. }
        | Event::Assistant { session, .. }
        | Event::Tool { session, .. }
        | Event::Call { session, .. }
        | Event::TurnEnd { session, .. }
        | Event::Command { session, .. } => Some(session),
        _ => None,
    };
    if let (Some(session), Ok(mut provider)) = (session, live.provider.lock()) {
        provider.note_session(session, cwd, None);
    }
    let plugin = &mut live.plugin;
    let ctx_of = |session: &str, origin: &str, depth: u32| {
        let mut ctx = context(session, origin, depth);
        ctx.cwd = cwd.to_string();
        ctx
    };
    let mut decisions = plugin.tick()?;
    match event {
        Event::User { session, text, human, .. } => {
            decisions.extend(plugin.user_message(&ctx_of(session, "user", 0), text, *human)?)
        }
        Event::Assistant { session, text, .. } => {
            decisions.extend(plugin.assistant_message(&ctx_of(session, "user", 0), text)?)
        }
        Event::Tool { session, tool, args, ok, output, .. } => {
            let event = ToolEvent { tool: tool.clone(), args_json: args.to_string(), ok: *ok, output: output.clone() };
            decisions.extend(plugin.tool_result(&ctx_of(session, "user", 0), &event)?)
        }
        Event::Call { session, tool, args, agent, .. } => {
            let mut ctx = ctx_of(session, "user", 0);
            if let Some(agent) = agent {
                ctx.agent = agent.clone();
            }
            let (ok, text) = match plugin.tools_call(&ctx, tool, &args.to_string())? {
                Ok(text) => (true, text),
                Err(text) => (false, text),
            };
            decisions.push(crate::lines::tool(session, &ctx.agent, tool, ok, &text));
        }
        Event::TurnEnd { session, status, origin, depth, .. } => {
            let status = match status.as_str() {
                "completed" => TurnStatus::Completed,
                "aborted" => TurnStatus::Aborted,
                _ => TurnStatus::Failed,
            };
            decisions.extend(plugin.turn_end(&ctx_of(session, origin, *depth), status)?);
        }
        Event::Command { session, text, .. } => {
            let args = text.trim().strip_prefix("/skills").unwrap_or(text).trim();
            let (ok, output) = match plugin.command(&ctx_of(session, "user", 0), args)? {
                Ok(text) => (true, text),
                Err(text) => (false, text),
            };
            decisions.push(crate::lines::command(session, text, ok, &output));
        }
        Event::Config { .. } | Event::Reviewer { .. } | Event::ReviewLoop(_) => {}
    }
    decisions.extend(plugin.pump_activations()?);
    Ok(decisions)
}
