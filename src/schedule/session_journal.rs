//! A session held in memory by a long-lived process (an MCP server, an embedding harness, a
//! replay: a host that offers the `session-owner` service), made durable event by event with one
//! append to its journal, where a process per event locks, reads and writes a whole generation.
//!
//! Files beside the session's generations (`sessions.rs`), one journal per holder:
//! - `journal.<base>.<id>.jsonl`: idle between events. Its first line names the generation it
//!   continues (`base`); each further line is what one event changed (whole parts).
//! - `….busy`: the same file while its holder runs an event. The holder renames it there at the
//!   event's start (its claim) and back at the end; while busy, it appends.
//! - `….taken`: the same file while another process folds it into the next generation.
//!
//! Hand-over needs no word from the holder (`session_takeover`). Another process that needs the session takes the
//! session's lock and renames the idle journal to `.taken`: a rename is atomic, so either the
//! holder's next claim fails (it then knows, before it does anything, that the session is no
//! longer its own, and reads it from disk like any other process) or the holder claimed first,
//! and the taker waits for the event to end. The taker folds the records into the next
//! generation, then removes the journal: nothing is lost or counted twice. A busy journal
//! unrenewed past the lock's stale age, on the filesystem's time, is a holder that died
//! mid-event: it is taken, loudly, and a folder left in its place, so a holder that was only
//! stalled fails its next append there, says so, and keeps nothing (as a lock's holder does,
//! `state_file`).

use crate::host::{FsError, Host, Level, Root, WriteMode};
use crate::library::curation::evidence::Turns;
use crate::schedule::session_state::SessionState;
use crate::schedule::session_store::{self as sessions, Stored};
use crate::state_file;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The host service that says this host is one process serving its sessions for a long time.
pub const SERVICE: &str = "session-owner";
/// The host service that says this host runs events back to back for its whole run (a replay)
/// and calls `sessions.hand-back` at its end. Its sessions stay busy between events: what an
/// event changed is kept in memory and written every `session_holdings::FLUSH_EVERY` events (a
/// record, or an empty line that renews the journal), when a review starts or ends (its in-flight
/// marker follows what is on disk), and at the hand-back. Another process that needs one asks for
/// it (`want`) and gets it at the next flush, whole.
pub const BATCH_SERVICE: &str = "session-batch";
/// A file in a session's folder: another process waits for the session (`take`).
const WANT: &str = "want";
/// The end of a batch holder's journal stem: a taker that finds it busy asks for it (`want`).
pub(super) const BATCH_MARK: &str = "-batch";
const PREFIX: &str = "journal.";
const IDLE: &str = ".jsonl";
const BUSY: &str = ".busy";
const TAKEN: &str = ".taken";
const VERSION: u32 = 1;
/// A journal past either is folded into a generation by its holder (a taker reads it whole).
const COMPACT_RECORDS: u32 = 256;
const COMPACT_BYTES: u64 = 256 << 10;
/// Attempts at a busy journal before the taker judges it, for clocks that do not move.
pub(super) const MAX_WAITS: u32 = 2_000;
/// The same for a batch holder asked for the session: it answers at its next flush, up to
/// `FLUSH_EVERY` events away, so a taker on the wall clock waits out the lock's whole wait (2,000
/// attempts take a few ms); one whose clock stands still gives up after these.
pub(super) const MAX_WAITS_BATCH: u32 = 50_000;

/// The first line of a journal.
#[derive(Serialize, Deserialize)]
struct Header {
    journal: u32,
    base: u64,
    session: String,
}

/// What one event changed: each part present replaces the one before it whole, so records fold
/// in order and a record read twice changes nothing more.
#[derive(Default, Serialize, Deserialize)]
#[serde(default)]
struct Record {
    #[serde(skip_serializing_if = "Option::is_none")]
    review: Option<SessionState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reads: Option<BTreeMap<String, BTreeSet<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    evidence: Option<Turns>,
    t: u64,
}

/// Which state a journal file is in, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Idle,
    Busy,
    Taken,
}

/// A journal in a session's folder: its stem (`journal.<base>.<id>`) and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Journal {
    pub stem: String,
    pub state: State,
}

impl Journal {
    /// The journal a folder entry is, when it is one.
    pub fn parse(name: &str) -> Option<Journal> {
        if !name.starts_with(PREFIX) {
            return None;
        }
        [(IDLE, State::Idle), (BUSY, State::Busy), (TAKEN, State::Taken)]
            .into_iter()
            .find_map(|(suffix, state)| name.strip_suffix(suffix).map(|stem| Journal { stem: stem.to_string(), state }))
    }

