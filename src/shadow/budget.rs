//! D8: per-root spend and stale-report decay. `spentChars` counts admitted prompts and
//! accepted reports since the last real user message; a soft limit routes later work to the
//! frugal model, a hard limit stops new work (admitted work finishes).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetState {
    Standard,
    Frugal,
    Exhausted,
}

impl BudgetState {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetState::Standard => "standard",
            BudgetState::Frugal => "frugal",
            BudgetState::Exhausted => "exhausted",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// 0: no soft limit.
    pub soft: u64,
    /// 0: no hard limit.
    pub hard: u64,
    pub decay: f64,
}

#[derive(Debug, Clone, Default)]
pub struct Spend {
    pub spent_chars: u64,
    /// How many times an accepted envelope repeated an earlier one since the last reset.
    pub repeats: u32,
}

impl Spend {
    pub fn state(&self, limits: &Limits) -> BudgetState {
        if limits.hard > 0 && self.spent_chars >= limits.hard {
            BudgetState::Exhausted
        } else if limits.soft > 0 && self.spent_chars >= limits.soft {
            BudgetState::Frugal
        } else {
            BudgetState::Standard
        }
    }

    /// Admits a prompt: refused when exhausted, else counted; says which model to use.
    pub fn admit(&mut self, limits: &Limits, prompt_chars: u64) -> Result<BudgetState, String> {
        let state = self.state(limits);
        if state == BudgetState::Exhausted {
            return Err(format!(
                "review budget exhausted: {} characters spent since the last user message (hard limit {})",
                self.spent_chars, limits.hard
            ));
        }
        self.spent_chars += prompt_chars;
        Ok(state)
    }

    pub fn accepted(&mut self, report_chars: u64) {
        self.spent_chars += report_chars;
    }

    /// The next activation's probability: the base times `(1 - decay)` per repeat.
    pub fn activation_probability(&self, base: f64, limits: &Limits) -> f64 {
        (base * (1.0 - limits.decay).powi(self.repeats as i32)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn soft_then_hard_limit() {
        let limits = Limits { soft: 100, hard: 200, decay: 0.0 };
        let mut s = Spend::default();
        assert_eq!(s.admit(&limits, 90), Ok(BudgetState::Standard));
        s.accepted(20);
        assert_eq!(s.state(&limits), BudgetState::Frugal);
        assert_eq!(s.admit(&limits, 90), Ok(BudgetState::Frugal), "routed to the frugal model");
        assert_eq!(s.state(&limits), BudgetState::Exhausted);
        assert!(s.admit(&limits, 1).unwrap_err().contains("exhausted"));
        s.accepted(50);
        assert_eq!(s.spent_chars, 250, "an admitted child still finishes and is counted");
    }

    #[test]
    fn decay_multiplies_per_repeat_and_zero_disables_it() {
        let mut s = Spend { repeats: 2, ..Default::default() };
        assert_eq!(s.activation_probability(0.8, &Limits { soft: 0, hard: 0, decay: 0.0 }), 0.8);
        assert!((s.activation_probability(0.8, &Limits { soft: 0, hard: 0, decay: 0.5 }) - 0.2).abs() < 1e-12);
        s.repeats = 0;
        assert_eq!(s.activation_probability(0.8, &Limits { soft: 0, hard: 0, decay: 0.5 }), 0.8);
    }
}
