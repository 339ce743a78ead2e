//! Session state in the state root, so that a process per event (hooks, `self-evolve event`,
//! a server per agent) decides exactly what one long-lived process decides: per session the
//! review counters, cooldown, budget and in-flight review, the read registry and the loads the
//! evidence counts follow, in `sessions/<key>.json`; one marker per in-flight review in
//! `sessions/in-flight/` (how `activation-end` and `tick` find the session without reading
//! every file); and the gate's breaker in `sessions/gate-breaker.json`.
//!
//! Every update is read-modify-write under the session's lock (`state_file::lock`), so events
//! of one session in several processes merge instead of overwriting each other. A long-lived
//! process may hold a session in memory instead (`session_journal`); whoever changes the session
//! from disk takes it from that holder first (`load_for_update`).

use crate::host::{FsError, Host, Level, Root};
use crate::schedule::gate::{self, Breaker};
use crate::schedule::session_journal::{self, Journal};
pub use crate::schedule::session_store::{
    DIR, MAX_FILE_BYTES, Stored, bound_reads, folder, key, markers_in_step, write_next,
};
use crate::schedule::session_store::{IN_FLIGHT_DIR, VERSION, generation_path, in_flight_path};
use crate::state_file;
use serde::{Deserialize, Serialize};

const BREAKER_PATH: &str = "sessions/gate-breaker.json";
/// Session files untouched this long are removed (at most one sweep a day, from `tick`).
pub const KEEP_MS: u64 = 7 * 24 * 60 * 60_000;
const SWEEP_MARK: &str = "sessions/.swept";
const DAY_MS: u64 = 24 * 60 * 60_000;
const HOUR_MS: u64 = 60 * 60_000;

thread_local! {
    /// When this process last looked at the sweep's mark.
    static LAST_SWEEP_LOOK: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}
/// The session's generations on disk, newest first, and its journals (`session_journal`).
fn listing(host: &impl Host, session: &str) -> (Vec<u64>, Vec<Journal>) {
    let Ok(entries) = host.list_dir(&Root::State, &folder(session)) else { return (Vec::new(), Vec::new()) };
    let mut found: Vec<u64> = entries
        .iter()
        .filter_map(|(name, _)| name.strip_suffix(".json"))
        .filter(|stem| stem.len() == 16)
        .filter_map(|stem| u64::from_str_radix(stem, 16).ok())
        .collect();
    found.sort_unstable_by(|a, b| b.cmp(a));
    let journals = entries
        .iter()
        .filter(|(_, kind)| *kind == crate::host::EntryKind::File)
        .filter_map(|(name, _)| Journal::parse(name))
        .collect();
    (found, journals)
}

/// Whether session state is kept on disk (the host mapped a state root).
pub fn persisted(host: &impl Host) -> bool {
    host.has_root(&Root::State)
}

/// The session's lock name for `state_file::lock`.
pub fn lock_name(session: &str) -> String {
    format!("session-{}", key(session))
}

/// The session's stored state; a fresh one when it has none. Each save is a new file (its
/// generation), written whole before the one before it is removed: a reader, or the next process
/// after a crash mid-write, takes the newest generation that parses. (Replacing one file by
/// rename, or rewriting it, costs ten times as much on ext4, which flushes data on both.)
pub fn load(host: &impl Host, session: &str) -> Stored {
    let (generation, mut stored, journals) = load_generation(host, session);
    stored.generation = generation;
    // A session another process holds: its journal says what changed since (read-only here).
    session_journal::fold(host, session, generation, &journals, &mut stored);
    stored
}

/// `load` for a process about to change the session, under its lock: a session another
/// process holds is taken from it first (`session_journal::take_over`), so the state returned is
/// the whole truth and what is saved next continues it. `Err(conflict)` while the holder is in an
/// event past the lock's wait.
pub fn load_for_update(host: &impl Host, session: &str) -> Result<Stored, crate::errors::ToolError> {
    // A journal moved between the listing and its taking (a holder between events, or one
    // releasing it into a generation): the session is listed again.
    for _ in 0..MAX_RELISTS {
        let (generation, mut stored, journals) = load_generation(host, session);
        stored.generation = generation;
        if crate::schedule::session_takeover::take_over(host, session, &mut stored, journals)? {
            return Ok(stored);
        }
    }
    Err(state_file::conflict(&format!("session {}", key(session))))
}

/// Listings of a session before a taker that keeps missing its holder's journal gives up.
const MAX_RELISTS: u32 = 64;

