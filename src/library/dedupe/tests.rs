//! Duplicate detection: scores, the routes to candidates, and their exactness.
use super::pairs::{Description, rare_df, term_pairs};
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
        c("python-style", "Python code style for this team: formatting, imports and naming. Use when writing Python."),
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
    let other =
        c("rust-style", "Rust code style for this team: formatting with rustfmt, clippy lints. Use when writing Rust.");
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
