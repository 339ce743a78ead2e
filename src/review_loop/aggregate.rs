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
pub const CONFIDENCE_MIN: u32 = 70;

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
    /// 0-based; the dedup and confidence filters apply from index 1 (the seed's "iteration ≥ 2").
    pub iteration: u32,
    /// Findings of earlier iterations that were sent to be fixed.
    pub addressed: &'a [Finding],
}

/// What a claim is compared with, cached per file.
struct References<'a> {
    corpus: Corpus,
    artifact: &'a str,
    whole: Option<Vector>,
    files: HashMap<String, Option<Vector>>,
}

impl<'a> References<'a> {
    fn whole(&mut self) -> &Vector {
        if self.whole.is_none() {
            self.whole = Some(self.corpus.vector(self.artifact));
        }
        self.whole.get_or_insert_with(Vector::default)
    }

    /// Code and plan: the ±10 lines around the cited line, else the cited file's part of the
    /// diff, else the whole artifact (a long reference shrinks every cosine: seed 003 on why
    /// deliverable mode uses the cited passage).
    fn for_code(&mut self, finding: &Finding) -> (Vector, &'static str) {
        if let Some(file) = &finding.file
            && let Some(section) = context::diff_section(self.artifact, file)
        {
            if let Some(window) = finding.line.and_then(|l| context::diff_window(section, l)) {
                return (self.corpus.vector(&window), "window");
            }
            let corpus = &self.corpus;
            let vector = self.files.entry(file.clone()).or_insert_with(|| Some(corpus.vector(section)));
            if let Some(v) = vector {
                return (v.clone(), "file");
            }
        }
        (self.whole().clone(), "artifact")
    }

    /// Deliverable: the cited passage plus its section; the named section; else the whole text.
    fn for_deliverable(&mut self, finding: &Finding) -> (Vector, &'static str) {
        if let Some(passage) = &finding.passage
            && let Some(at) = context::find_passage(self.artifact, passage)
        {
            let section = context::section_at(self.artifact, at);
            return (self.corpus.vector(&format!("{passage}\n{section}")), "passage");
        }
        if let Some(section) = finding.section.as_deref().and_then(|s| context::section_named(self.artifact, s)) {
            return (self.corpus.vector(section), "section");
        }
        (self.whole().clone(), "artifact")
    }
}

pub fn aggregate(input: &Input<'_>, findings: Vec<Finding>) -> Aggregation {
    let mut refs = References {
        corpus: Corpus::of_lines(input.artifact),
        artifact: input.artifact,
        whole: None,
        files: HashMap::new(),
    };
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
            let (reference, kind) = match input.mode {
                Mode::Deliverable => refs.for_deliverable(&finding),
                Mode::Claim => (refs.whole().clone(), "artifact"),
                Mode::Code | Mode::Plan => refs.for_code(&finding),
            };
            let score = cosine(&claim, &reference);
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
            let score = f64::from(finding.confidence);
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