fn load_generation(host: &impl Host, session: &str) -> (u64, Stored, Vec<Journal>) {
    let fresh = || Stored { v: VERSION, session: session.to_string(), ..Stored::default() };
    // A generation can vanish between listing and reading it (a save removed it, so a newer
    // one exists): then the folder is listed once more.
    let mut journals = Vec::new();
    for _ in 0..2 {
        let (found, listed) = listing(host, session);
        journals = listed;
        let mut vanished = false;
        for generation in &found {
            match host.read(&Root::State, &generation_path(session, *generation)) {
                Ok(bytes) => match parse(&bytes, session) {
                    Some(stored) => return (*generation, stored, journals),
                    // Being written, or torn by a crash: the one before it is whole.
                    None => continue,
                },
                Err(FsError::NotFound) => {
                    vanished = true;
                    break;
                }
                Err(_) => continue,
            }
        }
        if !vanished {
            if !found.is_empty() {
                host.log(
                    Level::Warn,
                    &format!(
                        "no generation of session `{}` is a version-{VERSION} file of it; starting it over",
                        key(session)
                    ),
                );
            }
            return (found.first().copied().unwrap_or(0), fresh(), journals);
        }
    }
    (0, fresh(), journals)
}

/// One generation's bytes as this session's state, when they are whole and of this version.
fn parse(bytes: &[u8], session: &str) -> Option<Stored> {
    if bytes.len() > MAX_FILE_BYTES {
        return None;
    }
    serde_json::from_slice::<Stored>(bytes).ok().filter(|s| s.v == VERSION && s.session == session)
}

/// `save` when `stored` differs from what was `loaded` (a call that changed nothing writes
/// nothing); callers hold the session's lock.
pub fn save_changed(host: &impl Host, loaded: &Stored, stored: &Stored) {
    if stored != loaded {
        let before = loaded.review.in_flight.as_ref().map(|f| f.id.as_str());
        save(host, before, stored);
    }
}

/// Writes the session's state as its next generation (callers hold the session's lock), removes
/// the older ones, and keeps the in-flight markers in step with it: a review that started gets
/// its marker, one that ended loses it.
pub fn save(host: &impl Host, before: Option<&str>, stored: &Stored) {
    let mut stored = stored.clone();
    stored.updated_ms = host.now_ms();
    markers_in_step(host, before, &stored, || {
        write_next(host, &stored);
    });
}

/// The session a review in flight belongs to, from its marker.
pub fn session_of(host: &impl Host, activation: &str) -> Option<String> {
    let bytes = host.read(&Root::State, &in_flight_path(activation)).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    (value["activation"] == activation).then(|| value["session"].as_str().map(str::to_string)).flatten()
}

/// Every review in flight, as (session, activation), from the markers.
pub fn in_flight(host: &impl Host) -> Vec<(String, String)> {
    let Ok(entries) = host.list_dir(&Root::State, IN_FLIGHT_DIR) else { return Vec::new() };
    let mut out = Vec::new();
    for (name, _) in entries {
        if state_file::is_temp(&name) {
            continue;
        }
        let marker = host
            .read(&Root::State, &format!("{IN_FLIGHT_DIR}/{name}"))
            .ok()
            .filter(|b| b.len() <= 4096)
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
        if let Some(m) = marker
            && let (Some(session), Some(activation)) = (m["session"].as_str(), m["activation"].as_str())
        {
            out.push((session.to_string(), activation.to_string()));
        }
    }
    out
}

/// Removes a marker whose session no longer has that review in flight (a process died between
/// the two writes).
pub fn forget_stale_marker(host: &impl Host, activation: &str) {
    crate::schedule::session_store::remove_marker(host, activation);
}

/// The gate's breaker as every process sees it.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoredBreaker {
    pub consecutive_failures: u32,
    /// When it opened; it stays open for `BREAKER_OPEN_MS`.
    pub opened_ms: Option<u64>,
}

/// How long an open breaker stays open. The seed opens it "for the process"; a process per event
/// has none, so it is open for this long, then the next due review asks the gate again (and one
/// more failure opens it again).
pub const BREAKER_OPEN_MS: u64 = 30 * 60_000;

