//! The lens sets of seed 003, Step 4, and the prompts built from them: each lens's own
//! instructions (written for this project), the mode's discipline block, the JSON-only findings
//! instruction, the reflection preamble from iteration 2, and the falsifier's short prompt.

use super::findings::Finding;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Code,
    Plan,
    Claim,
    Deliverable,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Code => "code",
            Mode::Plan => "plan",
            Mode::Claim => "claim",
            Mode::Deliverable => "deliverable",
        }
    }

    pub fn parse(text: &str) -> Option<Mode> {
        [Mode::Code, Mode::Plan, Mode::Claim, Mode::Deliverable].into_iter().find(|m| m.as_str() == text)
    }

    /// The lens names this mode dispatches, in dispatch order (execution-grounded is not a lens
    /// dispatch: the host runs commands).
    pub fn lenses(self) -> &'static [&'static str] {
        match self {
            Mode::Code => &["simplicity", "design-coherence", "adversarial", "ship-readiness", "statistical-rigor"],
            Mode::Plan => &["vision-coherence", "operator-empathy", "architecture", "completeness"],
            Mode::Claim => &["claim-falsification", "claim-method", "claim-calibration", "claim-coverage"],
            Mode::Deliverable => &["operator-empathy"],
        }
    }

    /// Lenses a project may switch off (seed: `review-loop.disabled-roles`).
    pub fn optional_lenses(self) -> &'static [&'static str] {
        match self {
            Mode::Code => &["statistical-rigor"],
            _ => &[],
        }
    }

    /// Most findings taken from one lens (the discipline blocks' caps; code mode has none in the
    /// seed, 50 bounds the falsifier work one lens can cause).
    pub fn cap(self) -> usize {
        match self {
            Mode::Code => 50,
            Mode::Plan | Mode::Deliverable => 5,
            Mode::Claim => 6,
        }
    }

    /// What the falsifier sees and the verdict calls the reviewed thing.
    pub fn artifact_noun(self) -> &'static str {
        match self {
            Mode::Code => "diff",
            Mode::Plan => "plan",
            Mode::Claim => "claims",
            Mode::Deliverable => "deliverable",
        }
    }
}

/// One lens's own instructions. `mode` matters only for operator-empathy, whose deliverable
/// scope (B) is a different checklist from its plan scope (A).
pub fn instructions(lens: &str, mode: Mode) -> &'static str {
    match (lens, mode) {
        ("simplicity", _) => {
            "You are the SIMPLICITY lens. Look for code that is more complicated than the change needs: \
             duplicated logic that already exists elsewhere in the diff or the codebase, abstractions with one \
             caller, configuration nobody sets, dead branches, hand-rolled versions of what the standard library \
             or an existing dependency does. Name the simpler form concretely."
        }
        ("design-coherence", _) => {
            "You are the DESIGN-COHERENCE lens. Check that the change fits the design around it: module \
             boundaries and ownership, naming, error handling style, where state lives, how the same problem is \
             solved elsewhere in the project. Flag a change that introduces a second way of doing something the \
             project already does one way, or that puts policy in the wrong layer."
        }
        ("adversarial", _) => {
            "You are the ADVERSARIAL lens. Try to break the change: malformed or hostile input, empty and huge \
             values, concurrency and re-entrancy, partial failure halfway through a write, resource exhaustion, \
             path traversal, secrets reaching logs, panics on data a model, a file or the network supplied. \
             Every finding names the input that breaks it and what happens."
        }
        ("ship-readiness", _) => {
            "You are the SHIP-READINESS lens. Would you merge this today? Missing or untestable tests for the \
             behaviour changed, tests that cannot fail, debug leftovers, TODOs on the main path, breaking \
             changes to a public interface without a migration, docs and configuration references that now \
             disagree with the code, error messages that do not tell the user what to do next."
        }
        ("statistical-rigor", _) => {
            "You are the STATISTICAL-RIGOR lens. Where the change computes, reports or thresholds numbers \
             (metrics, benchmarks, similarity scores, sampling, rates), check the arithmetic and the method: \
             units, off-by-one in windows, division by zero, thresholds on the wrong side, averages of ratios, \
             claims about speed or accuracy that the code or its benchmark cannot support. Return [] when the \
             change has no quantitative content."
        }
        ("vision-coherence", _) => {
            "You are the VISION-COHERENCE lens. Find the source-of-truth document the plan derives from \
             (vision, charter, RFC, design notes) and check that the plan realises each of its non-negotiables, \
             stated goals and falsifiers. Flag a goal the plan drops, contradicts or quietly redefines."
        }
        ("operator-empathy", Mode::Deliverable) => {
            "You are the OPERATOR-EMPATHY lens, scope B (finished reader-facing work). First assign the \
             deliverable one genre: report, reference, decision-ask, narrative or machine-output. Then run the \
             checklist for that genre: D1 answer first; D2 inventories rendered as prose instead of tables; D3 \
             lists carrying reasoning that needs sentences; D4 heading shape that does not fit the genre; D5 a \
             decision asked without its evidence inline; D6 a menu of options instead of a recommendation; D7 \
             terms used before they are introduced; D8 code detail in the reading path; D9 density (walls of \
             text, over-long sentences); D10 rigor apparatus in the reading path; D11 edit-meta (notes about the \
             document's own revisions). If the project declares a deliverable standard and it could not be \
             read, report one finding with category `checklist-unavailable` naming the path."
        }
        ("operator-empathy", _) => {
            "You are the OPERATOR-EMPATHY lens, scope A (plans). Will the person who acts on this plan be able \
             to act on it under realistic constraints: the time they have, the device they use, the decisions \
             they must make and in what order, what they need to know that the plan assumes? Flag steps that \
             cannot be carried out as written, decision fatigue, and anxiety surfaces the plan creates."
        }
        ("architecture", _) => {
            "You are the ARCHITECTURE lens. Does the plan respect the declared layer separations, avoid silent \
             state, stay inside the scope it references, and surface every edit it implies to files that need \
             sign-off? Flag hidden coupling, scope growth, and implied changes the plan does not name."
        }
        ("completeness", _) => {
            "You are the COMPLETENESS lens. Cross-reference the plan against every spec section it claims to \
             cover. Flag missing surfaces, done-criteria that cannot be tested, asks that dangle without an \
             owner, and sections claimed as covered that are not."
        }
        ("claim-falsification", _) => {
            "You are the CLAIM-FALSIFICATION lens. Go to the cited primary sources and try to DISPROVE each \
             load-bearing claim. Hunt specifically for disconfirming evidence the analysis omitted. Quote the \
             source for every finding."
        }
        ("claim-method", _) => {
            "You are the CLAIM-METHOD lens. Is the method sound enough to support the claim? Do comparable data \
             actually exist, is the sample non-degenerate, is attribution made by an authoritative field rather \
             than inference, is an under-powered null being sold as a finding?"
        }
        ("claim-calibration", _) => {
            "You are the CLAIM-CALIBRATION lens. Do the stated confidence and the headline match the evidence? \
             Flag overstatement, a proxy presented as fact, absence of evidence read as evidence of absence, and \
             a caveat stated and then ignored."
        }
        ("claim-coverage", _) => {
            "You are the CLAIM-COVERAGE lens. Did the analysis examine the right evidence? Flag selection and \
             sampling bias, sources it should have read and did not, and filtering that removed the cases that \
             would have changed the answer."
        }
        _ => "Review the artifact for defects that matter.",
    }
}

