//! Listing the skill roots: scanning each root for candidates, summarising each SKILL.md into the
//! cache (`list_cache`), the merged listing with shadowing applied, and pages of it. The
//! duplicate index built over it is `duplicates`.

use crate::host::{EntryKind, FsError, Host, Root};
use crate::library::storage::list_cache::{ListCache, Listed, Merged, Scan, Settled, Summary};
use crate::library::storage::list_index;
use crate::library::storage::skillfile::SkillFile;
use crate::library::storage::store::{Layout, Location, Scope, Store};
use std::collections::HashMap;
use std::rc::Rc;

/// A candidate (by index into its scan) that is a skill, with its summary.
type Present = (usize, Rc<Summary>);

impl<H: Host> Store<'_, H> {
    /// Every candidate location in one root, package before flat for the same name.
    fn scan_root(&self, scope: Scope, root: &Root, warnings: &mut Vec<String>) -> Vec<Location> {
        let entries = match self.host.list_dir(root, "") {
            Ok(entries) => entries,
            Err(FsError::NotFound) => return Vec::new(),
            Err(err) => {
                warnings.push(format!("could not list the {} skills folder: {err}", scope.as_str()));
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (name, kind) in entries {
            if name.starts_with('.') {
                continue;
            }
            match kind {
                EntryKind::Dir => out.push(Location { scope, layout: Layout::Package, root: root.clone(), name }),
                EntryKind::File => {
                    if let Some(stem) = name.strip_suffix(".md")
                        && !stem.is_empty()
                        && !name.eq_ignore_ascii_case("README.md")
                    {
                        out.push(Location { scope, layout: Layout::Flat, root: root.clone(), name: stem.to_string() });
                    }
                }
                EntryKind::Symlink => warnings.push(format!(
                    "{} skills folder: `{name}` is a symlink and is ignored (symlinks are never followed)",
                    scope.as_str()
                )),
            }
        }
        out
    }

    /// All skills in both scopes; the first location per name wins.
    /// A root's candidates, rescanned only when the root's mtime changed.
    fn scan_cached(
        &self,
        scope: Scope,
        root: &Root,
        scans: &mut HashMap<Root, (u64, Rc<Scan>)>,
        settled: &Settled,
        warnings: &mut Vec<String>,
    ) -> Rc<Scan> {
        // Stat before listing: a change in between makes the next call rescan, never miss.
        let mtime = match self.host.stat(root, "") {
            Ok(stat) => stat.modified_ms,
            Err(_) => return Rc::new(Scan::new(self.scan_root(scope, root, warnings))),
        };
        if let Some((cached, locations)) = scans.get(root)
            && *cached == mtime
        {
            return Rc::clone(locations);
        }
        let scan = Rc::new(Scan::new(self.scan_root(scope, root, warnings)));
        if settled.mtime(self.host, mtime) {
            scans.insert(root.clone(), (mtime, Rc::clone(&scan)));
        } else {
            scans.remove(root);
        }
        scan
    }

    /// The roots' mtimes: the key under which a merged listing stays valid. A root that cannot
    /// be stat'ed, or changed too recently to be trusted (`list_cache::RACY_MS`, on the filesystem's
    /// clock), is `u64::MAX` (never valid).
    fn roots_key(&self, settled: &Settled) -> Vec<(Root, u64)> {
        self.roots_mtimes()
            .into_iter()
            .map(|(root, mtime)| if settled.mtime(self.host, mtime) { (root, mtime) } else { (root, u64::MAX) })
            .collect()
    }

    pub(super) fn roots_mtimes(&self) -> Vec<(Root, u64)> {
        self.roots()
            .into_iter()
            .map(|(_, root)| {
                let mtime = self.host.stat(&root, "").map_or(u64::MAX, |s| s.modified_ms);
                (root, mtime)
            })
            .collect()
    }

    /// All skills in both scopes, every SKILL.md re-validated by size and mtime.
    pub fn list(&self, cache: &mut ListCache) -> (Vec<Listed>, Vec<String>) {
        let (listed, warnings) = self.list_with(cache, true, true);
        (Rc::unwrap_or_clone(listed), warnings)
    }

    /// Like `list`, but a skill already in the cache is not re-stat'ed: added and removed
    /// skills are seen at once, an edit to a known one after the last full listing is not.
    /// Enough for duplicate detection, at a fraction of the cost on large libraries. Shared
    /// with the merged listing the cache keeps, not copied.
    pub fn list_known(&self, cache: &mut ListCache) -> Rc<Vec<Listed>> {
        self.list_with(cache, false, false).0
    }

    /// One page of the listing, by name: up to `limit` skills from `offset`, and how many there
    /// are in all. Only the page's skills are stat'ed (the rest come from memory or, in a fresh
    /// process, from the persisted index): an edit is seen whenever the skill is shown. A skill
    /// whose SKILL.md went away from a folder that stayed counts in the total until a page or a
    /// full listing shows it gone; added and removed folders are seen at once (root mtime).
    pub fn list_page(&self, cache: &mut ListCache, offset: usize, limit: usize) -> (Vec<Listed>, usize, Vec<String>) {
        for _ in 0..3 {
            let (all, warnings) = self.list_with(cache, false, true);
            let total = all.len();
            let page: Vec<Listed> = all.iter().skip(offset).take(limit).cloned().collect();
            if self.still_current(cache, &page) {
                return (page, total, warnings);
            }
        }
        // Files changing under every attempt: the full listing stats everything once.
        let (all, warnings) = self.list_with(cache, true, true);
        let total = all.len();
        (all.iter().skip(offset).take(limit).cloned().collect(), total, warnings)
    }

    /// Stats the listed skills' SKILL.md files; one that changed or went away leaves the cache
    /// (its persisted shard is rewritten next), so the next listing reads it again. Whether
    /// every one was as cached.
    fn still_current(&self, cache: &mut ListCache, page: &[Listed]) -> bool {
        let mut current = true;
        let mut by_root: Vec<(Root, Vec<String>)> = Vec::new();
        for listed in page {
            let root = &listed.location.root;
            match by_root.iter_mut().find(|(r, _)| r == root) {
                Some((_, paths)) => paths.push(listed.location.path()),
                None => by_root.push((root.clone(), vec![listed.location.path()])),
            }
        }
        for (root, paths) in by_root {
            let stats = self.host.stat_many(&root, &paths);
            let root_cache = cache.entries.entry(root.clone()).or_default();
            for (path, stat) in paths.iter().zip(stats) {
                let same = match (&stat, root_cache.get(path)) {
                    (Ok(stat), Some((size, mtime, _))) => {
                        stat.kind == EntryKind::File && stat.size == *size && stat.modified_ms == *mtime
                    }
                    _ => false,
                };
                if !same {
                    current = false;
                    root_cache.remove(path);
                    cache.dirty.entry(root.clone()).or_default().insert(list_index::shard_of(path));
                    cache.known = None;
                    cache.generation += 1;
                }
            }
        }
        current
    }

    /// `revalidate`: stat every known skill (else only new candidates); `persist`: write the
    /// persisted index's changed shards (listings do; the duplicate check inside a write, which
    /// may yet be refused, leaves the state root as it was).
    fn list_with(&self, cache: &mut ListCache, revalidate: bool, persist: bool) -> (Rc<Vec<Listed>>, Vec<String>) {
        // Nothing changed since the last merge (roots, cached summaries, folders that were not
        // skills): the merged listing stands, and a warm page costs the page alone.
        let key = self.roots_key(&cache.settled);
        if !revalidate
            && let Some(merged) = &cache.merged
            && merged.key == key
            && merged.generation == cache.generation
            && !key.iter().any(|(_, m)| *m == u64::MAX)
            && merged.not_skills.iter().all(|(root, paths)| {
                paths.is_empty()
                    || self.host.stat_many(root, paths).iter().all(|s| !matches!(s, Ok(s) if s.kind != EntryKind::Dir))
            })
        {
            return (Rc::clone(&merged.listed), merged.warnings.clone());
        }
        let mut warnings = Vec::new();
        let mut not_skills: Vec<(Root, Vec<String>)> = Vec::new();
        let ListCache { entries, scans, loaded, dirty, project_cwds, generation, settled, .. } = cache;
        // Phase 1, per root: which candidates are skills, with their summaries.
        let mut found: Vec<(Rc<Scan>, Vec<Present>)> = Vec::new();
        for (scope, root) in self.roots() {
            let scan = self.scan_cached(scope, &root, scans, settled, &mut warnings);
            let root_cache = entries.entry(root.clone()).or_default();
            let persisted = list_index::folder(&root, project_cwds.get(&root).map(String::as_str));
            if let Some(folder) = &persisted
                && loaded.insert(root.clone())
            {
                for (path, size, mtime, summary) in list_index::load(self.host, folder) {
                    root_cache.entry(path).or_insert((size, mtime, summary));
                }
            }
            let changed = dirty.entry(root.clone()).or_default();
            let mut present: Vec<Present> = Vec::with_capacity(scan.locations.len());
            let mut to_stat: Vec<usize> = Vec::new();
            let mut root_not_skills: Vec<String> = Vec::new();
            for (i, path) in scan.paths.iter().enumerate() {
                match root_cache.get(path.as_str()) {
                    Some((_, _, summary)) if !revalidate => present.push((i, Rc::clone(summary))),
                    _ => to_stat.push(i),
                }
            }
            let stats = if to_stat.len() == scan.paths.len() {
                self.host.stat_many(&root, &scan.paths)
            } else {
                let paths: Vec<String> = to_stat.iter().map(|&i| scan.paths[i].clone()).collect();
                self.host.stat_many(&root, &paths)
            };
            for (&i, stat) in to_stat.iter().zip(stats) {
                let (location, path) = (&scan.locations[i], &scan.paths[i]);
                match stat {
                    Ok(stat) if stat.kind == EntryKind::File => {
                        let cached = root_cache
                            .get(path.as_str())
                            .filter(|(size, modified, _)| *size == stat.size && *modified == stat.modified_ms)
                            .map(|(_, _, summary)| Rc::clone(summary));
                        let summary = match cached {
                            Some(summary) => summary,
                            None => {
                                let summary = Rc::new(self.summarize(location));
                                root_cache.insert(path.clone(), (stat.size, stat.modified_ms, Rc::clone(&summary)));
                                changed.insert(list_index::shard_of(path));
                                *generation += 1;
                                summary
                            }
                        };
                        present.push((i, summary));
                    }
                    Ok(stat) if stat.kind == EntryKind::Symlink => {
                        warnings.push(format!("{}: SKILL.md is a symlink and is ignored", location.describe()));
                        root_not_skills.push(path.clone());
                    }
                    // A folder without SKILL.md is not a skill (yet).
                    _ => root_not_skills.push(path.clone()),
                }
            }
            not_skills.push((root.clone(), root_not_skills));
            if let Some(folder) = persisted.as_ref().filter(|_| persist) {
                // After a full listing, entries of skills that are gone leave the index too.
                if revalidate {
                    let skills: std::collections::HashSet<&str> =
                        present.iter().map(|(i, _)| scan.paths[*i].as_str()).collect();
                    root_cache.retain(|path, _| {
                        let keep = skills.contains(path.as_str());
                        if !keep {
                            changed.insert(list_index::shard_of(path));
                        }
                        keep
                    });
                }
                for shard in std::mem::take(changed) {
                    let entries = root_cache.iter().filter(|(path, _)| list_index::shard_of(path) == shard);
                    if let Err(err) = list_index::save(self.host, folder, shard, entries) {
                        warnings.push(format!("could not save the listing index (shard {shard}): {err}"));
                    }
                }
            }
            found.push((scan, present));
        }
        // Phase 2: the first location per name wins (roots in priority order, package before flat).
        let mut by_name: Vec<Listed> = Vec::new();
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (scan, present) in &found {
            for layout in [Layout::Package, Layout::Flat] {
                for (i, summary) in present.iter().filter(|(i, _)| scan.locations[*i].layout == layout) {
                    let location = &scan.locations[*i];
                    match index.get(location.name.as_str()) {
                        Some(&at) => by_name[at].shadows.push(location.clone()),
                        None => {
                            index.insert(location.name.as_str(), by_name.len());
                            by_name.push(Listed {
                                location: location.clone(),
                                summary: Rc::clone(summary),
                                shadows: Vec::new(),
                            });
                        }
                    }
                }
            }
        }
        drop(index);
        for listed in &by_name {
            for hidden in &listed.shadows {
                warnings.push(format!("{} is shadowed by the {}", hidden.describe(), listed.location.describe()));
            }
        }
        by_name.sort_unstable_by(|a, b| a.location.name.cmp(&b.location.name));
        let listed = Rc::new(by_name);
        let generation = cache.generation;
        cache.merged =
            Some(Merged { key, generation, listed: Rc::clone(&listed), warnings: warnings.clone(), not_skills });
        (listed, warnings)
    }

    fn summarize(&self, location: &Location) -> Summary {
        let bytes = match self.host.read(&location.root, &location.path()) {
            Ok(bytes) => bytes,
            Err(err) => {
                return Summary {
                    description: String::new(),
                    owned: false,
                    pinned: false,
                    status: if err.is_too_large() { "too-large" } else { "unreadable" }.into(),
                    warnings: vec![format!("cannot read: {err}")],
                    hash: String::new(),
                    terms: Default::default(),
                };
            }
        };
        let hash = {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(&bytes);
            crate::digest::hex(&digest[..8])
        };
        match SkillFile::parse_bytes(&bytes) {
            Ok(skill) => Summary {
                hash,
                terms: Default::default(),
                description: skill.description().unwrap_or_default().to_string(),
                owned: skill.is_ours(),
                pinned: skill.is_pinned(),
                status: skill.status(),
                warnings: skill.validate(Some(&location.name)).into_iter().map(|v| v.message).collect(),
            },
            Err(err) => Summary {
                description: String::new(),
                owned: false,
                pinned: false,
                status: "invalid".into(),
                warnings: vec![format!("cannot parse: {}", err.message)],
                hash,
                terms: Default::default(),
            },
        }
    }
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod list_tests;
