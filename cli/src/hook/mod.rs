//! `self-evolve hook`, a front door: one agent event in a process of its own — a Claude Code hook
//! event on stdin (`claude`) or Codex's `notify` payload (`codex`) — delivered to the plugin
//! (`deliver`); `event` is the same for our own replay lines (`self-evolve event`). It never
//! blocks the agent: it prints nothing unless configured, always exits 0, and answers within
//! `hook.budgetMs`. Uses `live/` (the plugin and its reviewers), `events/` and the home.

pub mod claude;
pub mod codex;
pub mod deliver;
pub mod event;

use crate::component::Source;
use std::io::Read;
use std::path::Path;

/// A hook event larger than this is dropped unread (tool responses can be large; the plugin never
/// needs more than `MAX_EVENT_TEXT_BYTES` of one, and parsing costs many times the input).
pub const MAX_INPUT_BYTES: u64 = 8 << 20;

/// The budget before `host.json` says otherwise.
const DEFAULT_BUDGET_MS: u64 = 10_000;

/// Exits the process, with status 0, once `budget_ms` (which may change) has passed since it
/// started, never during a plugin call (`busy`). It is started before anything is read, so
/// whatever sits at a path (a FIFO, a device) the hook answers in time; its only I/O on the way
/// out is one non-blocking append to the log.
fn start_watchdog(
    home: &Path,
    busy: std::sync::Arc<std::sync::Mutex<()>>,
    budget_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
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
        std::process::exit(0);
    });
}

/// `self-evolve hook`: reads stdin (or, for Codex's `notify`, the payload argument), handles it
/// within the budget, exits 0 whatever happens.
pub fn main(home: &Path, wasm: &Source, codex_payload: Option<String>) {
    let busy = std::sync::Arc::new(std::sync::Mutex::new(()));
    let budget_ms = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(DEFAULT_BUDGET_MS));
    start_watchdog(home, busy.clone(), budget_ms.clone());
    if let Ok(file) = crate::home::host_file::HostFile::load(home)
        && !file.hook.budget.is_zero()
    {
        let ms = u64::try_from(file.hook.budget.as_millis()).unwrap_or(u64::MAX);
        budget_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }
    let codex = codex_payload.is_some();
    let outcome = match codex_payload {
        Some(payload) => codex::handle(home, wasm, payload.as_bytes(), &busy),
        None => {
            let mut bytes = Vec::new();
            match std::io::stdin().lock().take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes) {
                Err(err) => Err(anyhow::anyhow!("reading the hook event: {err}")),
                Ok(_) if bytes.len() as u64 > MAX_INPUT_BYTES => {
                    Err(anyhow::anyhow!("the hook event is over {MAX_INPUT_BYTES} bytes; ignored"))
                }
                Ok(_) => claude::handle(home, wasm, &bytes, &busy),
            }
        }
    };
    match outcome {
        // Codex reads nothing back from its `notify` program.
        Ok(outcome) if !codex && !outcome.stdout.is_empty() => crate::say!("{}", outcome.stdout),
        Ok(_) => {}
        Err(err) => {
            // An error may quote what the event carried: shown as the log keeps it.
            let message = crate::live::logged::text(&format!("{err:#}"));
            crate::live::log(home, "hook", "error", &message);
            eprintln!("self-evolve hook: {message}");
        }
    }
}