/// The mode's hard discipline block (seed 003, "Dispatch (all modes)"); code mode has none.
pub fn discipline(mode: Mode) -> Option<&'static str> {
    match mode {
        Mode::Code => None,
        Mode::Plan => Some(
            "PLAN-VS-CODE DISCIPLINE: This document is a PLAN, not implementation. Do NOT emit findings of the \
             form 'code at X does not implement Y' against a forward-looking spec. Valid findings: internal \
             contradiction in the plan, missing required section, untestable done-criterion, constraint \
             violation, Tier-1 ask missing for an implied file edit. Cap at 5 findings; quality over quantity.",
        ),
        Mode::Claim => Some(
            "CLAIM DISCIPLINE: You are reviewing an analytical CONCLUSION, not code. Ground every finding in the \
             cited primary source (read it; do not trust the analysis's own summary of it). Valid findings: a \
             load-bearing claim contradicted or unsupported by the source, disconfirming evidence the analysis \
             omitted, a method flaw that makes the claim unsupportable, overstatement vs. stated confidence. A \
             failed falsification (you tried and could NOT break a claim) is a valid, useful result — report \
             it. Cap at 6 findings; quality over quantity.",
        ),
        Mode::Deliverable => Some(
            "DELIVERABLE DISCIPLINE: You are reviewing FINISHED work for whether its reader can use it — not \
             whether it is correct, complete, or well-written. Assign the genre first; the checks are \
             genre-dependent and mis-assigning it is how this lens produces noise. Every finding must carry a \
             COUNT you measured (inventories, tables, list items, words per heading, sentence lengths) and must \
             name the thing and the fix — which inventory becomes which table with which columns, which two \
             sentences the answer moves into. 'Consider adding structure' is not a finding. Do not flag \
             correctness, completeness, prose style, or word choice. A clean deliverable returns `[]`. Cap at 5 \
             findings. The single exception to the count rule is a `checklist-unavailable` finding, which \
             reports that a declared project standard could not be read and needs no measurement.",
        ),
    }
}

