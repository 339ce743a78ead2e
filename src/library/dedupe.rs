//! Lexical duplicate detection for `create`: name tokens (order-free containment) and
//! description terms weighted by how rare they are in the library (Dice), so reworded twins
//! score high and skills that only share common words score low.

use std::collections::{BTreeSet, HashMap};

/// Words that carry no topic.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "as", "at", "be", "by", "can", "do", "for", "from", "how", "if", "in", "into",
    "is", "it", "its", "of", "on", "or", "so", "that", "the", "their", "then", "this", "to", "use", "used", "using",
    "when", "with", "you", "your", "skill", "skills", "via", "what", "which", "who", "will", "should", "about", "all",
    "also", "whenever", "need", "needs", "want", "asks", "user",
];

#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub name: String,
    pub description: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    pub name: String,
    pub score: f64,
    pub name_score: f64,
    pub description_score: f64,
}

/// Light stemming: enough to meet "deploy"/"deploying"/"deployment" and "images"/"image".
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    for suffix in ["ations", "ation", "ments", "ment", "ings", "ing", "ers", "er", "ies", "es", "ed", "ly", "s"] {
        if w.len() <= suffix.len() + 3 || !w.ends_with(suffix) {
            continue;
        }
        let stem = &w[..w.len() - suffix.len()];
        match suffix {
            // "boxes", "matches" lose "es"; "images" only loses "s".
            "es" if !["s", "x", "z", "ch", "sh"].iter().any(|e| stem.ends_with(e)) => continue,
            "s" if stem.ends_with('s') => continue,
            _ => {}
        }
        w.truncate(stem.len());
        if suffix == "ies" {
            w.push('y');
        }
        break;
    }
    w
}

