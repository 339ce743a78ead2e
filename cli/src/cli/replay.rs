//! `self-evolve replay FILE`: drives a recorded session (JSONL, DESIGN.md "Replay format")
//! through the real component with a manual clock and a scripted reviewer. Emits every
//! decision as a JSON line (`--json`) or as a narrated timeline.

use super::narrate::{Narrator, clip};
use crate::events::{Event, apply, context};
use crate::home;
use anyhow::{Context, Result};
use self_evolve_host::caps::clock::ManualClock;
use self_evolve_host::caps::http::{Endpoint, HttpConfig};
use self_evolve_host::caps::log::{Level, LogSink};
use self_evolve_host::caps::subagent::{Script, ScriptedProvider};
use self_evolve_host::plugin::{HostConfig, Plugin};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// t = 0 on the manual clock: 2026-01-01T00:00:00Z.
pub const EPOCH_MS: u64 = 1_767_225_600_000;
/// A replay is one process running its events back to back for its whole run: it holds its
/// sessions in memory (`session-owner`) as a batch (`session-batch`: written every 1,024 events,
/// when a review starts or ends, and at its end, when it hands them back).
pub const SERVICES: [&str; 7] =
    ["tools", "commands", "system-prompt", "agents", "subagents", "session-owner", "session-batch"];

