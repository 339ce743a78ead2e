//! The diagnostic value loop: each accepted `challenge` is watched for a few completed root
//! turns and classified from the assistant's language and tool targets. Heuristic, and without
//! authority: it never changes scheduling. Only metadata is kept on disk.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Adopted,
    Rejected,
    Ignored,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Adopted => "challenge_adopted",
            Outcome::Rejected => "challenge_rejected",
            Outcome::Ignored => "ignored",
        }
    }
}

const ADOPT: &[&str] = &[
    "good catch",
    "you're right",
    "you are right",
    "fixed",
    "i'll fix",
    "will fix",
    "addressed",
    "corrected",
    "updated to",
    "thanks for catching",
];
const REJECT: &[&str] = &[
    "disagree",
    "not an issue",
    "intentional",
    "by design",
    "won't change",
    "will not change",
    "false positive",
    "that's fine as is",
    "keeping it",
];

#[derive(Debug, Clone)]
pub struct Watch {
    pub id: u64,
    pub turns_left: u32,
    /// Paths and identifiers the challenge named (process-local; never written).
    pub targets: Vec<String>,
}

/// Words in a challenge that look like tool targets: paths, file names, identifiers with
/// dots, slashes or underscores.
pub fn targets_of(content: &str) -> Vec<String> {
    content
        .split(|c: char| c.is_whitespace() || "`'\"(),;:".contains(c))
        .filter(|w| w.len() > 2 && (w.contains('/') || w.contains('.') || w.contains('_')))
        .map(|w| w.trim_end_matches(['.', ',']).to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Evidence from the assistant's message or a tool call's arguments.
pub fn classify_text(text: &str) -> Option<Outcome> {
    let lower = text.to_lowercase();
    if REJECT.iter().any(|p| lower.contains(p)) {
        return Some(Outcome::Rejected);
    }
    if ADOPT.iter().any(|p| lower.contains(p)) {
        return Some(Outcome::Adopted);
    }
    None
}

pub fn touches(watch: &Watch, tool_args: &str) -> bool {
    watch.targets.iter().any(|t| tool_args.contains(t.as_str()))
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub adopted: u64,
    pub rejected: u64,
    pub ignored: u64,
}

impl Counters {
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Adopted => self.adopted += 1,
            Outcome::Rejected => self.rejected += 1,
            Outcome::Ignored => self.ignored += 1,
        }
    }

    /// Share of classified challenges that got an explicit disposition (adopted or rejected).
    pub fn hit_rate(&self) -> Option<f64> {
        let total = self.adopted + self.rejected + self.ignored;
        (total > 0).then(|| (self.adopted + self.rejected) as f64 / total as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn classification_cases() {
        assert_eq!(classify_text("Good catch — fixed the off-by-one."), Some(Outcome::Adopted));
        assert_eq!(classify_text("I disagree: the retry is intentional."), Some(Outcome::Rejected));
        assert_eq!(classify_text("Running the tests now."), None);
        let w = Watch { id: 1, turns_left: 3, targets: targets_of("The loop in src/cart.rs skips `apply_discount`.") };
        assert_eq!(w.targets, ["src/cart.rs", "apply_discount"]);
        assert!(touches(&w, r#"{"path":"src/cart.rs"}"#));
        assert!(!touches(&w, r#"{"path":"README.md"}"#));
        let mut c = Counters::default();
        assert_eq!(c.hit_rate(), None);
        c.add(Outcome::Adopted);
        c.add(Outcome::Ignored);
        assert_eq!(c.hit_rate(), Some(0.5));
    }
}
