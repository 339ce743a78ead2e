//! `self-evolve replay FILE`: drives a recorded session (JSONL, DESIGN.md "Replay format")
//! through the real component with a manual clock and a scripted reviewer. Emits every
//! decision as a JSON line (`--json`) or as a narrated timeline.

use crate::cli::home;
use anyhow::{Context, Result, bail};
use self_evolve_host::bindings::review_loop;
use self_evolve_host::caps::clock::ManualClock;
use self_evolve_host::caps::http::{Endpoint, HttpConfig};
use self_evolve_host::caps::log::{Level, LogSink};
use self_evolve_host::caps::subagent::{Script, ScriptedProvider};
use self_evolve_host::plugin::{CallContext, HostConfig, Origin, Plugin, ToolEvent, TurnStatus};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
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
    /// One `review-loop.begin` (seed 003); its children take queued `reviewer` scripts in start
    /// order (the lenses, then a falsifier per finding as each lens reply arrives).
    ReviewLoop(Box<ReviewLoopEvent>),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewLoopEvent {
    pub t: u64,
    pub session: String,
    #[serde(default = "code")]
    pub mode: String,
    pub artifact: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub documents: Vec<ReplayDocument>,
    #[serde(default)]
    pub repo: String,
    #[serde(default)]
    pub branch: String,
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub uncommitted: bool,
    #[serde(default)]
    pub max_iter: Option<u32>,
    #[serde(default)]
    pub token_ceiling: Option<u64>,
    /// `"independent"` (default), `{"selfAuthored": [files]}` or `{"unverified": "why"}`.
    #[serde(default)]
    pub independence: Option<Value>,
    #[serde(default)]
    pub ack: Option<String>,
    #[serde(default)]
    pub auto: bool,
    #[serde(default)]
    pub commands: Option<Vec<ReplayCommand>>,
    #[serde(default)]
    pub disabled_lenses: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayDocument {
    pub path: String,
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReplayCommand {
    pub name: String,
    pub exit_code: i32,
    #[serde(default)]
    pub stderr_tail: String,
}

fn code() -> String {
    "code".into()
}

impl ReviewLoopEvent {
    /// The WIT request, or why the line cannot be one.
    pub fn request(&self) -> Result<review_loop::Request> {
        use review_loop::{CommandResult, Document, Independence, Mode};
        let mode = match self.mode.as_str() {
            "code" => Mode::Code,
            "plan" => Mode::Plan,
            "claim" => Mode::Claim,
            "deliverable" => Mode::Deliverable,
            other => bail!("mode `{other}` is not code, plan, claim or deliverable"),
        };
        let independence = match &self.independence {
            None => Independence::Independent,
            Some(Value::String(s)) if s == "independent" => Independence::Independent,
            Some(v) if v["selfAuthored"].is_array() => Independence::SelfAuthored(
                v["selfAuthored"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.as_str().map(String::from))
                    .collect(),
            ),
            Some(v) if v["unverified"].is_string() => {
                Independence::Unverified(v["unverified"].as_str().unwrap_or_default().to_string())
            }
            Some(other) => bail!(
                "independence {other} is not \"independent\", {{\"selfAuthored\": [files]}} or {{\"unverified\": \"why\"}}"
            ),
        };
        Ok(review_loop::Request {
            mode,
            artifact: self.artifact.clone(),
            artifact_sha: None,
            files: self.files.clone(),
            documents: self.documents.iter().map(|d| Document { path: d.path.clone(), text: d.text.clone() }).collect(),
            repo: self.repo.clone(),
            branch: self.branch.clone(),
            commit: self.commit.clone(),
            uncommitted: self.uncommitted,
            max_iter: self.max_iter,
            token_ceiling: self.token_ceiling,
            independence,
            self_review_ack: self.ack.clone(),
            auto: self.auto,
            commands: self.commands.as_ref().map(|list| {
                list.iter()
                    .map(|c| CommandResult {
                        name: c.name.clone(),
                        exit_code: c.exit_code,
                        stderr_tail: c.stderr_tail.clone(),
                    })
                    .collect()
            }),
            disabled_lenses: self.disabled_lenses.clone(),
        })
    }
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
            Event::ReviewLoop(e) => e.t,
        }
    }
}

