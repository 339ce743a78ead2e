//! What a served skill is (its files with their sizes and sha256), and the served entries the
//! listing cache keeps between pages: the types `catalog.rs` makes and `list_cache.rs` stores,
//! in a file of their own so neither imports the other.

use crate::host::{Root, Stat};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedFile {
    /// Relative to the skill's folder: `SKILL.md`, `references/api.md`.
    pub path: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedSkill {
    pub name: String,
    pub scope: &'static str,
    pub description: String,
    /// Every frontmatter field as a JSON object (plain YAML scalars typed by the core schema).
    pub frontmatter_json: String,
    /// `SKILL.md` first, then supporting files by path.
    pub files: Vec<ServedFile>,
}

/// A served entry and the stats it was made under: every folder of the skill, its SKILL.md and
/// every file in it (hidden ones and debris too), by path relative to the root. It stands while
/// each path stats the same (kind, size, mtime): a file added, removed or renamed (an atomic
/// replace too) changes its folder's mtime, an edit its file's size or mtime. Only made when
/// every mtime was settled (older than [`RACY_MS`](super::list_cache::RACY_MS)) at the stat taken before the reads, so a
/// change in the same timestamp tick as that stat is never hidden (git's racy rule).
#[derive(Debug, Clone)]
pub struct CachedServed {
    pub(super) stats: Vec<(String, Stat)>,
    pub(super) skill: ServedSkill,
}

/// Served entries by (root, SKILL.md path).
pub type ServedCache = HashMap<(Root, String), CachedServed>;
