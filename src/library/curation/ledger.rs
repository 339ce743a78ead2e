//! The usage ledger in the state root: per-skill use counts, last use and creation, and the
//! curator's last run. Many processes record into it at once, so a record is one appended line
//! of `usage.log` (an append of a few bytes is atomic; nothing waits, nothing is overwritten),
//! and `usage.json` is the snapshot those lines are folded into, under a lock, by whoever finds
//! the log long. A corrupt snapshot is set aside, never fatal; a corrupt line is skipped.

use crate::host::{FsError, Host, Level, Root, WriteMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PATH: &str = "usage.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub uses: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<u64>,
    /// Scanner findings the operator accepted as not credentials, with who and when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<Acceptance>,
    /// What followed the agent's loads of it (see `evidence`).
    #[serde(default, skip_serializing_if = "Evidence::is_empty")]
    pub evidence: Evidence,
}

/// Loads of a skill in top-level turns, and how those turns went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    pub loads: u64,
    pub completed: u64,
    pub failed: u64,
    pub aborted: u64,
    /// Completed, then corrected by the user's next message.
    pub corrected: u64,
}

impl Evidence {
    pub fn is_empty(&self) -> bool {
        *self == Evidence::default()
    }
}

/// How a turn that loaded a skill went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Completed,
    Failed,
    Aborted,
    Corrected,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
            Outcome::Corrected => "corrected",
        }
    }

    fn parse(text: &str) -> Option<Outcome> {
        [Outcome::Completed, Outcome::Failed, Outcome::Aborted, Outcome::Corrected]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// One finding an operator accepted (`/skills approve ID --accept-finding RULE`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acceptance {
    /// `rule@hash` (see `scan::fingerprint`).
    pub finding: String,
    pub by: String,
    pub at_ms: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    #[serde(default = "version")]
    pub version: u32,
    #[serde(default)]
    pub skills: BTreeMap<String, Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curator_last_run_ms: Option<u64>,
    /// Rotated logs already folded into this snapshot (skipped by `load` until removed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub folded: Vec<String>,
}

/// The append-only log of records since the snapshot.
pub const LOG: &str = "usage.log";
/// A log rotated for folding: `usage.log.<token>`.
const ROTATED_PREFIX: &str = "usage.log.";
/// Past this size, the process that appends folds the log into the snapshot.
const COMPACT_BYTES: u64 = 64 << 10;

