//! The bounded per-session digest the gate sees: the last direct-human user message, the last
//! assistant message (each at most 3,000 characters), the number of tool results since the
//! last review, the skills loaded in the turn and the turn index. Tool output never enters it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

pub const MAX_TEXT_CHARS: usize = 3_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    pub last_user_message: String,
    pub last_assistant_message: String,
    pub tool_results_since_review: u64,
    pub skills_loaded: Vec<String>,
    pub turn: u64,
}

/// What a session has seen since its last review, kept small.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DigestBuffer {
    last_user: String,
    last_assistant: String,
    tool_results: u64,
    skills_in_turn: BTreeSet<String>,
}

impl DigestBuffer {
    /// Only messages a person typed count; injected ones are ignored.
    pub fn user_message(&mut self, text: &str, human: bool) {
        if human {
            self.last_user = kept(text);
        }
    }

    pub fn assistant_message(&mut self, text: &str) {
        self.last_assistant = kept(text);
    }

    /// Counts the result; remembers a loaded skill's name. The output itself is dropped here.
    pub fn tool_result(&mut self, tool: &str, skill_loaded: Option<&str>) {
        let _ = tool;
        self.tool_results += 1;
        if let Some(name) = skill_loaded {
            self.skills_in_turn.insert(name.to_string());
        }
    }

    pub fn snapshot(&self, turn: u64) -> Digest {
        Digest {
            last_user_message: self.last_user.clone(),
            last_assistant_message: self.last_assistant.clone(),
            tool_results_since_review: self.tool_results,
            skills_loaded: self.skills_in_turn.iter().cloned().collect(),
            turn,
        }
    }

    pub fn skills_in_turn(&self) -> Vec<String> {
        self.skills_in_turn.iter().cloned().collect()
    }

    /// A new turn starts: the loaded-skill set is per turn.
    pub fn end_turn(&mut self) {
        self.skills_in_turn.clear();
    }

    /// A review ran (or was skipped by the gate): tool results count from zero again.
    pub fn reset_since_review(&mut self) {
        self.tool_results = 0;
    }
}

/// A message as the digest keeps it: credentials redacted, then cut to `MAX_TEXT_CHARS`. The
/// digest is sent to the gate and kept in the session's state file, so a key a person pasted into
/// the conversation reaches neither.
fn kept(text: &str) -> String {
    redact_clip(text, MAX_TEXT_CHARS)
}

/// Text past the cut that redaction still reads: a credential that starts before the cut ends
/// within this (a 16,384-bit RSA key in PEM is about 12 KiB).
const REDACT_MARGIN_BYTES: usize = 64 << 10;

/// `text` with its credentials redacted, then cut to at most `max` characters (marked when cut).
/// Redaction comes first: a cut through a credential leaves a piece the scanner no longer knows
/// (`ghp_` and half its token, a PEM body without its header), and that piece would be kept.
/// Only the part that can survive the cut, and a margin, is scanned.
pub fn redact_clip(text: &str, max: usize) -> String {
    let window = match text.char_indices().nth(max) {
        None => text,
        Some((cut, _)) => {
            let mut end = cut.saturating_add(REDACT_MARGIN_BYTES).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            &text[..end]
        }
    };
    let clean = crate::library::guards::scan::redact_secrets(window);
    let clean = clean.as_deref().unwrap_or(window);
    if window.len() < text.len() && clean.chars().count() <= max {
        // The margin fit under the cut once redacted: the text was longer still, so mark it cut.
        return format!("{clean}…");
    }
    truncate(clean, max)
}

/// At most `max` characters, cut on a character boundary, marked when cut.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => {
            let mut out = text[..cut].to_string();
            out.push('…');
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn keeps_the_last_human_message_and_never_tool_output() {
        let mut d = DigestBuffer::default();
        d.user_message("please use pnpm, not npm", true);
        d.user_message("[auto] continue", false);
        d.assistant_message("switched to pnpm");
        d.tool_result("bash", None);
        d.tool_result("skill", Some("node-tooling"));
        let snap = d.snapshot(4);
        assert_eq!(snap.last_user_message, "please use pnpm, not npm");
        assert_eq!(snap.last_assistant_message, "switched to pnpm");
        assert_eq!(snap.tool_results_since_review, 2);
        assert_eq!(snap.skills_loaded, vec!["node-tooling".to_string()]);
        assert_eq!(snap.turn, 4);
        d.end_turn();
        assert!(d.snapshot(5).skills_loaded.is_empty());
        d.reset_since_review();
        assert_eq!(d.snapshot(5).tool_results_since_review, 0);
    }

    #[test]
    fn a_pasted_credential_never_enters_the_digest() {
        let key = &["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        let mut d = DigestBuffer::default();
        d.user_message(&format!("use my token {key} for the push"), true);
        d.assistant_message(&format!("pushed with {key}"));
        let snap = d.snapshot(1);
        for text in [&snap.last_user_message, &snap.last_assistant_message] {
            assert!(!text.contains(key), "{text}");
            assert!(text.contains("[redacted:"), "{text}");
        }
        assert!(snap.last_user_message.starts_with("use my token "), "the rest of the message is kept");
    }

    /// A token that straddles the cut is redacted whole: cutting first kept `ghp_` and the
    /// start of the token, which the scanner no longer recognised.
    #[test]
    fn a_credential_across_the_cut_is_redacted_before_the_cut() {
        let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
        let text = format!("{} {key} and more", "a".repeat(MAX_TEXT_CHARS - 12));
        let mut d = DigestBuffer::default();
        d.user_message(&text, true);
        d.assistant_message(&text);
        let snap = d.snapshot(1);
        for kept in [&snap.last_user_message, &snap.last_assistant_message] {
            assert!(kept.chars().count() <= MAX_TEXT_CHARS + 1, "still bounded");
            for run in key.as_bytes().windows(8) {
                assert!(!kept.contains(std::str::from_utf8(run).unwrap()), "a piece of the token is kept: {kept}");
            }
        }
        // Past the margin nothing is scanned, and nothing is kept.
        let far = format!("{}{key}", "b".repeat(MAX_TEXT_CHARS + REDACT_MARGIN_BYTES));
        assert_eq!(redact_clip(&far, 10), format!("{}…", "b".repeat(10)));
        assert_eq!(redact_clip("short", 10), "short");
    }

    #[test]
    fn truncates_on_a_character_boundary() {
        let text = "é".repeat(3_500);
        let cut = truncate(&text, MAX_TEXT_CHARS);
        assert_eq!(cut.chars().count(), MAX_TEXT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate("short", MAX_TEXT_CHARS), "short");
    }
}
