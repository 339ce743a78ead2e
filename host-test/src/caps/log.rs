//! The log capability: the plugin's messages to stderr, filtered by level, and
//! optionally captured in memory so tests and replays can read them.

use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Level> {
        match text.to_ascii_lowercase().as_str() {
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}

pub type Captured = Arc<Mutex<Vec<(Level, String)>>>;

#[derive(Clone)]
pub struct LogSink {
    /// Messages below this level are dropped from stderr (still captured).
    pub stderr_level: Option<Level>,
    pub capture: Option<Captured>,
}

impl Default for LogSink {
    fn default() -> Self {
        LogSink { stderr_level: Some(Level::Warn), capture: None }
    }
}

impl LogSink {
    /// A sink that writes nothing to stderr and keeps every message.
    pub fn capturing() -> (LogSink, Captured) {
        let captured: Captured = Arc::default();
        (LogSink { stderr_level: None, capture: Some(captured.clone()) }, captured)
    }

    pub fn log(&self, level: Level, message: &str) {
        if self.stderr_level.is_some_and(|min| level >= min) {
            eprintln!("{}", stderr_line(level, message));
        }
        if let Some(capture) = &self.capture
            && let Ok(mut lines) = capture.lock()
        {
            lines.push((level, message.to_string()));
        }
    }
}

/// A message as stderr shows it: messages quote skill names, paths and what agents sent, so
/// each is one line with its hidden characters shown, never obeyed by the terminal.
fn stderr_line(level: Level, message: &str) -> String {
    format!("self-evolve[{}]: {}", level.as_str(), crate::text::visible(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_shows_hidden_characters_on_one_line() {
        assert_eq!(
            stderr_line(Level::Warn, "skill `a\x1b[31m\x07\r\u{9b}\u{202e}\u{2066}\u{200b}`\nforged"),
            "self-evolve[warn]: skill `a\\u{1b}[31m\\u{7}\\u{d}\\u{9b}\\u{202e}\\u{2066}\\u{200b}`\\u{a}forged"
        );
    }

    #[test]
    fn capture_keeps_every_level_in_order() {
        let (sink, captured) = LogSink::capturing();
        sink.log(Level::Debug, "a");
        sink.log(Level::Error, "b");
        let lines = captured.lock().unwrap();
        assert_eq!(*lines, vec![(Level::Debug, "a".to_string()), (Level::Error, "b".to_string())]);
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(Level::parse("WARNING"), Some(Level::Warn));
        assert_eq!(Level::parse("loud"), None);
        assert!(Level::Debug < Level::Error);
    }
}
