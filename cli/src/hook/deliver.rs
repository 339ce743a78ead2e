//! What every hook entry shares: the plugin events one agent event asks for (`Action`), the
//! event's session (`HookEvent`), and their delivery to the plugin in that session, with its tick
//! and the log (`deliver`). `claude`, `codex`, `codex_hooks`, `gemini` and `cursor` map their
//! agent's payloads onto it; what reaches stdout is each harness's (`super::Harness::stdout`).

use super::transcript::Said;
use crate::component::Source;
use anyhow::{Context, Result, bail};
use self_evolve_host::plugin::{CallContext, Origin, ToolEvent, TurnStatus};
use serde_json::Value;
use std::path::Path;

/// What one hook event asks of the plugin.
#[derive(Debug, Clone)]
pub enum Action {
    User(String),
    Assistant(String),
    Tool(ToolEvent),
    /// A turn ended: completed, or (Cursor says so) aborted or failed, which counts toward no review.
    TurnEnd(TurnStatus),
}

/// The fields of a hook event the mapping reads.
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    pub session: String,
    pub cwd: String,
    /// A transcript in Claude Code's shape, which a reviewer's seed reads.
    pub transcript: Option<String>,
    pub name: String,
    pub raw: Value,
    /// The harness's own transcript is in another shape: the host keeps the conversation itself
    /// (`super::transcript`) and seeds reviewers from that.
    pub keep_transcript: bool,
}

impl HookEvent {
    /// A payload in Claude Code's shape (`session_id`, `hook_event_name`, `cwd`,
    /// `transcript_path`), which Codex's and Gemini CLI's hooks send too.
    pub fn parse(bytes: &[u8]) -> Result<HookEvent> {
        let raw: Value = serde_json::from_slice(bytes).context("the hook event on stdin is not JSON")?;
        let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
        let session = text("session_id").filter(|s| !s.is_empty()).context("the hook event has no `session_id`")?;
        let name = text("hook_event_name").context("the hook event has no `hook_event_name`")?;
        check_session(&session, "session_id")?;
        Ok(HookEvent {
            session,
            cwd: text("cwd").unwrap_or_default(),
            transcript: text("transcript_path").filter(|p| !p.is_empty()),
            name,
            raw,
            keep_transcript: false,
        })
    }
}

/// A session id as agents make them (UUIDs, `cc-1`): 1–256 of `A-Z a-z 0-9 . _ : -`, not
/// starting with `-`. It reaches a reviewer's command line (`{session}`) and its environment, so
/// anything else (a flag, a space, a control character) is refused where it enters.
pub fn check_session(session: &str, field: &str) -> Result<()> {
    if session.len() > 256 {
        bail!("`{field}` is over 256 bytes");
    }
    let allowed = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-');
    if session.is_empty() || session.starts_with('-') || !session.bytes().all(allowed) {
        bail!(
            "`{field}` `{}` is not a session id (1-256 of A-Z a-z 0-9 . _ : -, not starting with `-`); event ignored",
            self_evolve_host::text::visible(session)
        );
    }
    Ok(())
}

/// What a hook process decided, and the message for the user when `hook.systemMessage` asks
/// for one (a review started); each harness prints it its own way, or not at all.
pub struct Outcome {
    pub message: Option<String>,
    pub decisions: Vec<String>,
}

impl Outcome {
    /// An event left alone (one Cursor delivered to Claude Code's hooks as well).
    pub fn ignored() -> Outcome {
        Outcome { message: None, decisions: Vec::new() }
    }
}

/// The plugin's side of one hook event: its actions in `event`'s session, the tick, the log.
pub fn deliver(
    home: &Path,
    wasm: &Source,
    event: &HookEvent,
    actions: Vec<Action>,
    busy: &std::sync::Mutex<()>,
) -> Result<Outcome> {
    let mut live = guarded(busy, || crate::live::open(home, wasm))?;
    let kept = event.keep_transcript.then(|| {
        let said: Vec<Said> = actions
            .iter()
            .filter_map(|a| match a {
                Action::User(text) => Some(Said::User(text)),
                Action::Assistant(text) => Some(Said::Assistant(text)),
                Action::Tool(tool) => Some(Said::Tool(&tool.tool)),
                _ => None,
            })
            .collect();
        super::transcript::keep(home, &event.session, &said)
    });
    let transcript = match kept {
        Some(kept) => kept,
        None => event.transcript.clone(),
    };
    if let Ok(mut provider) = live.provider.lock() {
        provider.note_session(&event.session, &event.cwd, transcript.as_deref());
    }
    // A reviewer that is itself an agent with hooks (`claude -p` run by the `command` provider)
    // fires them too: its turns are a subagent's in the parent session (its own `session_id` is
    // the fork's), never counted toward a review of their own.
    let reviewer = crate::identity::activation();
    let parent = std::env::var("SELF_EVOLVE_SESSION").ok().filter(|s| !s.is_empty() && reviewer.is_some());
    let ctx = CallContext {
        session: parent.unwrap_or_else(|| event.session.clone()),
        agent: reviewer.clone().unwrap_or_else(|| "main".into()),
        origin: if reviewer.is_some() { Origin::Subagent } else { Origin::User },
        depth: u32::from(reviewer.is_some()),
        cwd: event.cwd.clone(),
    };
    let mut decisions = Vec::new();
    let mut errors = Vec::new();
    // A failed tick (a curator pass past its deadline) is logged; the event is delivered anyway.
    match guarded(busy, || live.plugin.tick()) {
        Ok(more) => decisions.extend(more),
        Err(err) => errors.push(format!("tick: {err}")),
    }
    for action in actions {
        let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
        let more = match action {
            Action::User(text) => {
                live.plugin.user_message(&ctx, self_evolve_host::plugin::clip_event_text(&text), true)?
            }
            Action::Assistant(text) => {
                live.plugin.assistant_message(&ctx, self_evolve_host::plugin::clip_event_text(&text))?
            }
            Action::Tool(tool) => live.plugin.tool_result(&ctx, &tool)?,
            Action::TurnEnd(status) => live.plugin.turn_end(&ctx, status)?,
        };
        decisions.extend(more);
    }
    match guarded(busy, || live.plugin.pump_activations()) {
        Ok(more) => decisions.extend(more),
        Err(err) => errors.push(format!("reaping reviewers: {err}")),
    }
    live.record(&format!("hook {}", event.name), &decisions);
    for error in errors {
        crate::live::log(home, "hook", "error", &error);
    }
    let started = decisions
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|d| d["kind"] == "review" && d["action"] == "start");
    let message = match started {
        Some(d) if live.host_file.hook.system_message => {
            Some(format!("self-evolve: background skill review started ({})", d["activation"].as_str().unwrap_or("?")))
        }
        _ => None,
    };
    Ok(Outcome { message, decisions })
}

/// Runs one plugin call holding `busy`: the watchdog waits for it (each call is bounded by its
/// own deadline) instead of exiting with the session's lock file left behind.
fn guarded<T>(busy: &std::sync::Mutex<()>, call: impl FnOnce() -> T) -> T {
    let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
    call()
}
