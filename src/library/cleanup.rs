//! What a dead operation leaves behind, recognised and removed: temp files of atomic writes,
//! half-copied archives (`archive/.partial-…`), skills retired by a rename but not yet removed
//! (`.NAME.archived-…`), half-built restores (`.NAME.restoring-…`), and stale locks. Every such
//! name is hidden (a leading dot), so the agent never sees it as a skill or a file of one;
//! `cleanup` runs at init and on the tick.

use crate::host::{EntryKind, Host, Level, Root};
use crate::state_file;

/// Prefix of an archive folder still being copied.
pub const PARTIAL_PREFIX: &str = ".partial-";
/// Marker of a skill entry retired by rename, waiting to be removed.
const RETIRED_MARK: &str = ".archived-";
/// Marker of a restored skill still being built under a hidden name, before its publishing rename.
const RESTORING_MARK: &str = ".restoring-";
/// Debris younger than this may belong to a call in progress in another process.
const GRACE_MS: u64 = 60_000;

/// The hidden name a retired skill entry (`name` or `name.md`) is renamed to.
pub fn retired_name(entry: &str, now_ms: u64) -> String {
    format!(".{entry}{RETIRED_MARK}{now_ms}")
}

/// The hidden name a skill entry being restored is built under.
pub fn restoring_name(entry: &str, now_ms: u64) -> String {
    format!(".{entry}{RESTORING_MARK}{now_ms}")
}

/// The time in a debris name (`…-<ms>` or `….<ms>-<n>.self-evolve-tmp`), if it has one.
fn stamped_ms(name: &str) -> Option<u64> {
    let core = name.strip_suffix(state_file::TEMP_SUFFIX).unwrap_or(name);
    let tail = core.rsplit(['-', '.']).find(|part| part.len() >= 10 && part.chars().all(|c| c.is_ascii_digit()));
    tail.and_then(|t| t.parse().ok())
}

/// Whether an entry name is debris of a dead operation (never a skill or a file of one).
pub fn is_debris(name: &str) -> bool {
    name.starts_with(PARTIAL_PREFIX)
        || (name.starts_with('.') && (name.contains(RETIRED_MARK) || name.contains(RESTORING_MARK)))
        || state_file::is_temp(name)
}

/// The skill a half-built entry belongs to: `.partial-NAME-<ms>` (an archive being copied),
/// `.NAME.restoring-<ms>` or `.NAME.md.restoring-<ms>` (a restore being built),
/// `.NAME.archived-<ms>` (a skill being removed after its archive). Skill names hold no dots.
fn debris_skill(name: &str) -> Option<&str> {
    if let Some(rest) = name.strip_prefix(PARTIAL_PREFIX) {
        return rest.rsplit_once('-').map(|(skill, _)| skill);
    }
    let rest = name.strip_prefix('.')?;
    let (entry, _) = rest.split_once(RESTORING_MARK).or_else(|| rest.split_once(RETIRED_MARK))?;
    Some(entry.strip_suffix(".md").unwrap_or(entry))
}

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
                Some(skill) if host.has_root(&Root::State) => {
                    match state_file::try_lock(host, &crate::library::store::skill_lock(skill)) {
                        Some(lock) => Some(lock),
                        None => continue,
                    }
                }
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
    fn debris_names_carry_their_time() {
        assert_eq!(stamped_ms(".pdf.archived-1767225600000"), Some(1_767_225_600_000));
        assert_eq!(stamped_ms(".SKILL.md.1767225600000-3.self-evolve-tmp"), Some(1_767_225_600_000));
        assert_eq!(stamped_ms(".partial-pdf-1767225600000"), Some(1_767_225_600_000));
        assert_eq!(stamped_ms("pdf"), None);
        assert!(is_debris(".pdf.archived-1") && is_debris(".partial-x-1") && is_debris(".a.1-1.self-evolve-tmp"));
        assert!(!is_debris("pdf") && !is_debris(".hidden-notes"));
        assert!(is_debris(".pdf.restoring-1") && is_debris(".pdf.md.restoring-1"));
        assert_eq!(debris_skill(".partial-pdf-tables-1767225600000"), Some("pdf-tables"));
        assert_eq!(debris_skill(".pdf-tables.md.restoring-1767225600000"), Some("pdf-tables"));
        assert_eq!(debris_skill(".pdf-tables.archived-1767225600000"), Some("pdf-tables"));
        assert_eq!(debris_skill(".SKILL.md.1767225600000-3.self-evolve-tmp"), None);
    }

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
