//! Seed 003, Step 6, in its order: drift guard, cross-iteration dedup, confidence filter,
//! classification. Every dropped finding keeps the number that dropped it, so a verdict (and a
//! test) can show which side of which threshold it fell on.

use super::context;
use super::findings::{Finding, Severity};
use super::lenses::Mode;
use super::similarity::{Corpus, Vector, cosine};
use serde_json::{Value, json};
use std::collections::HashMap;

/// Claims less similar than this to what they cite are off-topic.
pub const DRIFT_MIN: f64 = 0.3;
/// Claims at least this similar to an addressed finding are repeats.
pub const DEDUP_MIN: f64 = 0.85;
/// From iteration 2, LLM findings below this confidence are dropped.
pub const CONFIDENCE_MIN: f64 = 70.0;

#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    pub finding: Finding,
    /// `drift`, `duplicate` or `low-confidence`.
    pub reason: &'static str,
    /// The similarity or confidence that decided it.
    pub score: f64,
    /// Drift: what the claim was compared with (`window`, `file`, `passage`, `section`, `artifact`).
    pub reference: &'static str,
}

impl Dropped {
    pub fn to_json(&self) -> Value {
        let mut v = self.finding.to_json();
        v["dropped"] = json!(self.reason);
        v["score"] = json!((self.score * 1000.0).round() / 1000.0);
        if !self.reference.is_empty() {
            v["reference"] = json!(self.reference);
        }
        v
    }
}

#[derive(Debug, Default)]
pub struct Aggregation {
    pub actionable: Vec<Finding>,
    pub speculative: Vec<Finding>,
    pub dropped: Vec<Dropped>,
}

pub struct Input<'a> {
    pub mode: Mode,
    /// The diff, plan text, claims or deliverable.
    pub artifact: &'a str,
    /// The artifact's index, built once when the iteration began (`Corpus::of_lines`).
    pub corpus: &'a Corpus,
    /// Each file's part of the artifact when it is a diff (`context::diff_sections`).
    pub sections: &'a HashMap<String, std::ops::Range<usize>>,
    /// 0-based; the dedup and confidence filters apply from index 1 (the seed's "iteration ≥ 2").
    pub iteration: u32,
    /// Findings of earlier iterations that were sent to be fixed.
    pub addressed: &'a [Finding],
}

/// What claims are compared with. The artifact is indexed once (its vector and, for a diff,
/// where each file's part starts and ends); each finding then costs its own small window.
struct References<'a> {
    corpus: &'a Corpus,
    artifact: &'a str,
    whole: Option<Vector>,
    sections: &'a HashMap<String, std::ops::Range<usize>>,
    files: HashMap<String, Vector>,
}

impl<'a> References<'a> {
    fn new(input: &Input<'a>) -> References<'a> {
        References {
            corpus: input.corpus,
            artifact: input.artifact,
            whole: None,
            sections: input.sections,
            files: HashMap::new(),
        }
    }

    fn against_whole(&mut self, claim: &Vector) -> (f64, &'static str) {
        let (corpus, len) = (self.corpus, self.artifact.len());
        let whole = self.whole.get_or_insert_with(|| corpus.vector_of_range(0..len));
        (cosine(claim, whole), "artifact")
    }

    /// The cited file's part of the diff: (its text, its byte offset in the artifact).
    fn section(&mut self, file: &str) -> Option<(&'a str, usize)> {
        let r = self.sections.get(file.trim_start_matches("./"))?;
        Some((&self.artifact[r.clone()], r.start))
    }

    /// Code and plan: the ±10 lines around the cited line, else the cited file's part of the
    /// diff, else the whole artifact (a long reference shrinks every cosine: seed 003 on why
    /// deliverable mode uses the cited passage).
    fn for_code(&mut self, finding: &Finding, claim: &Vector) -> (f64, &'static str) {
        if let Some(file) = &finding.file
            && let Some((section, at)) = self.section(file)
        {
            if let Some(window) = finding.line.and_then(|l| context::diff_window_range(section, l)) {
                let lines = self.corpus.vector_of_range(at + window.start..at + window.end);
                return (cosine(claim, &lines), "window");
            }
            let corpus = self.corpus;
            let range = at..at + section.len();
            let vector = self.files.entry(file.clone()).or_insert_with(|| corpus.vector_of_range(range));
            return (cosine(claim, vector), "file");
        }
        self.against_whole(claim)
    }

    /// Deliverable: the cited passage plus its section; the named section; else the whole text.
    fn for_deliverable(&mut self, finding: &Finding, claim: &Vector) -> (f64, &'static str) {
        if let Some(passage) = &finding.passage
            && let Some(at) = context::find_passage(self.artifact, passage)
        {
            let section = context::section_at(self.artifact, at);
            return (cosine(claim, &self.corpus.vector(&format!("{passage}\n{section}"))), "passage");
        }
        if let Some(section) = finding.section.as_deref().and_then(|s| context::section_named(self.artifact, s)) {
            return (cosine(claim, &self.corpus.vector(section)), "section");
        }
        self.against_whole(claim)
    }
}

pub fn aggregate(input: &Input<'_>, findings: Vec<Finding>) -> Aggregation {
    let mut refs = References::new(input);
    let mut out = Aggregation::default();
    let addressed: Vec<Vector> = if input.iteration > 0 {
        input.addressed.iter().map(|f| refs.corpus.vector(&f.claim)).collect()
    } else {
        vec![]
    };

    for finding in findings {
        let claim = refs.corpus.vector(&finding.claim);
        // 1. Drift guard. Exempt: the meta-signal of a standard that failed to load, and
        //    execution failures (a command's stderr is not meant to echo the diff).
        if !finding.is_checklist_unavailable() && !finding.is_execution() {
            let (score, kind) = match input.mode {
                Mode::Deliverable => refs.for_deliverable(&finding, &claim),
                Mode::Claim => refs.against_whole(&claim),
                Mode::Code | Mode::Plan => refs.for_code(&finding, &claim),
            };
            if score < DRIFT_MIN {
                out.dropped.push(Dropped { finding, reason: "drift", score, reference: kind });
                continue;
            }
        }
        // 2. Cross-iteration dedup against what was already sent to be fixed.
        if let Some(score) = addressed.iter().map(|a| cosine(&claim, a)).find(|s| *s >= DEDUP_MIN) {
            out.dropped.push(Dropped { finding, reason: "duplicate", score, reference: "" });
            continue;
        }
        // 3. Confidence filter from iteration 2; execution-grounded findings always stay.
        if input.iteration > 0 && !finding.is_execution() && finding.confidence < CONFIDENCE_MIN {
            let score = finding.confidence;
            out.dropped.push(Dropped { finding, reason: "low-confidence", score, reference: "" });
            continue;
        }
        // 4. Classify.
        if finding.severity >= Severity::Medium && finding.load_bearing {
            out.actionable.push(finding);
        } else {
            out.speculative.push(finding);
        }
    }
    out
}
