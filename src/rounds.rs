//! Counting rounds, shared by feedback loops (seed 001) and the review loop (seed 003): a limit
//! on runs counts the first run, so `max` runs allow `max - 1` refinements (`loop.max 3` ≡
//! `refine 2` ≡ a review loop of `maxIter 3`: review, fix, review, fix, review).

/// Refinements (send-backs, fix rounds) that `max_runs` runs allow.
pub fn refinements(max_runs: u32) -> u32 {
    max_runs.saturating_sub(1)
}

/// Whether another refinement is allowed after `used` of at most `limit`.
pub fn may_refine(used: u32, limit: u32) -> bool {
    used < limit
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn three_runs_are_two_refinements() {
        assert_eq!(refinements(3), 2);
        assert_eq!(refinements(1), 0);
        assert_eq!(refinements(0), 0);
        assert!(may_refine(0, 2) && may_refine(1, 2) && !may_refine(2, 2));
    }
}
