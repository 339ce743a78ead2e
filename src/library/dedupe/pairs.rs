//! `check`'s pass over the whole library: every pair at or above the threshold, found through
//! two routes that each provably keep every such pair, so the work follows the pairs that
//! share rare words (or pairs of words), not the square of the library.

use super::{NAME_SPLIT, Pair, Query, Scored, Scorer, heaviest, low_share};
use std::collections::HashMap;

impl Scorer<'_> {
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
pub(super) fn term_pairs(terms: &[u32]) -> impl Iterator<Item = u64> + '_ {
    terms
        .iter()
        .enumerate()
        .flat_map(move |(n, &a)| terms[n + 1..].iter().map(move |&b| (u64::from(a.min(b)) << 32) | u64::from(a.max(b))))
}

/// Terms posted by at most this many skills are rare: their postings are short enough to walk
/// one by one (the cube root of the library, at least 32); frequent terms meet in pairs.
pub(super) fn rare_df(skills: usize, everything: bool) -> u32 {
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
pub(super) struct Description {
    /// Rare terms of the run.
    pub(super) rare: Vec<u32>,
    /// Frequent terms of the run.
    pub(super) frequent: Vec<u32>,
    /// The first frequent terms whose pairs the skill posts, or `None` (single posting).
    pub(super) pairs: Option<Vec<u32>>,
}

impl Description {
    pub(super) fn of(scorer: &Scorer, all: &[u32], run: &[u32], share: Option<f64>, rare_df: u32) -> Description {
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
