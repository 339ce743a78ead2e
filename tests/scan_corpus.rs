//! The credential scanner against the labelled corpus in tests/scan-corpus (written by its
//! generate.py; labels.json says, per file, which 1-based lines hold a credential and under
//! which rule). Owns the scanner's recall and precision on realistic files: every labelled
//! credential found on its line under its rule, and no other finding anywhere (negative files
//! hold only look-alikes). Prints a per-rule confusion table: `cargo test --test scan_corpus -- --nocapture`.

use self_evolve_plugin::library::guards::scan::scan_secrets;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

#[derive(Default)]
struct Row {
    expected: usize,
    found: usize,
    missed: usize,
    false_alarms: usize,
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/scan-corpus")
}

/// (path, kind, expected (line, rule) pairs) of one file in labels.json.
type Labelled = (String, String, BTreeSet<(usize, String)>);

/// Every file in labels.json.
fn labelled_files() -> Vec<Labelled> {
    let path = corpus_dir().join("labels.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run python3 tests/scan-corpus/generate.py)", path.display()));
    let labels: serde_json::Value = serde_json::from_str(&text).expect("labels.json is JSON");
    let files = labels["files"].as_array().expect("labels.json has a files array");
    files
        .iter()
        .map(|file| {
            let expect = file["expect"].as_array().expect("expect is an array");
            let expected = expect
                .iter()
                .map(|x| {
                    let line = x["line"].as_u64().expect("line is a number") as usize;
                    (line, x["rule"].as_str().expect("rule is a string").to_string())
                })
                .collect();
            let path = file["path"].as_str().expect("path is a string").to_string();
            (path, file["kind"].as_str().expect("kind is a string").to_string(), expected)
        })
        .collect()
}

#[test]
fn scanner_finds_every_labelled_credential_and_nothing_else() {
    let files = labelled_files();
    assert!(files.len() >= 100, "expected the generated corpus, found {} files", files.len());
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let (mut misses, mut alarms) = (Vec::new(), Vec::new());
    for (path, kind, expected) in &files {
        let text = std::fs::read_to_string(corpus_dir().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let found: BTreeSet<(usize, String)> =
            scan_secrets(&text).into_iter().map(|f| (f.line, f.rule.to_string())).collect();
        for (line, rule) in expected {
            let row = rows.entry(rule.clone()).or_default();
            row.expected += 1;
            if found.contains(&(*line, rule.clone())) {
                row.found += 1;
            } else {
                row.missed += 1;
                misses.push(format!("{path}:{line} {rule}"));
            }
        }
        for (line, rule) in found.difference(expected) {
            rows.entry(rule.clone()).or_default().false_alarms += 1;
            alarms.push(format!("{path}:{line} {rule} ({kind} file)"));
        }
    }

    println!("{:<26} {:>8} {:>6} {:>6} {:>12}", "rule", "expected", "found", "missed", "false alarms");
    let mut total = Row::default();
    for (rule, row) in &rows {
        println!("{rule:<26} {:>8} {:>6} {:>6} {:>12}", row.expected, row.found, row.missed, row.false_alarms);
        total.expected += row.expected;
        total.found += row.found;
        total.missed += row.missed;
        total.false_alarms += row.false_alarms;
    }
    println!("{:<26} {:>8} {:>6} {:>6} {:>12}", "TOTAL", total.expected, total.found, total.missed, total.false_alarms);
    let negatives = files.iter().filter(|(_, kind, _)| kind == "negative").count();
    println!("{} files ({} negative)", files.len(), negatives);

    let short: Vec<&String> = rows.iter().filter(|(_, r)| r.missed > 0).map(|(rule, _)| rule).collect();
    assert!(
        misses.is_empty() && alarms.is_empty(),
        "recall below 100% for {:?}; {} missed, {} false alarms\nmissed:\n  {}\nfalse alarms:\n  {}",
        short,
        misses.len(),
        alarms.len(),
        misses.join("\n  "),
        alarms.join("\n  ")
    );
}
