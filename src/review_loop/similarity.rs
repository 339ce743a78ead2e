//! TF-IDF cosine, the "simple approximation" seed 003 allows when no embedding model is at hand.
//! The artifact's lines are the documents that give each term its weight: a term on every line
//! of a diff (`self`, `let`) says little, a term on one line says a lot. Terms the artifact never
//! uses get the largest weight, so two claims that share only such terms can still match.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Keys are already FNV hashes: hashing them again would only cost time.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type TermMap<V> = HashMap<u64, V, BuildHasherDefault<Identity>>;

/// Words too common in English prose to say anything about a finding.
const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "do", "does", "for", "from", "has",
    "have", "if", "in", "into", "is", "it", "its", "may", "might", "no", "not", "of", "on", "or", "so", "such", "than",
    "that", "the", "their", "then", "there", "these", "this", "those", "to", "was", "were", "when", "which", "while",
    "will", "with", "would",
];

/// Calls `each` with every lower-case term of a text: runs of letters and digits, camelCase
/// split, at least two characters with at least one letter, stopwords left out, lightly
/// stemmed; and every whole `snake_case` identifier as one more term, since a claim that names
/// `value_3_5` points at exactly one line. One buffer is reused: no allocation per term.
pub fn each_term(text: &str, mut each: impl FnMut(&str)) {
    let mut buf = String::new();
    if text.is_ascii() {
        // The common case (code, English), scanned as bytes.
        let b = text.as_bytes();
        let in_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut i = 0;
        while i < b.len() {
            if !in_word(b[i]) {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && in_word(b[i]) {
                i += 1;
            }
            run_terms(&text[start..i], &mut buf, &mut each);
        }
    } else {
        for run in text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|r| !r.is_empty()) {
            run_terms(run, &mut buf, &mut each);
        }
    }
}

/// One run of letters, digits and underscores: the whole identifier, then its words.
fn run_terms(run: &str, buf: &mut String, each: &mut impl FnMut(&str)) {
    if run.len() >= 3 && run.contains('_') && run.chars().any(char::is_alphabetic) {
        let whole = run.trim_matches('_');
        if whole.contains('_') {
            lower_into(whole, buf);
            each(buf);
        }
    }
    for word in run.split('_') {
        let mut start = 0;
        if word.is_ascii() {
            let b = word.as_bytes();
            for i in 1..b.len() {
                if b[i - 1].is_ascii_lowercase() && b[i].is_ascii_uppercase() {
                    emit(&word[start..i], buf, each);
                    start = i;
                }
            }
        } else {
            let mut prev: Option<char> = None;
            for (i, c) in word.char_indices() {
                if prev.is_some_and(char::is_lowercase) && c.is_uppercase() {
                    emit(&word[start..i], buf, each);
                    start = i;
                }
                prev = Some(c);
            }
        }
        emit(&word[start..], buf, each);
    }
}

fn emit(part: &str, buf: &mut String, each: &mut impl FnMut(&str)) {
    if part.len() < 2 || !part.chars().any(char::is_alphabetic) {
        return;
    }
    lower_into(part, buf);
    // Only short words can be stopwords; the list is sorted.
    if buf.len() <= 6 && STOPWORDS.binary_search(&buf.as_str()).is_ok() {
        return;
    }
    stem(buf);
    each(buf);
}

fn lower_into(text: &str, buf: &mut String) {
    buf.clear();
    if text.is_ascii() {
        buf.push_str(text);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(text.chars().flat_map(char::to_lowercase));
    }
}

/// The terms of a text, collected (for tests and diagnostics).
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    each_term(text, |t| out.push(t.to_string()));
    out
}

/// A light suffix stemmer, so `removes`, `removed` and `remove` meet: strips one of `ing`,
/// `ed`, `es`, `s`, then a final `e`, keeping at least three characters.
fn stem(word: &mut String) {
    for suffix in ["ing", "ed", "es", "s"] {
        if word.len() >= suffix.len() + 3 && word.ends_with(suffix) && !word.ends_with("ss") {
            word.truncate(word.len() - suffix.len());
            break;
        }
    }
    if word.len() > 3 && word.ends_with('e') {
        word.pop();
    }
}

