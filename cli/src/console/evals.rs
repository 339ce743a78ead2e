//! The console's Evaluations view: the reports `self-evolve eval` leaves under the state root
//! (`eval/<key>/report.json`, the agent command redacted), newest first, and one chart per
//! report drawn here as SVG: each task's paired difference (A − B) with its 95% interval on a
//! −100%…+100% axis, the overall row last. Reports are read as plain JSON: a file another
//! process wrote is only ever drawn from numbers clamped to the axis and text escaped.

use serde_json::{Value, json};
use std::fmt::Write;
use std::path::Path;

/// Reports listed, newest first.
const LISTED: usize = 50;
/// A report file past this is not read (a suite has at most 1,000 tasks).
const MAX_REPORT_BYTES: u64 = 4 << 20;
/// Rows a chart draws (the overall row besides).
const ROWS: usize = 60;

/// A report's key: the folder `eval` made for it, 16 hex digits.
fn valid_key(key: &str) -> bool {
    key.len() == 16 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn read_report(dir: &Path) -> Option<Value> {
    // The folder itself, never through a link; the file as the host reads any file others write
    // (`read_regular`: no link, no FIFO or device, opened without blocking, at most the cap).
    if !std::fs::symlink_metadata(dir).ok()?.is_dir() {
        return None;
    }
    let bytes = crate::home::files::read_regular(&dir.join("report.json"), MAX_REPORT_BYTES).ok()??;
    serde_json::from_slice(&bytes).ok()
}

/// `{"evaluations": [...]}`: each report with its key and when it was written (ms), newest first.
pub fn list(home: &Path) -> Value {
    let root = crate::home::state(home).join("eval");
    let mut found: Vec<(u128, String)> = std::fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let key = entry.file_name().to_str()?.to_string();
            let modified = entry.path().join("report.json").symlink_metadata().ok()?.modified().ok()?;
            let ms = modified.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
            valid_key(&key).then_some((ms, key))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    let evaluations: Vec<Value> = found
        .into_iter()
        .take(LISTED)
        .filter_map(|(ms, key)| {
            let mut report = read_report(&root.join(&key))?;
            let object = report.as_object_mut()?;
            object.insert("key".into(), json!(key));
            object.insert("at".into(), json!(u64::try_from(ms).unwrap_or(u64::MAX)));
            object.insert("chart".into(), json!(format!("/api/eval/{key}.svg")));
            Some(report)
        })
        .collect();
    json!({"evaluations": evaluations})
}

/// The chart of the report at `/api/eval/KEY.svg`, if there is one.
pub fn chart_at(home: &Path, path: &str) -> Option<String> {
    let key = path.strip_prefix("/api/eval/")?.strip_suffix(".svg")?;
    if !valid_key(key) {
        return None;
    }
    read_report(&crate::home::state(home).join("eval").join(key)).map(|report| draw(&report))
}

/// One row: a label, the difference and its interval, all clamped to [−1, 1].
struct Row {
    label: String,
    difference: f64,
    interval: (f64, f64),
    pairs: u64,
    verdict: String,
}

fn row(label: &str, paired: &Value) -> Option<Row> {
    let number = |v: &Value| v.as_f64().filter(|x| x.is_finite()).map(|x| x.clamp(-1.0, 1.0));
    let difference = number(&paired["difference"])?;
    let lo = number(&paired["interval"][0]).unwrap_or(difference);
    let hi = number(&paired["interval"][1]).unwrap_or(difference);
    Some(Row {
        label: label.chars().take(28).collect(),
        difference,
        interval: (lo.min(hi), lo.max(hi)),
        pairs: paired["pairs"].as_u64().unwrap_or(0),
        verdict: paired["verdict"].as_str().unwrap_or("inconclusive").chars().take(16).collect(),
    })
}

const WIDTH: f64 = 760.0;
const LABELS: f64 = 150.0;
const PLOT: f64 = 320.0;
const ROW_H: f64 = 24.0;
const TOP: f64 = 56.0;
const INK: &str = "#1d1d1d";

fn draw(report: &Value) -> String {
    let mut rows: Vec<Row> = report["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .take(ROWS)
        .filter_map(|task| row(task["id"].as_str().unwrap_or("?"), &task["paired"]))
        .collect();
    let overall = row("overall", &report["overall"]);
    let has_overall = overall.is_some();
    rows.extend(overall);
    let arm = |i: usize| report["arms"][i].as_str().unwrap_or(if i == 0 { "A" } else { "B" }).to_string();
    let title = "Paired difference per task, A − B";
    let arms: String = format!("A: {} · B: {}", arm(0), arm(1)).chars().take(110).collect();
    let height = TOP + ROW_H * rows.len().max(1) as f64 + 36.0;
    let x = |v: f64| LABELS + (v + 1.0) / 2.0 * PLOT;
    let esc = super::charts::escape;
    let mut out = String::new();
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" font-family="sans-serif" font-size="11"><title>{}</title><desc>{}</desc><rect width="100%" height="100%" rx="6" fill="#ffffff"/><text x="12" y="20" font-size="13" font-weight="bold" fill="{INK}">{title}</text><text x="12" y="38" fill="#555">{}</text>"##,
        esc(title),
        esc(&format!("{title} ({arms}): {} rows, the last overall", rows.len())),
        esc(&arms)
    );
    let bottom = TOP + ROW_H * rows.len().max(1) as f64;
    for tick in [-1.0, -0.5, 0.0, 0.5, 1.0] {
        let dash = if tick == 0.0 { "" } else { r#" stroke-dasharray="2 3""# };
        let _ = write!(
            out,
            r##"<line x1="{0:.1}" x2="{0:.1}" y1="{TOP}" y2="{bottom}" stroke="#999"{dash}/><text x="{0:.1}" y="{1:.1}" text-anchor="middle" fill="#555">{2:+.0}%</text>"##,
            x(tick),
            bottom + 16.0,
            tick * 100.0
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW_H * (i as f64 + 0.5);
        let color = match r.verdict.as_str() {
            "a-better" => "#3d8b47",
            "b-better" => "#b3372f",
            _ => "#2f6fb3",
        };
        let weight = if has_overall && i + 1 == rows.len() { "bold" } else { "normal" };
        let _ = write!(
            out,
            r##"<g data-row="{label}"><text x="{lx}" y="{ty:.1}" text-anchor="end" font-weight="{weight}" fill="{INK}">{label}</text><line x1="{x1:.1}" x2="{x2:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"/><circle cx="{cx:.1}" cy="{y:.1}" r="4" fill="{color}"/><text x="{rx}" y="{ty:.1}" fill="#555">{d:+.0}% [{lo:+.0}, {hi:+.0}] · {pairs} pairs · {verdict}</text></g>"##,
            label = esc(&r.label),
            lx = LABELS - 8.0,
            ty = y + 4.0,
            x1 = x(r.interval.0),
            x2 = x(r.interval.1),
            cx = x(r.difference),
            rx = LABELS + PLOT + 8.0,
            d = r.difference * 100.0,
            lo = r.interval.0 * 100.0,
            hi = r.interval.1 * 100.0,
            pairs = r.pairs,
            verdict = esc(&r.verdict),
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_draws_each_task_and_overall_clamped_and_escaped() {
        let report = json!({
            "arms": ["with <b>pdf</b>", "without pdf"],
            "tasks": [
                {"id": "t1", "paired": {"difference": 0.5, "interval": [0.1, 0.9], "pairs": 4, "verdict": "inconclusive"}},
                {"id": "<script>", "paired": {"difference": 7, "interval": [-9, "x"], "pairs": 2, "verdict": "a-better"}},
                {"id": "no numbers", "paired": {"difference": "big"}},
            ],
            "overall": {"difference": 0.75, "interval": [0.2, 1.0], "pairs": 6, "verdict": "a-better"},
        });
        let svg = draw(&report);
        assert_eq!(svg.matches("<circle").count(), 3, "two tasks with numbers and overall: {svg}");
        assert!(svg.contains("&lt;script&gt;") && !svg.contains("<script>"), "{svg}");
        assert!(svg.contains("A: with &lt;b&gt;pdf&lt;/b&gt; · B: without pdf"), "{svg}");
        // t1 at +50% is three quarters across the plot; the hostile 7 is clamped to +100%.
        assert!(svg.contains(&format!(r#"cx="{:.1}""#, LABELS + 0.75 * PLOT)), "{svg}");
        assert!(svg.contains(&format!(r#"cx="{:.1}""#, LABELS + PLOT)), "{svg}");
        assert!(svg.contains("+75% [+20, +100] · 6 pairs · a-better"));
    }

    #[test]
    fn only_a_reports_key_names_a_chart() {
        let dir = tempfile::tempdir().unwrap();
        let folder = crate::home::state(dir.path()).join("eval/0123456789abcdef");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("report.json"), r#"{"arms":["a","b"],"tasks":[],"overall":{"difference":0}}"#)
            .unwrap();
        assert!(chart_at(dir.path(), "/api/eval/0123456789abcdef.svg").is_some());
        for path in
            ["/api/eval/../x.svg", "/api/eval/0123456789ABCDEZ.svg", "/api/eval/0123456789abcdef", "/api/eval/.svg"]
        {
            assert!(chart_at(dir.path(), path).is_none(), "{path}");
        }
        let listed = list(dir.path());
        assert_eq!(listed["evaluations"][0]["key"], "0123456789abcdef");
        assert_eq!(listed["evaluations"][0]["chart"], "/api/eval/0123456789abcdef.svg");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_link_where_a_report_was_expected_is_passed_over_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let eval = crate::home::state(dir.path()).join("eval");
        std::fs::create_dir_all(eval.join("aaaaaaaaaaaaaaaa")).unwrap();
        let fifo = eval.join("aaaaaaaaaaaaaaaa/report.json");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RUSR, 0).unwrap();
        std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
        std::fs::write(dir.path().join("elsewhere/report.json"), r#"{"arms":["a","b"],"tasks":[]}"#).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), eval.join("bbbbbbbbbbbbbbbb")).unwrap();
        assert!(chart_at(dir.path(), "/api/eval/aaaaaaaaaaaaaaaa.svg").is_none());
        assert!(chart_at(dir.path(), "/api/eval/bbbbbbbbbbbbbbbb.svg").is_none());
        assert_eq!(list(dir.path())["evaluations"], serde_json::json!([]));
    }
}
