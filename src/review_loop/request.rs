//! Defines what the host asks the review loop to review: the `Request` (the WIT
//! `review-loop.request`), its `Independence`, the command results a code-mode run waits for,
//! and the defaults and size limit `begin` applies. Plain data below `begin`, `run` and `verdict`.

use super::lenses::Mode;
use serde_json::{Value, json};

pub const DEFAULT_MAX_ITER: u32 = 3;
pub const DEFAULT_TOKEN_CEILING: u64 = 300_000;
/// Largest artifact plus documents accepted, in bytes (about a million tokens: past any
/// reviewer's context, and each lens gets its own copy).
pub const MAX_ARTIFACT: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Independence {
    Independent,
    /// The files of the artifact this session (or a subagent it dispatched) edited.
    SelfAuthored(Vec<String>),
    /// Why authorship could not be measured. Never upgraded to independent.
    Unverified(String),
}

impl Independence {
    pub fn is_independent(&self) -> bool {
        matches!(self, Independence::Independent)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Independence::Independent => "independent",
            Independence::SelfAuthored(_) => "self-authored",
            Independence::Unverified(_) => "unverified",
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Independence::Independent => json!({"kind": "independent"}),
            Independence::SelfAuthored(files) => json!({"kind": "self-authored", "files": files}),
            Independence::Unverified(why) => json!({"kind": "unverified", "why": why}),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandResult {
    pub name: String,
    pub exit_code: i32,
    pub stderr_tail: String,
}

/// What the host asks to review (the WIT `review-loop.request`).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub mode: Mode,
    /// Code: the diff. Plan: the plan change (diff or full text). Claim: the claims verbatim.
    /// Deliverable: the whole deliverable as its reader meets it.
    pub artifact: String,
    /// sha256 hex of the artifact as the host measured it; computed when absent.
    pub artifact_sha: Option<String>,
    pub files: Vec<String>,
    /// Plan files in full, claim sources, the deliverable standard: (path, text).
    pub documents: Vec<(String, String)>,
    /// The repository's top level; hashed into the per-repo lock ("" for no repository).
    pub repo: String,
    pub branch: String,
    pub commit: Option<String>,
    pub uncommitted: bool,
    pub max_iter: Option<u32>,
    pub token_ceiling: Option<u64>,
    pub independence: Independence,
    pub self_review_ack: Option<String>,
    /// Hook-invoked in the authoring session: a self-authored run proceeds, marked.
    pub auto: bool,
    /// Code mode: lint/test/build results already run; `None` waits for `commands`.
    pub commands: Option<Vec<CommandResult>>,
    /// Optional lenses the project switched off (seed: `review-loop.disabled-roles`).
    pub disabled_lenses: Vec<String>,
}