/// FNV-1a: terms are kept as 64-bit hashes (a collision merely merges two rare terms).
fn hash(term: &str) -> u64 {
    term.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// A sparse TF-IDF vector with its norm.
#[derive(Debug, Clone, Default)]
pub struct Vector {
    weights: TermMap<f64>,
    norm: f64,
}

/// Document frequencies over the artifact's lines, and each line's terms (so a window of lines
/// costs a sum, not a second tokenisation).
pub struct Corpus {
    df: TermMap<u32>,
    docs: u32,
    /// Byte offset where each line starts, and its terms in `terms[spans[i]]`.
    line_starts: Vec<usize>,
    spans: Vec<(u32, u32)>,
    terms: Vec<u64>,
}

impl Corpus {
    /// Every non-blank line of `text` is one document.
    pub fn of_lines(text: &str) -> Corpus {
        let mut df: TermMap<u32> = TermMap::default();
        let (mut docs, mut offset) = (0, 0);
        let mut line_starts = Vec::new();
        let mut spans = Vec::new();
        let mut terms: Vec<u64> = Vec::with_capacity(text.len() / 6);
        let mut seen: Vec<u64> = Vec::new();
        for line in text.split_inclusive('\n') {
            let from = terms.len();
            each_term(line, |t| terms.push(hash(t)));
            line_starts.push(offset);
            spans.push((from as u32, terms.len() as u32));
            offset += line.len();
            if terms.len() == from {
                continue;
            }
            docs += 1;
            seen.clear();
            seen.extend_from_slice(&terms[from..]);
            seen.sort_unstable();
            seen.dedup();
            for term in &seen {
                *df.entry(*term).or_insert(0) += 1;
            }
        }
        Corpus { df, docs, line_starts, spans, terms }
    }

    /// Smoothed inverse document frequency: `ln((N + 1) / (df + 1)) + 1`.
    pub fn idf(&self, term: &str) -> f64 {
        self.idf_of(hash(term))
    }

    fn idf_of(&self, term: u64) -> f64 {
        let df = self.df.get(&term).copied().unwrap_or(0);
        ((f64::from(self.docs) + 1.0) / (f64::from(df) + 1.0)).ln() + 1.0
    }

    pub fn vector(&self, text: &str) -> Vector {
        let mut counts: TermMap<f64> = TermMap::default();
        each_term(text, |t| *counts.entry(hash(t)).or_insert(0.0) += 1.0);
        self.weigh(counts)
    }

    /// The vector of the corpus's own lines that start inside `bytes` (offsets into its text).
    pub fn vector_of_range(&self, bytes: std::ops::Range<usize>) -> Vector {
        let first = self.line_starts.partition_point(|s| *s < bytes.start);
        let last = self.line_starts.partition_point(|s| *s < bytes.end);
        let mut counts: TermMap<f64> = TermMap::default();
        for &(from, to) in &self.spans[first..last] {
            for term in &self.terms[from as usize..to as usize] {
                *counts.entry(*term).or_insert(0.0) += 1.0;
            }
        }
        self.weigh(counts)
    }

    fn weigh(&self, mut weights: TermMap<f64>) -> Vector {
        for (term, weight) in weights.iter_mut() {
            *weight *= self.idf_of(*term);
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
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn terms_split_identifiers_and_drop_noise() {
        assert_eq!(
            terms("parseConfig(x) returns the MAX_SIZE of a 42 list"),
            ["pars", "config", "return", "max_size", "max", "siz", "list"]
        );
        assert_eq!(terms("removes removed remove removing"), ["remov"; 4]);
        assert_eq!(terms("class access"), ["class", "access"]);
        assert_eq!(terms("Über größe_wert"), ["über", "größe_wert", "größ", "wert"]);
        assert!(terms("a = 1; b = 2").is_empty());
    }

    #[test]
    fn stopwords_are_sorted_and_short() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(STOPWORDS.iter().all(|w| w.len() <= 6));
    }

    #[test]
    fn identical_texts_are_one_and_disjoint_texts_zero() {
        let corpus = Corpus::of_lines("fn parse(config)\nfn write(state)\n");
        let a = corpus.vector("parse configs");
        assert!((cosine(&a, &a) - 1.0).abs() < 1e-9);
        let line = corpus.vector("fn write(state)");
        let ranged = corpus.vector_of_range(17..34);
        assert!((cosine(&line, &ranged) - 1.0).abs() < 1e-9, "a range sums its lines' terms");
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
