//! TF-IDF cosine, the "simple approximation" seed 003 allows when no embedding model is at hand.
//! The artifact's lines are the documents that give each term its weight: a term on every line
//! of a diff (`self`, `let`) says little, a term on one line says a lot. Terms the artifact never
//! uses get the largest weight, so two claims that share only such terms can still match.

use std::collections::HashMap;

/// Words too common in English prose to say anything about a finding.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does", "for", "from", "has",
    "have", "if", "in", "into", "is", "it", "its", "may", "might", "no", "not", "of", "on", "or", "so", "such", "than",
    "that", "the", "their", "then", "there", "these", "this", "those", "to", "was", "were", "when", "which", "while",
    "will", "with", "would",
];

/// Lower-case terms of a text: runs of letters and digits, camelCase split, at least two
/// characters with at least one letter, stopwords left out.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() {
            continue;
        }
        let mut start = 0;
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1].1, chars[i].1);
            if prev.is_lowercase() && cur.is_uppercase() {
                push_term(&word[start..chars[i].0], &mut out);
                start = chars[i].0;
            }
        }
        push_term(&word[start..], &mut out);
    }
    out
}

fn push_term(part: &str, out: &mut Vec<String>) {
    if part.chars().count() < 2 || !part.chars().any(char::is_alphabetic) {
        return;
    }
    let lower = part.to_lowercase();
    if !STOPWORDS.contains(&lower.as_str()) {
        out.push(stem(lower));
    }
}

/// A light suffix stemmer, so `removes`, `removed` and `remove` meet: strips one of `ing`,
/// `ed`, `es`, `s`, then a final `e`, keeping at least three characters.
fn stem(mut word: String) -> String {
    for suffix in ["ing", "ed", "es", "s"] {
        if word.len() >= suffix.len() + 3 && word.ends_with(suffix) && !word.ends_with("ss") {
            word.truncate(word.len() - suffix.len());
            break;
        }
    }
    if word.len() > 3 && word.ends_with('e') {
        word.pop();
    }
    word
}

/// A sparse TF-IDF vector with its norm.
#[derive(Debug, Clone, Default)]
pub struct Vector {
    weights: HashMap<String, f64>,
    norm: f64,
}

/// Document frequencies over the artifact's lines.
pub struct Corpus {
    df: HashMap<String, u32>,
    docs: u32,
}

impl Corpus {
    /// Every non-blank line of `text` is one document.
    pub fn of_lines(text: &str) -> Corpus {
        let mut df: HashMap<String, u32> = HashMap::new();
        let mut docs = 0;
        let mut seen: Vec<String> = Vec::new();
        for line in text.lines() {
            seen.clear();
            seen.extend(terms(line));
            if seen.is_empty() {
                continue;
            }
            docs += 1;
            seen.sort_unstable();
            seen.dedup();
            for term in seen.drain(..) {
                *df.entry(term).or_insert(0) += 1;
            }
        }
        Corpus { df, docs }
    }

    /// Smoothed inverse document frequency: `ln((N + 1) / (df + 1)) + 1`.
    pub fn idf(&self, term: &str) -> f64 {
        let df = self.df.get(term).copied().unwrap_or(0);
        ((f64::from(self.docs) + 1.0) / (f64::from(df) + 1.0)).ln() + 1.0
    }

    pub fn vector(&self, text: &str) -> Vector {
        let mut weights: HashMap<String, f64> = HashMap::new();
        for term in terms(text) {
            *weights.entry(term).or_insert(0.0) += 1.0;
        }
        for (term, weight) in weights.iter_mut() {
            *weight *= self.idf(term);
        }
        let norm = weights.values().map(|w| w * w).sum::<f64>().sqrt();
        Vector { weights, norm }
    }
}

/// Cosine of two vectors, 0 when either is empty.
pub fn cosine(a: &Vector, b: &Vector) -> f64 {
    if a.norm == 0.0 || b.norm == 0.0 {
        return 0.0;
    }
    let (small, large) = if a.weights.len() <= b.weights.len() { (a, b) } else { (b, a) };
    let dot: f64 = small.weights.iter().filter_map(|(t, w)| large.weights.get(t).map(|v| w * v)).sum();
    dot / (a.norm * b.norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_split_identifiers_and_drop_noise() {
        assert_eq!(
            terms("parseConfig(x) returns the MAX_SIZE of a 42 list"),
            ["pars", "config", "return", "max", "siz", "list"]
        );
        assert_eq!(terms("removes removed remove removing"), ["remov"; 4]);
        assert_eq!(terms("class access"), ["class", "access"]);
        assert!(terms("a = 1; b = 2").is_empty());
    }

    #[test]
    fn identical_texts_are_one_and_disjoint_texts_zero() {
        let corpus = Corpus::of_lines("fn parse(config)\nfn write(state)\n");
        let a = corpus.vector("parse configs");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&a, &corpus.vector("unrelated words")), 0.0);
        assert_eq!(cosine(&a, &corpus.vector("")), 0.0);
    }

    #[test]
    fn rare_terms_weigh_more_than_common_ones() {
        let text = "let value = state.value;\nlet other = state.other;\nlet lock = state.lock_path;\n";
        let corpus = Corpus::of_lines(text);
        assert!(corpus.idf("lock") > corpus.idf("stat"));
        let reference = corpus.vector("let lock = state.lock_path;");
        let rare = cosine(&corpus.vector("the lock path"), &reference);
        let common = cosine(&corpus.vector("the state let"), &reference);
        assert!(rare > common, "{rare} vs {common}");
    }
}