    pub(super) fn path(&self, session: &str, state: State) -> String {
        path(session, &self.stem, state)
    }
}

fn path(session: &str, stem: &str, state: State) -> String {
    in_folder(&sessions::folder(session), stem, state)
}

/// The ask for the session whose folder is `folder` (`WANT`).
pub(super) fn want_path(folder: &str) -> String {
    format!("{folder}/{WANT}")
}

fn in_folder(folder: &str, stem: &str, state: State) -> String {
    let suffix = match state {
        State::Idle => IDLE,
        State::Busy => BUSY,
        State::Taken => TAKEN,
    };
    format!("{folder}/{stem}{suffix}")
}

/// A session this process holds: its state (the truth while held) and its journal.
#[derive(Debug)]
pub struct Held {
    /// Held for a batch (`BATCH_SERVICE`): the journal stays busy between events.
    pub batch: bool,
    /// Batch: the state when it is ahead of the journal (not yet written).
    ahead: Option<Stored>,
    stem: String,
    /// The session's folder (`sessions::folder`), named once: it is a hash of the session.
    folder: String,
    base: u64,
    /// The bytes of its header and records (what compaction is judged by; a renewal's empty
    /// lines are not counted).
    size: u64,
    records: u32,
    pub state: Stored,
}

/// Folds into `stored` (generation `base`) the records of every journal in `journals` that
/// continues it. Read-only: for a process that only reads the session (`sessions::load`).
pub fn fold(host: &impl Host, session: &str, base: u64, journals: &[Journal], stored: &mut Stored) {
    for journal in journals {
        if let Ok(bytes) = host.read(&Root::State, &journal.path(session, journal.state)) {
            apply(host, session, base, &bytes, stored);
        }
    }
}

/// The generation a journal's header says it continues.
pub(super) fn base_of(bytes: &[u8]) -> Option<u64> {
    let first = bytes.split(|b| *b == b'\n').next()?;
    serde_json::from_slice::<Header>(first).ok().filter(|h| h.journal == VERSION).map(|h| h.base)
}

/// Applies a journal's records to `stored` when its header continues generation `base`;
/// whether it did. A last line without its newline is an append in progress (or torn): skipped.
pub(super) fn apply(host: &impl Host, session: &str, base: u64, bytes: &[u8], stored: &mut Stored) -> bool {
    let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else { return false };
    let mut lines = bytes[..end].split(|b| *b == b'\n');
    let header = lines.next().and_then(|line| serde_json::from_slice::<Header>(line).ok());
    if !header.is_some_and(|h| h.journal == VERSION && h.base == base && h.session == session) {
        return false;
    }
    // A renewal appends an empty line (`state_file::Lock::journal`).
    for line in lines.filter(|line| !line.is_empty()) {
        match serde_json::from_slice::<Record>(line) {
            Ok(record) => {
                if let Some(review) = record.review {
                    stored.review = review;
                }
                if let Some(reads) = record.reads {
                    stored.reads = reads;
                }
                if let Some(evidence) = record.evidence {
                    stored.evidence = evidence;
                }
                stored.updated_ms = record.t;
            }
            Err(err) => {
                host.log(
                    Level::Warn,
                    &format!(
                        "session `{}`: a journal record does not parse ({err}); the rest is skipped",
                        sessions::key(session)
                    ),
                );
                break;
            }
        }
    }
    true
}

/// Under the session's lock, after `take_over`: starts a journal continuing `stored`, busy (the
/// event that leases the session is running). `None` (logged) when it cannot be written: the
/// session is then kept on disk per event.
pub fn lease(host: &impl Host, session: &str, stored: &Stored, batch: bool) -> Option<Held> {
    let header =
        serde_json::to_vec(&Header { journal: VERSION, base: stored.generation, session: session.to_string() }).ok()?;
    let mut bytes = header;
    bytes.push(b'\n');
    // An ask left from before (its taker gave up, or the batch it asked died) is answered: the
    // session is on disk, and under its lock here. Left, it would make this batch hand the
    // session back at its first flush.
    if batch {
        let _ = host.remove_file(&Root::State, &want_path(&sessions::folder(session)));
    }
    // Unique across processes: the filesystem's time now, and this instance's token.
    let when = state_file::fs_now(host).unwrap_or(0);
    for _ in 0..4 {
        let mark = if batch { BATCH_MARK } else { "" };
        let stem = format!("{PREFIX}{:016x}.{when}-{}{mark}", stored.generation, state_file::token(host));
        match host.write(&Root::State, &path(session, &stem, State::Busy), &bytes, WriteMode::CreateNew) {
            Ok(()) => {
                return Some(Held {
                    batch,
                    ahead: None,
                    stem,
                    folder: sessions::folder(session),
                    base: stored.generation,
                    size: bytes.len() as u64,
                    records: 0,
                    state: stored.clone(),
                });
            }
            Err(FsError::AlreadyExists) => continue,
            Err(err) => {
                host.log(
                    Level::Warn,
                    &format!("session `{}`: could not start its journal: {err}", sessions::key(session)),
                );
                return None;
            }
        }
    }
    None
}

