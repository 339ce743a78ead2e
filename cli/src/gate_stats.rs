//! Defines the summary of a gates.jsonl log — decision split, sources, fallback reasons,
//! `no`-confidence and latency percentiles, and how many decisions each candidate threshold would
//! have skipped — for `self-evolve gate-stats FILE` and the console's Gate view. A service on the
//! home floor's line reader. Streams the file; malformed lines are counted, never fatal.

use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::BufRead;

/// One log line. Texts are borrowed when they can be and owned when JSON escapes are in them
/// (`"\u001b"` is valid JSON: a line holding one is read, not counted as malformed).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(borrow)]
    decision: Cow<'a, str>,
    #[serde(borrow)]
    source: Cow<'a, str>,
    #[serde(borrow, default)]
    reason: Cow<'a, str>,
    #[serde(borrow, default)]
    choice: Option<Cow<'a, str>>,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    latency_ms: Option<f64>,
}

#[derive(Debug, Default)]
pub struct Stats {
    pub total: u64,
    pub malformed: u64,
    /// The first line numbers (1-based) of malformed lines, so the operator can look at them.
    pub malformed_lines: Vec<u64>,
    pub decisions: BTreeMap<String, u64>,
    pub sources: BTreeMap<String, u64>,
    pub fallbacks: BTreeMap<String, u64>,
    no_confidence: Vec<f32>,
    latency: Vec<u32>,
}

/// The fallback's kind without its details: "fallback: network error (reset)" → "fallback: network error".
fn fallback_kind(reason: &str) -> String {
    let cut = reason.find(" (").unwrap_or(reason.len());
    reason[..cut].trim().to_string()
}

/// How many malformed line numbers the summary names.
const MALFORMED_SHOWN: usize = 10;

pub fn summarize(reader: impl BufRead) -> std::io::Result<Stats> {
    let mut stats = Stats::default();
    let mut buf = Vec::new();
    let mut reader = reader;
    let mut number = 0u64;
    while crate::input::next_line(&mut reader, &mut buf, crate::input::MAX_LINE_BYTES)
        .map_err(|e| std::io::Error::new(e.kind(), format!("line {}: {e}", number + 1)))?
    {
        number += 1;
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        stats.total += 1;
        let parsed = std::str::from_utf8(&buf).ok().and_then(|t| serde_json::from_str::<Line>(t.trim()).ok());
        let Some(line) = parsed else {
            stats.malformed += 1;
            if stats.malformed_lines.len() < MALFORMED_SHOWN {
                stats.malformed_lines.push(number);
            }
            continue;
        };
        *stats.decisions.entry(line.decision.to_string()).or_default() += 1;
        *stats.sources.entry(line.source.to_string()).or_default() += 1;
        if line.reason.starts_with("fallback:") {
            *stats.fallbacks.entry(fallback_kind(&line.reason)).or_default() += 1;
        }
        if line.choice.as_deref() == Some("no")
            && let Some(c) = line.confidence
        {
            stats.no_confidence.push(c as f32);
        }
        if matches!(line.source.as_ref(), "jev" | "openai")
            && let Some(ms) = line.latency_ms
        {
            stats.latency.push(ms.max(0.0).min(f64::from(u32::MAX)) as u32);
        }
    }
    stats.no_confidence.sort_by(f32::total_cmp);
    stats.latency.sort_unstable();
    Ok(stats)
}

