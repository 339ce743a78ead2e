//! Defines the home's stamp: one hash over the names, sizes and change times of what the
//! console's views read — the state folder (pending writes, history, reviews, the curator's
//! reports, gates.jsonl, the ledgers), the skills roots' folders and files, `config.json` and
//! `host.json`. Stat calls only, no file is read. It changes whenever any process changes the
//! home; the page polls it, and the answers cached in `api.rs` are valid for one stamp.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// What reads write in the state folder (the listing's index, a session's counters, locks):
/// left out, or every read would change the stamp and the page would reload forever.
const CACHES: [&str; 3] = ["index", "sessions", "locks"];

/// How long one stamp is reused. While a page is open, `refresh_while_watched` measures it again
/// every `REFRESH` on its own thread, so a request seldom waits for the stat of a large home
/// (~100 ms at 10,000 skills): a change shows within about `REUSE`.
const REUSE: Duration = Duration::from_millis(2000);
/// How often the stamp is measured in the background while someone is looking.
const REFRESH: Duration = Duration::from_millis(1000);
/// How long after the last request the background measuring goes on (a closed page stops it).
const WATCHED_FOR: Duration = Duration::from_secs(10);

/// The folders and files a stamp covers.
pub struct Watched {
    pub state: PathBuf,
    pub roots: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

/// One row per entry: path, size, modification and status-change times in nanoseconds, inode,
/// folder or not. The inode and ctime catch a file replaced by a rename with the same size
/// within one tick of the modification time (an atomic write).
type Row = (PathBuf, u64, u128, u128, u64, bool);

fn row(path: PathBuf) -> Option<Row> {
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let modified = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let (changed, inode) = status_change(&meta);
    Some((path, meta.len(), modified, changed, inode, meta.is_dir()))
}

#[cfg(unix)]
fn status_change(meta: &std::fs::Metadata) -> (u128, u64) {
    use std::os::unix::fs::MetadataExt;
    let nanos = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
    (u128::try_from(nanos).unwrap_or(0), meta.ino())
}

#[cfg(not(unix))]
fn status_change(_: &std::fs::Metadata) -> (u128, u64) {
    (0, 0)
}

/// The entries under `dir` down to `depth` levels, hidden names (temporary files, `.git`) and
/// `skip`ped top-level names left out. Links are not followed.
fn walk(dir: &Path, depth: usize, skip: &[&str], rows: &mut Vec<Row>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || skip.contains(&name.as_ref()) {
            continue;
        }
        if let Some(found) = row(entry.path()) {
            let is_dir = found.5;
            let path = found.0.clone();
            rows.push(found);
            if is_dir && depth > 1 {
                walk(&path, depth - 1, &[], rows);
            }
        }
    }
}

impl Watched {
    /// The stamp now: hex of a SHA-256 over every row, sorted (a folder lists in any order).
    pub fn stamp(&self) -> String {
        let mut rows = Vec::new();
        // pending/ID/file, history/SCOPE/SKILL/file, reviews/…, curator/…
        walk(&self.state, 4, &CACHES, &mut rows);
        // SKILL/SKILL.md, a skill's other files and those one folder down (references/x.md).
        for root in &self.roots {
            walk(root, 3, &[], &mut rows);
        }
        rows.extend(self.files.iter().cloned().filter_map(row));
        rows.sort_unstable();
        let mut hash = Sha256::new();
        for (path, size, modified, changed, inode, dir) in &rows {
            hash.update(path.as_os_str().as_encoded_bytes());
            hash.update([0, u8::from(*dir)]);
            hash.update(size.to_le_bytes());
            hash.update(modified.to_le_bytes());
            hash.update(changed.to_le_bytes());
            hash.update(inode.to_le_bytes());
        }
        hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
    }
}

/// The stamp, reused for `REUSE`; forgotten at once after the console's own action.
pub struct Stamper {
    watched: Watched,
    last: Mutex<Option<(Instant, String)>>,
    /// When a request last asked for the stamp.
    asked: Mutex<Option<Instant>>,
    /// Counts `forget`s: a stamp measured in the background across one is older than the
    /// console's own action and is dropped.
    forgotten: std::sync::atomic::AtomicU64,
}

