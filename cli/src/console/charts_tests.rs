//! The charts from a small gates.jsonl: what is counted where, and that no word of the log
//! reaches the SVG.

use super::*;

fn line(at: &str, source: &str, reason: &str, choice: Option<&str>, confidence: f64, latency: u64) -> String {
    serde_json::json!({
        "at": at, "session": "s1", "turn": 1, "decision": "review", "source": source, "reason": reason,
        "choice": choice, "confidence": confidence, "probability": null, "toolCalls": 3,
        "latencyMs": latency, "threshold": 0.75,
    })
    .to_string()
}

fn log() -> String {
    [
        line("2026-12-01T10:00:00.000Z", "jev", "model: no", Some("no"), 0.9, 120),
        line("2026-12-01T11:00:00.000Z", "jev", "model: no", Some("no"), 0.5, 40),
        line("2026-12-01T12:00:00.000Z", "counters", CIRCUIT_OPEN, None, 0.0, 0),
        line("2026-12-01T12:01:00.000Z", "counters", CIRCUIT_OPEN, None, 0.0, 0),
        line("2026-12-02T09:00:00.000Z", "openai", "model: yes", Some("yes"), 0.8, 12_000),
        line("2026-12-02T10:00:00.000Z", "counters", CIRCUIT_OPEN, None, 0.0, 0),
        line("2026-12-02T11:00:00.000Z", "<script>alert(1)</script>", "</text><script>", Some("no"), 1.0, 7),
        line("<script>alert(1)</script>", "jev", "x", None, 0.0, 1),
        "not json".to_string(),
        String::new(),
    ]
    .join("\n")
}

#[test]
fn the_log_is_counted_by_day_source_bucket_and_opening() {
    let series = read(log().as_bytes());
    assert_eq!(series.per_day["2026-12-01"], [2, 0, 2, 0]);
    assert_eq!(series.per_day["2026-12-02"], [0, 1, 1, 1], "an unknown source counts as other");
    assert_eq!(series.per_day.len(), 2, "a line without a date is skipped");
    assert_eq!(series.latency, [1, 1, 0, 0, 0, 0, 0, 1], "model sources only");
    assert_eq!(series.no_confidence[18] + series.no_confidence[10] + series.no_confidence[19], 3);
    assert_eq!(series.threshold, Some(0.75));
    assert_eq!(series.breaker.values().copied().collect::<Vec<_>>(), [1, 1], "a run of circuit-open decisions is one");
}

#[test]
fn each_chart_is_one_svg_with_a_title_and_no_word_of_the_log() {
    let series = read(log().as_bytes());
    for path in PATHS {
        let chart = Chart::at(path).unwrap();
        let svg = series.svg(chart);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"") && svg.ends_with("</svg>"), "{path}");
        assert_eq!(svg.matches("<svg").count(), 1, "{path}");
        assert!(svg.contains("<title>") && svg.contains("<desc>"), "{path}");
        assert!(!svg.contains("script") && !svg.contains("alert"), "{path}: {svg}");
    }
    assert!(series.svg(Chart::Confidence).contains("threshold 0.75"));
    assert!(series.svg(Chart::PerDay).contains(">12-01<"));
    assert_eq!(Chart::at("/api/gate/other.svg"), None);
}

#[test]
fn an_empty_log_draws_empty_charts() {
    let series = read(&b""[..]);
    for path in PATHS {
        let svg = series.svg(Chart::at(path).unwrap());
        assert!(svg.contains("nothing recorded yet"), "{path}");
    }
}