/// One record, one line of the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Record<'a> {
    Used(&'a str, u64),
    Created(&'a str, u64),
    CuratorRan(u64),
    Accepted {
        skill: &'a str,
        finding: &'a str,
        by: &'a str,
        ms: u64,
    },
    /// The agent loaded the skill in a top-level turn.
    Loaded(&'a str),
    /// How a turn that loaded it went.
    Followed(&'a str, Outcome),
}

/// A log line: `{"s":skill,"u":ms}`, `{"s":skill,"c":ms}`, `{"r":ms}` or
/// `{"s":skill,"a":finding,"by":who,"t":ms}`.
#[derive(Serialize, Deserialize, Default)]
struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    s: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    u: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    c: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    a: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<u64>,
    /// `{"s":skill,"l":1}`: a load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<u8>,
    /// `{"s":skill,"o":"corrected"}`: what followed a load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    o: Option<String>,
}

fn version() -> u32 {
    1
}

impl Ledger {
    /// The snapshot with every record not yet folded into it: what all processes recorded.
    pub fn load(host: &impl Host) -> Ledger {
        Ledger::load_with_sources(host).0
    }

    /// `load`, and the rotated logs it applied (a compaction folds exactly those).
    fn load_with_sources(host: &impl Host) -> (Ledger, Vec<String>) {
        let mut ledger = Ledger::load_snapshot(host);
        let mut rotated: Vec<String> = host
            .list_dir(&Root::State, "")
            .unwrap_or_default()
            .into_iter()
            .map(|(name, _)| name)
            .filter(|name| name.starts_with(ROTATED_PREFIX) && !ledger.folded.contains(name))
            .collect();
        rotated.sort();
        for name in &rotated {
            if let Ok(bytes) = host.read(&Root::State, name) {
                ledger.apply_log(&bytes);
            }
        }
        if let Ok(bytes) = host.read(&Root::State, LOG) {
            ledger.apply_log(&bytes);
        }
        (ledger, rotated)
    }

    fn apply_log(&mut self, bytes: &[u8]) {
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(line) = serde_json::from_slice::<Line>(line) else { continue };
            if let (Some(skill), Some(finding), Some(ms)) = (line.s.as_deref(), line.a.as_deref(), line.t) {
                let by = line.by.as_deref().unwrap_or("operator");
                self.apply(&Record::Accepted { skill, finding, by, ms });
                continue;
            }
            if let (Some(skill), Some(_)) = (line.s.as_deref(), line.l) {
                self.apply(&Record::Loaded(skill));
                continue;
            }
            if let (Some(skill), Some(outcome)) = (line.s.as_deref(), line.o.as_deref().and_then(Outcome::parse)) {
                self.apply(&Record::Followed(skill, outcome));
                continue;
            }
            match (line.s.as_deref(), line.u, line.c, line.r) {
                (Some(skill), Some(ms), _, _) => self.apply(&Record::Used(skill, ms)),
                (Some(skill), None, Some(ms), _) => self.apply(&Record::Created(skill, ms)),
                (None, _, _, Some(ms)) => self.apply(&Record::CuratorRan(ms)),
                _ => {}
            }
        }
    }

    /// Applies a record to this copy (what `record` also appends for every other process).
    pub fn apply(&mut self, record: &Record) {
        match *record {
            Record::Used(skill, ms) => self.record_use(skill, ms),
            Record::Created(skill, ms) => self.record_created(skill, ms),
            Record::CuratorRan(ms) => self.curator_last_run_ms = Some(self.curator_last_run_ms.unwrap_or(0).max(ms)),
            Record::Loaded(skill) => self.skills.entry(skill.to_string()).or_default().evidence.loads += 1,
            Record::Followed(skill, outcome) => {
                let evidence = &mut self.skills.entry(skill.to_string()).or_default().evidence;
                let count = match outcome {
                    Outcome::Completed => &mut evidence.completed,
                    Outcome::Failed => &mut evidence.failed,
                    Outcome::Aborted => &mut evidence.aborted,
                    Outcome::Corrected => &mut evidence.corrected,
                };
                *count += 1;
            }
            Record::Accepted { skill, finding, by, ms } => {
                let usage = self.skills.entry(skill.to_string()).or_default();
                if !usage.accepted.iter().any(|a| a.finding == finding) {
                    usage.accepted.push(Acceptance { finding: finding.to_string(), by: by.to_string(), at_ms: ms });
                }
            }
        }
    }

    /// Records for every process: one append to the log (atomic for a few bytes, no lock, no
    /// wait), applied to this copy too; a long log is then folded into the snapshot.
    pub fn record(&mut self, host: &impl Host, records: &[Record]) -> Result<(), FsError> {
        let mut text = String::new();
        for record in records {
            self.apply(record);
            let line = match *record {
                Record::Used(skill, ms) => Line { s: Some(skill.into()), u: Some(ms), ..Line::default() },
                Record::Created(skill, ms) => Line { s: Some(skill.into()), c: Some(ms), ..Line::default() },
                Record::CuratorRan(ms) => Line { r: Some(ms), ..Line::default() },
                Record::Accepted { skill, finding, by, ms } => Line {
                    s: Some(skill.into()),
                    a: Some(finding.into()),
                    by: Some(by.into()),
                    t: Some(ms),
                    ..Line::default()
                },
                Record::Loaded(skill) => Line { s: Some(skill.into()), l: Some(1), ..Line::default() },
                Record::Followed(skill, outcome) => {
                    Line { s: Some(skill.into()), o: Some(outcome.as_str().into()), ..Line::default() }
                }
            };
            text.push_str(&serde_json::to_string(&line).unwrap_or_default());
            text.push('\n');
        }
        host.write(&Root::State, LOG, text.as_bytes(), WriteMode::Append)?;
        if host.stat(&Root::State, LOG).is_ok_and(|s| s.size > COMPACT_BYTES) {
            Ledger::compact(host);
        }
        Ok(())
    }

    /// Folds the log into the snapshot, if no other process is doing it: the log is renamed
    /// aside (new records go to a fresh log), everything is loaded, the snapshot written naming
    /// the rotated logs it folded, and those removed. A crash at any step loses nothing and
    /// counts nothing twice: an unfolded rotated log is applied by `load`, a folded one skipped.
    pub fn compact(host: &impl Host) {
        let Some(lock) = crate::state_file::try_lock(host, "usage") else { return };
        let folded = Ledger::load_snapshot(host).folded;
        let present: Vec<String> =
            host.list_dir(&Root::State, "").unwrap_or_default().into_iter().map(|(n, _)| n).collect();
        // A name never used before: a rotated log under a folded name would be skipped.
        let now = host.now_ms();
        let rotated = (0u32..)
            .map(|n| format!("{ROTATED_PREFIX}{now}-{n}"))
            .find(|name| !folded.contains(name) && !present.contains(name))
            .unwrap_or_default();
        if host.rename(&Root::State, LOG, &rotated).is_ok() {
            let (mut ledger, applied) = Ledger::load_with_sources(host);
            // Names folded earlier whose files are gone need no remembering.
            ledger.folded.retain(|name| present.contains(name));
            ledger.folded.extend(applied);
            if ledger.save(host).is_ok() {
                for name in &ledger.folded {
                    let _ = host.remove_file(&Root::State, name);
                }
            }
        }
        lock.release(host);
    }

    /// The snapshot alone; a missing one is empty, a corrupt one is renamed aside with a warning.
    fn load_snapshot(host: &impl Host) -> Ledger {
        let bytes = match host.read(&Root::State, PATH) {
            Ok(bytes) => bytes,
            Err(FsError::NotFound) => return Ledger { version: 1, ..Ledger::default() },
            Err(err) => {
                host.log(Level::Warn, &format!("ledger {PATH} unreadable ({err}); starting empty"));
                return Ledger { version: 1, ..Ledger::default() };
            }
        };
        match serde_json::from_slice::<Ledger>(&bytes) {
            Ok(ledger) => ledger,
            Err(err) => {
                let aside = format!("usage.corrupt-{}.json", host.now_ms());
                let moved = host.rename(&Root::State, PATH, &aside);
                host.log(
                    Level::Warn,
                    &format!(
                        "ledger {PATH} is corrupt ({err}); {} and starting empty",
                        if moved.is_ok() { format!("set aside as {aside}") } else { "could not set it aside".into() }
                    ),
                );
                Ledger { version: 1, ..Ledger::default() }
            }
        }
    }

    /// Writes atomically (temp + rename) in the state root.
    pub fn save(&self, host: &impl Host) -> Result<(), FsError> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| FsError::Io(e.to_string()))?;
        crate::state_file::write_atomic(host, &Root::State, PATH, &bytes)
    }

    pub fn record_use(&mut self, skill: &str, now_ms: u64) {
        let usage = self.skills.entry(skill.to_string()).or_default();
        usage.uses += 1;
        usage.last_used_ms = Some(now_ms);
    }

    pub fn record_created(&mut self, skill: &str, now_ms: u64) {
        let usage = self.skills.entry(skill.to_string()).or_default();
        usage.created_ms.get_or_insert(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn round_trips_and_counts() {
        let host = FakeHost::new(1_000);
        let mut ledger = Ledger::load(&host);
        ledger.record_created("pdf", 1_000);
        ledger.record_use("pdf", 2_000);
        ledger.record_use("pdf", 3_000);
        ledger.save(&host).unwrap();
        let again = Ledger::load(&host);
        assert_eq!(
            again.skills["pdf"],
            Usage {
                uses: 2,
                last_used_ms: Some(3_000),
                created_ms: Some(1_000),
                accepted: Vec::new(),
                evidence: Evidence::default()
            }
        );
        assert!(host.list_dir(&Root::State, "").unwrap().iter().all(|(n, _)| !n.ends_with(".self-evolve-tmp")));
    }

    /// Two processes' copies, each recording: neither overwrites the other, and folding the log
    /// into the snapshot (again and again, with a crash in between) counts every record once.
    #[test]
    fn records_from_many_processes_merge_and_fold_exactly_once() {
        let host = FakeHost::new(1_767_225_600_000);
        let (mut a, mut b) = (Ledger::load(&host), Ledger::load(&host));
        for i in 0..3_000u64 {
            a.record(&host, &[Record::Used("pdf", i)]).unwrap();
            b.record(&host, &[Record::Used("csv", i), Record::Created("csv", 1)]).unwrap();
        }
        // A compaction that died after renaming the log aside: its rotated log is still applied.
        host.rename(&Root::State, LOG, "usage.log.1").unwrap();
        b.record(&host, &[Record::CuratorRan(9)]).unwrap();
        let merged = Ledger::load(&host);
        assert_eq!(merged.skills["pdf"].uses, 3_000);
        assert_eq!(merged.skills["csv"].uses, 3_000);
        assert_eq!(merged.skills["csv"].created_ms, Some(1));
        assert_eq!(merged.curator_last_run_ms, Some(9));
        Ledger::compact(&host);
        assert_eq!(Ledger::load(&host), Ledger { folded: Ledger::load(&host).folded, ..merged.clone() });
        let names: Vec<String> = host.list_dir(&Root::State, "").unwrap().into_iter().map(|(n, _)| n).collect();
        assert!(!names.iter().any(|n| n.starts_with("usage.log")), "{names:?}");
        // Folding again changes nothing.
        Ledger::compact(&host);
        assert_eq!(Ledger::load(&host).skills, merged.skills);
    }

    #[test]
    fn a_corrupt_ledger_is_set_aside_with_a_warning() {
        let host = FakeHost::new(5_000);
        host.write(&Root::State, PATH, b"{not json", WriteMode::CreateNew).unwrap();
        let ledger = Ledger::load(&host);
        assert!(ledger.skills.is_empty());
        assert_eq!(host.file(&Root::State, "usage.corrupt-5000.json").as_deref(), Some(&b"{not json"[..]));
        assert!(host.logged("corrupt"));
    }
}