/// Reads and checks the whole file first: a bad line is reported with its number, before
/// anything is replayed.
pub fn read_events(path: &Path) -> Result<Vec<Event>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = std::io::BufReader::new(file);
    let mut events = Vec::new();
    let (mut buf, mut total) = (Vec::new(), 0usize);
    for i in 0u64.. {
        let more = super::input::next_line(&mut reader, &mut buf, super::input::MAX_LINE_BYTES)
            .with_context(|| format!("{}:{}", path.display(), i + 1))?;
        if !more {
            break;
        }
        total = total.saturating_add(buf.len() + 1);
        if total > MAX_REPLAY_BYTES {
            bail!("{}:{}: the replay passes {MAX_REPLAY_BYTES} bytes; split it", path.display(), i + 1);
        }
        let line =
            std::str::from_utf8(&buf).with_context(|| format!("{}:{}: not UTF-8 text", path.display(), i + 1))?;
        if line.trim().is_empty() {
            continue;
        }
        let event: Event = serde_json::from_str(line).with_context(|| {
            format!("{}:{}: not a replay event (see DESIGN.md, \"Replay format\")", path.display(), i + 1)
        })?;
        if let Event::ReviewLoop(e) = &event {
            e.request().with_context(|| format!("{}:{}: a review-loop line", path.display(), i + 1))?;
        }
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

/// A replay is read whole (and checked) before it runs; this bounds what that may hold.
pub const MAX_REPLAY_BYTES: usize = 256 << 20;

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

pub fn context(session: &str, origin: &str, depth: u32) -> CallContext {
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
            Event::ReviewLoop(e) => narrator.event(out, t, &format!("{} /review-loop --mode {}", e.session, e.mode))?,
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
                    Err(refusal) => decisions.push(self_evolve_host::lines::review_loop_refused(&e.session, &refusal)),
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
    Ok(summary)
}

/// The plugin calls of the lines a live harness sends too (`user`, `assistant`, `tool`, `call`,
/// `turn-end`, `command`), shared by `replay` and `self-evolve event`; `None` for the lines only
/// a replay has (`config`, `reviewer`, `review-loop`). `context` makes each call's context.
pub fn apply(
    plugin: &mut Plugin,
    event: &Event,
    context: impl Fn(&str, &str, u32) -> CallContext,
) -> Result<Option<Vec<String>>> {
    let decisions = match event {
        Event::User { session, text, human, .. } => plugin.user_message(&context(session, "user", 0), text, *human)?,
        Event::Assistant { session, text, .. } => plugin.assistant_message(&context(session, "user", 0), text)?,
        Event::Tool { session, tool, args, ok, output, .. } => {
            let event = ToolEvent { tool: tool.clone(), args_json: args.to_string(), ok: *ok, output: output.clone() };
            plugin.tool_result(&context(session, "user", 0), &event)?
        }
        Event::Call { session, tool, args, agent, .. } => {
            let mut ctx = context(session, "user", 0);
            // A reviewer's own context (`event` inside one) keeps its identity.
            if let Some(agent) = agent
                && ctx.origin == Origin::User
            {
                ctx.agent = agent.clone();
            }
            let (ok, text) = match plugin.tools_call(&ctx, tool, &args.to_string())? {
                Ok(text) => (true, text),
                Err(text) => (false, text),
            };
            vec![self_evolve_host::lines::tool(session, &ctx.agent, tool, ok, &text)]
        }
        Event::TurnEnd { session, status, origin, depth, .. } => {
            let status = match status.as_str() {
                "completed" => TurnStatus::Completed,
                "aborted" => TurnStatus::Aborted,
                _ => TurnStatus::Failed,
            };
            plugin.turn_end(&context(session, origin, *depth), status)?
        }
        Event::Command { session, text, .. } => {
            let args = text.trim().strip_prefix("/skills").unwrap_or(text).trim();
            let (ok, output) = match plugin.command(&context(session, "user", 0), args)? {
                Ok(text) => (true, text),
                Err(text) => (false, text),
            };
            vec![self_evolve_host::lines::command(session, text, ok, &output)]
        }
        Event::Config { .. } | Event::Reviewer { .. } | Event::ReviewLoop(_) => return Ok(None),
    };
    Ok(Some(decisions))
}

/// `text` on one line, at most `max` characters: its credentials redacted first (a cut through
/// one leaves a piece the scanner no longer knows, and a key's lines are known as lines).
fn clip(text: &str, max: usize) -> String {
    let redacted = self_evolve_scan::redact_secrets(text);
    let one_line = redacted.as_deref().unwrap_or(text).replace('\n', " ");
    match one_line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// What the timeline shows of a line: decisions quote agents, reviewers and files.
fn redacted(text: &str) -> std::borrow::Cow<'_, str> {
    self_evolve_scan::redact_secrets(text).map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
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
            writeln!(out, "{}  {}", Self::stamp(t), self_evolve_host::text::visible_lines(&redacted(text)))?;
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
            "review-loop" => review_loop_line(d),
            _ => format!("  {d}"),
        };
        // Results quote agents and files: hidden characters are shown, not obeyed.
        writeln!(out, "{}{}", Self::stamp(t), self_evolve_host::text::visible_lines(&redacted(&line)))?;
        Ok(())
    }
}

