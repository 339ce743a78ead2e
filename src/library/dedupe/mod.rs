//! Lexical duplicate detection: name tokens (order-free containment) and description terms
//! weighted by how rare they are in the library (Dice), so reworded twins score high and skills
//! that only share common words score low.
//!
//! Neither `create` nor `check` compares every pair. A pair can only reach the threshold if
//! the descriptions share enough weight, and that weight must include one of each side's
//! heaviest terms (prefix filtering): so candidates come from the postings of those rare terms
//! only, and common words, whose postings hold nearly every skill, are never walked.

mod pairs;
mod terms;

use terms::name_terms;
pub use terms::{Terms, Vocabulary, stem, terms};

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

/// The library's skills with their terms and the postings of every term.
#[derive(Default)]
pub struct Index {
    names: Vec<String>,
    terms: Vec<Terms>,
    document_frequency: Vec<u32>,
    postings: Vec<Vec<u32>>,
    /// Per term: the skills whose name holds it.
    name_postings: Vec<Vec<u32>>,
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
            self.name_postings.resize(vocabulary.len(), Vec::new());
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
        for &t in &terms.name {
            if let Some(posting) = self.name_postings.get_mut(t as usize) {
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

    /// Whether a skill of this name is indexed.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The skills closest to a proposed one, best first. Every skill scoring at least `floor`
    /// is found; below it, skills sharing only light terms may be left out (a `floor` of 0
    /// scores every skill sharing a term).
    pub fn closest(
        &self,
        vocabulary: &Vocabulary,
        name: &str,
        description: &str,
        limit: usize,
        floor: f64,
    ) -> Vec<Match> {
        let names = name_terms(name);
        let mut all = terms(description);
        all.extend(names.iter().cloned());
        let (name_ids, name_unknown) = vocabulary.lookup(&names);
        let (ids, unknown) = vocabulary.lookup(&all);
        let unknown_weight = unknown as f64 * self.weight_df(0);
        let weight = |t: u32| self.weight(t);
        // Two routes to every skill that can score `floor` (see `pairs`): descriptions through
        // their heaviest terms (unknown terms are the heaviest and post nothing: they open the
        // run), and names sharing at least half of the shorter one.
        let probe = match low_share(floor) {
            Some(share) => heaviest(&ids, weight, unknown_weight, share),
            None => ids.clone(),
        };
        let whole = ids.iter().map(|&t| weight(t)).sum::<f64>() + unknown_weight;
        let query = Query { name_ids: &name_ids, name_unknown, ids: &ids, probe: &probe, whole, skip: None };
        let total = |i: usize| self.terms[i].all.iter().map(|&t| self.weight(t)).sum();
        let mut seen = vec![0u64; self.names.len().div_ceil(64)];
        let mut first = |i: u32| match seen.get_mut(i as usize / 64) {
            Some(w) if *w & (1u64 << (i % 64)) == 0 => {
                *w |= 1u64 << (i % 64);
                true
            }
            _ => false,
        };
        let by_description = probe.iter().flat_map(|&t| self.postings.get(t as usize).into_iter().flatten());
        let mut candidates: Vec<u32> = by_description.copied().filter(|&i| first(i)).collect();
        let by_name = name_ids.iter().flat_map(|&t| self.name_postings.get(t as usize).into_iter().flatten());
        candidates.extend(by_name.copied().filter(|&i| first(i) && self.name_score(&query, i) >= NAME_SPLIT));
        let mut scored: Vec<Scored> =
            candidates.into_iter().filter_map(|i| self.score_above(&query, i, weight, total, floor)).collect();
        self.best(&mut scored, limit)
    }

    /// Skills sharing a term of `q.probe`, each once (a bitmap over the skills, not a sort of
    /// every posting), `q.skip` left out.
    fn candidates(&self, q: &Query) -> Vec<u32> {
        let mut seen = vec![0u64; self.names.len().div_ceil(64)];
        let mut out: Vec<u32> = Vec::new();
        for &i in q.probe.iter().flat_map(|&t| self.postings.get(t as usize).into_iter().flatten()) {
            let (word, bit) = (i as usize / 64, 1u64 << (i % 64));
            if let Some(w) = seen.get_mut(word)
                && *w & bit == 0
                && Some(i as usize) != q.skip
            {
                *w |= bit;
                out.push(i);
            }
        }
        out
    }

    /// One skill scored against the query when it can reach `floor`: the names are compared
    /// first (a few ids), and a pair whose names leave it short even with identical
    /// descriptions is not scored further.
    fn score_above(
        &self,
        q: &Query,
        i: u32,
        weight: impl Fn(u32) -> f64,
        total: impl Fn(usize) -> f64,
        floor: f64,
    ) -> Option<Scored> {
        let name_score = self.name_score(q, i);
        if NAME_WEIGHT * name_score + DESCRIPTION_WEIGHT < floor - 0.001 {
            return None;
        }
        Some(self.score(q, i, name_score, weight, total)).filter(|s| s.0 >= floor)
    }

    /// Names: containment, so `deploy-staging` inside `staging-deploy-order` counts fully.
    fn name_score(&self, q: &Query, i: u32) -> f64 {
        let other = &self.terms[i as usize];
        let name_common = count_common(q.name_ids, &other.name);
        let smaller = (q.name_ids.len() + q.name_unknown).min(other.name.len());
        if smaller == 0 { 0.0 } else { name_common as f64 / smaller as f64 }
    }

    /// One skill scored against the query: (score, name score, description score, skill).
    fn score(
        &self,
        q: &Query,
        i: u32,
        name_score: f64,
        weight: impl Fn(u32) -> f64,
        total: impl Fn(usize) -> f64,
    ) -> Scored {
        let other = &self.terms[i as usize];
        // Descriptions: rarity-weighted Dice over their terms.
        let common: f64 = common_ids(q.ids, &other.all).map(&weight).sum();
        let sum = q.whole + total(i as usize);
        let description_score = if sum == 0.0 { 0.0 } else { 2.0 * common / sum };
        // Identical names alone are not enough; nor are descriptions alone.
        let score = NAME_WEIGHT * name_score + DESCRIPTION_WEIGHT * description_score;
        (round(score), round(name_score), round(description_score), i)
    }

    /// Best first, ties by name: only the best `limit` are ordered (a selection, then a sort),
    /// and only their names copied.
    fn best(&self, scored: &mut Vec<Scored>, limit: usize) -> Vec<Match> {
        let order = |a: &Scored, b: &Scored| {
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
        scored.iter().map(|&s| self.matched(s)).collect()
    }

    fn matched(&self, (score, name_score, description_score, i): Scored) -> Match {
        Match { name: self.names[i as usize].clone(), score, name_score, description_score }
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

/// (score, name score, description score, skill index).
type Scored = (f64, f64, f64, u32);

/// How the two parts weigh in a pair's score.
const NAME_WEIGHT: f64 = 0.45;
const DESCRIPTION_WEIGHT: f64 = 0.55;

/// Where pairs split between the two routes to candidates: names sharing at least this part
/// of the shorter name go by name; the others must have close descriptions.
const NAME_SPLIT: f64 = 0.5;

/// The share of its own description weight each side of a pair must share for the pair to score
/// `threshold` when the names share less than NAME_SPLIT: the name then adds less than
/// NAME_WEIGHT * NAME_SPLIT, so the description's Dice must reach the rest, and a Dice of d means
/// each side shares at least d/2 of its weight. `None` when such a pair needs no description.
fn low_share(threshold: f64) -> Option<f64> {
    // Scores are rounded to 3 places: a little slack keeps a pair rounded up to the threshold.
    let dice = (threshold - NAME_WEIGHT * NAME_SPLIT) / DESCRIPTION_WEIGHT - 0.002;
    (dice > 0.0).then_some(dice / 2.0)
}

/// A skill's heaviest terms, heaviest first (ties by id, one order for every skill): the
/// shortest run after which what is left weighs less than `share` of the whole. Two skills
/// that each share at least `share` of their weight have a common term in both runs: were the
/// first common term past one side's run, all common terms would weigh less than its share.
/// `opened` is weight already in the run that posts nothing (a query's unknown terms).
fn heaviest(ids: &[u32], weight: impl Fn(u32) -> f64, opened: f64, share: f64) -> Vec<u32> {
    let mut order: Vec<(f64, u32)> = ids.iter().map(|&t| (weight(t), t)).collect();
    let whole = order.iter().map(|(w, _)| w).sum::<f64>() + opened;
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut rest = whole - opened;
    let mut out = Vec::new();
    for (w, t) in order {
        if rest < share * whole {
            break;
        }
        out.push(t);
        rest -= w;
    }
    out
}

/// A query's interned terms.
struct Query<'q> {
    name_ids: &'q [u32],
    name_unknown: usize,
    ids: &'q [u32],
    /// The terms whose postings give the candidates.
    probe: &'q [u32],
    /// The weight of all its terms, unknown ones included.
    whole: f64,
    /// The query's own entry, when it is one of the index's skills.
    skip: Option<usize>,
}

/// Scores the index's own skills against each other with weights computed once.
pub struct Scorer<'i> {
    index: &'i Index,
    weight: Vec<f64>,
    total: Vec<f64>,
}

/// A near-duplicate pair of the index's skills: `later` is the one indexed last.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub earlier: usize,
    pub later: usize,
    pub score: f64,
}

impl Scorer<'_> {
    fn weight(&self, t: u32) -> f64 {
        self.weight.get(t as usize).copied().unwrap_or_else(|| self.index.weight_df(0))
    }

    /// The skills closest to skill `i` of the index (itself left out); best first. Every skill
    /// is scored that shares a term.
    pub fn closest_to(&self, i: usize, limit: usize) -> Vec<Match> {
        let Some(terms) = self.index.terms.get(i) else { return Vec::new() };
        let query = Query {
            name_ids: &terms.name,
            name_unknown: 0,
            ids: &terms.all,
            probe: &terms.all,
            whole: self.total[i],
            skip: Some(i),
        };
        let mut scored: Vec<Scored> = self
            .index
            .candidates(&query)
            .into_iter()
            .map(|j| {
                self.index.score(&query, j, self.index.name_score(&query, j), |t| self.weight(t), |j| self.total[j])
            })
            .collect();
        self.index.best(&mut scored, limit)
    }

    /// The name of skill `i` of the index.
    pub fn name(&self, i: usize) -> &str {
        self.index.names.get(i).map_or("", String::as_str)
    }
}

/// Convenience for callers without a cache: builds everything from scratch and scores every
/// skill sharing a term.
pub fn closest_among(existing: &[Candidate], proposed: &Candidate, limit: usize) -> Vec<Match> {
    let mut vocabulary = Vocabulary::default();
    let terms: Vec<Terms> = existing.iter().map(|c| Terms::of(&mut vocabulary, &c.name, &c.description)).collect();
    let entries: Vec<(&str, &Terms)> = existing.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
    Index::from_terms(&vocabulary, &entries).closest(&vocabulary, &proposed.name, &proposed.description, limit, 0.0)
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
mod tests;
