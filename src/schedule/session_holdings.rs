//! The sessions one process holds in memory (`session_journal`): at most `MAX_HELD`, the one
//! unused longest handed back first; the ones lost to another process, kept on disk per event from
//! then on; and, for a batch host, the flushes every `FLUSH_EVERY` events and the hand-back at its
//! end.

use crate::host::{Host, Level};
use crate::schedule::session_journal::{Flushed, Held};
use crate::schedule::session_store as store;
use crate::schedule::sessions;
use std::collections::{BTreeMap, BTreeSet};

/// Sessions held at once; past it the one unused longest is handed back to disk.
pub const MAX_HELD: usize = 64;
/// Sessions remembered as lost to another process.
const MAX_SHARED: usize = 4_096;
/// A batch host's events between flushes of every session it holds: what a crash can lose, and
/// how soon a process that asked for a session gets it (a replay runs this many in a few ms).
/// Each flush renews every journal, so a live batch is never judged stale while it runs.
pub const FLUSH_EVERY: u32 = 1_024;

/// The sessions this process holds (when its host offers `session_journal::SERVICE`), and the
/// ones it lost to another process: those it keeps on disk per event from then on, since two
/// processes taking one session from each other at every event would each pay more than a
/// process per event.
#[derive(Debug, Default)]
pub struct Holdings {
    pub owner: bool,
    /// The host runs a batch (`session_journal::BATCH_SERVICE`).
    pub batch: bool,
    held: BTreeMap<String, (Held, u64)>,
    shared: BTreeSet<String>,
    uses: u64,
    /// Batch: events since the last flush.
    events: u32,
    /// Batch: the in-flight markers as last listed, with `session_store::markers_changed` then,
    /// and the ticks since.
    in_flight: Option<(u64, Vec<(String, String)>)>,
    ticks: u32,
}

impl Holdings {
    pub fn new(owner: bool, batch: bool) -> Holdings {
        Holdings { owner: owner || batch, batch, ..Holdings::default() }
    }

    pub fn get_mut(&mut self, session: &str) -> Option<&mut Held> {
        self.uses += 1;
        let uses = self.uses;
        self.held.get_mut(session).map(|(held, used)| {
            *used = uses;
            held
        })
    }

    pub fn holds(&self, session: &str) -> bool {
        self.held.contains_key(session)
    }

    /// Whether this process should lease `session` now.
    pub fn may_hold(&self, session: &str) -> bool {
        self.owner && !self.shared.contains(session)
    }

    /// Holds `held` from now on, handing back the session unused longest when over `MAX_HELD`.
    pub fn insert(&mut self, host: &impl Host, session: &str, held: Held) {
        while self.held.len() >= MAX_HELD {
            let Some(oldest) = self.held.iter().min_by_key(|(_, (_, used))| *used).map(|(s, _)| s.clone()) else {
                break;
            };
            if let Some((held, _)) = self.held.remove(&oldest) {
                held.release(host);
            }
        }
        self.uses += 1;
        self.held.insert(session.to_string(), (held, self.uses));
    }

    /// `session` was taken by another process (or its journal failed): nothing of it is kept.
    pub fn lose(&mut self, host: &impl Host, session: &str) {
        self.held.remove(session);
        if self.shared.len() >= MAX_SHARED {
            self.shared.clear();
        }
        self.shared.insert(session.to_string());
        host.log(
            Level::Debug,
            &format!("session `{}` is served by another process too: kept on disk per event here", store::key(session)),
        );
    }

    /// After each event of a batch: every `FLUSH_EVERY`, flushes every session held.
    pub fn after_event(&mut self, host: &impl Host) {
        if !self.batch {
            return;
        }
        self.events += 1;
        if self.events >= FLUSH_EVERY {
            self.flush(host);
        }
    }

    /// Writes every session's state kept ahead of its journal, renews the rest, and hands back
    /// the ones another process asked for.
    pub fn flush(&mut self, host: &impl Host) {
        self.events = 0;
        let sessions: Vec<String> = self.held.keys().cloned().collect();
        for session in sessions {
            let Some((held, _)) = self.held.get_mut(&session) else { continue };
            match held.flush(host) {
                Flushed::Kept => {}
                Flushed::HandedBack | Flushed::Lost => self.lose(host, &session),
            }
        }
    }

    /// Every review in flight, as `session_store::in_flight` lists them from the markers. A batch
    /// lists them again only when this instance wrote or removed one, or every `FLUSH_EVERY`
    /// ticks (another process's markers: its own ticks time its reviews out meanwhile); a
    /// listing per tick was most of a replayed event's system calls.
    pub fn in_flight(&mut self, host: &impl Host) -> Vec<(String, String)> {
        if !self.batch {
            return sessions::in_flight(host);
        }
        let changed = store::markers_changed();
        self.ticks += 1;
        match &self.in_flight {
            // Another process's marker in a listing up to a flush old is read again: a review
            // that ended there must not take that process's session from it (`in_session`).
            Some((at, listed)) if *at == changed && self.ticks < FLUSH_EVERY => listed
                .iter()
                .filter(|(session, activation)| self.holds(session) || sessions::session_of(host, activation).is_some())
                .cloned()
                .collect(),
            _ => {
                let listed = sessions::in_flight(host);
                self.in_flight = Some((changed, listed.clone()));
                self.ticks = 0;
                listed
            }
        }
    }

    /// Hands every session back to disk (`sessions.hand-back`: the host is about to let this
    /// instance go): each is written as its next generation and its journal removed.
    pub fn hand_back(&mut self, host: &impl Host) {
        self.events = 0;
        for (_, (held, _)) in std::mem::take(&mut self.held) {
            held.release(host);
        }
    }
}
