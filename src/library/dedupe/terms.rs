//! The words duplicate detection compares: split, lower-cased, stop words dropped, common
//! abbreviations spelled out, word forms stemmed and a few interchangeable verbs merged, then
//! interned as small ids so scoring compares sorted id lists.

use std::collections::{BTreeSet, HashMap};

/// Words that carry no topic.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "asks", "at", "be", "been", "before",
    "both", "but", "by", "can", "comes", "could", "did", "do", "does", "each", "eg", "etc", "for", "from", "has",
    "have", "how", "ie", "if", "in", "into", "is", "it", "its", "just", "may", "might", "more", "most", "must", "need",
    "needs", "no", "not", "of", "off", "on", "only", "or", "other", "our", "out", "over", "per", "same", "should",
    "skill", "skills", "so", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "up", "us", "use", "used", "user", "using", "very", "via", "want", "was", "we", "were",
    "what", "when", "whenever", "which", "who", "will", "with", "would", "you", "your",
];

/// Abbreviations skill authors use for the same thing, spelled out before stemming.
const ABBREVIATIONS: &[(&str, &str)] = &[
    ("app", "application"),
    ("apps", "applications"),
    ("auth", "authentication"),
    ("cert", "certificate"),
    ("certs", "certificates"),
    ("conf", "configuration"),
    ("config", "configuration"),
    ("configs", "configurations"),
    ("db", "database"),
    ("dbs", "databases"),
    ("dep", "dependency"),
    ("deps", "dependencies"),
    ("dev", "development"),
    ("dir", "directory"),
    ("dirs", "directories"),
    ("doc", "documentation"),
    ("docs", "documentation"),
    ("env", "environment"),
    ("envs", "environments"),
    ("img", "image"),
    ("info", "information"),
    ("k8s", "kubernetes"),
    ("msg", "message"),
    ("perf", "performance"),
    ("pkg", "package"),
    ("prod", "production"),
    ("repo", "repository"),
    ("repos", "repositories"),
    ("spec", "specification"),
    ("stats", "statistics"),
];

/// Stems of verbs that name the same action in skill descriptions, merged into the first.
const SYNONYMS: &[(&str, &str)] = &[
    ("renew", "rot"),
    ("refresh", "rot"),
    ("delet", "remov"),
    ("eras", "remov"),
    ("launch", "start"),
    ("fetch", "download"),
    ("upgrad", "upd"),
];

/// Light stemming: enough to meet "deploy"/"deploying"/"deployment", "images"/"image",
/// "expire"/"expiring" (a final `e` goes) and "rotate"/"rotation"/"rotating" (the `-ate`
/// family goes whole, leaving a stem of at least three letters; others leave at least four).
pub fn stem(word: &str) -> String {
    let mut w = word.to_string();
    for suffix in [
        "ations", "ation", "ating", "ated", "ates", "ate", "ments", "ment", "ings", "ing", "ers", "er", "ies", "es",
        "ed", "ly", "s",
    ] {
        let shortest = if suffix.starts_with("at") { 3 } else { 4 };
        if w.len() < suffix.len() + shortest || !w.ends_with(suffix) {
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
    if w.len() > 4 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// The canonical form of one lower-cased word.
fn canonical(word: &str) -> String {
    let spelled = ABBREVIATIONS.iter().find(|(short, _)| *short == word).map_or(word, |(_, long)| long);
    let stemmed = stem(spelled);
    match SYNONYMS.iter().find(|(from, _)| *from == stemmed) {
        Some((_, to)) => (*to).to_string(),
        None => stemmed,
    }
}

pub fn terms(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 1)
        .map(|w| w.to_lowercase())
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| canonical(&w))
        .collect()
}

pub fn name_terms(name: &str) -> BTreeSet<String> {
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
    pub(super) fn lookup(&self, terms: &BTreeSet<String>) -> (Vec<u32>, usize) {
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

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn stemming_meets_word_forms() {
        assert_eq!(stem("deploying"), "deploy");
        assert_eq!(stem("deployment"), "deploy");
        assert_eq!(stem("images"), stem("image"));
        assert_eq!(stem("matches"), "match");
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("queries"), "query");
        assert_eq!(stem("go"), "go");
        assert_eq!(stem("expire"), stem("expiring"));
        assert_eq!(stem("rotate"), stem("rotating"));
        assert_eq!(stem("rotate"), stem("rotation"));
        assert_eq!(stem("migrated"), stem("migrations"));
        assert_eq!(stem("configure"), stem("configuration"));
        assert_eq!(stem("install"), stem("installation"));
        assert_eq!(stem("certificates"), stem("certificate"));
    }

    #[test]
    fn abbreviations_and_interchangeable_verbs_meet() {
        let a = terms("Rotate expiring TLS certificates on the load balancer");
        let b = terms("Renewing the load balancer's TLS certs before they expire");
        assert_eq!(a, b, "the same topic in other words");
        assert!(terms("the docs of the k8s repo").is_superset(&terms("kubernetes repository documentation")));
    }
}
