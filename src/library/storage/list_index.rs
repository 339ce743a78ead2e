//! The listing's summaries persisted in the state root, so a fresh process (an MCP server, a
//! hook) lists a large library without reading and parsing every SKILL.md.
//!
//! Layout: `index/user/NN.json`, 16 shards by a hash of the SKILL.md path, each well under the
//! host's read bound at 100,000 skills; a change rewrites only its shard (atomically). An entry
//! is trusted only while its SKILL.md has the recorded size and mtime (the caller checks every
//! one against a fresh stat); a shard that is missing, unreadable or does not parse is ignored
//! and rewritten by the next listing. Concurrent processes may each rewrite a shard: the last
//! rename wins, and a stale entry is caught by the stat like any other.
//!
//! The user root is persisted under `index/user/`. A project root is known to the plugin only
//! by its session id, which no later process shares, so it is persisted under a key made from
//! the session's working directory (hosts map the project root from it): `index/project-<hash
//! of cwd>/`. Sessions in the same folder share it; a session with no cwd is not persisted.
//! Should a host map two roots from one cwd, an entry still only counts while a file at its
//! path has the recorded size and mtime.

use crate::host::{EntryKind, Host, Root};
use crate::library::storage::list_cache::Summary;
use serde::{Deserialize, Serialize};
use std::rc::Rc;

pub const SHARDS: usize = 16;
/// Bumped when the entry shape or the meaning of a field changes: older shards are ignored.
const VERSION: u32 = 1;

/// The folder under the state root holding a root's shards, when that root is persisted;
/// `cwd` is the working directory of the session a project root belongs to.
pub fn folder(root: &Root, cwd: Option<&str>) -> Option<String> {
    match root {
        Root::UserSkills => Some("index/user".to_string()),
        Root::ProjectSkills(_) => cwd.filter(|c| !c.is_empty()).map(|c| format!("index/{}", project_key(c))),
        Root::State => None,
    }
}

/// A project's name in the state root, from the session's working folder: sessions in one
/// folder share it (its listing index, its skills' history).
pub fn project_key(cwd: &str) -> String {
    format!("project-{:016x}", fnv(cwd))
}

/// FNV-1a: stable across hosts and versions (the std hasher is not).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

pub fn shard_of(path: &str) -> usize {
    (fnv(path) % SHARDS as u64) as usize
}

fn shard_path(folder: &str, shard: usize) -> String {
    format!("{folder}/{shard:02}.json")
}

#[derive(Serialize, Deserialize)]
struct Shard {
    version: u32,
    entries: Vec<Entry>,
}

/// One SKILL.md as the listing saw it.
#[derive(Serialize, Deserialize)]
struct Entry {
    path: String,
    size: u64,
    mtime: u64,
    /// The first 16 hex digits of the file's sha256.
    hash: String,
    description: String,
    owned: bool,
    pinned: bool,
    status: String,
    warnings: Vec<String>,
}

/// Every entry of every readable shard: (SKILL.md path, size, mtime, summary).
pub fn load(host: &impl Host, folder: &str) -> Vec<(String, u64, u64, Rc<Summary>)> {
    let mut out = Vec::new();
    for shard in 0..SHARDS {
        let Ok(bytes) = host.read(&Root::State, &shard_path(folder, shard)) else { continue };
        let Ok(parsed) = serde_json::from_slice::<Shard>(&bytes) else { continue };
        if parsed.version != VERSION {
            continue;
        }
        out.extend(parsed.entries.into_iter().filter(|e| shard_of(&e.path) == shard).map(|e| {
            let summary = Summary {
                description: e.description,
                owned: e.owned,
                pinned: e.pinned,
                status: e.status,
                warnings: e.warnings,
                hash: e.hash,
                terms: Default::default(),
            };
            (e.path, e.size, e.mtime, Rc::new(summary))
        }));
    }
    out
}

/// Rewrites one shard with the given entries (all of which hash to it). Best effort: a
/// failure leaves the old shard, which the stat checks keep honest.
pub fn save<'e>(
    host: &impl Host,
    folder: &str,
    shard: usize,
    entries: impl Iterator<Item = (&'e String, &'e (u64, u64, Rc<Summary>))>,
) -> Result<(), String> {
    let mut entries: Vec<Entry> = entries
        .map(|(path, (size, mtime, s))| Entry {
            path: path.clone(),
            size: *size,
            mtime: *mtime,
            hash: s.hash.clone(),
            description: s.description.clone(),
            owned: s.owned,
            pinned: s.pinned,
            status: s.status.clone(),
            warnings: s.warnings.clone(),
        })
        .collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let bytes = serde_json::to_vec(&Shard { version: VERSION, entries }).map_err(|e| e.to_string())?;
    crate::state_file::write_atomic(host, &Root::State, &shard_path(folder, shard), &bytes).map_err(|e| e.to_string())
}

