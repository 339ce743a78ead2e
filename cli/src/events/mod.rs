//! The event lines of a session (DESIGN.md "Replay format"): what `self-evolve replay` reads
//! from a file and `self-evolve event` from a live harness, and the plugin call each line makes
//! (`apply`). A service both front doors share; uses only the host library.

use anyhow::{Context, Result, bail};
use self_evolve_host::bindings::review_loop;
use self_evolve_host::plugin::{CallContext, Origin, Plugin, ToolEvent, TurnStatus};
use serde::Deserialize;
use serde_json::Value;
use std::path::Path;

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

pub fn context(session: &str, origin: &str, depth: u32) -> CallContext {
    CallContext {
        session: session.to_string(),
        agent: "main".to_string(),
        origin: if origin == "subagent" { Origin::Subagent } else { Origin::User },
        depth,
        cwd: String::new(),
    }
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
