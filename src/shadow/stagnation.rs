//! D4: stagnation and novelty over a bounded window of envelope metadata (verdict, refs,
//! severity — never report text), and the one coordination action a detection takes.

use std::collections::VecDeque;

pub const WINDOW: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct Meta {
    pub verdict: String,
    pub refs: Vec<u64>,
    pub severity: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Spinning,
    Alternating,
    RepeatedConfirmations,
    LowNovelty,
}

impl Pattern {
    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Spinning => "identical-envelopes",
            Pattern::Alternating => "alternating-verdicts",
            Pattern::RepeatedConfirmations => "repeated-confirmations",
            Pattern::LowNovelty => "low-novelty",
        }
    }
}

#[derive(Debug, Default)]
pub struct Window {
    entries: VecDeque<Meta>,
    /// Whether each entry was new (not equal to any earlier entry in the window) when added.
    novel: VecDeque<bool>,
}

impl Window {
    /// Adds an envelope's metadata; returns whether it repeats an earlier one.
    pub fn push(&mut self, meta: Meta) -> bool {
        let repeat = self.entries.contains(&meta);
        if self.entries.len() == WINDOW {
            self.entries.pop_front();
            self.novel.pop_front();
        }
        self.entries.push_back(meta);
        self.novel.push_back(!repeat);
        repeat
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.novel.clear();
    }

    /// The first pattern the window shows, checked from the most specific.
    pub fn detect(&self, min_novelty: f64) -> Option<Pattern> {
        let n = self.entries.len();
        let last = |k: usize| self.entries.iter().skip(n.saturating_sub(k)).collect::<Vec<_>>();
        if n >= 3 {
            let l = last(3);
            if l.iter().all(|m| m.verdict == "confirm" && m.refs == l[0].refs) && l.windows(2).all(|w| w[0] == w[1]) {
                return Some(Pattern::RepeatedConfirmations);
            }
            if l.windows(2).all(|w| w[0] == w[1]) {
                return Some(Pattern::Spinning);
            }
        }
        if n >= 4 {
            let l = last(4);
            let same_refs = l.iter().all(|m| m.refs == l[0].refs);
            let alternating =
                l[0].verdict != l[1].verdict && l[0].verdict == l[2].verdict && l[1].verdict == l[3].verdict;
            if same_refs && alternating {
                return Some(Pattern::Alternating);
            }
        }
        if n >= WINDOW / 2 + 2 {
            let share = self.novel.iter().filter(|x| **x).count() as f64 / n as f64;
            if share < min_novelty {
                return Some(Pattern::LowNovelty);
            }
        }
        None
    }
}

/// What a detection does: reserve the next higher reasoning effort once (when escalation is on
/// and one exists), else a cooldown.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Escalate(String),
    Cooldown { until_ms: u64 },
}

pub fn action(escalation: bool, ladder: &[String], current: Option<&str>, now_ms: u64, cooldown_ms: u64) -> Action {
    if escalation {
        let position = current.and_then(|c| ladder.iter().position(|l| l == c));
        let next = match position {
            Some(i) => ladder.get(i + 1),
            None => ladder.first().filter(|_| current.is_none()).and_then(|_| ladder.get(1)),
        };
        if let Some(next) = next {
            return Action::Escalate(next.clone());
        }
    }
    Action::Cooldown { until_ms: now_ms + cooldown_ms }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn m(verdict: &str, refs: &[u64]) -> Meta {
        Meta { verdict: verdict.into(), refs: refs.to_vec(), severity: Some(0.5) }
    }

    #[test]
    fn each_pattern_is_detected() {
        let mut w = Window::default();
        for _ in 0..3 {
            w.push(m("challenge", &[1, 2]));
        }
        assert_eq!(w.detect(0.3), Some(Pattern::Spinning));

        let mut w = Window::default();
        for v in ["challenge", "confirm", "challenge", "confirm"] {
            w.push(m(v, &[4]));
        }
        assert_eq!(w.detect(0.0), Some(Pattern::Alternating));

        let mut w = Window::default();
        for _ in 0..3 {
            w.push(m("confirm", &[7]));
        }
        assert_eq!(w.detect(0.3), Some(Pattern::RepeatedConfirmations));

        let mut w = Window::default();
        for (v, r) in [("gap", 1), ("gap", 2), ("gap", 1), ("gap", 2), ("uncertain", 1), ("gap", 1)] {
            w.push(m(v, &[r]));
        }
        assert_eq!(w.detect(0.6), Some(Pattern::LowNovelty), "3 of 6 novel < 0.6");
        assert_eq!(w.detect(0.4), None);
    }

    #[test]
    fn varied_envelopes_are_not_stagnation_and_the_window_is_bounded() {
        let mut w = Window::default();
        for i in 0..20u64 {
            w.push(m(if i % 3 == 0 { "gap" } else { "challenge" }, &[i + 1]));
        }
        assert_eq!(w.entries.len(), WINDOW);
        assert_eq!(w.detect(0.5), None);
    }

    #[test]
    fn one_action_per_detection() {
        let ladder: Vec<String> = ["low", "medium", "high"].iter().map(|s| s.to_string()).collect();
        assert_eq!(action(true, &ladder, Some("low"), 0, 600_000), Action::Escalate("medium".into()));
        assert_eq!(
            action(true, &ladder, Some("high"), 0, 600_000),
            Action::Cooldown { until_ms: 600_000 },
            "no higher value"
        );
        assert_eq!(action(false, &ladder, Some("low"), 5, 10), Action::Cooldown { until_ms: 15 });
        assert_eq!(action(true, &[], None, 0, 10), Action::Cooldown { until_ms: 10 });
    }
}
