//! `self-evolve hook`, a front door: one agent event in a process of its own — a hook event on
//! stdin from Claude Code (`claude`), Codex (`codex_hooks`), Gemini CLI (`gemini`), Cursor
//! (`cursor`) or Hermes (`hermes`), or Codex's `notify` payload (`codex`) — mapped by `tool` and each harness's file
//! and delivered to the plugin (`deliver`); `event` is the same for our own replay lines
//! (`self-evolve event`). It never blocks the agent: it prints only what its harness reads as
//! "go on" (`Harness::stdout`), always exits 0, and answers within `hook.budgetMs`. Uses `live/`
//! (the plugin and its reviewers), `events/` and the home.

pub mod claude;
pub mod codex;
pub mod codex_hooks;
pub mod cursor;
pub mod deliver;
pub mod event;
pub mod gemini;
pub mod hermes;
pub mod tool;
pub mod transcript;

use crate::component::Source;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Whose hook event is on stdin (`--harness`): each sends its own payload and reads its own stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    Claude,
    Codex,
    Gemini,
    Cursor,
    Hermes,
}

impl std::str::FromStr for Harness {
    type Err = anyhow::Error;

    fn from_str(name: &str) -> anyhow::Result<Harness> {
        match name {
            "claude" => Ok(Harness::Claude),
            "codex" => Ok(Harness::Codex),
            "gemini" => Ok(Harness::Gemini),
            "cursor" => Ok(Harness::Cursor),
            "hermes" => Ok(Harness::Hermes),
            other => anyhow::bail!(
                "`hook --harness {other}`: this build maps the hook events of claude, codex, gemini, cursor and hermes only; \
                 event ignored"
            ),
        }
    }
}

impl Harness {
    /// What the hook prints, with `message` when `hook.systemMessage` asks for one. Claude Code
    /// and Codex take nothing or a JSON object (plain text on a prompt hook enters the model's
    /// context; Codex's `Stop` refuses it, and a JSON key it does not know); Gemini CLI and Cursor
    /// read stdout as one JSON object (Gemini parses stderr when stdout is empty), and Cursor has
    /// no field for a message to the user on the events we take.
    pub fn stdout(self, message: Option<&str>) -> Option<String> {
        let message = message.map(|m| serde_json::json!({"systemMessage": m}).to_string());
        match self {
            Harness::Claude | Harness::Codex => message,
            // Hermes reads stdout on none of the events we take (plain text only logs a warning).
            Harness::Hermes => None,
            Harness::Gemini => Some(message.unwrap_or_else(|| "{}".into())),
            Harness::Cursor => Some("{}".into()),
        }
    }

    /// Whether an error may go to stderr: Gemini CLI shows a hook's stderr to the user, Cursor
    /// logs it; the log keeps every error anyway.
    fn speaks_on_stderr(self) -> bool {
        matches!(self, Harness::Claude | Harness::Codex)
    }

    fn handle(self, home: &Path, wasm: &Source, bytes: &[u8], busy: &Mutex<()>) -> anyhow::Result<deliver::Outcome> {
        match self {
            Harness::Claude => claude::handle(home, wasm, bytes, busy),
            Harness::Codex => codex_hooks::handle(home, wasm, bytes, busy),
            Harness::Gemini => gemini::handle(home, wasm, bytes, busy),
            Harness::Cursor => cursor::handle(home, wasm, bytes, busy),
            Harness::Hermes => hermes::handle(home, wasm, bytes, busy),
        }
    }
}

/// Prints the hook's answer once: from `main` when it finishes, or from the watchdog when the
/// budget runs out first (whichever takes the lock first; the other prints nothing).
struct Answer {
    printed: Mutex<bool>,
}

impl Answer {
    fn print(&self, text: Option<&str>) {
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        if !*printed && let Some(text) = text {
            crate::say!("{text}");
        }
        *printed = true;
    }
}

/// A hook event larger than this is dropped unread (tool responses can be large; the plugin never
/// needs more than `MAX_EVENT_TEXT_BYTES` of one, and parsing costs many times the input).
pub const MAX_INPUT_BYTES: u64 = 8 << 20;

/// The budget before `host.json` says otherwise.
const DEFAULT_BUDGET_MS: u64 = 10_000;