/// A review-loop decision in the timeline.
fn review_loop_line(d: &Value) -> String {
    let s = |k: &str| d[k].as_str().unwrap_or("").to_string();
    let claims = |k: &str| -> String {
        let list = d[k].as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter()
            .map(|f| format!("\n            · [{}] {} — {}", s_of(f, "severity"), location(f), s_of(f, "claim")))
            .collect()
    };
    if d.get("refused").is_some() {
        return format!("  ✖ review loop refused: {}", s_of(&d["refused"], "message"));
    }
    if d["event"] == "reviewer" {
        return match d["error"].as_str() {
            Some(error) => format!("    lens {}: {error}", s("lens")),
            None => format!("    lens {}: {} finding(s), {} falsifier(s)", s("lens"), d["findings"], d["falsifiers"]),
        };
    }
    let dropped: Vec<String> = d["dropped"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|f| format!("{} {}", s_of(f, "dropped"), f["score"]))
        .chain(d["falsified"].as_array().map(Vec::as_slice).unwrap_or_default().iter().map(|_| "falsified".to_string()))
        .collect();
    let dropped = if dropped.is_empty() { String::new() } else { format!("; dropped: {}", dropped.join(", ")) };
    match s("outcome").as_str() {
        "dispatched" => {
            let lenses: Vec<String> = d["lenses"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|l| format!("{}→{}", s_of(l, "lens"), s_of(l, "activation")))
                .collect();
            format!(
                "  ▶ REVIEW LOOP {} iteration {}/{} ({}, {}): {}",
                s("session"),
                d["iteration"],
                d["maxIter"],
                s("mode"),
                s("independence"),
                lenses.join(" ")
            )
        }
        "stopped" | "skipped" => format!("  ✖ review loop {}: {}", s("outcome"), s("message")),
        "continue" => format!(
            "  ↻ review loop continues: {} actionable{dropped}{}\n            next: {}",
            d["actionable"].as_array().map_or(0, Vec::len),
            claims("actionable"),
            s_of(&d["next"], "reason")
        ),
        outcome => format!("  ◀ review loop {outcome}{dropped}{}\n{}", claims("actionable"), indent(&s("verdict"))),
    }
}

fn location(f: &Value) -> String {
    match (f["file"].as_str(), f["line"].as_u64()) {
        (Some(file), Some(line)) => format!("{file}:{line}"),
        (Some(file), None) => file.to_string(),
        _ => s_of(f, "lens"),
    }
}

fn s_of(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or("").to_string()
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("            {l}")).collect::<Vec<_>>().join("\n")
}