impl Stamper {
    pub fn new(watched: Watched) -> Stamper {
        // As if asked at start: the first stamp is measured in the background while the browser
        // opens the link, not by the page's first request.
        Stamper {
            watched,
            last: Mutex::new(None),
            asked: Mutex::new(Some(Instant::now())),
            forgotten: Default::default(),
        }
    }

    /// Measures the stamp every `REFRESH` while requests keep asking for it (for `WATCHED_FOR`
    /// after the last); runs for the life of the console, on a thread of its own.
    pub fn refresh_while_watched(&self) -> ! {
        loop {
            let asked = *self.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if asked.is_some_and(|at| at.elapsed() < WATCHED_FOR) {
                let (began, epoch) = (Instant::now(), self.forgotten.load(Ordering::SeqCst));
                let stamp = self.watched.stamp();
                let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                // The console acted meanwhile, or measured one since: that one is newer.
                let newer = last.as_ref().is_some_and(|(at, _)| *at > began);
                if !newer && self.forgotten.load(Ordering::SeqCst) == epoch {
                    *last = Some((Instant::now(), stamp));
                }
            }
            std::thread::sleep(REFRESH);
        }
    }

    pub fn current(&self) -> String {
        *self.asked.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(Instant::now());
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((at, stamp)) = last.as_ref()
            && at.elapsed() < REUSE
        {
            return stamp.clone();
        }
        let stamp = self.watched.stamp();
        *last = Some((Instant::now(), stamp.clone()));
        stamp
    }

    pub fn forget(&self) {
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.forgotten.fetch_add(1, Ordering::SeqCst);
        *last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mtime(path: &Path) -> std::time::SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_change_a_view_shows_changes_the_stamp_and_a_cache_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        write(&home.join("skills/deploy/SKILL.md"), "one\n");
        write(&home.join("self-evolve/pending/1-a/manifest.json"), "{}");
        let watched = Watched {
            state: home.join("self-evolve"),
            roots: vec![home.join("skills")],
            files: vec![home.join("config.json")],
        };
        let mut last = watched.stamp();
        assert_eq!(last.len(), 32);
        assert_eq!(watched.stamp(), last, "nothing changed");
        let replace_same_size = || {
            // Same size, and the modification time set back: only the inode and ctime differ.
            let (folder, file) = (home.join("skills/deploy"), home.join("skills/deploy/SKILL.md"));
            let (before, folder_before) = (mtime(&file), mtime(&folder));
            write(&folder.join(".tmp"), "TWO, LONGER\n");
            std::fs::rename(folder.join(".tmp"), &file).unwrap();
            std::fs::File::options().write(true).open(&file).unwrap().set_modified(before).unwrap();
            std::fs::File::open(&folder).unwrap().set_modified(folder_before).unwrap();
        };
        let nested = || write(&home.join("skills/deploy/references/notes.md"), "x\n");
        let changes: [(&str, &dyn Fn()); 8] = [
            ("a skill's file", &|| write(&home.join("skills/deploy/SKILL.md"), "two, longer\n")),
            ("a new skill", &|| write(&home.join("skills/lint/SKILL.md"), "x\n")),
            ("a pending entry gone", &|| std::fs::remove_dir_all(home.join("self-evolve/pending/1-a")).unwrap()),
            ("a gate decision", &|| write(&home.join("self-evolve/gates.jsonl"), "{}\n")),
            ("a kept version", &|| write(&home.join("self-evolve/history/user/deploy/1.json"), "{}")),
            ("config.json", &|| write(&home.join("config.json"), "{}")),
            ("a skill's file replaced by a rename, same size and mtime", &replace_same_size),
            ("a file one folder down in a skill", &nested),
        ];
        for (what, change) in changes {
            change();
            let now = watched.stamp();
            assert_ne!(now, last, "{what}");
            last = now;
        }
        for cache in ["index/list.json", "sessions/s/1.json", "locks/deploy.lock", ".tmp-1"] {
            write(&home.join("self-evolve").join(cache), "x");
            write(&home.join("skills/.git/index"), cache);
        }
        assert_eq!(watched.stamp(), last, "caches, hidden files and .git leave it alone");
    }
}
