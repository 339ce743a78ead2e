//! The in-memory cache behind listing: what one SKILL.md summarises to (`Summary`), a listed
//! skill (`Listed`), and the cache of summaries, root scans, the merged listing and the duplicate
//! index (`ListCache`, validated by size and mtime, persisted through `list_index`). Filled and
//! read by `listing` and `duplicates`.

use crate::host::{Host, Root};
use crate::library::dedupe::{Index, Terms, Vocabulary};
use crate::library::storage::store::Location;
use std::collections::HashMap;
use std::rc::Rc;

/// What listing needs from one SKILL.md, cached by (root, path, size, mtime).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub description: String,
    pub owned: bool,
    pub pinned: bool,
    pub status: String,
    /// Format problems (read: warnings) and parse failures.
    pub warnings: Vec<String>,
    /// The first 16 hex digits of the SKILL.md's sha256 (persisted with the listing).
    pub hash: String,
    /// Interned name and description terms, for duplicate detection; made when first needed
    /// (a listing read from the persisted index has none yet).
    pub terms: std::cell::OnceCell<Terms>,
}

impl Summary {
    pub fn terms(&self, vocabulary: &mut Vocabulary, name: &str) -> &Terms {
        self.terms.get_or_init(|| Terms::of(vocabulary, name, &self.description))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub location: Location,
    pub summary: Rc<Summary>,
    /// Lower-priority copies this one hides.
    pub shadows: Vec<Location>,
}

/// What listing one root found: candidate locations and their SKILL.md paths.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub locations: Vec<Location>,
    pub paths: Vec<String>,
}

impl Scan {
    pub(super) fn new(locations: Vec<Location>) -> Scan {
        let paths = locations.iter().map(Location::path).collect();
        Scan { locations, paths }
    }
}

/// A folder's mtime this close to now (or ahead of it) may not yet reflect every change made
/// within the same clock tick: filesystems stamp times from a coarse clock (a jiffy, up to 10 ms
/// on Linux; seconds on some network filesystems), and we keep milliseconds. Another process
/// may add a skill in the same tick as the stat that cached a root. A root is trusted by its
/// mtime only once the mtime is this old ("racy" entries, as git calls them, are rescanned).
pub const RACY_MS: u64 = 1000;

/// Which mtimes are settled (at least `RACY_MS` old), judged on the filesystem's clock, not on
/// this process's: a replay's or a test host's clock may run ahead of the files' (it would trust
/// an mtime a second old as settled) or behind them (it would never cache). The filesystem's
/// time costs a probe (a file written, stat'ed and removed in the state root, as locks do), so it
/// is asked only for an mtime newer than every one already found settled: a steady library asks
/// nothing.
#[derive(Debug, Default)]
pub struct Settled {
    /// Every mtime at or before this is settled.
    before: std::cell::Cell<u64>,
    /// This process's clock at the last probe: while it reads the same, the last probe's answer
    /// stands (an older time of the files only ever finds fewer mtimes settled), so a page of
    /// freshly written skills costs one probe, not one per file.
    probed_at: std::cell::Cell<Option<u64>>,
}

impl Settled {
    pub fn mtime(&self, host: &impl Host, mtime: u64) -> bool {
        let now = host.now_ms();
        // The clock stepped back (an NTP step, `date -s`): the files' clock may have too, and an
        // mtime written since could be below what was settled; probe afresh.
        if self.probed_at.get().is_some_and(|at| now < at) {
            self.before.set(0);
            self.probed_at.set(None);
        }
        if mtime <= self.before.get() {
            return true;
        }
        if self.probed_at.get() == Some(now) {
            return false;
        }
        // Only in a state root that exists: a probe never makes one (a refused write's duplicate
        // check leaves the home as it was). Its name starts with a dot, which an operator
        // console's change stamp passes over: a read must not look like a change.
        let probe = || host.stat(&Root::State, "").ok().and_then(|_| crate::state_file::fs_now(host));
        match probe() {
            Some(fs_now) => {
                self.probed_at.set(Some(now));
                let before = self.before.get().max(fs_now.saturating_sub(RACY_MS));
                self.before.set(before);
                mtime <= before
            }
            // No probe (no state root yet, or a read-only one): the process's clock decides.
            None => now.checked_sub(mtime).is_some_and(|age| age >= RACY_MS),
        }
    }
}

