//! One session's review state: the counters, cooldown and budget marks, the review in flight and
//! the digest buffer. The scheduler updates it; `sessions` persists it whole, so its fields are
//! the file's shape. Below both, so neither reaches into the other for it.

use crate::schedule::digest::DigestBuffer;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InFlight {
    pub id: String,
    pub started_ms: u64,
    pub turn: u64,
}

/// One session's review state; persisted whole in `sessions/` (see `sessions.rs`), so its
/// fields are the file's shape (unknown fields are ignored, missing ones default).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionState {
    /// Completed top-level turns, ever (the turn index).
    pub turn: u64,
    pub turns_since_review: u64,
    pub tools_since_review: u64,
    /// Tool calls of the turn in progress; counted only if it completes.
    pub(super) pending_tools: u64,
    pub last_review_ms: Option<u64>,
    pub reviews_started: u64,
    pub in_flight: Option<InFlight>,
    pub(super) last_gate_ms: Option<u64>,
    pub digest: DigestBuffer,
    pub last_outcome: Option<String>,
}
