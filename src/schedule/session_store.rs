//! A session's state as its files hold it: the shape (`Stored`), where each session's files live,
//! its generations written whole (`write_next`), and the in-flight markers kept in step with them.
//! Below both ways a session is kept: read-modify-write per event (`sessions`) and a holder's
//! journal (`session_journal`).

use crate::digest::sha256_hex;
use crate::host::{FsError, Host, Level, Root, WriteMode};
use crate::library::curation::evidence::Turns;
use crate::schedule::session_state::SessionState;
use crate::state_file;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

pub const DIR: &str = "sessions";
pub const IN_FLIGHT_DIR: &str = "sessions/in-flight";
/// The shape of a session file; a file of another version starts the session over (logged).
pub const VERSION: u32 = 1;

/// A state file larger than this is not a session file this plugin wrote: it starts over.
/// `save` never writes one (`bounded`), so a session's state is never lost to its own size.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// Skills remembered as read, per agent, and agents per session (a reviewer is one agent each).
/// Past them the rest is forgotten, the safe side: a later patch asks for a view again.
const MAX_READS_PER_AGENT: usize = 512;
const MAX_READ_AGENTS: usize = 64;

/// What one session keeps between events.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stored {
    pub v: u32,
    /// The session id itself (the file name is a hash of it).
    pub session: String,
    pub review: SessionState,
    /// Skills read, by agent (the main agent, a reviewer by its activation id).
    pub reads: BTreeMap<String, BTreeSet<String>>,
    pub evidence: Turns,
    pub updated_ms: u64,
    /// The generation this state was read from (0: none on disk); never written.
    #[serde(skip)]
    pub generation: u64,
}

/// The file name of a session: a hash, so any id the host sends is a safe name.
pub fn key(session: &str) -> String {
    sha256_hex(session.as_bytes())[..24].to_string()
}

/// A session's folder: one file per generation of its state, `<generation as 16 hex>.json`.
pub fn folder(session: &str) -> String {
    format!("{DIR}/{}", key(session))
}

pub fn generation_path(session: &str, generation: u64) -> String {
    format!("{}/{generation:016x}.json", folder(session))
}

pub fn in_flight_path(activation: &str) -> String {
    format!("{IN_FLIGHT_DIR}/{}.json", key(activation))
}

/// The session's state as JSON, every string in it scanned for credentials: the state root is
/// shared and synced, and a session keeps what people and reviewers said (the digest, the last
/// review's outcome). The session id stays as the host sent it: it is the file's key, never a
/// credential the host would send as an id.
pub fn encode(stored: &Stored) -> serde_json::Result<Vec<u8>> {
    let mut value = serde_json::to_value(stored)?;
    let session = value.get("session").cloned();
    crate::library::guards::scan::redact_json(&mut value);
    if let (Some(session), Some(map)) = (session, value.as_object_mut()) {
        map.insert("session".into(), session);
    }
    serde_json::to_vec(&value)
}

thread_local! {
    /// How many times this instance wrote or removed an in-flight marker (`markers_changed`).
    static MARKERS_CHANGED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A count that moves whenever this instance writes or removes an in-flight marker: a batch's
/// `tick` lists the markers again when it moved (`session_holdings::Holdings::in_flight`).
pub fn markers_changed() -> u64 {
    MARKERS_CHANGED.with(std::cell::Cell::get)
}

fn marker_changed() {
    MARKERS_CHANGED.with(|n| n.set(n.get().wrapping_add(1)));
}

/// Removes the in-flight marker of `activation`.
pub fn remove_marker(host: &impl Host, activation: &str) {
    marker_changed();
    let _ = host.remove_file(&Root::State, &in_flight_path(activation));
}

/// Runs `write` (which saves `stored`) with the in-flight markers kept in step with the session's
/// review: a review that started since `before` gets its marker before the state naming it is
/// written, and one that ended loses it after, so `in_flight` never misses a review in flight.
pub fn markers_in_step(host: &impl Host, before: Option<&str>, stored: &Stored, write: impl FnOnce()) {
    let now = stored.review.in_flight.as_ref().map(|f| f.id.as_str());
    if let Some(id) = now
        && before != Some(id)
    {
        marker_changed();
        let marker = serde_json::json!({"session": stored.session, "activation": id}).to_string();
        if let Err(err) = state_file::write_atomic(host, &Root::State, &in_flight_path(id), marker.as_bytes()) {
            host.log(Level::Warn, &format!("could not mark review {id} in flight: {err:?}"));
        }
    }
    write();
    if let Some(id) = before
        && now != Some(id)
    {
        remove_marker(host, id);
    }
}

/// Writes `stored` as the generation after `stored.generation` (callers hold the session: its
/// lock, or its journal) and removes the older one; the generation written, or `None` (logged).
pub fn write_next(host: &impl Host, stored: &Stored) -> Option<u64> {
    let mut stored = stored.clone();
    stored.v = VERSION;
    bound_reads(&mut stored);
    match encode(&stored) {
        // `load` would reject it and start the session over (its review, budget and cooldown
        // lost): the generation before stays in force instead.
        Ok(bytes) if bytes.len() > MAX_FILE_BYTES => {
            host.log(
                Level::Warn,
                &format!(
                    "session state of `{}` would be {} bytes, over the {MAX_FILE_BYTES} a session file may hold; not saved",
                    key(&stored.session),
                    bytes.len()
                ),
            );
            None
        }
        Ok(bytes) => write_generation(host, &stored.session, stored.generation, &bytes),
        Err(err) => {
            host.log(Level::Warn, &format!("could not encode session state: {err}"));
            None
        }
    }
}

/// Keeps the read registry to skill names and within its bounds.
pub fn bound_reads(stored: &mut Stored) {
    for skills in stored.reads.values_mut() {
        skills.retain(|name| crate::library::storage::skillfile::check_name(name).is_ok());
        while skills.len() > MAX_READS_PER_AGENT {
            skills.pop_last();
        }
    }
    stored.reads.retain(|agent, skills| !skills.is_empty() && agent.len() <= 256);
    // The main agent's reads are kept first; reviewers' (one agent each) after it.
    while stored.reads.len() > MAX_READ_AGENTS {
        let drop = stored.reads.keys().rev().find(|a| *a != "main").cloned();
        match drop {
            Some(agent) => stored.reads.remove(&agent),
            None => break,
        };
    }
}

/// Writes generation `loaded + 1` (callers hold the session's lock, so `loaded` is the newest
/// whole one), then removes `loaded` and any number it had to skip.
fn write_generation(host: &impl Host, session: &str, loaded: u64, bytes: &[u8]) -> Option<u64> {
    let mut next = loaded.saturating_add(1);
    let mut skipped = Vec::new();
    // A generation left half-written by a crash holds its number: take the next free one.
    for _ in 0..8 {
        match host.write(&Root::State, &generation_path(session, next), bytes, WriteMode::CreateNew) {
            Ok(()) => {
                for generation in skipped.into_iter().chain((loaded > 0).then_some(loaded)) {
                    let _ = host.remove_file(&Root::State, &generation_path(session, generation));
                }
                return Some(next);
            }
            Err(FsError::AlreadyExists) => {
                skipped.push(next);
                next = next.saturating_add(1);
            }
            Err(err) => {
                let _ = host.remove_file(&Root::State, &generation_path(session, next));
                host.log(Level::Warn, &format!("could not save session state of `{}`: {err:?}", key(session)));
                return None;
            }
        }
    }
    host.log(Level::Warn, &format!("could not save session state of `{}`: no free generation", key(session)));
    None
}
