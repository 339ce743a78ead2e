//! Lexical duplicate detection: name tokens (order-free containment) and description terms
//! weighted by how rare they are in the library (Dice), so reworded twins score high and skills
//! that only share common words score low.
//!
//! Neither `create` nor `check` compares every pair. A pair can only reach the threshold if
//! the descriptions share enough weight, and that weight must include one of each side's
//! heaviest terms (prefix filtering): so candidates come from the postings of those rare terms
//! only, and common words, whose postings hold nearly every skill, are never walked.

mod terms;

use std::collections::HashMap;

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

/// Where a pair sharing at least half of the shorter name meets, seen from the shorter name
/// (k terms, in the order of `heaviest`). It shares at least ceil(k/2) terms, so of its first
/// k - ceil(k/2) + 1 terms one is shared, and when ceil(k/2) >= 2 (k >= 3), of its first
/// k - ceil(k/2) + 2 terms two are: such names meet through a shared pair of terms, which
/// common words alone rarely make.
fn name_run(ordered: &[u32]) -> &[u32] {
    let k = ordered.len();
    let shared = k.div_ceil(2);
    let run = if shared >= 2 { k - shared + 2 } else { k - shared + usize::from(k > 0) };
    &ordered[..run.min(k)]
}

/// Every pair of terms, as one key (smaller id first).
fn term_pairs(terms: &[u32]) -> impl Iterator<Item = u64> + '_ {
    terms
        .iter()
        .enumerate()
        .flat_map(move |(n, &a)| terms[n + 1..].iter().map(move |&b| (u64::from(a.min(b)) << 32) | u64::from(a.max(b))))
}

/// Terms posted by at most this many skills are rare: their postings are short enough to walk
/// one by one (the cube root of the library, at least 32); frequent terms meet in pairs.
fn rare_df(skills: usize, everything: bool) -> u32 {
    if everything {
        return u32::MAX;
    }
    ((skills as f64).cbrt() as u32).max(32)
}

/// How one skill's description meets others in `Scorer::pairs`.
///
/// Terms come in one order for every skill (heaviest, i.e. rarest, first), so for a pair the
/// first shared term is rare, or every shared term is frequent. A rare first shared term lies
/// in both runs of `heaviest` and meets through rare postings. When all shared terms are
/// frequent, each side shares at least `share` of its weight among its frequent terms; if at
/// most one of them fell in the first frequent terms up to where the heaviest frequent term
/// plus what follows weighs less than that share, the side would share less. So both sides
/// hold the first two shared terms among those first frequent terms, and meet through that
/// pair. A skill whose heaviest frequent term alone reaches its share has no such run: it posts
/// and walks its frequent terms singly.
struct Description {
    /// Rare terms of the run.
    rare: Vec<u32>,
    /// Frequent terms of the run.
    frequent: Vec<u32>,
    /// The first frequent terms whose pairs the skill posts, or `None` (single posting).
    pairs: Option<Vec<u32>>,
}

impl Description {
    fn of(scorer: &Scorer, all: &[u32], run: &[u32], share: Option<f64>, rare_df: u32) -> Description {
        let df = |t: u32| scorer.index.document_frequency.get(t as usize).copied().unwrap_or(0);
        let (rare, frequent): (Vec<u32>, Vec<u32>) = run.iter().partition(|&&t| df(t) <= rare_df);
        let Some(share) = share else { return Description { rare, frequent, pairs: None } };
        let mut ordered: Vec<(f64, u32)> =
            all.iter().filter(|&&t| df(t) > rare_df).map(|&t| (scorer.weight(t), t)).collect();
        ordered.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let whole: f64 = all.iter().map(|&t| scorer.weight(t)).sum();
        let heaviest = ordered.first().map_or(0.0, |(w, _)| *w);
        let mut rest: f64 = ordered.iter().map(|(w, _)| w).sum();
        let mut pairs = Vec::new();
        for &(w, t) in &ordered {
            if heaviest + rest < share * whole {
                break;
            }
            pairs.push(t);
            rest -= w;
        }
        let reachable = heaviest + rest < share * whole;
        Description { rare, frequent, pairs: reachable.then_some(pairs) }
    }
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