impl Held {
    /// The holder's claim at an event's start: whether the session is still its own (its journal
    /// was not taken meanwhile).
    pub fn claim(&self, host: &impl Host) -> bool {
        host.rename(&Root::State, &self.path(State::Idle), &self.path(State::Busy)).is_ok()
    }

    /// The busy journal, for the renewals of a long event (`state_file::Lock::journal`).
    pub fn busy_path(&self) -> String {
        self.path(State::Busy)
    }

    fn path(&self, state: State) -> String {
        in_folder(&self.folder, &self.stem, state)
    }

    /// At the event's end: appends what it changed (`now`), keeps the in-flight markers in step,
    /// and hands the journal back to idle. `false` (logged) when the session is no longer this
    /// holder's: then this process keeps nothing of it.
    pub fn commit(&mut self, host: &impl Host, now: Stored) -> bool {
        // Taken meanwhile (as stalled): what was appended is in the taker's hands.
        self.write(host, now) && host.rename(&Root::State, &self.busy_path(), &self.path(State::Idle)).is_ok()
    }

    /// The session's state now: what the journal holds, or (batch) what is kept ahead of it.
    pub fn current(&self) -> &Stored {
        self.ahead.as_ref().unwrap_or(&self.state)
    }

    /// Batch, at an event's end: keeps `now` in memory for the next flush. A review that started
    /// or ended is written at once, so its in-flight marker never disagrees with the journal.
    /// `false` (logged) when the session is no longer this holder's.
    pub fn keep(&mut self, host: &impl Host, now: Stored) -> bool {
        fn id(s: &Stored) -> Option<&str> {
            s.review.in_flight.as_ref().map(|f| f.id.as_str())
        }
        if id(self.current()) != id(&now) {
            self.ahead = None;
            return self.write(host, now);
        }
        self.ahead = Some(now);
        true
    }

    /// Batch: writes what is kept ahead of the journal (or renews the journal with an empty line
    /// when nothing is), then hands the journal back when another process asked for the session.
    pub fn flush(&mut self, host: &impl Host) -> Flushed {
        let written = match self.write_ahead(host) {
            Some(written) => written,
            None => self.append(host, b"\n", false),
        };
        if !written {
            return Flushed::Lost;
        }
        let want = want_path(&self.folder);
        if host.stat(&Root::State, &want).is_err() {
            return Flushed::Kept;
        }
        let handed = host.rename(&Root::State, &self.busy_path(), &self.path(State::Idle)).is_ok();
        let _ = host.remove_file(&Root::State, &want);
        if handed { Flushed::HandedBack } else { Flushed::Lost }
    }

    /// Batch: writes the state kept ahead of the journal; `None` when nothing is (or it is what
    /// the journal holds), else whether it was written.
    fn write_ahead(&mut self, host: &impl Host) -> Option<bool> {
        let now = self.ahead.take().filter(|now| !self.same(now))?;
        Some(self.write(host, now))
    }

    fn same(&self, now: &Stored) -> bool {
        let was = &self.state;
        was.review == now.review && was.reads == now.reads && was.evidence == now.evidence
    }

    /// Appends what changed since the journal's last record (keeping the in-flight markers in
    /// step) and compacts the journal when it grew past its bounds; the journal stays busy.
    fn write(&mut self, host: &impl Host, mut now: Stored) -> bool {
        sessions::bound_reads(&mut now);
        let before = self.state.review.in_flight.as_ref().map(|f| f.id.clone());
        let mut appended = true;
        if let Some(line) = self.record(host, &now) {
            sessions::markers_in_step(host, before.as_deref(), &now, || appended = self.append(host, &line, true));
        }
        if !appended {
            return false;
        }
        self.state = now;
        if (self.records >= COMPACT_RECORDS || self.size >= COMPACT_BYTES) && !self.compact(host) {
            // The journal holds every record (or is gone, its generation holding them): idle, for
            // the next process to fold, never busy with no one to end its event.
            let _ = host.rename(&Root::State, &self.busy_path(), &self.path(State::Idle));
            return false;
        }
        true
    }

