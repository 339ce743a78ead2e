//! The duplicate index over the listing: the skills closest to a proposed one, rebuilt only when
//! a root changed, and kept current by this process's own creates.

use crate::host::Host;
use crate::library::dedupe::{Index, Match, Terms};
use crate::library::storage::list_cache::{KNOWN_MAX_AGE_MS, ListCache};
use crate::library::storage::store::{Location, Store};

impl<H: Host> Store<'_, H> {
    /// The skills closest to a proposed one (every one scoring at least `floor`), from a
    /// duplicate index over every known skill that is rebuilt only when a root changed; and
    /// whether a skill of that very name is known.
    pub fn closest(
        &self,
        cache: &mut ListCache,
        name: &str,
        description: &str,
        limit: usize,
        floor: f64,
    ) -> (Vec<Match>, bool) {
        // Keyed by the roots' raw mtimes: this process's creates keep the index current
        // (`note_created`) without a rebuild, which a racy key would force after every one.
        let key = self.roots_mtimes();
        let now = self.host.now_ms();
        let fresh = cache.known.as_ref().is_some_and(|(k, _, built)| {
            *k == key && !key.iter().any(|(_, m)| *m == u64::MAX) && now.saturating_sub(*built) < KNOWN_MAX_AGE_MS
        });
        if !fresh {
            let listed = self.list_known(cache);
            let vocabulary = &mut cache.vocabulary;
            let entries: Vec<(&str, &Terms)> = listed
                .iter()
                .map(|l| (l.location.name.as_str(), l.summary.terms(vocabulary, &l.location.name)))
                .collect();
            let index = Index::from_terms(&cache.vocabulary, &entries);
            cache.known = Some((key, index, now));
        }
        match &cache.known {
            Some((_, index, _)) => {
                (index.closest(&cache.vocabulary, name, description, limit, floor), index.contains(name))
            }
            None => (Vec::new(), false),
        }
    }

    /// After this plugin created `location` itself: keep the duplicate index current instead of
    /// rebuilding it. The root's scan is left alone: the root changed, and only a rescan can
    /// tell whether another process changed it too.
    pub fn note_created(&self, cache: &mut ListCache, location: &Location, description: &str) {
        let new_key = self.roots_mtimes();
        let terms = Terms::of(&mut cache.vocabulary, &location.name, description);
        if let Some((key, index, _)) = cache.known.as_mut() {
            index.push(&cache.vocabulary, &location.name, &terms);
            *key = new_key;
        }
    }
}
