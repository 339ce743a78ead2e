//! `self-evolve event`: events in the replay line format (DESIGN.md, "Replay format") on stdin,
//! for harnesses that are not Claude Code. Each line is handled as it arrives, on the system
//! clock (`t` may be left out and is ignored), and its decisions are printed as JSON lines; a
//! process per event decides what one process would, since session state is on disk.

use super::transcript::Said;
use crate::component::Source;
use crate::events::{Event, context};
use anyhow::{Context, Result};
use self_evolve_host::plugin::{CallContext, Origin};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::Path;

/// Handles every line of `input`; returns whether every line was an event it could handle.
pub fn run(home: &Path, wasm: &Source, cwd: &str, input: impl BufRead, out: &mut impl Write) -> Result<bool> {
    let mut live = crate::live::open(home, wasm)?;
    let mut all_ok = true;
    let mut reader = input;
    let mut buf = Vec::new();
    for n in 1u64.. {
        let more = crate::input::next_line(&mut reader, &mut buf, crate::input::MAX_LINE_BYTES)
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
        // One JSON value per line for the harness, nothing a terminal would obey for a person.
        for line in decisions {
            writeln!(out, "{}", self_evolve_host::text::visible_json(&line))?;
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
        event => {
            if let Some(session) = session_of(&event) {
                super::deliver::check_session(session, "session")?;
            }
            Ok(event)
        }
    }
}

/// The session an event line belongs to, if it names one.
fn session_of(event: &Event) -> Option<&String> {
    match event {
        Event::User { session, .. }
        | Event::Assistant { session, .. }
        | Event::Tool { session, .. }
        | Event::Call { session, .. }
        | Event::TurnEnd { session, .. }
        | Event::Command { session, .. } => Some(session),
        _ => None,
    }
}

fn handle(live: &mut crate::live::Live, cwd: &str, event: &Event) -> Result<Vec<String>> {
    // Inside a live reviewer every line is the reviewer's: its calls and `/skills` lines are made
    // as that subagent (so the plugin refuses it the operator's subcommands), never as `main`.
    let reviewer = crate::identity::activation();
    if let (Some(activation), Event::Call { agent: Some(agent), .. }) = (&reviewer, event)
        && agent != activation
    {
        let error = crate::identity::not_the_reviewer(activation, agent);
        return Ok(vec![json!({"kind": "event", "ok": false, "error": error}).to_string()]);
    }
    if let Some(session) = session_of(event) {
        let said = match event {
            Event::User { text, human: true, .. } => Some(Said::User(text)),
            Event::Assistant { text, .. } => Some(Said::Assistant(text)),
            Event::Tool { tool, .. } => Some(Said::Tool(tool)),
            _ => None,
        };
        let transcript = super::transcript::keep(&live.home, session, said.as_slice());
        if let Ok(mut provider) = live.provider.lock() {
            provider.note_session(session, cwd, transcript.as_deref());
        }
    }
    let plugin = &mut live.plugin;
    let mut decisions = match plugin.tick() {
        Ok(decisions) => decisions,
        // A failed tick is reported; the event is delivered anyway.
        Err(err) => vec![json!({"kind": "event", "ok": false, "error": format!("tick: {err}")}).to_string()],
    };
    let ctx_of = |session: &str, origin: &str, depth: u32| {
        let mut ctx = match &reviewer {
            Some(activation) => CallContext {
                agent: activation.clone(),
                origin: Origin::Subagent,
                depth: depth.max(1),
                ..context(session, origin, depth)
            },
            None => context(session, origin, depth),
        };
        ctx.cwd = cwd.to_string();
        ctx
    };
    decisions.extend(crate::events::apply(plugin, event, ctx_of)?.unwrap_or_default());
    decisions.extend(plugin.pump_activations()?);
    Ok(decisions)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session id reaches a reviewer's command line: one that could be a flag is refused.
    #[test]
    fn a_line_whose_session_is_no_session_id_is_refused() {
        assert!(parse(r#"{"type": "user", "session": "e1", "text": "hi"}"#).is_ok());
        for session in ["--dangerously-skip-permissions", "a b", "", "x\n"] {
            let line = json!({"type": "user", "session": session, "text": "hi"}).to_string();
            let err = format!("{:#}", parse(&line).unwrap_err());
            assert!(err.contains("not a session id"), "{err}");
        }
    }
}
