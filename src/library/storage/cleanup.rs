//! What a dead operation leaves behind, removed: debris (`debris` names it) older than a grace
//! period, once nobody holds its skill's lock, and temp files of stale locks. `cleanup` runs at
//! init and on the tick; `remove_tree` serves every caller that takes a folder away.

use crate::host::{EntryKind, Host, Level, Root};
use crate::library::storage::debris::{debris_skill, is_debris, stamped_ms};
use crate::library::storage::store::skill_lock;
use crate::state_file;

/// Debris younger than this may belong to a call in progress in another process.
const GRACE_MS: u64 = 60_000;

/// Removes `path` and everything under it, files first (the fs capability removes one entry at
/// a time). Best effort: what fails stays for the next cleanup.
pub fn remove_tree(host: &impl Host, root: &Root, path: &str) {
    match host.list_dir(root, path) {
        Ok(entries) => {
            for (name, kind) in entries {
                let child = format!("{path}/{name}");
                match kind {
                    EntryKind::Dir => remove_tree(host, root, &child),
                    EntryKind::File | EntryKind::Symlink => {
                        let _ = host.remove_file(root, &child);
                    }
                }
            }
            let _ = host.remove_dir(root, path);
        }
        Err(_) => {
            let _ = host.remove_file(root, path);
        }
    }
}

/// Removes debris older than the grace period from the top of each skills root, the archive and
/// the state root's top; with `deep`, also from inside every skill folder (temp files beside a
/// SKILL.md: the curator's daily pass does that, init does not). Returns what was removed.
pub fn cleanup(host: &impl Host, roots: &[Root], deep: bool) -> Vec<String> {
    let now = host.now_ms();
    let mut removed = Vec::new();
    let mut sweep = |root: &Root, dir: &str| {
        let Ok(entries) = host.list_dir(root, dir) else { return };
        for (name, kind) in entries {
            let old_enough = stamped_ms(&name).is_some_and(|ms| now.saturating_sub(ms) > GRACE_MS);
            if kind == EntryKind::Symlink || !is_debris(&name) || !old_enough {
                continue;
            }
            let path = if dir.is_empty() { name.clone() } else { format!("{dir}/{name}") };
            // A copy that takes longer than the grace renews its skill's lock: its half-built
            // entry is debris only once nobody holds that lock.
            let lock = match debris_skill(&name) {
                Some(skill) if host.has_root(&Root::State) => match state_file::try_lock(host, &skill_lock(skill)) {
                    Some(lock) => Some(lock),
                    None => continue,
                },
                _ => None,
            };
            remove_tree(host, root, &path);
            if let Some(lock) = lock {
                lock.release(host);
            }
            removed.push(path);
        }
    };
    for root in roots {
        if !host.has_root(root) {
            continue;
        }
        sweep(root, "");
        if *root == Root::State {
            sweep(root, "archive");
            // Temp files of a lock's renewal (its atomic replace) left by a dead process.
            sweep(root, state_file::LOCK_DIR);
            continue;
        }
        if !deep {
            continue;
        }
        let folders: Vec<String> = host
            .list_dir(root, "")
            .unwrap_or_default()
            .into_iter()
            .filter(|(name, kind)| *kind == EntryKind::Dir && !name.starts_with('.'))
            .map(|(name, _)| name)
            .collect();
        for folder in folders {
            sweep(root, &folder);
        }
    }
    for path in &removed {
        host.log(Level::Info, &format!("removed `{path}`, left by an operation that did not finish"));
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    use crate::host::WriteMode;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn old_debris_goes_and_young_debris_and_skills_stay() {
        let host = FakeHost::new(1_767_225_600_000);
        let t0 = host.now_ms();
        let w = |root: &Root, path: &str| host.write(root, path, b"x", WriteMode::CreateNew).unwrap();
        let user = Root::UserSkills;
        w(&user, "pdf/SKILL.md");
        w(&user, &format!("pdf/.SKILL.md.{t0}-1.self-evolve-tmp"));
        w(&user, &format!(".gone.archived-{t0}/SKILL.md"));
        w(&user, &format!(".gone.archived-{t0}/references/a.md"));
        w(&Root::State, &format!("archive/.partial-gone-{t0}/SKILL.md"));
        w(&Root::State, &format!("archive/gone-{t0}/SKILL.md"));
        host.advance(GRACE_MS - 1);
        assert!(
            cleanup(&host, &[user.clone(), Root::State], true).is_empty(),
            "young debris may be a call in progress"
        );
        host.advance(2);
        let removed = cleanup(&host, &[user.clone(), Root::State], true);
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert!(host.read(&user, "pdf/SKILL.md").is_ok());
        assert!(host.read(&Root::State, &format!("archive/gone-{t0}/SKILL.md")).is_ok());
        assert!(host.list_dir(&user, "").unwrap().iter().all(|(n, _)| !n.starts_with('.')));
        assert_eq!(host.list_dir(&user, "pdf").unwrap().len(), 1);
    }
}
