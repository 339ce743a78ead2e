//! Defines the typed sections the policy reads: `Config` and one struct per section of keys.
//! Plain data: `parse.rs` builds them from checked key paths, `mod.rs` reports them back as JSON.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateKind {
    Counters,
    Jev,
    /// Any OpenAI-compatible chat-completions model, through a named host endpoint.
    OpenAi,
}

#[derive(Debug, Clone, PartialEq)]
pub struct JevConfig {
    pub endpoint: String,
    pub cooldown_minutes: u64,
    pub timeout_ms: u32,
    pub confident_no: f64,
}

/// `review.openai`: the gate question asked of a chat-completions model.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    pub endpoint: String,
    pub model: String,
    /// Appended by the host to the endpoint's base URL.
    pub path: String,
    pub cooldown_minutes: u64,
    pub timeout_ms: u32,
    pub confident_no: f64,
    pub max_tokens: u32,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewConfig {
    pub enabled: bool,
    pub turn_interval: u64,
    pub tool_call_threshold: u64,
    pub cooldown_minutes: u64,
    pub max_per_session: u64,
    pub timeout_minutes: u64,
    pub gate: GateKind,
    pub jev: JevConfig,
    pub openai: OpenAiConfig,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CuratorConfig {
    pub enabled: bool,
    pub stale_days: u64,
    pub archive_days: u64,
    pub grace_days: u64,
    pub delay_seconds: u64,
    pub interval_hours: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShadowConfig {
    pub soft_limit_chars: u64,
    pub hard_limit_chars: u64,
    pub frugal_model: String,
    pub stale_report_decay: f64,
    pub cooldown_minutes: u64,
    pub escalation: bool,
    pub reasoning_effort_ladder: Vec<String>,
    pub min_novelty_share: f64,
    pub value_loop_window_turns: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub skill_bytes: usize,
    pub file_bytes: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub write_approval: bool,
    pub pending_ttl_days: u64,
    pub history_versions: usize,
    pub duplicate_threshold: f64,
    pub limits: Limits,
    pub review: ReviewConfig,
    pub curator: CuratorConfig,
    pub shadow: ShadowConfig,
    pub review_loop: ReviewLoopConfig,
    pub team: TeamConfig,
}

/// A library shared with teammates (docs/team-sync.md).
#[derive(Debug, Clone, PartialEq)]
pub struct TeamConfig {
    /// This machine's library name; empty when the library is not shared.
    pub library: String,
    /// Stage (rather than land) changes to skills another library created.
    pub stage_others: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReviewLoopConfig {
    pub provider: String,
    pub reviewer_timeout_minutes: u64,
    pub falsifier_timeout_minutes: u64,
}