fn percentile<T: Copy + Into<f64>>(sorted: &[T], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    Some(sorted[rank.min(sorted.len() - 1)].into())
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Stats {
    /// For each threshold 0.50, 0.55, … 1.00: decisions a confident `no` at that bar would skip.
    pub fn thresholds(&self) -> Vec<(f64, u64)> {
        (0..=10)
            .map(|i| {
                let t = 0.5 + 0.05 * f64::from(i);
                let t = (t * 100.0).round() / 100.0;
                let below = self.no_confidence.partition_point(|&c| f64::from(c) < t - 1e-9);
                (t, (self.no_confidence.len() - below) as u64)
            })
            .collect()
    }

    pub fn to_json(&self) -> Value {
        let pct = |sorted: &[f32]| {
            json!({
                "count": sorted.len(),
                "p10": percentile(sorted, 10.0).map(round), "p25": percentile(sorted, 25.0).map(round),
                "p50": percentile(sorted, 50.0).map(round), "p75": percentile(sorted, 75.0).map(round),
                "p90": percentile(sorted, 90.0).map(round),
            })
        };
        json!({
            "total": self.total,
            "decisions": self.decisions,
            "sources": self.sources,
            "fallbacks": self.fallbacks,
            "noConfidence": pct(&self.no_confidence),
            "latencyMs": {
                "count": self.latency.len(),
                "p50": percentile(&self.latency, 50.0), "p90": percentile(&self.latency, 90.0),
                "p99": percentile(&self.latency, 99.0), "max": self.latency.last(),
            },
            "thresholds": self.thresholds().iter().map(|(t, n)| json!({"threshold": t, "skipped": n})).collect::<Vec<_>>(),
            "malformed": self.malformed,
            "malformedLines": self.malformed_lines,
        })
    }

    pub fn to_text(&self) -> String {
        let v = self.to_json();
        let mut out =
            format!("{} decisions ({} malformed lines skipped)\n", self.total - self.malformed, self.malformed);
        if !self.malformed_lines.is_empty() {
            let shown: Vec<String> = self.malformed_lines.iter().map(u64::to_string).collect();
            let more = if self.malformed > self.malformed_lines.len() as u64 { ", …" } else { "" };
            out.push_str(&format!("malformed: line {}{more}\n", shown.join(", ")));
        }
        let share =
            |n: u64| if self.total == 0 { 0.0 } else { 100.0 * n as f64 / (self.total - self.malformed).max(1) as f64 };
        // Decisions, sources and reasons are the log's words, and other processes write the log:
        // shown, never obeyed.
        use self_evolve_host::text::visible;
        out.push_str("\ndecisions\n");
        for (k, n) in &self.decisions {
            out.push_str(&format!("  {:<10} {n:>9}  {:>5.1}%\n", visible(k), share(*n)));
        }
        out.push_str("\nsources\n");
        for (k, n) in &self.sources {
            out.push_str(&format!("  {:<10} {n:>9}  {:>5.1}%\n", visible(k), share(*n)));
        }
        if !self.fallbacks.is_empty() {
            out.push_str("\nfallback reasons\n");
            for (k, n) in &self.fallbacks {
                out.push_str(&format!("  {n:>9}  {}\n", visible(k)));
            }
        }
        let show = |x: &Value| if x.is_null() { "-".to_string() } else { x.to_string() };
        let nc = &v["noConfidence"];
        out.push_str(&format!(
            "\n`no` confidence ({} answers)  p10 {}  p25 {}  p50 {}  p75 {}  p90 {}\n",
            nc["count"],
            show(&nc["p10"]),
            show(&nc["p25"]),
            show(&nc["p50"]),
            show(&nc["p75"]),
            show(&nc["p90"])
        ));
        let l = &v["latencyMs"];
        out.push_str(&format!(
            "gate latency ms ({} calls)  p50 {}  p90 {}  p99 {}  max {}\n",
            l["count"],
            show(&l["p50"]),
            show(&l["p90"]),
            show(&l["p99"]),
            show(&l["max"])
        ));
        out.push_str("\nconfidentNo  would skip\n");
        for (t, n) in self.thresholds() {
            out.push_str(&format!("  {t:>9.2}  {n:>10}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    const LOG: &str = r#"{"at":"2026-10-28T15:48:45.785Z","session":"s","turn":4,"decision":"review","source":"jev","reason":"yes (confidence 0.92)","choice":"yes","confidence":0.92,"probability":0.95,"toolCalls":25,"latencyMs":239,"threshold":0.75}
{"at":"2026-10-28T15:49:45.785Z","session":"s","turn":5,"decision":"skip","source":"jev","reason":"no (confidence 0.80)","choice":"no","confidence":0.8,"probability":0.9,"toolCalls":3,"latencyMs":120,"threshold":0.75}
{"at":"2026-10-28T15:50:45.785Z","session":"s","turn":6,"decision":"review","source":"jev","reason":"no (confidence 0.60)","choice":"no","confidence":0.6,"probability":0.6,"toolCalls":3,"latencyMs":150,"threshold":0.75}
{"at":"2026-10-28T15:51:45.785Z","session":"s","turn":7,"decision":"review","source":"counters","reason":"fallback: network error (connection reset)","choice":null,"confidence":null,"probability":null,"toolCalls":3,"latencyMs":2,"threshold":0.75}
{"at":"2026-10-28T15:52:45.785Z","session":"s","turn":8,"decision":"review","source":"counters","reason":"fallback: http 503 after one retry","choice":null,"confidence":null,"probability":null,"toolCalls":3,"latencyMs":2,"threshold":0.75}
this line is not json
{"decision":"review"}
"#;

    #[test]
    fn the_openai_gates_answers_count_their_latency_as_jevs_do() {
        let log = r#"{"at":"x","session":"s","turn":1,"decision":"review","source":"openai","reason":"yes (confidence 0.90)","choice":"yes","confidence":0.9,"probability":null,"toolCalls":1,"latencyMs":812,"threshold":0.75}"#;
        let v = summarize(log.as_bytes()).unwrap().to_json();
        assert_eq!(v["sources"], json!({"openai": 1}));
        assert_eq!(v["latencyMs"]["max"], 812);
    }

    #[test]
    fn summarises_decisions_fallbacks_percentiles_and_thresholds() {
        let stats = summarize(LOG.as_bytes()).unwrap();
        let v = stats.to_json();
        assert_eq!(v["total"], 7);
        assert_eq!(v["malformed"], 2);
        assert_eq!(v["malformedLines"], json!([6, 7]));
        assert_eq!(v["decisions"], json!({"review": 4, "skip": 1}));
        assert_eq!(v["sources"], json!({"counters": 2, "jev": 3}));
        assert_eq!(v["fallbacks"], json!({"fallback: http 503 after one retry": 1, "fallback: network error": 1}));
        assert_eq!(v["noConfidence"]["count"], 2);
        assert_eq!(v["latencyMs"]["max"], 239);
        let thresholds = v["thresholds"].as_array().unwrap();
        assert_eq!(thresholds.len(), 11);
        assert_eq!(thresholds[0], json!({"threshold": 0.5, "skipped": 2}));
        assert_eq!(thresholds[2], json!({"threshold": 0.6, "skipped": 2}));
        assert_eq!(thresholds[3], json!({"threshold": 0.65, "skipped": 1}));
        assert_eq!(thresholds[10], json!({"threshold": 1.0, "skipped": 0}));
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "decisions",
                "fallbacks",
                "latencyMs",
                "malformed",
                "malformedLines",
                "noConfidence",
                "sources",
                "thresholds",
                "total"
            ]
        );
        assert!(stats.to_text().contains("confidentNo  would skip"));
    }

    #[test]
    fn invalid_utf8_lines_are_counted_and_named_never_fatal() {
        let mut log = LOG.as_bytes().to_vec();
        log.extend_from_slice(b"\xff\xfe not text\n");
        log.extend_from_slice(LOG.lines().next().unwrap().as_bytes());
        let stats = summarize(&log[..]).unwrap();
        assert_eq!(stats.malformed, 3);
        assert_eq!(stats.malformed_lines, vec![6, 7, 8]);
        assert_eq!(stats.decisions["review"], 5);
        assert!(stats.to_text().contains("malformed: line 6, 7, 8"), "{}", stats.to_text());
    }

    #[test]
    fn an_endless_line_stops_with_its_line_number() {
        let endless = std::io::BufReader::new(LOG.as_bytes().chain(std::io::repeat(b'x')));
        let Err(err) = summarize(endless) else { panic!("an endless line is refused") };
        assert!(err.to_string().starts_with("line 8: a line longer than"), "{err}");
    }

    #[test]
    fn the_logs_words_are_shown_never_obeyed() {
        let hostile = "x\u{1b}[31m\u{7}\r\u{9b}\u{202e}\u{2066}\u{200b}";
        let line = json!({"decision": hostile, "source": hostile, "reason": format!("fallback: {hostile}")});
        let text = summarize(line.to_string().as_bytes()).unwrap().to_text();
        assert!(!text.chars().any(|c| (c.is_control() && c != '\n') || self_evolve_scan::hides_text(c)), "{text:?}");
        assert!(text.contains("x\\u{1b}[31m\\u{7}\\u{d}\\u{9b}\\u{202e}\\u{2066}\\u{200b}"), "{text}");
    }

    #[test]
    fn an_empty_log_is_fine() {
        let stats = summarize("".as_bytes()).unwrap();
        assert_eq!(stats.to_json()["total"], 0);
        assert!(stats.to_text().starts_with("0 decisions"));
    }
}
