//! The tokens an agent says a run used, read from what it printed: any JSON line with a
//! top-level `usage` object (Claude Code's `--output-format json` or `stream-json` result,
//! Codex's `exec --json` `turn.completed` events; fixtures in tests/fixtures/eval/usage). Counts
//! nested deeper (a Claude assistant message's own `message.usage`) are parts of that total and
//! are not added again. An agent that prints none reports nothing, which is not zero.

use serde::{Deserialize, Serialize};

/// Only the end of a run's output is kept (`run::Tail`): results come last, and a chatty agent's
/// megabytes of progress are read and let go, never stored.
pub const TAIL_BYTES: u64 = 8 << 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input read, cached or not (Claude's cache creation and reads are counted here; Codex's
    /// `cached_input_tokens` is already a part of its `input_tokens`).
    pub input: u64,
    pub output: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    fn add(&mut self, other: Tokens) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
    }
}

/// The tokens `text` reports, if it reports any.
pub fn parse(text: &str) -> Option<Tokens> {
    let mut found: Option<Tokens> = None;
    for line in text.lines().map(str::trim).filter(|l| l.starts_with('{') && l.contains("\"usage\"")) {
        if let Some(tokens) = serde_json::from_str::<serde_json::Value>(line).ok().as_ref().and_then(of_value) {
            found.get_or_insert_default().add(tokens);
        }
    }
    // A result printed as one indented document, or as one array of messages (Claude Code's
    // `--output-format json --verbose`), whose top-level `usage` entries add up as lines do.
    found.or_else(|| {
        let value = serde_json::from_str::<serde_json::Value>(text.trim()).ok()?;
        match value.as_array() {
            Some(items) => items.iter().filter_map(of_value).reduce(|mut a, b| {
                a.add(b);
                a
            }),
            None => of_value(&value),
        }
    })
}

fn of_value(value: &serde_json::Value) -> Option<Tokens> {
    let usage = value.get("usage")?.as_object()?;
    let count = |key: &str| usage.get(key).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let counted = |key: &str| usage.get(key).is_some_and(serde_json::Value::is_u64);
    if !counted("input_tokens") && !counted("output_tokens") {
        return None;
    }
    let input = count("input_tokens")
        .saturating_add(count("cache_creation_input_tokens"))
        .saturating_add(count("cache_read_input_tokens"));
    Some(Tokens { input, output: count("output_tokens") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval/usage").join(name);
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn each_agents_documented_output_gives_its_runs_tokens() {
        // Claude: input 12 + cache creation 5,210 + cache reads 18,430; the stream's per-message
        // counts are parts of the result's and are not added again.
        let claude = Tokens { input: 23_652, output: 684 };
        assert_eq!(parse(&fixture("claude-json.json")), Some(claude));
        assert_eq!(parse(&fixture("claude-stream.jsonl")), Some(claude));
        // Codex: cached input is a part of input_tokens.
        assert_eq!(parse(&fixture("codex-exec.jsonl")), Some(Tokens { input: 26_549, output: 1_590 }));
        // Two turns add up; an indented document is read whole.
        let two = "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}\n".repeat(2);
        assert_eq!(parse(&two), Some(Tokens { input: 20, output: 2 }));
        assert_eq!(
            parse("{\n  \"usage\": {\"input_tokens\": 3, \"output_tokens\": 4}\n}"),
            Some(Tokens { input: 3, output: 4 })
        );
        // An array of messages: each message's own `message.usage` is a part of the result's.
        let lines: Vec<String> = fixture("claude-stream.jsonl").lines().map(str::to_string).collect();
        let array = format!("[\n{}\n]", lines.join(",\n"));
        assert_eq!(parse(&array), Some(claude));
    }

    #[test]
    fn output_without_counts_reports_nothing_and_hostile_counts_saturate() {
        for text in [
            "",
            "Done.",
            "{\"usage\": 5}",
            "{\"usage\": {\"cost\": 1}}",
            "{\"usage\": {\"input_tokens\": -4}}",
            "{\"usage\": {\"input_tokens\": 1}",
        ] {
            assert_eq!(parse(text), None, "{text}");
        }
        let huge = format!("{{\"usage\":{{\"input_tokens\":{},\"output_tokens\":{}}}}}", u64::MAX, u64::MAX);
        assert_eq!(parse(&format!("{huge}\n{huge}")).map(|t| t.total()), Some(u64::MAX));
    }
}
