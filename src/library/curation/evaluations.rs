//! What paired evaluations found about skills (`self-evolve eval --skill NAME` appends one line
//! per finished evaluation to `eval/evidence.jsonl` in the state root, `--pending ID` to
//! `eval/staged.jsonl`): a skill's is shown by `/skills show`, and a skill the agent did better
//! without, with confidence, is flagged by the curator for the operator (never archived on an
//! evaluation alone); a staged text's is shown with the staged write (`/skills pending`, `diff`),
//! found by the text's sha256 and the one it replaces.

use crate::host::{Host, Root};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PATH: &str = "eval/evidence.jsonl";
/// Evaluations of staged texts, in a file of their own: a plugin from before they existed reads
/// `PATH` alone, and must never take one for a skill's own evaluation.
pub const STAGED_PATH: &str = "eval/staged.jsonl";
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
    /// `skill` (with it against without it; lines from before kinds have none) or `staged` (a
    /// staged text against what it would replace).
    #[serde(default)]
    pub kind: Option<String>,
    /// The arms' labels, A then B.
    #[serde(default)]
    pub arms: Vec<String>,
    /// A staged text's: the sha256 of the text it would replace (`None` for a create).
    #[serde(default)]
    pub base_sha256: Option<String>,
}

impl Evaluation {
    /// The agent did better without the skill, with confidence.
    pub fn negative(&self) -> bool {
        self.verdict == "b-better"
    }

    /// One line for a person: what was found, on what.
    pub fn summary(&self, current_sha256: Option<&str>) -> String {
        let baseline = self.arms.get(1).map_or("what it replaces", String::as_str);
        let found = match (self.verdict.as_str(), self.staged()) {
            ("a-better", false) => "helps".to_string(),
            ("b-better", false) => "the agent did better without it".to_string(),
            ("a-better", true) => format!("better than {}", crate::visible::visible(baseline)),
            ("b-better", true) => format!("worse than {}", crate::visible::visible(baseline)),
            _ => "inconclusive".to_string(),
        };
        let of = match (&self.version, current_sha256) {
            _ if self.staged() => "the staged text",
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

    /// An evaluation of a staged text against what it would replace (not of the skill against
    /// its absence: the curator and `/skills show` never read it as that).
    pub fn staged(&self) -> bool {
        self.kind.as_deref() == Some("staged")
    }
}

/// The evaluations on record in `path` (the newest megabyte of them), oldest first; torn lines
/// skipped.
fn all(host: &impl Host, path: &str) -> Vec<Evaluation> {
    let Ok(bytes) = host.read(&Root::State, path) else { return Vec::new() };
    let tail = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
    String::from_utf8_lossy(tail).lines().filter_map(|line| serde_json::from_str::<Evaluation>(line).ok()).collect()
}

/// The newest evaluation of each skill against its absence.
pub fn latest(host: &impl Host) -> BTreeMap<String, Evaluation> {
    let mut out = BTreeMap::new();
    for evaluation in all(host, PATH).into_iter().filter(|e| !e.staged()) {
        if out.get(&evaluation.skill).is_none_or(|e: &Evaluation| e.at <= evaluation.at) {
            out.insert(evaluation.skill.clone(), evaluation);
        }
    }
    out
}

/// The newest evaluation of the staged text of `skill` whose sha256 is `sha256`, against the
/// text it replaces now (`base`: the same text staged again over another version was not
/// evaluated against that one).
pub fn of_staged(host: &impl Host, skill: &str, sha256: &str, base: Option<&str>) -> Option<Evaluation> {
    all(host, STAGED_PATH)
        .into_iter()
        .filter(|e| {
            e.staged() && e.skill == skill && e.version.as_deref() == Some(sha256) && e.base_sha256.as_deref() == base
        })
        .max_by_key(|e| e.at)
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

    #[test]
    fn a_staged_texts_evaluation_is_found_by_its_sha256_and_never_read_as_the_skills() {
        let host = FakeHost::new(0);
        let staged = |sha: &str, base: &str, verdict: &str, at: u64| {
            let mut value: serde_json::Value = serde_json::from_str(line("pdf", verdict, at).trim()).unwrap();
            value["kind"] = "staged".into();
            value["version"] = sha.into();
            value["baseSha256"] = base.into();
            value["arms"] = serde_json::json!(["pdf as staged (1-a)", "pdf now"]);
            format!("{value}\n")
        };
        host.write(&Root::State, PATH, line("pdf", "a-better", 1).as_bytes(), WriteMode::Truncate).unwrap();
        let text =
            [staged("s1", "b0", "b-better", 2), staged("s1", "b0", "a-better", 3), staged("s1", "b1", "b-better", 4)]
                .concat();
        host.write(&Root::State, STAGED_PATH, text.as_bytes(), WriteMode::Truncate).unwrap();
        // The skill's own evaluation stays the one of it against its absence.
        assert_eq!(latest(&host)["pdf"].verdict, "a-better");
        assert_eq!(latest(&host)["pdf"].at, 1);
        let found = of_staged(&host, "pdf", "s1", Some("b0")).unwrap();
        assert_eq!(found.at, 3, "the newest of that text over that base");
        assert!(found.summary(None).starts_with("better than pdf now: -50%"), "{}", found.summary(None));
        assert_eq!(of_staged(&host, "pdf", "s1", Some("b1")).map(|e| e.at), Some(4));
        assert!(of_staged(&host, "pdf", "s1", None).is_none(), "not evaluated as a create");
        assert!(
            of_staged(&host, "pdf", "s2", Some("b0")).is_none() && of_staged(&host, "git", "s1", Some("b0")).is_none()
        );
    }
}
