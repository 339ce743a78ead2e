//! Defines the home's stamp: one hash over the names, sizes and change times of what the
//! console's views read — the state folder (pending writes, history, reviews, the curator's
//! reports, gates.jsonl, the ledgers), the skills roots' folders and files, `config.json` and
//! `host.json`. Stat calls only, no file is read. It changes whenever any process changes the
//! home; the page polls it, and the answers cached in `api.rs` are valid for one stamp.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, UNIX_EPOCH};

/// What reads write in the state folder (the listing's index, a session's counters, locks):
/// left out, or every read would change the stamp and the page would reload forever.
const CACHES: [&str; 3] = ["index", "sessions", "locks"];

/// How long one stamp is reused: the page polls every 2 s, and ten requests of one view in a
/// row stat a 10,000-skill home once, not ten times.
const REUSE: Duration = Duration::from_millis(500);

/// The folders and files a stamp covers.
pub struct Watched {
    pub state: PathBuf,
    pub roots: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
}

/// One row per entry: path, size, change time in nanoseconds, folder or not.
type Row = (PathBuf, u64, u128, bool);

fn row(path: PathBuf) -> Option<Row> {
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let changed = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    Some((path, meta.len(), changed, meta.is_dir()))
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
            let is_dir = found.3;
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
        // SKILL/SKILL.md and a skill's other top-level files.
        for root in &self.roots {
            walk(root, 2, &[], &mut rows);
        }
        rows.extend(self.files.iter().cloned().filter_map(row));
        rows.sort_unstable();
        let mut hash = Sha256::new();
        for (path, size, changed, dir) in &rows {
            hash.update(path.as_os_str().as_encoded_bytes());
            hash.update([0, u8::from(*dir)]);
            hash.update(size.to_le_bytes());
            hash.update(changed.to_le_bytes());
        }
        hash.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect()
    }
}

/// The stamp, reused for `REUSE`; forgotten at once after the console's own action.
pub struct Stamper {
    watched: Watched,
    last: Mutex<Option<(Instant, String)>>,
}

impl Stamper {
    pub fn new(watched: Watched) -> Stamper {
        Stamper { watched, last: Mutex::new(None) }
    }

    pub fn current(&self) -> String {
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
        *self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let changes: [(&str, &dyn Fn()); 6] = [
            ("a skill's file", &|| write(&home.join("skills/deploy/SKILL.md"), "two, longer\n")),
            ("a new skill", &|| write(&home.join("skills/lint/SKILL.md"), "x\n")),
            ("a pending entry gone", &|| std::fs::remove_dir_all(home.join("self-evolve/pending/1-a")).unwrap()),
            ("a gate decision", &|| write(&home.join("self-evolve/gates.jsonl"), "{}\n")),
            ("a kept version", &|| write(&home.join("self-evolve/history/user/deploy/1.json"), "{}")),
            ("config.json", &|| write(&home.join("config.json"), "{}")),
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