pub fn terms(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(|w| w.to_lowercase())
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

fn name_terms(name: &str) -> BTreeSet<String> {
    terms(&name.replace('-', " "))
}

/// Interned terms: each distinct term gets a small id, so scoring compares sorted id lists.
#[derive(Default)]
pub struct Vocabulary {
    ids: HashMap<String, u32>,
}

impl Vocabulary {
    pub fn intern(&mut self, terms: BTreeSet<String>) -> Vec<u32> {
        let mut ids: Vec<u32> = terms
            .into_iter()
            .map(|t| {
                let next = self.ids.len() as u32;
                *self.ids.entry(t).or_insert(next)
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// Ids of known terms; unknown terms are counted, not stored.
    fn lookup(&self, terms: &BTreeSet<String>) -> (Vec<u32>, usize) {
        let mut ids: Vec<u32> = terms.iter().filter_map(|t| self.ids.get(t).copied()).collect();
        ids.sort_unstable();
        let unknown = terms.len() - ids.len();
        (ids, unknown)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// A skill's terms, interned: name tokens and all terms (description plus name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Terms {
    pub name: Vec<u32>,
    pub all: Vec<u32>,
}

impl Terms {
    pub fn of(vocabulary: &mut Vocabulary, name: &str, description: &str) -> Terms {
        let names = name_terms(name);
        let mut all = terms(description);
        all.extend(names.iter().cloned());
        Terms { name: vocabulary.intern(names), all: vocabulary.intern(all) }
    }
}

/// Scores a proposed skill against every existing one; best first. Only skills sharing a
/// term with the proposal are scored (the others score 0).
#[derive(Default)]
pub struct Index {
    names: Vec<String>,
    terms: Vec<Terms>,
    document_frequency: Vec<u32>,
    postings: Vec<Vec<u32>>,
}

impl Index {
    pub fn from_terms(vocabulary: &Vocabulary, entries: &[(&str, &Terms)]) -> Index {
        let mut index = Index::default();
        for (name, terms) in entries {
            index.push(vocabulary, name, terms);
        }
        index
    }

    /// Adds one skill (the index is kept current after this plugin's own creates).
    pub fn push(&mut self, vocabulary: &Vocabulary, name: &str, terms: &Terms) {
        if self.document_frequency.len() < vocabulary.len() {
            self.document_frequency.resize(vocabulary.len(), 0);
            self.postings.resize(vocabulary.len(), Vec::new());
        }
        let i = self.names.len() as u32;
        for &t in &terms.all {
            if let (Some(df), Some(posting)) =
                (self.document_frequency.get_mut(t as usize), self.postings.get_mut(t as usize))
            {
                *df += 1;
                posting.push(i);
            }
        }
        self.names.push(name.to_string());
        self.terms.push(terms.clone());
    }

    /// Rare terms weigh more: ln((N + 2) / (df + 0.5)), at least a small floor.
    fn weight_df(&self, df: u32) -> f64 {
        let n = self.names.len() as f64 + 2.0;
        (n / (f64::from(df) + 0.5)).ln().max(0.1)
    }

    fn weight(&self, term: u32) -> f64 {
        self.weight_df(self.document_frequency.get(term as usize).copied().unwrap_or(0))
    }

    pub fn closest(&self, vocabulary: &Vocabulary, name: &str, description: &str, limit: usize) -> Vec<Match> {
        let names = name_terms(name);
        let mut all = terms(description);
        all.extend(names.iter().cloned());
        let (name_ids, name_unknown) = vocabulary.lookup(&names);
        let (ids, unknown) = vocabulary.lookup(&all);
        let unknown_weight = unknown as f64 * self.weight_df(0);
        let query = Query { name_ids: &name_ids, name_unknown, ids: &ids, unknown_weight, skip: None };
        let total = |i: usize| self.terms[i].all.iter().map(|&t| self.weight(t)).sum();
        self.score(&query, |t| self.weight(t), total, limit)
    }

    /// Every skill sharing a term with the query, scored; best first.
    fn score(&self, q: &Query, weight: impl Fn(u32) -> f64, total: impl Fn(usize) -> f64, limit: usize) -> Vec<Match> {
        let proposal_weight: f64 = q.ids.iter().map(|&t| weight(t)).sum::<f64>() + q.unknown_weight;
        // Each skill sharing a term, once: a bitmap over the skills, not a sort of every posting
        // (common terms post nearly every skill).
        let mut seen = vec![0u64; self.names.len().div_ceil(64)];
        let mut candidates: Vec<u32> = Vec::new();
        for &i in q.ids.iter().flat_map(|&t| self.postings.get(t as usize).into_iter().flatten()) {
            let (word, bit) = (i as usize / 64, 1u64 << (i % 64));
            if let Some(w) = seen.get_mut(word)
                && *w & bit == 0
            {
                *w |= bit;
                candidates.push(i);
            }
        }
        // (score, name score, description score, skill), names fetched only for the best.
        let mut scored: Vec<(f64, f64, f64, u32)> = candidates
            .into_iter()
            .filter(|&i| Some(i as usize) != q.skip)
            .map(|i| {
                let other = &self.terms[i as usize];
                // Names: containment, so `deploy-staging` inside `staging-deploy-order` counts fully.
                let name_common = count_common(q.name_ids, &other.name);
                let smaller = (q.name_ids.len() + q.name_unknown).min(other.name.len());
                let name_score = if smaller == 0 { 0.0 } else { name_common as f64 / smaller as f64 };
                // Descriptions: rarity-weighted Dice over their terms.
                let common: f64 = common_ids(q.ids, &other.all).map(&weight).sum();
                let total = proposal_weight + total(i as usize);
                let description_score = if total == 0.0 { 0.0 } else { 2.0 * common / total };
                // Identical names alone are not enough; nor are descriptions alone.
                let score = 0.45 * name_score + 0.55 * description_score;
                (round(score), round(name_score), round(description_score), i)
            })
            .collect();
        // Best first, ties by name: only the best `limit` are ordered (a selection, then a sort).
        let order = |a: &(f64, f64, f64, u32), b: &(f64, f64, f64, u32)| {
            b.0.total_cmp(&a.0).then_with(|| self.names[a.3 as usize].cmp(&self.names[b.3 as usize]))
        };
        if limit == 0 {
            return Vec::new();
        }
        if scored.len() > limit {
            scored.select_nth_unstable_by(limit - 1, order);
            scored.truncate(limit);
        }
        scored.sort_by(order);
        scored
            .into_iter()
            .map(|(score, name_score, description_score, i)| Match {
                name: self.names[i as usize].clone(),
                score,
                name_score,
                description_score,
            })
            .collect()
    }

    /// For scoring the whole library against itself (`check`): every term's weight and every
    /// skill's total weight computed once, not once per pair (the index no longer changes).
    pub fn scorer(&self) -> Scorer<'_> {
        let weight: Vec<f64> = self.document_frequency.iter().map(|&df| self.weight_df(df)).collect();
        let of = |t: u32| weight.get(t as usize).copied().unwrap_or_else(|| self.weight_df(0));
        let total = self.terms.iter().map(|terms| terms.all.iter().map(|&t| of(t)).sum()).collect();
        Scorer { index: self, weight, total }
    }
}

/// A query's interned terms.
struct Query<'q> {
    name_ids: &'q [u32],
    name_unknown: usize,
    ids: &'q [u32],
    unknown_weight: f64,
    /// The query's own entry, when it is one of the index's skills.
    skip: Option<usize>,
}

/// Scores the index's own skills against each other with weights computed once.
pub struct Scorer<'i> {
    index: &'i Index,
    weight: Vec<f64>,
    total: Vec<f64>,
}

impl Scorer<'_> {
    /// The skills closest to skill `i` of the index (itself left out); best first.
    pub fn closest_to(&self, i: usize, limit: usize) -> Vec<Match> {
        let Some(terms) = self.index.terms.get(i) else { return Vec::new() };
        let query =
            Query { name_ids: &terms.name, name_unknown: 0, ids: &terms.all, unknown_weight: 0.0, skip: Some(i) };
        let weight = |t: u32| self.weight.get(t as usize).copied().unwrap_or_else(|| self.index.weight_df(0));
        self.index.score(&query, weight, |j| self.total[j], limit)
    }
}

/// Convenience for callers without a cache: builds everything from scratch.
pub fn closest_among(existing: &[Candidate], proposed: &Candidate, limit: usize) -> Vec<Match> {
    let mut vocabulary = Vocabulary::default();
    let terms: Vec<Terms> = existing.iter().map(|c| Terms::of(&mut vocabulary, &c.name, &c.description)).collect();
    let entries: Vec<(&str, &Terms)> = existing.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
    Index::from_terms(&vocabulary, &entries).closest(&vocabulary, &proposed.name, &proposed.description, limit)
}

fn count_common(a: &[u32], b: &[u32]) -> usize {
    common_ids(a, b).count()
}

/// Ids in both sorted lists.
fn common_ids<'x>(a: &'x [u32], b: &'x [u32]) -> impl Iterator<Item = u32> + 'x {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                    return Some(a[i - 1]);
                }
            }
        }
        None
    })
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn c(name: &str, description: &str) -> Candidate {
        Candidate { name: name.into(), description: description.into() }
    }

    fn library() -> Vec<Candidate> {
        vec![
            c(
                "docker-deploy",
                "Deploy the web app to the staging server with docker compose, then check the health endpoint.",
            ),
            c(
                "python-style",
                "Python code style for this team: formatting, imports and naming. Use when writing Python.",
            ),
            c(
                "git-commit-style",
                "How to write commit messages: imperative subject, body wrapped at 72, reference the issue.",
            ),
            c("pdf-extract", "Extract text and tables from PDF files with pdfplumber. Use when a PDF is given."),
            c("sql-migrations", "Write and apply database migrations safely: backups, transactions, rollback plans."),
        ]
    }

    #[test]
    fn reworded_twins_score_above_the_default_threshold() {
        let lib = library();
        let twin = c(
            "deploy-with-docker",
            "Deploying the web application to staging using docker compose and checking the health endpoint.",
        );
        let best = &closest_among(&lib, &twin, 3)[0];
        assert_eq!(best.name, "docker-deploy");
        assert_eq!(best.name_score, 1.0);
        assert!(best.score >= 0.7, "{best:?}");
    }

    #[test]
    fn skills_sharing_only_common_words_stay_apart() {
        let lib = library();
        let other = c(
            "rust-style",
            "Rust code style for this team: formatting with rustfmt, clippy lints. Use when writing Rust.",
        );
        let best = &closest_among(&lib, &other, 1)[0];
        assert!(best.score < 0.5, "{best:?}");
        let unrelated = c("slack-gif", "Make animated GIFs small enough for Slack emoji and messages.");
        assert!(closest_among(&lib, &unrelated, 1).first().is_none_or(|m| m.score < 0.2));
    }

    #[test]
    fn a_narrower_name_for_the_same_task_is_a_duplicate() {
        let mut lib = library();
        lib[0] = c(
            "deploy-staging",
            "Deploy the web app to the staging environment and check it came up. Use when asked to deploy or ship to staging.",
        );
        let p = c(
            "staging-deploy-order",
            "Deploy the web app to staging: migrate first, then deploy and wait. Use when deploying to staging.",
        );
        let best = &closest_among(&lib, &p, 1)[0];
        assert_eq!((best.name.as_str(), best.name_score), ("deploy-staging", 1.0));
        assert!(best.score >= 0.6, "{best:?}");
    }

    #[test]
    fn the_scorer_gives_the_scores_closest_gives() {
        let mut lib = library();
        lib.push(c("deploy-with-docker", "Deploying the web application to staging using docker compose."));
        let mut vocabulary = Vocabulary::default();
        let terms: Vec<Terms> = lib.iter().map(|c| Terms::of(&mut vocabulary, &c.name, &c.description)).collect();
        let entries: Vec<(&str, &Terms)> = lib.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
        let index = Index::from_terms(&vocabulary, &entries);
        let scorer = index.scorer();
        for (i, skill) in lib.iter().enumerate() {
            let expected: Vec<Match> = index
                .closest(&vocabulary, &skill.name, &skill.description, 10)
                .into_iter()
                .filter(|m| m.name != skill.name)
                .take(3)
                .collect();
            assert_eq!(scorer.closest_to(i, 3), expected, "{}", skill.name);
        }
    }

    #[test]
    fn stemming_meets_word_forms() {
        assert_eq!(stem("deploying"), "deploy");
        assert_eq!(stem("deployment"), "deploy");
        assert_eq!(stem("images"), "image");
        assert_eq!(stem("matches"), "match");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("image"), "image");
        assert_eq!(stem("queries"), "query");
        assert_eq!(stem("go"), "go");
    }
}
