//! What paired evaluations found about skills (`self-evolve eval --skill NAME` appends one line
//! per finished evaluation to `eval/evidence.jsonl` in the state root): shown by `/skills show`,
//! and a skill the agent did better without, with confidence, is flagged by the curator for the
//! operator (never archived on an evaluation alone).

use crate::host::{Host, Root};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PATH: &str = "eval/evidence.jsonl";
/// Only the file's last bytes are read: the newest evaluations, a bounded read.
const TAIL_BYTES: usize = 1 << 20;

/// One finished evaluation of a skill, as the CLI records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    pub skill: String,
    /// `a-better` (the agent did better with the skill), `b-better` (without it), `inconclusive`.
    pub verdict: String,
    /// Success rate with the skill minus without it, over the pairs.
    pub difference: f64,
    pub interval: (f64, f64),
    pub p_value: f64,
    pub pairs: u64,
    pub suite_sha256: String,
    pub agent: String,
    /// The sha256 of the SKILL.md that was evaluated.
    #[serde(default)]
    pub version: Option<String>,
    pub at: u64,
}

impl Evaluation {
    /// The agent did better without the skill, with confidence.
    pub fn negative(&self) -> bool {
        self.verdict == "b-better"
    }

    /// One line for a person: what was found, on what.
    pub fn summary(&self, current_sha256: Option<&str>) -> String {
        let found = match self.verdict.as_str() {
            "a-better" => "helps",
            "b-better" => "the agent did better without it",
            _ => "inconclusive",
        };
        let of = match (&self.version, current_sha256) {
            (Some(v), Some(now)) if v == now => "this version",
            (Some(_), Some(_)) => "an earlier version",
            _ => "a version",
        };
        format!(
            "{found}: {:+.0}% [{:+.0}%, {:+.0}%], p {:.3}, {} pairs (of {of}; suite {}, agent `{}`)",
            100.0 * self.difference,
            100.0 * self.interval.0,
            100.0 * self.interval.1,
            self.p_value,
            self.pairs,
            self.suite_sha256.get(..12).unwrap_or(&self.suite_sha256),
            crate::visible::visible(&self.agent)
        )
    }
}

/// The newest evaluation of each skill on record.
pub fn latest(host: &impl Host) -> BTreeMap<String, Evaluation> {
    let Ok(bytes) = host.read(&Root::State, PATH) else { return BTreeMap::new() };
    let tail = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
    let mut out = BTreeMap::new();
    for line in String::from_utf8_lossy(tail).lines() {
        if let Ok(evaluation) = serde_json::from_str::<Evaluation>(line) {
            let newer = out.get(&evaluation.skill).is_none_or(|e: &Evaluation| e.at <= evaluation.at);
            if newer {
                out.insert(evaluation.skill.clone(), evaluation);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    use crate::host::WriteMode;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn line(skill: &str, verdict: &str, at: u64) -> String {
        format!(
            "{}\n",
            serde_json::json!({"skill": skill, "verdict": verdict, "difference": -0.5, "interval": [-0.9, -0.1],
                "pValue": 0.02, "pairs": 12, "suiteSha256": "ab".repeat(32), "agent": "claude -p {prompt}",
                "version": "v1", "at": at})
        )
    }

    #[test]
    fn the_newest_evaluation_of_each_skill_is_read_and_a_torn_line_is_skipped() {
        let host = FakeHost::new(0);
        let text = [line("pdf", "a-better", 5), line("pdf", "b-better", 9), line("git", "inconclusive", 1)].concat()
            + "{\"skill\": \"pdf\", \"verd";
        host.write(&Root::State, PATH, text.as_bytes(), WriteMode::Truncate).unwrap();
        let found = latest(&host);
        assert_eq!(found.len(), 2);
        assert!(found["pdf"].negative());
        assert_eq!(
            found["pdf"].summary(Some("v2")),
            format!(
                "the agent did better without it: -50% [-90%, -10%], p 0.020, 12 pairs (of an earlier version; suite {}, agent `claude -p {{prompt}}`)",
                "ab".repeat(6)
            )
        );
        assert!(!found["git"].negative());
        assert!(latest(&FakeHost::new(0)).is_empty());
    }
}