/// Starts a local gate answering the replies in `path` (see `replay --help`).
pub fn serve_gate_replies(path: &Path) -> Result<self_evolve_host::testing::ScriptedServer> {
    use self_evolve_host::testing::{Reply, ScriptedServer};
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let list: Vec<Value> =
        serde_json::from_str(&text).with_context(|| format!("{}: expected a JSON list of replies", path.display()))?;
    let mut replies = Vec::new();
    for (i, r) in list.iter().enumerate() {
        if r["reset"] == true {
            replies.push(Reply::Reset);
            continue;
        }
        let status = r["status"].as_u64().and_then(|s| u16::try_from(s).ok()).with_context(|| {
            format!("{}: reply {} needs a numeric \"status\" (or \"reset\": true)", path.display(), i + 1)
        })?;
        let body = match &r["body"] {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let delay = std::time::Duration::from_millis(r["delayMs"].as_u64().unwrap_or(0));
        replies.push(Reply::Status { status, body, delay });
    }
    Ok(ScriptedServer::start(replies)?)
}

pub struct Options {
    /// Wall-clock time of t = 0 (default `EPOCH_MS`, so replays are reproducible).
    pub start_ms: u64,
    pub home: PathBuf,
    pub json: bool,
    pub wasm: crate::component::Source,
    /// The `gate` endpoint's URL and the variable holding its credential, if any.
    pub gate: Option<(String, Option<String>)>,
    /// Start a fresh instance before every event, as a process per event (hooks) would: the
    /// decisions must be the same as without (session state lives in the state root).
    pub restart: bool,
}

/// What a replay did, for the closing summary and tests.
#[derive(Debug, Default)]
pub struct Summary {
    pub events: usize,
    pub decisions: Vec<Value>,
}

pub fn replay(events: &[Event], options: &Options, out: &mut impl Write) -> Result<Summary> {
    let base = options.start_ms;
    let clock = ManualClock::new(base);
    let provider = Arc::new(Mutex::new(ScriptedProvider::default()));
    let mut endpoints = BTreeMap::new();
    if let Some((url, env)) = &options.gate {
        let mut endpoint = Endpoint::new(url.clone());
        endpoint.credential_env = env.clone();
        endpoints.insert("gate".to_string(), endpoint);
    }
    let config = HostConfig {
        fs: home::replay_fs_config(&options.home),
        http: HttpConfig { endpoints },
        subagents: Box::new(provider.clone()),
        clock: Arc::new(clock.clone()),
        log: LogSink { stderr_level: Some(Level::Warn), capture: None },
        ..HostConfig::default()
    };
    let mut plugin = Plugin::from_bytes(&options.wasm.bytes()?, config)?;
    let config_json = match events.first() {
        Some(Event::Config { config, .. }) => config.to_string(),
        _ => "{}".to_string(),
    };
    let services: Vec<String> = SERVICES.iter().map(|s| s.to_string()).collect();
    let report =
        plugin.init(&config_json, &services)?.map_err(|e| anyhow::anyhow!("config key `{}`: {}", e.key, e.message))?;
    let mut summary = Summary::default();
    let mut narrator = Narrator::new(options.json);
    for warning in &report.warnings {
        narrator.note(out, 0, &format!("warning: {warning}"))?;
    }
    let progress = !options.json && std::io::stdout().is_terminal() && events.len() > 2_000;
    // Whatever happens: the sessions held in memory (a batch keeps state ahead of its journals)
    // go back to the home before the instance does.
    let mut run = || -> Result<()> {
        for (i, event) in events.iter().enumerate() {
            if progress && i % (events.len() / 100).max(1) == 0 {
                eprint!("\r[{:<50}] {:>3}%", "=".repeat(i * 50 / events.len()), i * 100 / events.len());
            }
            let t = event.t();
            clock.set(base.saturating_add(t));
            if options.restart && i > 0 {
                plugin.restart()?;
            }
            let mut decisions = plugin.tick()?;
            decisions.extend(plugin.pump_activations()?);
            match event {
                Event::User { session, text, .. } => {
                    narrator.event(out, t, &format!("{session} user: {}", clip(text, 100)))?
                }
                Event::Assistant { session, text, .. } => {
                    narrator.event(out, t, &format!("{session} assistant: {}", clip(text, 100)))?
                }
                Event::ReviewLoop(e) => {
                    narrator.event(out, t, &format!("{} /review-loop --mode {}", e.session, e.mode))?
                }
                _ => {}
            }
            if let Some(more) = apply(&mut plugin, event, context)? {
                decisions.extend(more);
                if matches!(event, Event::TurnEnd { .. }) {
                    decisions.extend(plugin.pump_activations()?);
                }
            }
            match event {
                Event::Reviewer { calls, text, delay_ms, .. } => {
                    let calls = calls.iter().map(|c| (c.tool.clone(), c.args.to_string())).collect();
                    if let Ok(mut p) = provider.lock() {
                        p.push(Script {
                            calls,
                            text: if text.is_empty() { "no skill update".into() } else { text.clone() },
                            delay_ms: *delay_ms,
                        });
                    }
                }
                Event::ReviewLoop(e) => {
                    let request = e.request()?;
                    match plugin.review_loop_begin(&context(&e.session, "user", 0), &request)? {
                        Ok(line) => decisions.push(line),
                        Err(refusal) => {
                            decisions.push(self_evolve_host::lines::review_loop_refused(&e.session, &refusal))
                        }
                    }
                    // Lens replies start falsifiers, which finish on a later pump: run them all now.
                    loop {
                        let more = plugin.pump_activations()?;
                        if more.is_empty() {
                            break;
                        }
                        decisions.extend(more);
                    }
                }
                _ => {}
            }
            for line in decisions {
                // --json prints each line as the plugin (or lines.rs) wrote it, the same value to a
                // parser; only the characters a terminal would obey are JSON escapes.
                if options.json {
                    writeln!(out, "{}", self_evolve_host::text::visible_json(&line))?;
                }
                let value: Value = serde_json::from_str(&line).unwrap_or(Value::String(line));
                narrator.decision(out, t, &value)?;
                summary.decisions.push(value);
            }
            summary.events += 1;
        }
        if progress {
            eprintln!("\r[{}] 100%", "=".repeat(50));
        }
        Ok(())
    };
    let ran = run();
    let handed = plugin.hand_back();
    ran?;
    handed?;
    Ok(summary)
}