    /// Appends one record (or, not `record`, a renewal's empty line) to the busy journal.
    fn append(&mut self, host: &impl Host, line: &[u8], record: bool) -> bool {
        let session = self.state.session.clone();
        let busy = self.busy_path();
        match host.write(&Root::State, &busy, line, WriteMode::Append) {
            Ok(()) => {
                if record {
                    self.size += line.len() as u64;
                    self.records += 1;
                }
                true
            }
            // The tombstone a taker leaves where it took a journal as dead (`take`).
            Err(FsError::WrongKind) => {
                host.log(
                    Level::Warn,
                    &format!(
                        "session `{}`: another process took it while this one stalled mid-event; this event's \
                         changes to the session's state were not saved",
                        crate::visible::visible(&session)
                    ),
                );
                false
            }
            Err(err) => {
                host.log(
                    Level::Warn,
                    &format!("session `{}`: could not append to its journal: {err}", sessions::key(&session)),
                );
                // Whatever part of the record landed stops the fold there; the journal is handed
                // back idle, for the next process to fold.
                let _ = host.rename(&Root::State, &busy, &self.path(State::Idle));
                false
            }
        }
    }

    /// The record of what changed since the last one (credentials redacted, as every byte of
    /// session state on disk is); `None` when nothing did, or when it would be too large to read
    /// back (logged; the last record stays in force, as a generation would).
    fn record(&self, host: &impl Host, now: &Stored) -> Option<Vec<u8>> {
        let was = &self.state;
        if self.same(now) {
            return None;
        }
        let record = Record {
            review: (was.review != now.review).then(|| now.review.clone()),
            reads: (was.reads != now.reads).then(|| now.reads.clone()),
            evidence: (was.evidence != now.evidence).then(|| now.evidence.clone()),
            t: host.now_ms(),
        };
        let mut line = crate::library::guards::scan::to_redacted_vec(&record).ok()?;
        if line.len() > sessions::MAX_FILE_BYTES {
            host.log(
                Level::Warn,
                &format!(
                    "session `{}`: a journal record would be {} bytes; not saved",
                    sessions::key(&now.session),
                    line.len()
                ),
            );
            return None;
        }
        line.push(b'\n');
        Some(line)
    }

    /// Folds the journal into the next generation and starts it over from there (busy).
    fn compact(&mut self, host: &impl Host) -> bool {
        let session = self.state.session.clone();
        let mut state = self.state.clone();
        state.generation = self.base;
        let Some(generation) = sessions::write_next(host, &state) else { return false };
        let header = Header { journal: VERSION, base: generation, session: session.clone() };
        let mut bytes = serde_json::to_vec(&header).unwrap_or_default();
        bytes.push(b'\n');
        if host.write(&Root::State, &self.busy_path(), &bytes, WriteMode::Truncate).is_err() {
            // The generation holds everything; a journal with the old header is stale to others.
            let _ = host.remove_file(&Root::State, &self.busy_path());
            return false;
        }
        self.base = generation;
        self.state.generation = generation;
        self.size = bytes.len() as u64;
        self.records = 0;
        true
    }

    /// Hands the session back to disk: folds the journal into a generation and removes it.
    pub fn release(mut self, host: &impl Host) {
        // A batch's journal is busy already; what it keeps ahead of it is appended first, so a
        // failure below leaves the journal whole for the next process to fold.
        if !(self.batch || self.claim(host)) {
            return;
        }
        if self.write_ahead(host) == Some(false) {
            return;
        }
        if self.records > 0 {
            self.state.generation = self.base;
            if sessions::write_next(host, &self.state).is_none() {
                // The journal goes back to idle: the next process that needs the session folds it.
                let _ = host.rename(&Root::State, &self.busy_path(), &self.path(State::Idle));
                return;
            }
        }
        let _ = host.remove_file(&Root::State, &self.busy_path());
        self.records = 0;
        // An ask that came after the last flush is answered: the session is on disk.
        if self.batch {
            let _ = host.remove_file(&Root::State, &want_path(&self.folder));
        }
    }
}

/// What a batch holder's flush left the session as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Still held, its journal up to date.
    Kept,
    /// Handed back to another process that asked for it.
    HandedBack,
    /// No longer this holder's (logged).
    Lost,
}

#[cfg(test)]
#[path = "session_journal_tests.rs"]
mod tests;
