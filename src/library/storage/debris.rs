//! The names of what a dead operation leaves behind, and how to tell them: temp files of atomic
//! writes, half-copied archives (`archive/.partial-…`), skills retired by a rename but not yet
//! removed (`.NAME.archived-…`), half-built restores (`.NAME.restoring-…`). Every such name is
//! hidden (a leading dot), so the agent never sees it as a skill or a file of one. Removing them
//! is `cleanup`; the store skips them when it lists a package's files.

use crate::state_file;

/// Prefix of an archive folder still being copied.
pub const PARTIAL_PREFIX: &str = ".partial-";
/// Marker of a skill entry retired by rename, waiting to be removed.
const RETIRED_MARK: &str = ".archived-";
/// Marker of a restored skill still being built under a hidden name, before its publishing rename.
const RESTORING_MARK: &str = ".restoring-";

/// The hidden name a retired skill entry (`name` or `name.md`) is renamed to.
pub fn retired_name(entry: &str, now_ms: u64) -> String {
    format!(".{entry}{RETIRED_MARK}{now_ms}")
}

/// The hidden name a skill entry being restored is built under.
pub fn restoring_name(entry: &str, now_ms: u64) -> String {
    format!(".{entry}{RESTORING_MARK}{now_ms}")
}

/// The time in a debris name (`…-<ms>` or `….<ms>-<n>.self-evolve-tmp`), if it has one.
pub(super) fn stamped_ms(name: &str) -> Option<u64> {
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
pub(super) fn debris_skill(name: &str) -> Option<&str> {
    if let Some(rest) = name.strip_prefix(PARTIAL_PREFIX) {
        return rest.rsplit_once('-').map(|(skill, _)| skill);
    }
    let rest = name.strip_prefix('.')?;
    let (entry, _) = rest.split_once(RESTORING_MARK).or_else(|| rest.split_once(RETIRED_MARK))?;
    Some(entry.strip_suffix(".md").unwrap_or(entry))
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
