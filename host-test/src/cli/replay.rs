//! `self-evolve replay FILE`: drives a recorded session (JSONL, DESIGN.md "Replay format")
//! through the real component with a manual clock and a scripted reviewer. Emits every
//! decision as a JSON line (`--json`) or as a narrated timeline.

use crate::caps::clock::ManualClock;
use crate::caps::http::{Endpoint, HttpConfig};
use crate::caps::log::{Level, LogSink};
use crate::caps::subagent::{Script, ScriptedProvider};
use crate::cli::home;
use crate::plugin::{CallContext, HostConfig, Origin, Plugin, ToolEvent, TurnStatus};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// t = 0 on the manual clock: 2026-01-01T00:00:00Z.
pub const EPOCH_MS: u64 = 1_767_225_600_000;
pub const SERVICES: [&str; 5] = ["tools", "commands", "system-prompt", "agents", "subagents"];

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Event {
    Config {
        t: u64,
        config: Value,
    },
    User {
        t: u64,
        session: String,
        text: String,
        #[serde(default = "yes")]
        human: bool,
    },
    Assistant {
        t: u64,
        session: String,
        text: String,
    },
    Tool {
        t: u64,
        session: String,
        tool: String,
        #[serde(default)]
        args: Value,
        #[serde(default = "yes")]
        ok: bool,
        #[serde(default)]
        output: String,
    },
    Call {
        t: u64,
        session: String,
        tool: String,
        #[serde(default)]
        args: Value,
        #[serde(default)]
        agent: Option<String>,
    },
    TurnEnd {
        t: u64,
        session: String,
        status: String,
        #[serde(default = "user")]
        origin: String,
        #[serde(default)]
        depth: u32,
    },
    Reviewer {
        t: u64,
        #[serde(default)]
        calls: Vec<ReviewerCall>,
        #[serde(default)]
        text: String,
        #[serde(default, rename = "delayMs")]
        delay_ms: u64,
    },
    Command {
        t: u64,
        session: String,
        text: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewerCall {
    pub tool: String,
    #[serde(default)]
    pub args: Value,
}

fn yes() -> bool {
    true
}

fn user() -> String {
    "user".into()
}

impl Event {
    pub fn t(&self) -> u64 {
        match self {
            Event::Config { t, .. }
            | Event::User { t, .. }
            | Event::Assistant { t, .. }
            | Event::Tool { t, .. }
            | Event::Call { t, .. }
            | Event::TurnEnd { t, .. }
            | Event::Reviewer { t, .. }
            | Event::Command { t, .. } => *t,
        }
    }
}

/// Reads and checks the whole file first: a bad line is reported with its number, before
/// anything is replayed.
pub fn read_events(path: &Path) -> Result<Vec<Event>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut events = Vec::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}:{}: not readable text", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let event: Event = serde_json::from_str(&line).with_context(|| {
            format!("{}:{}: not a replay event (see DESIGN.md, \"Replay format\")", path.display(), i + 1)
        })?;
        if matches!(event, Event::Config { .. }) && !events.is_empty() {
            bail!("{}:{}: a config line may only come first", path.display(), i + 1);
        }
        if let Some(prev) = events.last().map(Event::t)
            && event.t() < prev
        {
            bail!("{}:{}: t goes backwards ({} after {prev})", path.display(), i + 1, event.t());
        }
        events.push(event);
    }
    Ok(events)
}

/// Starts a local gate answering the replies in `path` (see `replay --help`).
pub fn serve_gate_replies(path: &Path) -> Result<crate::testing::ScriptedServer> {
    use crate::testing::{Reply, ScriptedServer};
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
    pub wasm: PathBuf,
    /// The `gate` endpoint's URL and the variable holding its credential, if any.
    pub gate: Option<(String, Option<String>)>,
}

/// What a replay did, for the closing summary and tests.
#[derive(Debug, Default)]
pub struct Summary {
    pub events: usize,
    pub decisions: Vec<Value>,
}