/// A project index none of whose shards changed for this long belongs, most likely, to a folder
/// no session uses any more. Removing one that is still in use costs one cold listing.
pub const UNUSED_AFTER_MS: u64 = 90 * 24 * 60 * 60 * 1000;

/// Removes `index/project-*` folders whose newest file is older than [`UNUSED_AFTER_MS`] (the
/// curator's daily pass calls it). Returns the folders removed. Symlinks and files are left alone.
///
/// Every file counts, a write's temp file too, and a folder without a file is left: it may be
/// another process's, made an instant ago for its first shard (a write opens the folder, then
/// creates its entry there), and removing it would fail that write. An empty folder is harmless.
pub fn prune_unused(host: &impl Host, now_ms: u64) -> Vec<String> {
    let Ok(entries) = host.list_dir(&Root::State, "index") else { return Vec::new() };
    let mut removed = Vec::new();
    for (name, kind) in entries {
        if kind != EntryKind::Dir || !name.starts_with("project-") {
            continue;
        }
        let folder = format!("index/{name}");
        let Ok(inside) = host.list_dir(&Root::State, &folder) else { continue };
        let files: Vec<String> = inside
            .into_iter()
            .filter(|(_, kind)| *kind == EntryKind::File)
            .map(|(f, _)| format!("{folder}/{f}"))
            .collect();
        let newest = host.stat_many(&Root::State, &files).into_iter().flatten().map(|st| st.modified_ms).max();
        if newest.is_some_and(|ms| now_ms.saturating_sub(ms) > UNUSED_AFTER_MS) {
            crate::library::storage::cleanup::remove_tree(host, &Root::State, &folder);
            removed.push(folder);
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    use crate::host::{Host, WriteMode};
    use crate::library::storage::list_cache::ListCache;
    use crate::library::storage::store::Store;
    use std::cell::RefCell;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn skill(name: &str, description: &str) -> Vec<u8> {
        format!("---\nname: {name}\ndescription: {description}\n---\nbody\n").into_bytes()
    }

    fn listed(host: &FakeHost, cache: &mut ListCache) -> Vec<(String, String)> {
        let (skills, _) = Store::new(host, "s1").list(cache);
        skills.iter().map(|s| (s.location.name.clone(), s.summary.description.clone())).collect()
    }

    fn shards(host: &FakeHost) -> usize {
        (0..SHARDS).filter(|&n| host.file(&Root::State, &shard_path("index/user", n)).is_some()).count()
    }

    #[test]
    fn a_fresh_process_lists_from_the_index_and_trusts_only_unchanged_files() {
        let host = FakeHost::new(1_000);
        for (name, description) in [("alpha", "First one."), ("bravo", "Second one."), ("charlie", "Third one.")] {
            host.write(&Root::UserSkills, &format!("{name}/SKILL.md"), &skill(name, description), WriteMode::CreateNew)
                .unwrap();
        }
        let first = listed(&host, &mut ListCache::default());
        assert_eq!(first.len(), 3);
        assert!(shards(&host) > 0, "the listing is persisted");

        // Same size, same mtime, other words: only a listing that did not parse shows the old ones.
        host.write(&Root::UserSkills, "alpha/SKILL.md", &skill("alpha", "Firxt one."), WriteMode::Truncate).unwrap();
        assert_eq!(listed(&host, &mut ListCache::default()), first, "a fresh cache reads the index, not the files");

        // A changed size (or mtime) is seen: that file alone is parsed again.
        host.advance(5);
        host.write(&Root::UserSkills, "bravo/SKILL.md", &skill("bravo", "Second one, longer."), WriteMode::Truncate)
            .unwrap();
        let after = listed(&host, &mut ListCache::default());
        assert_eq!(after[1], ("bravo".to_string(), "Second one, longer.".to_string()));

        // A removed skill leaves the index; a garbage shard is ignored, then rewritten.
        host.remove_file(&Root::UserSkills, "charlie/SKILL.md").unwrap();
        host.remove_dir(&Root::UserSkills, "charlie").unwrap();
        assert_eq!(listed(&host, &mut ListCache::default()).len(), 2);
        let persisted: usize = load(&host, "index/user").len();
        assert_eq!(persisted, 2, "the removed skill's entry is gone");
        for n in 0..SHARDS {
            let _ = host.write(&Root::State, &shard_path("index/user", n), b"{not json", WriteMode::Truncate);
        }
        host.advance(5);
        host.write(&Root::UserSkills, "alpha/SKILL.md", &skill("alpha", "First one!"), WriteMode::Truncate).unwrap();
        let rebuilt = listed(&host, &mut ListCache::default());
        assert_eq!(rebuilt[0], ("alpha".to_string(), "First one!".to_string()));
        assert_eq!(load(&host, "index/user").len(), 2, "the shards are rewritten");
    }

    #[test]
    fn project_indexes_unchanged_for_90_days_are_pruned_and_the_rest_stay() {
        let host = FakeHost::new(1_000);
        host.map_root(Root::ProjectSkills("s1".into()));
        for (root, name) in [(Root::UserSkills, "alpha"), (Root::ProjectSkills("s1".into()), "bravo")] {
            host.write(&root, &format!("{name}/SKILL.md"), &skill(name, "One."), WriteMode::CreateNew).unwrap();
        }
        let list_from = |cwd: &str| {
            let store = Store::new(&host, "s1");
            let mut cache = ListCache::default();
            cache.note_cwd("s1", cwd);
            store.list(&mut cache);
        };
        list_from("/work/old");
        host.advance(UNUSED_AFTER_MS);
        list_from("/work/recent");
        host.write(&Root::State, "index/project-notes.txt", b"a file, not an index", WriteMode::CreateNew).unwrap();
        let old = folder(&Root::ProjectSkills("s1".into()), Some("/work/old")).unwrap();
        let recent = folder(&Root::ProjectSkills("s1".into()), Some("/work/recent")).unwrap();
        assert!(!load(&host, &old).is_empty() && !load(&host, &recent).is_empty());

        assert!(prune_unused(&host, host.now_ms()).is_empty(), "90 days to the millisecond is not past");
        host.advance(1);
        assert_eq!(prune_unused(&host, host.now_ms()), vec![old.clone()]);
        assert!(host.list_dir(&Root::State, &old).is_err(), "the old folder is gone");
        assert_eq!(load(&host, &recent).len(), 1, "the recent project index stays");
        assert_eq!(load(&host, "index/user").len(), 1, "the user index is never pruned");
        assert!(host.file(&Root::State, "index/project-notes.txt").is_some(), "a file is left alone");
    }

    /// The curator's prune runs while another process's first listing from a new project folder
    /// has just made its `index/project-*` folder for its first shard and not yet written it.
    /// Before, the prune took the folder without a shard for unused and removed it under that
    /// write, which failed with `NotFound`: the listing warned and kept nothing. A folder
    /// without a file is left.
    #[test]
    fn a_prune_leaves_a_project_index_to_another_processs_first_shard() {
        let list_from_new_project = |host: &FakeHost| {
            host.map_root(Root::ProjectSkills("s1".into()));
            host.write(
                &Root::ProjectSkills("s1".into()),
                "bravo/SKILL.md",
                &skill("bravo", "One."),
                WriteMode::CreateNew,
            )
            .unwrap();
            let mut cache = ListCache::default();
            cache.note_cwd("s1", "/work/new");
            let (skills, warnings) = Store::new(host, "s1").list(&mut cache);
            (skills.len(), warnings)
        };
        // What the listing leaves when it runs alone.
        let alone = FakeHost::new(1_000);
        assert_eq!(list_from_new_project(&alone), (1, vec![]));

        let host = FakeHost::new(1_000);
        let index = folder(&Root::ProjectSkills("s1".into()), Some("/work/new")).unwrap();
        let pruned = Rc::new(RefCell::new(None));
        let seen = pruned.clone();
        host.interleave_inside_write(&index, move |host| *seen.borrow_mut() = Some(prune_unused(host, host.now_ms())));
        let listed = list_from_new_project(&host);

        assert_eq!(pruned.borrow_mut().take(), Some(vec![]), "the prune ran inside the first write, removing nothing");
        assert_eq!(listed, (1, vec![]), "listed, and the index saved without a warning");
        assert_eq!(load(&host, &index).len(), 1, "the project index holds the skill");
        assert_eq!(host.snapshot(), alone.snapshot(), "byte for byte what the listing leaves alone");
    }

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard_of("alpha/SKILL.md"), shard_of("alpha/SKILL.md"));
        let used: std::collections::BTreeSet<usize> = (0..200).map(|i| shard_of(&format!("s{i}/SKILL.md"))).collect();
        assert_eq!(used.len(), SHARDS);
    }
}
