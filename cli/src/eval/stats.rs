//! The statistics of a paired evaluation: per arm a success rate with its Wilson interval; per
//! pair of runs (the same task, the same repetition, one run in each arm) the discordant counts;
//! an exact McNemar test on them (a two-sided binomial test of the discordant pairs against ½),
//! the paired difference with its interval, and how many pairs a decision would take.

/// The z of a two-sided 95% interval.
const Z: f64 = 1.959_963_984_540_054;
/// The level a verdict needs.
pub const ALPHA: f64 = 0.05;

/// The Wilson score interval of `successes` in `n` (95%); (0, 1) when there are no runs.
pub fn wilson(successes: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p) = (n as f64, successes as f64 / n as f64);
    let denominator = 1.0 + Z * Z / n;
    let centre = (p + Z * Z / (2.0 * n)) / denominator;
    let half = Z * ((p * (1.0 - p) + Z * Z / (4.0 * n)) / n).sqrt() / denominator;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// P(X ≤ k) for X ~ Binomial(n, ½), exactly (in logs, so n in the thousands does not overflow).
fn binomial_half_cdf(k: u64, n: u64) -> f64 {
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0; // ln C(n, 0)
    let mut total = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        total += (ln_choose + ln_half_n).exp();
    }
    total.min(1.0)
}

/// The exact McNemar test's two-sided p-value for `b` pairs where only A succeeded and `c` where
/// only B did; 1 when there are none.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    (2.0 * binomial_half_cdf(b.min(c), n)).min(1.0)
}

/// What the pairs of one task (or of all tasks) say.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Paired {
    pub pairs: u64,
    /// Pairs where A succeeded and B did not.
    pub only_a: u64,
    /// Pairs where B succeeded and A did not.
    pub only_b: u64,
    /// Success rate of A minus that of B over the pairs.
    pub difference: f64,
    /// Its 95% interval (normal approximation of the paired difference).
    pub interval: (f64, f64),
    pub p_value: f64,
    /// `a-better`, `b-better`, or `inconclusive` (p at or above `ALPHA`).
    pub verdict: &'static str,
    /// Pairs it would take for the exact test to decide, were the discordant pairs to keep their
    /// rate and their split; `None` when decided, or when nothing discordant was seen yet.
    pub pairs_to_decide: Option<u64>,
}

/// The paired analysis of `pairs` of outcomes (A's run, B's run).
pub fn paired(pairs: &[(bool, bool)]) -> Paired {
    let n = pairs.len() as u64;
    let only_a = pairs.iter().filter(|(a, b)| *a && !*b).count() as u64;
    let only_b = pairs.iter().filter(|(a, b)| !*a && *b).count() as u64;
    let p_value = mcnemar_exact(only_a, only_b);
    let (difference, interval) = if n == 0 {
        (0.0, (-1.0, 1.0))
    } else {
        let nf = n as f64;
        let d = (only_a as f64 - only_b as f64) / nf;
        let variance = ((only_a + only_b) as f64 / nf - d * d) / nf;
        let half = Z * variance.max(0.0).sqrt();
        (d, ((d - half).max(-1.0), (d + half).min(1.0)))
    };
    let verdict = if p_value >= ALPHA {
        "inconclusive"
    } else if only_a > only_b {
        "a-better"
    } else {
        "b-better"
    };
    let pairs_to_decide = (verdict == "inconclusive").then(|| pairs_needed(n, only_a, only_b)).flatten();
    Paired { pairs: n, only_a, only_b, difference, interval, p_value, verdict, pairs_to_decide }
}

/// The smallest number of pairs at which discordant pairs seen at this rate and split would give
/// p < `ALPHA`; `None` without a discordant pair, or with an even split (no number decides).
fn pairs_needed(n: u64, only_a: u64, only_b: u64) -> Option<u64> {
    let discordant = only_a + only_b;
    if discordant == 0 || only_a == only_b {
        return None;
    }
    let minority = only_a.min(only_b) as f64 / discordant as f64;
    let rate = discordant as f64 / n as f64;
    // Discordant pairs m, of which the minority keeps its share.
    (1..=100_000u64)
        .find(|m| {
            mcnemar_exact((*m as f64 * minority).round() as u64, *m - (*m as f64 * minority).round() as u64) < ALPHA
        })
        .map(|m| (m as f64 / rate).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_hand_computed_intervals() {
        // 8 of 10: centre (0.8 + 1.9208/10) / 1.38415 = 0.71672, half 0.23656.
        let (lo, hi) = wilson(8, 10);
        assert!(close(lo, 0.4902) && close(hi, 0.9433), "{lo} {hi}");
        let (lo, hi) = wilson(0, 5);
        assert!(close(lo, 0.0) && close(hi, 0.4345), "{lo} {hi}");
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    #[test]
    fn the_exact_mcnemar_test_is_the_binomial_tail_doubled() {
        // 6 discordant pairs all one way: 2 × (½)^6 = 0.03125.
        assert!(close(mcnemar_exact(6, 0), 0.03125));
        // 5 all one way: 2 × (½)^5 = 0.0625, not enough.
        assert!(close(mcnemar_exact(0, 5), 0.0625));
        // 9 against 1: 2 × (1 + 10) / 1024 = 0.021484.
        assert!(close(mcnemar_exact(9, 1), 0.021484));
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
    }

    #[test]
    fn a_verdict_only_where_the_pairs_support_one() {
        // 10 pairs: A alone succeeds in 8, both in 2.
        let helpful = paired(&[vec![(true, false); 8], vec![(true, true); 2]].concat());
        assert_eq!((helpful.only_a, helpful.only_b, helpful.verdict), (8, 0, "a-better"));
        assert!(close(helpful.difference, 0.8));
        // variance (0.8 − 0.64) / 10 = 0.016, half 1.96 × 0.12649 = 0.24792.
        assert!(close(helpful.interval.0, 0.5521) && close(helpful.interval.1, 1.0), "{:?}", helpful.interval);
        assert_eq!(helpful.pairs_to_decide, None);
        let harmful = paired(&[vec![(false, true); 7], vec![(false, false); 3]].concat());
        assert_eq!(harmful.verdict, "b-better");
        let neutral = paired(&[vec![(true, true); 5], vec![(false, false); 4], vec![(true, false)]].concat());
        assert_eq!(neutral.verdict, "inconclusive");
        // One discordant pair in 10, all one way: 6 discordant pairs decide, 60 pairs at this rate.
        assert_eq!(neutral.pairs_to_decide, Some(60));
        assert_eq!(paired(&[(true, false), (false, true)]).pairs_to_decide, None, "an even split never decides");
    }
}
