//! Defines the Gate view's four charts, drawn as SVG on the server from numbers read out of
//! gates.jsonl: decisions per day by source, the model's latency, the confidence of its `no`
//! answers against the threshold, and the breaker's openings per day. Only numbers, dates checked
//! to be digits, and this file's own labels reach the SVG: no word of the log does (another
//! process writes it), so nothing in a chart can be markup or script.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

/// The charts, by the file name the page asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    PerDay,
    Latency,
    Confidence,
    Breaker,
}

pub const PATHS: [&str; 4] =
    ["/api/gate/per-day.svg", "/api/gate/latency.svg", "/api/gate/confidence.svg", "/api/gate/breaker.svg"];

impl Chart {
    pub fn at(path: &str) -> Option<Chart> {
        match path {
            "/api/gate/per-day.svg" => Some(Chart::PerDay),
            "/api/gate/latency.svg" => Some(Chart::Latency),
            "/api/gate/confidence.svg" => Some(Chart::Confidence),
            "/api/gate/breaker.svg" => Some(Chart::Breaker),
            _ => None,
        }
    }
}

/// The gate's sources, and where any other word of the log is counted.
const SOURCES: [&str; 4] = ["jev", "openai", "counters", "other"];
/// Latency buckets' upper edges in milliseconds (the last bucket is open).
const LATENCY_EDGES: [u64; 7] = [100, 250, 500, 1000, 2000, 5000, 10_000];
const LATENCY_LABELS: [&str; 8] = ["<100", "<250", "<500", "<1 s", "<2 s", "<5 s", "<10 s", "≥10 s"];
/// Confidence buckets of 0.05.
const CONFIDENCE_BUCKETS: usize = 20;
/// Days drawn, the newest.
const DAYS: usize = 30;
/// The reason of a decision made while the breaker was open.
const CIRCUIT_OPEN: &str = "fallback: circuit open";

/// `YYYY-MM-DD`, checked to be digits and dashes.
type Day = String;

fn day_of(at: &str) -> Option<Day> {
    let day = at.get(..10)?;
    let ok = day.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    ok.then(|| day.to_string())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line {
    #[serde(default)]
    at: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    choice: Option<String>,
    #[serde(default)]
    confidence: Option<f64>,
    #[serde(default)]
    latency_ms: Option<f64>,
    #[serde(default)]
    threshold: Option<f64>,
}

/// What the charts count, read in one pass over the log.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Series {
    per_day: BTreeMap<Day, [u64; 4]>,
    latency: [u64; 8],
    no_confidence: [u64; CONFIDENCE_BUCKETS],
    /// The confident-`no` bar of the newest line that names one.
    threshold: Option<f64>,
    breaker: BTreeMap<Day, u64>,
}

/// Reads gates.jsonl. Lines that are not a decision are skipped; a line past the input bound
/// ends the read with what came before it.
pub fn read(mut reader: impl BufRead) -> Series {
    let mut series = Series::default();
    let mut buf = Vec::new();
    let mut open = false;
    while let Ok(true) = crate::input::next_line(&mut reader, &mut buf, crate::input::MAX_LINE_BYTES) {
        let Ok(line) = serde_json::from_slice::<Line>(&buf) else { continue };
        let Some(day) = day_of(&line.at) else { continue };
        let source = SOURCES.iter().position(|s| *s == line.source).unwrap_or(SOURCES.len() - 1);
        series.per_day.entry(day.clone()).or_default()[source] += 1;
        if matches!(line.source.as_str(), "jev" | "openai")
            && let Some(ms) = line.latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0)
        {
            series.latency[LATENCY_EDGES.partition_point(|edge| (*edge as f64) <= ms)] += 1;
        }
        if line.choice.as_deref() == Some("no")
            && let Some(c) = line.confidence.filter(|c| (0.0..=1.0).contains(c))
        {
            series.no_confidence[((c * CONFIDENCE_BUCKETS as f64) as usize).min(CONFIDENCE_BUCKETS - 1)] += 1;
        }
        if let Some(t) = line.threshold.filter(|t| (0.0..=1.0).contains(t)) {
            series.threshold = Some(t);
        }
        // A run of decisions made while the circuit was open is one opening.
        let now_open = line.reason == CIRCUIT_OPEN;
        if now_open && !open {
            *series.breaker.entry(day).or_default() += 1;
        }
        open = now_open;
    }
    series
}

/// One bar chart: a bar (a stack of `series` values) per label.
struct Bars<'a> {
    title: &'a str,
    x_title: &'a str,
    labels: Vec<String>,
    stacks: Vec<Vec<u64>>,
    series: &'a [&'a str],
    /// A vertical line at this share of the x axis, with its label.
    marker: Option<(f64, String)>,
}

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 260.0;
const LEFT: f64 = 48.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 44.0;
const COLORS: [&str; 4] = ["#2f6fb3", "#c77c12", "#3d8b47", "#777777"];
const INK: &str = "#1d1d1d";

pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn draw(bars: &Bars) -> String {
    let total: u64 = bars.stacks.iter().flatten().sum();
    let top = bars.stacks.iter().map(|s| s.iter().sum::<u64>()).max().unwrap_or(0).max(1);
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    let mut out = String::new();
    let desc = format!("{}: {total} in all, the highest bar {top}", bars.title);
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" font-family="sans-serif" font-size="11"><title>{}</title><desc>{}</desc><rect width="100%" height="100%" rx="6" fill="#ffffff"/><text x="{LEFT}" y="18" font-size="13" font-weight="bold" fill="{INK}">{}</text>"##,
        escape(bars.title),
        escape(&desc),
        escape(bars.title)
    );
    // The legend, when more than one series is stacked.
    if bars.series.len() > 1 {
        for (i, name) in bars.series.iter().enumerate() {
            let x = LEFT + 90.0 * i as f64;
            let _ = write!(
                out,
                r#"<rect x="{x}" y="25" width="9" height="9" fill="{}"/><text x="{}" y="33" fill="{INK}">{}</text>"#,
                COLORS[i % COLORS.len()],
                x + 13.0,
                escape(name)
            );
        }
    }
    // The y axis: zero, half and the top, as whole numbers.
    for value in [0, top / 2, top] {
        let y = TOP + plot_h - plot_h * value as f64 / top as f64;
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#d0d0d0"/><text x="{}" y="{:.1}" text-anchor="end" fill="{INK}">{value}</text>"##,
            LEFT + plot_w,
            LEFT - 6.0,
            y + 4.0
        );
    }
    let n = bars.labels.len();
    if total == 0 || n == 0 {
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" fill="{INK}">nothing recorded yet</text>"#,
            LEFT + plot_w / 2.0,
            TOP + plot_h / 2.0
        );
    }
    let slot = plot_w / n.max(1) as f64;
    let every = n.div_ceil(15).max(1);
    for (i, (label, stack)) in bars.labels.iter().zip(&bars.stacks).enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.15;
        let mut y = TOP + plot_h;
        for (s, value) in stack.iter().enumerate().filter(|(_, v)| **v > 0) {
            let h = plot_h * *value as f64 / top as f64;
            y -= h;
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} {}: {value}</title></rect>"#,
                slot * 0.7,
                COLORS[s % COLORS.len()],
                escape(label),
                escape(bars.series[s % bars.series.len()])
            );
        }
        if i % every == 0 {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{}" text-anchor="middle" fill="{INK}">{}</text>"#,
                x + slot * 0.35,
                TOP + plot_h + 14.0,
                escape(label)
            );
        }
    }
    if let Some((share, label)) = &bars.marker {
        let x = LEFT + plot_w * share.clamp(0.0, 1.0);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#b3261e" stroke-width="2" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" fill="#b3261e">{}</text>"##,
            TOP + plot_h,
            x + 4.0,
            TOP + 10.0,
            escape(label)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" fill="{INK}">{}</text></svg>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 8.0,
        escape(bars.x_title)
    );
    out
}

/// `MM-DD` of a checked day.
fn short(day: &str) -> String {
    day.get(5..).unwrap_or(day).to_string()
}

impl Series {
    pub fn svg(&self, chart: Chart) -> String {
        match chart {
            Chart::PerDay => {
                let days: Vec<_> = self.per_day.iter().rev().take(DAYS).rev().collect();
                draw(&Bars {
                    title: "Gate decisions per day, by source",
                    x_title: "day (UTC)",
                    labels: days.iter().map(|(d, _)| short(d)).collect(),
                    stacks: days.iter().map(|(_, counts)| counts.to_vec()).collect(),
                    series: &SOURCES,
                    marker: None,
                })
            }
            Chart::Latency => draw(&Bars {
                title: "Model gate latency (jev, openai)",
                x_title: "milliseconds",
                labels: LATENCY_LABELS.iter().map(|l| l.to_string()).collect(),
                stacks: self.latency.iter().map(|n| vec![*n]).collect(),
                series: &["decisions"],
                marker: None,
            }),
            Chart::Confidence => draw(&Bars {
                title: "Confidence of the model's `no` answers",
                x_title: "confidence (0 to 1)",
                labels: (0..CONFIDENCE_BUCKETS)
                    .map(|i| format!("{:.2}", i as f64 / CONFIDENCE_BUCKETS as f64))
                    .collect(),
                stacks: self.no_confidence.iter().map(|n| vec![*n]).collect(),
                series: &["answers"],
                marker: self.threshold.map(|t| (t, format!("threshold {t:.2}"))),
            }),
            Chart::Breaker => {
                let days: Vec<_> = self.breaker.iter().rev().take(DAYS).rev().collect();
                draw(&Bars {
                    title: "Breaker openings per day",
                    x_title: "day (UTC)",
                    labels: days.iter().map(|(d, _)| short(d)).collect(),
                    stacks: days.iter().map(|(_, n)| vec![**n]).collect(),
                    series: &["openings"],
                    marker: None,
                })
            }
        }
    }
}

#[cfg(test)]
#[path = "charts_tests.rs"]
mod tests;
