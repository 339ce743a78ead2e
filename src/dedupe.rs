//! Lexical duplicate detection for `create`: name tokens (order-free) and description terms
//! weighted by how rare they are in the library, so reworded twins score high and skills that
//! only share common words score low.

use std::collections::{BTreeMap, BTreeSet};

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

/// Scores a proposed skill against every existing one; best first, at most `limit`.
pub struct Index {
    entries: Vec<(String, BTreeSet<String>, BTreeSet<String>)>,
    document_frequency: BTreeMap<String, usize>,
}

impl Index {
    pub fn new(existing: &[Candidate]) -> Index {
        let mut document_frequency: BTreeMap<String, usize> = BTreeMap::new();
        let entries: Vec<_> = existing
            .iter()
            .map(|c| {
                let names = name_terms(&c.name);
                let mut words = terms(&c.description);
                words.extend(names.iter().cloned());
                for w in &words {
                    *document_frequency.entry(w.clone()).or_default() += 1;
                }
                (c.name.clone(), names, words)
            })
            .collect();
        Index { entries, document_frequency }
    }

    /// Rare terms weigh more: ln((N + 1) / (df + 0.5)), at least a small floor.
    fn weight(&self, term: &str) -> f64 {
        let n = self.entries.len() as f64 + 1.0;
        let df = self.document_frequency.get(term).copied().unwrap_or(0) as f64;
        ((n + 1.0) / (df + 0.5)).ln().max(0.1)
    }

    fn weighted_jaccard(&self, a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
        let union: f64 = a.union(b).map(|t| self.weight(t)).sum();
        if union == 0.0 {
            return 0.0;
        }
        a.intersection(b).map(|t| self.weight(t)).sum::<f64>() / union
    }

    pub fn closest(&self, proposed: &Candidate, limit: usize) -> Vec<Match> {
        let names = name_terms(&proposed.name);
        let mut words = terms(&proposed.description);
        words.extend(names.iter().cloned());
        let mut matches: Vec<Match> = self
            .entries
            .iter()
            .map(|(name, other_names, other_words)| {
                let name_score = jaccard(&names, other_names);
                let description_score = self.weighted_jaccard(&words, other_words);
                // Descriptions say more than names; identical names alone are not enough.
                let score = 0.35 * name_score + 0.65 * description_score;
                Match {
                    name: name.clone(),
                    score: round(score),
                    name_score: round(name_score),
                    description_score: round(description_score),
                }
            })
            .collect();
        matches.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(&b.name)));
        matches.truncate(limit);
        matches
    }
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 { 0.0 } else { a.intersection(b).count() as f64 / union as f64 }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let index = Index::new(&library());
        let twin = c(
            "deploy-with-docker",
            "Deploying the web application to staging using docker compose and checking the health endpoint.",
        );
        let best = &index.closest(&twin, 3)[0];
        assert_eq!(best.name, "docker-deploy");
        assert_eq!(best.name_score, 1.0);
        assert!(best.score >= 0.7, "{best:?}");
    }

    #[test]
    fn skills_sharing_only_common_words_stay_apart() {
        let index = Index::new(&library());
        let other = c(
            "rust-style",
            "Rust code style for this team: formatting with rustfmt, clippy lints. Use when writing Rust.",
        );
        let best = &index.closest(&other, 1)[0];
        assert!(best.score < 0.5, "{best:?}");
        let unrelated = c("slack-gif", "Make animated GIFs small enough for Slack emoji and messages.");
        assert!(index.closest(&unrelated, 1)[0].score < 0.2);
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