/// The JSON-only findings instruction every lens gets.
pub fn json_instruction(mode: Mode) -> String {
    let extra = if mode == Mode::Deliverable {
        ", \"passage\": \"the exact text you measured, quoted\", \"section\": \"the heading it sits under\""
    } else {
        ""
    };
    format!(
        "Return JSON findings only: one JSON array, no preamble, no code fence. Each finding is \
         {{\"file\": \"path or null\", \"line\": number or null, \"claim\": \"what is wrong, in one or two \
         sentences\", \"severity\": \"low|medium|high|critical\", \"confidence\": 0-100, \"load_bearing\": \
         true|false, \"category\": \"one word\", \"fix\": \"the smallest change that resolves it\"{extra}}}. Label \
         load_bearing honestly: true only when the work is wrong, unsafe or unusable without the fix; \
         in-loop fixes are limited to load-bearing findings and the rest are surfaced as a checklist. \
         Return [] when you find nothing."
    )
}

/// Seed 003's Reflexion-style preamble for iteration 2 onwards.
pub fn reflection(prior: &[Finding]) -> String {
    let list: Vec<String> =
        prior.iter().map(|f| format!("- [{}] {} — {}", f.severity.as_str(), f.location(), f.claim)).collect();
    format!(
        "In the prior iteration you flagged:\n{}\nThe developer applied fixes. Your new findings should reflect \
         what's now true rather than re-litigate prior decisions.",
        if list.is_empty() { "- (nothing)".to_string() } else { list.join("\n") }
    )
}

/// What a lens reviews, as the prompt shows it.
pub struct Scope<'a> {
    pub mode: Mode,
    pub branch: &'a str,
    pub files: &'a [String],
    pub artifact: &'a str,
    /// Plan files in full, claim sources, the deliverable standard: (path, text).
    pub documents: &'a [(String, String)],
}

/// The full prompt of one lens reviewer.
pub fn lens_prompt(lens: &str, scope: &Scope<'_>, iteration: u32, prior: &[Finding]) -> String {
    let mut out = String::with_capacity(scope.artifact.len() + 4096);
    out.push_str(instructions(lens, scope.mode));
    out.push_str("\n\n");
    if let Some(block) = discipline(scope.mode) {
        out.push_str(block);
        out.push_str("\n\n");
    }
    if iteration > 0 {
        out.push_str(&reflection(prior));
        out.push_str("\n\n");
    }
    out.push_str(&json_instruction(scope.mode));
    out.push_str("\n\n");
    let heading = match scope.mode {
        Mode::Code => "The diff under review",
        Mode::Plan => "The plan change under review",
        Mode::Claim => {
            "The claims under review, verbatim. Read the primary sources below directly: your job is to break \
             the claims against ground truth, not to critique prose"
        }
        Mode::Deliverable => "The full deliverable, as its reader meets it",
    };
    out.push_str(&format!("Branch: {}\nFiles: {}\n\n## {heading}\n\n", scope.branch, scope.files.join(", ")));
    out.push_str(scope.artifact);
    for (path, text) in scope.documents {
        out.push_str(&format!("\n\n## {path}\n\n{text}"));
    }
    out
}

/// The falsifier's prompt (seed 003, Step 5), with the mode's context.
pub fn falsifier_prompt(finding: &Finding, mode: Mode, context: &str) -> String {
    let (what, task) = match mode {
        Mode::Code | Mode::Plan => (
            format!("The actual {} at that location is", mode.artifact_noun()),
            "Try to disprove the claim. If the finding refers to nonexistent code, misreads the change, attacks a \
             strawman, or relies on hallucinated context",
        ),
        Mode::Claim => (
            "The relevant primary-source excerpt is".to_string(),
            "Try to disprove the finding against the source: confirm it is itself grounded in the source. If it \
             misreads or misquotes the source, or relies on hallucinated context",
        ),
        Mode::Deliverable => (
            "The surrounding deliverable text is".to_string(),
            "Re-count what the finding claims to have measured. If the count is wrong, the cited passage does \
             not exist, or the check does not apply to the genre the deliverable actually is",
        ),
    };
    format!(
        "A reviewer flagged this issue: {} at {} (category: {}, severity: {}). {what}:\n\n{context}\n\n{task}, \
         return {{\"falsified\": true, \"evidence\": \"<what you found>\"}}. Otherwise return {{\"falsified\": false}}. \
         Return that JSON object only.",
        finding.claim,
        finding.location(),
        finding.category,
        finding.severity.as_str(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn each_mode_has_the_seeds_lens_set() {
        assert_eq!(Mode::Code.lenses().len(), 5);
        assert_eq!(Mode::Plan.lenses(), ["vision-coherence", "operator-empathy", "architecture", "completeness"]);
        assert_eq!(Mode::Claim.lenses().len(), 4);
        assert_eq!(Mode::Deliverable.lenses(), ["operator-empathy"]);
        for mode in [Mode::Code, Mode::Plan, Mode::Claim, Mode::Deliverable] {
            for lens in mode.lenses() {
                assert!(!instructions(lens, mode).starts_with("Review the artifact"), "{lens} has its own text");
            }
        }
        assert_ne!(instructions("operator-empathy", Mode::Plan), instructions("operator-empathy", Mode::Deliverable));
    }
}