/// The duplicate index is rebuilt at least this often, so skills that other processes created
/// while this one kept its index current with its own creates are not missed for long.
pub const KNOWN_MAX_AGE_MS: u64 = 30_000;

/// The duplicate index: the roots' mtimes it stands for, the index, and when it was built (ms).
pub(super) type Known = (Vec<(Root, u64)>, Index, u64);

/// (size, mtime in ms, summary) of one SKILL.md.
pub(super) type CachedSummary = (u64, u64, Rc<Summary>);

#[derive(Default)]
pub struct ListCache {
    /// Per root: SKILL.md path → (size, mtime, parsed summary).
    pub(super) entries: HashMap<Root, HashMap<String, CachedSummary>>,
    pub vocabulary: Vocabulary,
    /// Per root: its mtime when last scanned and the candidate locations found. A root whose
    /// mtime is unchanged has the same entries (skills added, removed or renamed change it).
    pub(super) scans: HashMap<Root, (u64, Rc<Scan>)>,
    /// The duplicate index, the roots' mtimes it was built at, and when it was built (it is kept
    /// current by this process's own creates; what other processes create reaches it when a
    /// root changes otherwise, or when it is [`KNOWN_MAX_AGE_MS`] old).
    pub(super) known: Option<Known>,
    /// Roots whose persisted index was read into `entries` (see `list_index`).
    pub(super) loaded: std::collections::HashSet<Root>,
    /// Per root: persisted shards whose entries changed since they were read or written.
    pub(super) dirty: HashMap<Root, std::collections::BTreeSet<usize>>,
    /// Per project root: the working directory of its session (keys its persisted index).
    pub(super) project_cwds: HashMap<Root, String>,
    /// Bumped whenever a cached summary is added or dropped: a merged listing built at another
    /// generation is out of date.
    pub(super) generation: u64,
    /// The last merged listing (every skill by name, shadowing applied), the roots' mtimes and
    /// generation it was built at, and the candidates that were not skills then (folders
    /// without a SKILL.md, which may gain one without the root's mtime changing).
    pub(super) merged: Option<Merged>,
    /// The catalog's served entries (digests of every file), each valid while its files and
    /// folders stat as they did (see `served::CachedServed`).
    pub(super) served: crate::library::storage::served::ServedCache,
    /// Which mtimes are settled, on the filesystem's clock.
    pub(super) settled: Settled,
}

pub(super) struct Merged {
    pub(super) key: Vec<(Root, u64)>,
    pub(super) generation: u64,
    pub(super) listed: Rc<Vec<Listed>>,
    pub(super) warnings: Vec<String>,
    pub(super) not_skills: Vec<(Root, Vec<String>)>,
}

impl ListCache {
    /// The working directory of `session`, whose project root's listing is then persisted.
    pub fn note_cwd(&mut self, session: &str, cwd: &str) {
        if !session.is_empty() && !cwd.is_empty() {
            let root = Root::ProjectSkills(session.to_string());
            if self.project_cwds.get(&root).is_none_or(|known| known != cwd) {
                self.project_cwds.insert(root, cwd.to_string());
            }
        }
    }

    /// A file changed: its summary and the duplicate index are out of date.
    pub fn forget(&mut self, root: &Root, path: &str) {
        self.forget_file(root, path);
        self.known = None;
    }

    /// A file appeared that `note_created` accounts for: only its cached summary goes.
    pub fn forget_file(&mut self, root: &Root, path: &str) {
        if let Some(paths) = self.entries.get_mut(root) {
            paths.remove(path);
        }
        self.generation += 1;
    }
}