fn context(session: &str, origin: &str, depth: u32) -> CallContext {
    CallContext {
        session: session.to_string(),
        agent: "main".to_string(),
        origin: if origin == "subagent" { Origin::Subagent } else { Origin::User },
        depth,
        cwd: String::new(),
    }
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
    let mut plugin = Plugin::load(&options.wasm, config)?;
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
    for (i, event) in events.iter().enumerate() {
        if progress && i % (events.len() / 100).max(1) == 0 {
            eprint!("\r[{:<50}] {:>3}%", "=".repeat(i * 50 / events.len()), i * 100 / events.len());
        }
        let t = event.t();
        clock.set(base + t);
        let mut decisions = plugin.tick()?;
        decisions.extend(plugin.pump_activations()?);
        match event {
            Event::Config { .. } => {}
            Event::User { session, text, human, .. } => {
                narrator.event(out, t, &format!("{session} user: {}", clip(text, 100)))?;
                decisions.extend(plugin.user_message(&context(session, "user", 0), text, *human)?);
            }
            Event::Assistant { session, text, .. } => {
                narrator.event(out, t, &format!("{session} assistant: {}", clip(text, 100)))?;
                decisions.extend(plugin.assistant_message(&context(session, "user", 0), text)?);
            }
            Event::Tool { session, tool, args, ok, output, .. } => {
                let event =
                    ToolEvent { tool: tool.clone(), args_json: args.to_string(), ok: *ok, output: output.clone() };
                decisions.extend(plugin.tool_result(&context(session, "user", 0), &event)?);
            }
            Event::Call { session, tool, args, agent, .. } => {
                let mut ctx = context(session, "user", 0);
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
                decisions.extend(plugin.turn_end(&context(session, origin, *depth), status)?);
                decisions.extend(plugin.pump_activations()?);
            }
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
            Event::Command { session, text, .. } => {
                let args = text.trim().strip_prefix("/skills").unwrap_or(text).trim();
                let (ok, output) = match plugin.command(&context(session, "user", 0), args)? {
                    Ok(text) => (true, text),
                    Err(text) => (false, text),
                };
                decisions.push(crate::lines::command(session, text, ok, &output));
            }
        }
        for line in decisions {
            // --json prints each line exactly as the plugin (or lines.rs) wrote it.
            if options.json {
                writeln!(out, "{line}")?;
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
    Ok(summary)
}

fn clip(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// Prints decisions as JSON lines, or as a readable timeline.
struct Narrator {
    json: bool,
}

impl Narrator {
    fn new(json: bool) -> Narrator {
        Narrator { json }
    }

    fn stamp(t: u64) -> String {
        let s = t / 1000;
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    }

    fn note(&mut self, out: &mut impl Write, t: u64, text: &str) -> Result<()> {
        if !self.json {
            writeln!(out, "{}  {text}", Self::stamp(t))?;
        }
        Ok(())
    }

    fn event(&mut self, out: &mut impl Write, t: u64, text: &str) -> Result<()> {
        self.note(out, t, text)
    }

    fn decision(&mut self, out: &mut impl Write, t: u64, d: &Value) -> Result<()> {
        if self.json {
            return Ok(());
        }
        let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
        let line = match s("kind").as_str() {
            "review" => match s("action").as_str() {
                "start" => format!(
                    "  ▶ REVIEW started for {} at turn {} ({}) → {}",
                    s("session"),
                    d["turn"],
                    s("reason"),
                    s("activation")
                ),
                "end" => format!("  ◀ reviewer {} {}: {}", s("activation"), s("status"), s("reason")),
                "abort" => format!("  ✖ reviewer {} aborted: {}", s("activation"), s("reason")),
                _ if s("reason").starts_with("not due") => format!("    turn {} · {}", d["turn"], s("reason")),
                _ => format!("  · review skipped at turn {}: {}", d["turn"], s("reason")),
            },
            "gate" => {
                format!("  ? gate → {} ({}, source {}, {} ms)", s("decision"), s("reason"), s("source"), d["latencyMs"])
            }
            "tool" => {
                let who = if s("agent") == "main" { "agent".to_string() } else { format!("reviewer {}", s("agent")) };
                let result = &d["result"];
                let what = if d["ok"] == true {
                    match (result["status"].as_str(), result) {
                        (Some("staged"), _) => format!(
                            "staged {} as {}\n{}",
                            s_of(result, "path"),
                            s_of(result, "id"),
                            indent(result["diff"].as_str().unwrap_or(""))
                        ),
                        (Some(status), _) => format!("{status} {}", s_of(result, "path")),
                        (None, Value::String(text)) => text.clone(),
                        (None, _) if result["content"].is_string() => format!("viewed {}", s_of(result, "path")),
                        (None, _) if result["skills"].is_array() => {
                            format!("listed {} skills", result["skills"].as_array().map_or(0, Vec::len))
                        }
                        _ => "ok".to_string(),
                    }
                } else {
                    match result["code"].as_str() {
                        Some(code) => format!("REFUSED [{code}] {}", result["message"].as_str().unwrap_or("")),
                        None => format!("REFUSED {}", clip(&result.to_string(), 120)),
                    }
                };
                format!("  ✎ {who} {}: {what}", s("tool"))
            }
            "command" => {
                format!("  $ /skills {}\n{}", s("text").trim_start_matches("/skills").trim(), indent(&s("output")))
            }
            _ => format!("  {d}"),
        };
        writeln!(out, "{}{line}", Self::stamp(t))?;
        Ok(())
    }
}

fn s_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or("").to_string()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("            {l}")).collect::<Vec<_>>().join("\n")
}
