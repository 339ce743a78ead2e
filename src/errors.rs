//! Structured tool errors: what the model reads when the plugin refuses something.
//! Every refusal carries a stable `code`, a message, a hint saying what to do instead, and details.

use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub code: &'static str,
    pub message: String,
    pub hint: String,
    pub details: Value,
}

impl ToolError {
    pub fn new(code: &'static str, message: impl Into<String>, hint: impl Into<String>) -> ToolError {
        ToolError { code, message: message.into(), hint: hint.into(), details: Value::Object(Default::default()) }
    }

    pub fn with_details(mut self, details: Value) -> ToolError {
        self.details = details;
        self
    }

    pub fn to_json(&self) -> String {
        json!({"code": self.code, "message": self.message, "hint": self.hint, "details": self.details}).to_string()
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}
