//! The export-side shapes (what the host hands in and gets back), as plain Rust.
//! They mirror the WIT records one for one; `adapter.rs` converts between the two.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    User,
    Subagent,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    pub session: String,
    pub agent: String,
    pub origin: Origin,
    pub depth: u32,
    pub cwd: String,
}

impl CallContext {
    /// A top-level agent a person drives: the only kind whose turns are reviewed.
    pub fn is_top_level(&self) -> bool {
        self.origin == Origin::User && self.depth == 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEvent {
    pub tool: String,
    pub args_json: String,
    pub ok: bool,
    pub output: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnStatus {
    Completed,
    Aborted,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActivationStatus {
    Completed,
    Failed,
    Aborted,
    TimedOut,
}

impl ActivationStatus {
    /// The name decision lines and records use (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            ActivationStatus::Completed => "completed",
            ActivationStatus::Failed => "failed",
            ActivationStatus::Aborted => "aborted",
            ActivationStatus::TimedOut => "timed-out",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivationResult {
    pub id: String,
    pub status: ActivationStatus,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartState {
    Active,
    Pending,
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Part {
    pub name: String,
    pub state: PartState,
    pub missing: Vec<String>,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InitReport {
    pub version: String,
    pub parts: Vec<Part>,
    pub warnings: Vec<String>,
    /// The effective configuration, every default filled in.
    pub config_json: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigError {
    /// Dotted path of the offending key; empty for the document as a whole.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            write!(f, "config: {}", self.message)
        } else {
            write!(f, "config key `{}`: {}", self.key, self.message)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters_schema: String,
}

/// One decision line, as returned by events (`{"kind": …, …}`).
pub type Decision = String;