fn load_breaker(host: &impl Host, memory: &StoredBreaker) -> StoredBreaker {
    if !persisted(host) {
        return memory.clone();
    }
    host.read(&Root::State, BREAKER_PATH)
        .ok()
        .filter(|b| b.len() <= 4096)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The breaker a gate call starts from: the shared one (or this process's without a state root).
pub fn breaker_before(host: &impl Host, memory: &StoredBreaker, now: u64) -> Breaker {
    let stored = load_breaker(host, memory);
    match stored.opened_ms {
        Some(opened) if now < opened.saturating_add(BREAKER_OPEN_MS) => {
            Breaker { consecutive_failures: stored.consecutive_failures, open: true }
        }
        // Half open: one more failure opens it again.
        Some(_) => Breaker { consecutive_failures: gate::BREAKER_THRESHOLD.saturating_sub(1), open: false },
        None => Breaker { consecutive_failures: stored.consecutive_failures, open: false },
    }
}

/// Merges what one gate call did (a success resets, a failure counts) into the shared breaker,
/// under its lock, so calls in several processes add up instead of overwriting each other.
pub fn breaker_after(host: &impl Host, memory: &mut StoredBreaker, before: &Breaker, after: &Breaker, now: u64) {
    // An open breaker makes no call: nothing to count. Otherwise the call either answered (the
    // count went to zero) or failed (it went up).
    if before.open {
        return;
    }
    let succeeded = after.consecutive_failures == 0;
    let apply = |stored: &mut StoredBreaker| {
        if succeeded {
            *stored = StoredBreaker::default();
            return;
        }
        {
            let expired = stored.opened_ms.is_some_and(|t| now >= t.saturating_add(BREAKER_OPEN_MS));
            if expired {
                stored.opened_ms = None;
                stored.consecutive_failures = gate::BREAKER_THRESHOLD.saturating_sub(1);
            }
            stored.consecutive_failures = stored.consecutive_failures.saturating_add(1);
            if stored.consecutive_failures >= gate::BREAKER_THRESHOLD && stored.opened_ms.is_none() {
                stored.opened_ms = Some(now);
            }
        }
    };
    if persisted(host) && succeeded && load_breaker(host, memory) == StoredBreaker::default() {
        // Already closed and at zero: no write (the common case costs one read).
        return;
    }
    if !persisted(host) {
        apply(memory);
        return;
    }
    let Some(lock) = state_file::lock(host, "gate-breaker").ok() else {
        host.log(Level::Warn, "the gate's breaker is busy in another process; this call's outcome is not counted");
        return;
    };
    let mut stored = load_breaker(host, memory);
    apply(&mut stored);
    let bytes = serde_json::to_vec(&stored).unwrap_or_default();
    if let Err(err) = state_file::write_atomic(host, &Root::State, BREAKER_PATH, &bytes) {
        host.log(Level::Warn, &format!("could not save the gate's breaker: {err:?}"));
    }
    lock.release(host);
}

/// Removes session files untouched for `KEEP_MS` (with no review in flight), at most once a day.
/// Forgets this thread's last look at the sweep's mark (tests on one thread share it).
#[cfg(test)]
pub fn forget_last_sweep_look() {
    LAST_SWEEP_LOOK.with(|last| last.set(None));
}

pub fn sweep(host: &impl Host) {
    let now = host.now_ms();
    // A long-lived process looks at the day's mark at most once an hour; a look "in the future"
    // (the clock stepped back) does not count, or the sweep would wait for the clock to pass it.
    if LAST_SWEEP_LOOK.with(|last| last.get().is_some_and(|t| t <= now && now - t < HOUR_MS)) {
        return;
    }
    LAST_SWEEP_LOOK.with(|last| last.set(Some(now)));
    if host.stat(&Root::State, SWEEP_MARK).is_ok_and(|s| now.saturating_sub(s.modified_ms) < DAY_MS) {
        return;
    }
    if !host.has_root(&Root::State) {
        return;
    }
    let _ = state_file::write_atomic(host, &Root::State, SWEEP_MARK, b"");
    let Ok(entries) = host.list_dir(&Root::State, DIR) else { return };
    let mut removed = 0;
    for (name, kind) in entries {
        // Session folders are 24 hex digits; `in-flight/`, the breaker and the mark are not.
        if kind != crate::host::EntryKind::Dir || name.len() != 24 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let folder = format!("{DIR}/{name}");
        let Ok(files) = host.list_dir(&Root::State, &folder) else { continue };
        let paths: Vec<String> = files.iter().map(|(f, _)| format!("{folder}/{f}")).collect();
        let newest =
            host.stat_many(&Root::State, &paths).into_iter().filter_map(Result::ok).map(|s| s.modified_ms).max();
        if newest.is_some_and(|m| now.saturating_sub(m) < KEEP_MS) {
            continue;
        }
        let Some(session) = paths.iter().rev().find_map(|p| {
            let bytes = host.read(&Root::State, p).ok()?;
            serde_json::from_slice::<Stored>(&bytes).ok()
        }) else {
            continue;
        };
        if session.review.in_flight.is_some() || key(&session.session) != name {
            continue;
        }
        // Under the session's lock, and only if no event wrote a generation meanwhile.
        let Some(lock) = state_file::try_lock(host, &lock_name(&session.session)) else { continue };
        let names = |list: &[(String, crate::host::EntryKind)]| list.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        let unchanged = host.list_dir(&Root::State, &folder).is_ok_and(|now| names(&now) == names(&files));
        if unchanged {
            for ((_, kind), path) in files.iter().zip(&paths) {
                // A folder in a session's folder is a taken journal's tombstone (`session_journal`).
                let _ = match kind {
                    crate::host::EntryKind::Dir => host.remove_dir(&Root::State, path),
                    _ => host.remove_file(&Root::State, path),
                };
            }
            if host.remove_dir(&Root::State, &folder).is_ok() {
                removed += 1;
            }
        }
        lock.release_keeping_folder(host);
    }
    if removed > 0 {
        host.log(Level::Info, &format!("removed {removed} session state file(s) untouched for 7 days"));
    }
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