/// Exits the process, with status 0, once `budget_ms` (which may change) has passed since it
/// started, never during a plugin call (`busy`). It is started before anything is read, so
/// whatever sits at a path (a FIFO, a device) the hook answers in time; its only I/O on the way
/// out is one non-blocking append to the log, and the harness's answer when it needs one.
fn start_watchdog(
    home: &Path,
    busy: Arc<Mutex<()>>,
    budget_ms: Arc<std::sync::atomic::AtomicU64>,
    answer: Arc<Answer>,
    fallback: Option<String>,
) {
    let home = home.to_path_buf();
    let started = std::time::Instant::now();
    std::thread::spawn(move || {
        let budget = loop {
            let budget = std::time::Duration::from_millis(budget_ms.load(std::sync::atomic::Ordering::Relaxed));
            let Some(left) = budget.checked_sub(started.elapsed()).filter(|d| !d.is_zero()) else { break budget };
            std::thread::sleep(left.min(std::time::Duration::from_millis(50)));
        };
        let _guard = busy.lock().unwrap_or_else(|e| e.into_inner());
        crate::live::append_log(
            &home,
            &crate::live::entry(
                "hook",
                "warn",
                &format!("the hook ran past its {} ms budget and stopped", budget.as_millis()),
            ),
        );
        answer.print(fallback.as_deref());
        std::process::exit(0);
    });
}

/// `self-evolve hook`: reads stdin (or, for Codex's `notify`, the payload argument), handles it
/// as the harness `name` sends it within the budget, prints what that harness expects, exits 0
/// whatever happens. A harness the CLI admits but this build has no mapping for has its event
/// read, logged as ignored, and answered with nothing.
pub fn main(home: &Path, wasm: &Source, codex_payload: Option<String>, name: &str) {
    let harness = name.parse::<Harness>();
    let busy = Arc::new(Mutex::new(()));
    let budget_ms = Arc::new(std::sync::atomic::AtomicU64::new(DEFAULT_BUDGET_MS));
    let answer = Arc::new(Answer { printed: Mutex::new(false) });
    // Codex reads nothing back from its `notify` program.
    let quiet = codex_payload.is_some();
    let stdout = |message: Option<&str>| match &harness {
        Ok(harness) if !quiet => harness.stdout(message),
        _ => None,
    };
    let fallback = stdout(None);
    start_watchdog(home, busy.clone(), budget_ms.clone(), answer.clone(), fallback.clone());
    if let Ok(file) = crate::home::host_file::HostFile::load(home)
        && !file.hook.budget.is_zero()
    {
        let ms = u64::try_from(file.hook.budget.as_millis()).unwrap_or(u64::MAX);
        budget_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }
    let outcome = match codex_payload {
        Some(payload) => codex::handle(home, wasm, payload.as_bytes(), &busy),
        None => {
            let mut bytes = Vec::new();
            match std::io::stdin().lock().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes) {
                Err(err) => Err(anyhow::anyhow!("reading the hook event: {err}")),
                Ok(_) if bytes.len() as u64 > MAX_INPUT_BYTES => {
                    Err(anyhow::anyhow!("the hook event is over {MAX_INPUT_BYTES} bytes; ignored"))
                }
                Ok(_) => match &harness {
                    Ok(harness) => harness.handle(home, wasm, &bytes, &busy),
                    Err(err) => Err(anyhow::anyhow!("{err:#}")),
                },
            }
        }
    };
    let printed = match outcome {
        Ok(outcome) => stdout(outcome.message.as_deref()),
        Err(err) => {
            // An error may quote what the event carried: shown as the log keeps it.
            let message = crate::live::logged::text(&format!("{err:#}"));
            crate::live::log(home, "hook", "error", &message);
            if harness.as_ref().is_ok_and(|h| h.speaks_on_stderr()) {
                eprintln!("self-evolve hook: {message}");
            }
            fallback
        }
    };
    answer.print(printed.as_deref());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_harness_reads_its_own_answer() {
        let started = Some("self-evolve: background skill review started (rv-1)");
        for (harness, quiet, with_message) in [
            (Harness::Claude, None, Some(r#"{"systemMessage":"self-evolve: background skill review started (rv-1)"}"#)),
            (Harness::Codex, None, Some(r#"{"systemMessage":"self-evolve: background skill review started (rv-1)"}"#)),
            (
                Harness::Gemini,
                Some("{}"),
                Some(r#"{"systemMessage":"self-evolve: background skill review started (rv-1)"}"#),
            ),
            (Harness::Cursor, Some("{}"), Some("{}")),
        ] {
            assert_eq!(harness.stdout(None).as_deref(), quiet, "{harness:?}");
            assert_eq!(harness.stdout(started).as_deref(), with_message, "{harness:?}");
        }
        for name in ["claude", "codex", "gemini", "cursor", "hermes"] {
            assert!(name.parse::<Harness>().is_ok());
        }
        let unmapped = format!("{:#}", "goose".parse::<Harness>().unwrap_err());
        assert!(unmapped.contains("goose") && unmapped.contains("event ignored"), "{unmapped}");
        assert_eq!(Harness::Hermes.stdout(None), None);
    }
}
