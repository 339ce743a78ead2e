//! Evidence that a skill helps: what followed the turns that loaded it. Self-written skills
//! help nothing on average unless curated (SkillsBench, 2026), so the library counts, per
//! skill, the top-level turns that loaded it (once per turn, however often) and how each such
//! turn went: completed, failed,
//! aborted, or completed and then corrected by the user's next message. `/skills list` and
//! `show` print the counts; the curator flags skills whose loads are often followed by a
//! correction.
//!
//! A correction is judged from the user's next message alone, by its opening words and a few
//! phrases ("no, …", "that's wrong", "undo that", "I said …"): a heuristic that misses polite
//! corrections and may count a "no" that agrees. The counts are evidence for an operator to
//! read, never a reason for the plugin to change a skill on its own.
//!
//! Owns: the per-session memory of which skills the current and the last turn loaded (kept with
//! the session's state in the state root, `schedule::sessions`, so a process per event counts as
//! one process does), and the correction heuristic. The counts
//! live in the ledger (`ledger::Evidence`), which every process appends to.

use crate::api::TurnStatus;
use crate::library::curation::ledger::Outcome;
use std::collections::{BTreeMap, BTreeSet};

/// A skill is flagged when it was loaded at least this often...
pub const FLAG_MIN_LOADS: u64 = 3;
/// ...and at least this share of those loads was followed by a correction.
pub const FLAG_CORRECTED_SHARE: f64 = 1.0 / 3.0;

/// One session's memory of loads; persisted with the session's state (`schedule::sessions`).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Turns {
    /// Skills loaded in the turn in progress.
    current: BTreeSet<String>,
    /// Skills the last completed turn loaded: the user's next message may correct them.
    last_completed: BTreeSet<String>,
}

#[derive(Debug, Default)]
pub struct Sessions {
    sessions: BTreeMap<String, Turns>,
}

/// Sessions remembered at once; past it the memory starts over (a long-lived server meets many).
const MAX_SESSIONS: usize = 10_000;

impl Sessions {
    /// Takes a session's memory out (to persist it); it starts empty here again.
    pub fn take(&mut self, session: &str) -> Turns {
        self.sessions.remove(session).unwrap_or_default()
    }

    /// Puts a session's memory back (as loaded from its state file).
    pub fn put(&mut self, session: &str, turns: Turns) {
        self.sessions.insert(session.to_string(), turns);
    }

    /// A load in the turn in progress; says whether it is the turn's first of that skill (a
    /// turn counts once per skill, for its loads and for what followed).
    pub fn loaded(&mut self, session: &str, skill: &str) -> bool {
        if self.sessions.len() >= MAX_SESSIONS && !self.sessions.contains_key(session) {
            self.sessions.clear();
        }
        self.sessions.entry(session.to_string()).or_default().current.insert(skill.to_string())
    }

    /// The turn ended: each skill it loaded, with how it went.
    pub fn turn_end(&mut self, session: &str, status: TurnStatus) -> Vec<(String, Outcome)> {
        let Some(turns) = self.sessions.get_mut(session) else { return Vec::new() };
        let loaded = std::mem::take(&mut turns.current);
        let outcome = match status {
            TurnStatus::Completed => Outcome::Completed,
            TurnStatus::Failed => Outcome::Failed,
            TurnStatus::Aborted => Outcome::Aborted,
        };
        turns.last_completed = if status == TurnStatus::Completed { loaded.clone() } else { BTreeSet::new() };
        loaded.into_iter().map(|skill| (skill, outcome)).collect()
    }

    /// A person's message: when it corrects the last turn, the skills that turn loaded. Only the
    /// first message after a turn is judged.
    pub fn user_message(&mut self, session: &str, text: &str) -> Vec<String> {
        let Some(turns) = self.sessions.get_mut(session) else { return Vec::new() };
        let last = std::mem::take(&mut turns.last_completed);
        if last.is_empty() || !is_correction(text) { Vec::new() } else { last.into_iter().collect() }
    }
}

/// Whether a message reads as the user correcting what was just done.
pub fn is_correction(text: &str) -> bool {
    const OPENINGS: &[&str] = &["no", "nope", "wrong", "incorrect", "stop", "undo", "revert", "actually"];
    const PHRASES: &[&str] = &[
        "that's wrong",
        "that is wrong",
        "that's not what",
        "that is not what",
        "not what i asked",
        "not what i meant",
        "you broke",
        "that broke",
        "i said",
        "i told you",
        "i asked you",
        "try again",
        "doesn't work",
        "does not work",
        "didn't work",
        "did not work",
        "don't do that",
        "do not do that",
        "undo that",
        "revert that",
    ];
    let head: String = text.chars().take(300).collect::<String>().to_lowercase().replace('’', "'");
    let first = head.trim_start().split(|c: char| !c.is_alphanumeric() && c != '\'').next().unwrap_or_default();
    OPENINGS.contains(&first) || PHRASES.iter().any(|p| head.contains(p))
}

#[cfg(test)]
#[path = "evidence_tests.rs"]
mod tests;