    /// Every pair scoring at least `threshold`, once each, best first within each later skill.
    ///
    /// Never every pair: a pair reaches the threshold either with names sharing at least half
    /// of the shorter name, or with descriptions close enough to make up for less. The first
    /// kind meets through names (each skill posts only the first terms of its name that such a
    /// pair must touch, `name_run`); the second through the heaviest description terms
    /// (`heaviest`), which leaves out the common words whose postings hold nearly every skill.
    /// A threshold so low that names alone could reach it scores every pair sharing a term.
    pub fn pairs(&self, threshold: f64) -> Vec<Pair> {
        let index = self.index;
        let share = low_share(threshold);
        let order = |ids: &[u32]| {
            let mut ids = ids.to_vec();
            ids.sort_by(|&a, &b| self.weight(b).total_cmp(&self.weight(a)).then(a.cmp(&b)));
            ids
        };
        // Filled as skills are visited: a skill meets only those before it, so each pair is
        // found once. Per term: skills posting it in their description run; names of one or two
        // terms by their terms (run and whole name); longer names by pairs of terms.
        // Descriptions: rare terms of the run post singly; frequent ones post singly only for
        // skills whose description is one frequent term away from the share (`Description`),
        // and otherwise in pairs.
        let rare = rare_df(index.terms.len(), share.is_none());
        let mut rare_postings: Vec<Vec<u32>> = vec![Vec::new(); self.weight.len()];
        let mut frequent_postings: Vec<Vec<u32>> = vec![Vec::new(); self.weight.len()];
        let mut single_postings: Vec<Vec<u32>> = vec![Vec::new(); self.weight.len()];
        let mut frequent_pairs: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut short_runs: Vec<Vec<u32>> = vec![Vec::new(); self.weight.len()];
        let mut names: Vec<Vec<u32>> = vec![Vec::new(); self.weight.len()];
        let mut long_runs: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut long_names: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut stamps: Vec<u32> = vec![0; index.terms.len()];
        let mut out = Vec::new();
        for (i, terms) in index.terms.iter().enumerate() {
            let probe = match share {
                Some(share) => heaviest(&terms.all, |t| self.weight(t), 0.0, share),
                None => terms.all.clone(),
            };
            let name = order(&terms.name);
            let run = name_run(&name);
            let query = Query {
                name_ids: &terms.name,
                name_unknown: 0,
                ids: &terms.all,
                probe: &probe,
                whole: self.total[i],
                skip: Some(i),
            };
            let stamp = i as u32 + 1;
            let k = terms.name.len();
            let mut found: Vec<Scored> = Vec::new();
            let mut visit = |j: u32, by_name: bool| {
                if let Some(seen) = stamps.get_mut(j as usize)
                    && *seen != stamp
                {
                    *seen = stamp;
                    // A pair met by name with less than half a name in common can only reach the
                    // threshold through its description, and that route already ran.
                    if by_name && index.name_score(&query, j) < NAME_SPLIT {
                        return;
                    }
                    let weight = |t: u32| self.weight(t);
                    found.extend(index.score_above(&query, j, weight, |j| self.total[j], threshold));
                }
            };
            let posted = |lists: &[Vec<u32>], terms: &[u32]| -> Vec<u32> {
                terms.iter().flat_map(|&t| lists.get(t as usize).into_iter().flatten().copied()).collect()
            };
            let paired = |lists: &HashMap<u64, Vec<u32>>, terms: &[u32]| -> Vec<u32> {
                term_pairs(terms).flat_map(|p| lists.get(&p).into_iter().flatten().copied()).collect()
            };
            let description = Description::of(self, &terms.all, &probe, share, rare);
            for j in posted(&rare_postings, &description.rare) {
                visit(j, false);
            }
            for j in posted(&single_postings, &description.frequent) {
                visit(j, false);
            }
            match &description.pairs {
                None => {
                    for j in posted(&frequent_postings, &description.frequent) {
                        visit(j, false);
                    }
                }
                Some(run) => {
                    for j in paired(&frequent_pairs, run) {
                        visit(j, false);
                    }
                }
            }
            // An earlier name no longer than this one touches its run with this whole name (by
            // a term when it has one or two terms, by a pair when longer); a longer one holds a
            // term (pair) of this name's run.
            // (Names as long as this one are met as shorter ones already.)
            let shorter = |j: u32| index.terms[j as usize].name.len() <= k;
            let longer = |j: u32| index.terms[j as usize].name.len() > k;
            for j in posted(&short_runs, &name) {
                if shorter(j) {
                    visit(j, true);
                }
            }
            if k >= 3 {
                for j in paired(&long_runs, &name) {
                    if shorter(j) {
                        visit(j, true);
                    }
                }
                for j in paired(&long_names, run) {
                    if longer(j) {
                        visit(j, true);
                    }
                }
            } else {
                for j in posted(&names, run) {
                    if longer(j) {
                        visit(j, true);
                    }
                }
            }
            found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.3.cmp(&b.3)));
            out.extend(found.into_iter().map(|(score, _, _, j)| Pair { earlier: j as usize, later: i, score }));
            let me = i as u32;
            let post = |lists: &mut Vec<Vec<u32>>, terms: &[u32]| {
                for &t in terms {
                    if let Some(posting) = lists.get_mut(t as usize) {
                        posting.push(me);
                    }
                }
            };
            post(&mut rare_postings, &description.rare);
            post(&mut frequent_postings, &description.frequent);
            match &description.pairs {
                None => post(&mut single_postings, &description.frequent),
                Some(run) => {
                    for p in term_pairs(run) {
                        frequent_pairs.entry(p).or_default().push(me);
                    }
                }
            }
            post(&mut names, &name);
            if k >= 3 {
                for p in term_pairs(run) {
                    long_runs.entry(p).or_default().push(me);
                }
                for p in term_pairs(&name) {
                    long_names.entry(p).or_default().push(me);
                }
            } else {
                post(&mut short_runs, run);
            }
        }
        out
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
                .closest(&vocabulary, &skill.name, &skill.description, 10, 0.0)
                .into_iter()
                .filter(|m| m.name != skill.name)
                .take(3)
                .collect();
            assert_eq!(scorer.closest_to(i, 3), expected, "{}", skill.name);
        }
    }

    /// A library with many shared words of every frequency (and some near twins).
    fn generated(n: usize) -> Vec<Candidate> {
        generated_from(n, 300)
    }

    /// `vocabulary` words: a small one makes most terms frequent, so pairs share only those.
    fn generated_from(n: usize, vocabulary: usize) -> Vec<Candidate> {
        let words: Vec<String> = (0..vocabulary)
            .map(|k| format!("w{}{}", ["ka", "lo", "mi", "ne", "ru"][k % 5], "abcdefghij".repeat(1 + k / 5)))
            .collect();
        let mut seed = 7u64;
        let mut next = |m: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Skewed: small indexes far more often, as with words in real text.
            let u = ((seed >> 33) % 10_000) as f64 / 10_000.0;
            ((m as f64).powf(u) as usize).min(m - 1)
        };
        (0..n)
            .map(|i| {
                let pick: Vec<&str> = (0..8).map(|_| words[next(words.len())].as_str()).collect();
                // Names of one to five terms (digits of `i` make one from 10 on).
                let name = match i % 4 {
                    0 => pick[0].to_string(),
                    1 => format!("{}-{}", pick[0], pick[1]),
                    2 => format!("{}-{}-{}-{}", pick[0], pick[1], pick[5], pick[6]),
                    _ => format!("{}-{}-{}", pick[0], pick[1], pick[7]),
                };
                c(&format!("{name}-{i}"), &pick[2..].join(" "))
            })
            .collect()
    }

    fn indexed(lib: &[Candidate]) -> (Vocabulary, Vec<Terms>) {
        let mut vocabulary = Vocabulary::default();
        let terms = lib.iter().map(|c| Terms::of(&mut vocabulary, &c.name, &c.description)).collect();
        (vocabulary, terms)
    }

    #[test]
    fn pairs_through_the_heaviest_terms_are_every_pair_above_the_threshold() {
        for lib in [generated(400), generated_from(300, 40)] {
            every_pair_above_the_threshold(lib.as_slice());
        }
    }

    fn every_pair_above_the_threshold(lib: &[Candidate]) {
        let (vocabulary, terms) = indexed(lib);
        let entries: Vec<(&str, &Terms)> = lib.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
        let index = Index::from_terms(&vocabulary, &entries);
        let scorer = index.scorer();
        for threshold in [0.3, 0.5, 0.6, 0.7, 0.85] {
            // Every pair, scored the slow way.
            let mut expected: Vec<(usize, usize, f64)> = Vec::new();
            for i in 0..lib.len() {
                for m in scorer.closest_to(i, lib.len()) {
                    let j = lib.iter().position(|c| c.name == m.name).unwrap_or(usize::MAX);
                    if j < i && m.score >= threshold {
                        expected.push((j, i, m.score));
                    }
                }
            }
            let mut got: Vec<(usize, usize, f64)> =
                scorer.pairs(threshold).into_iter().map(|p| (p.earlier, p.later, p.score)).collect();
            expected.sort_by_key(|p| (p.1, p.0));
            got.sort_by_key(|p| (p.1, p.0));
            assert!(!expected.is_empty() || threshold > 0.6, "the library must have pairs at {threshold}");
            assert_eq!(got, expected, "threshold {threshold}");
        }
    }

    #[test]
    fn closest_above_a_floor_misses_nothing_at_or_above_it() {
        let lib = generated(300);
        for (k, probe) in generated(320).into_iter().skip(300).enumerate() {
            let everything = closest_among(&lib, &probe, lib.len());
            let (vocabulary, terms) = indexed(&lib);
            let entries: Vec<(&str, &Terms)> = lib.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
            let index = Index::from_terms(&vocabulary, &entries);
            for floor in [0.4, 0.6, 0.75] {
                let above: Vec<Match> = everything.iter().filter(|m| m.score >= floor).cloned().collect();
                let got = index.closest(&vocabulary, &probe.name, &probe.description, lib.len(), floor);
                assert_eq!(got, above, "probe {k} floor {floor}");
            }
        }
    }

    #[test]
    fn a_reworded_twin_sharing_few_exact_words_is_a_duplicate() {
        let mut lib = library();
        lib.push(c("tls-cert-rotation", "Rotate expiring TLS certificates on the load balancer."));
        let twin = c("renew-load-balancer-certs", "Renewing the load balancer's TLS certs before they expire.");
        let best = &closest_among(&lib, &twin, 1)[0];
        assert_eq!(best.name, "tls-cert-rotation");
        assert!(best.score >= 0.6, "{best:?}");
        // And through `check`'s pass over the whole library, reported once.
        lib.push(twin);
        let (vocabulary, terms) = indexed(&lib);
        let entries: Vec<(&str, &Terms)> = lib.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
        let index = Index::from_terms(&vocabulary, &entries);
        let pairs = index.scorer().pairs(0.6);
        assert_eq!(pairs.len(), 1, "{pairs:?}");
        assert_eq!((pairs[0].earlier, pairs[0].later), (lib.len() - 2, lib.len() - 1));
    }

    /// The lemma `Description` rests on, checked on every pair of a library where most terms are
    /// frequent: a pair sharing the share on both sides meets through a rare term of both runs,
    /// through a pair of frequent terms both post, or through a frequent term of both runs when
    /// either side posts singly.
    #[test]
    fn every_pair_sharing_the_share_meets_through_its_descriptions() {
        let lib = generated_from(500, 40);
        let (vocabulary, terms) = indexed(&lib);
        let entries: Vec<(&str, &Terms)> = lib.iter().zip(&terms).map(|(c, t)| (c.name.as_str(), t)).collect();
        let index = Index::from_terms(&vocabulary, &entries);
        let scorer = index.scorer();
        let rare = rare_df(lib.len(), false);
        let mut checked = 0;
        for threshold in [0.5, 0.6, 0.8] {
            let Some(share) = low_share(threshold) else { continue };
            let described: Vec<Description> = terms
                .iter()
                .map(|t| {
                    let run = heaviest(&t.all, |x| scorer.weight(x), 0.0, share);
                    Description::of(&scorer, &t.all, &run, Some(share), rare)
                })
                .collect();
            for i in 0..lib.len() {
                for j in 0..i {
                    let common: Vec<u32> = common_ids(&terms[i].all, &terms[j].all).collect();
                    let shared: f64 = common.iter().map(|&t| scorer.weight(t)).sum();
                    if shared < share * scorer.total[i] || shared < share * scorer.total[j] {
                        continue;
                    }
                    checked += 1;
                    let (a, b) = (&described[i], &described[j]);
                    let meets = |x: &[u32], y: &[u32]| x.iter().any(|t| y.contains(t));
                    let by_pairs = match (&a.pairs, &b.pairs) {
                        (Some(x), Some(y)) => {
                            let keys: Vec<u64> = term_pairs(x).collect();
                            term_pairs(y).any(|k| keys.contains(&k))
                        }
                        _ => meets(&a.frequent, &b.frequent),
                    };
                    assert!(meets(&a.rare, &b.rare) || by_pairs, "{} and {} at {threshold}", lib[i].name, lib[j].name);
                }
            }
        }
        assert!(checked > 100, "the library must hold pairs sharing the share ({checked})");
    }
}
