//! Review-loop benchmark (own harness; `cargo bench -p self-evolve --bench review_loop`):
//! the call that aggregates 200 findings against a 5,000-line diff, through the component.
//!
//! Five lenses answer 40 findings each; 199 falsifiers answer at once and the 200th a second
//! later, so the timed call is the `events.activation-end` of that last falsifier: drift guard,
//! dedup, confidence filter, classification, the decision and the state write. Iteration 2 adds
//! the cross-iteration dedup against iteration 1's addressed findings.

use self_evolve_host::bindings::review_loop::{Independence, Mode, Request};
use self_evolve_host::caps::subagent::{Script, ScriptedProvider, Spec};
use self_evolve_host::{HostConfig, ManualClock, Plugin, user_context};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const FILES: usize = 50;
const LINES_PER_FILE: usize = 100;
const PER_LENS: usize = 40;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// 50 files × 100 changed lines, each line with its own identifiers.
fn diff(variant: usize) -> String {
    let mut out = String::new();
    for f in 0..FILES {
        out.push_str(&format!(
            "diff --git a/src/mod_{f}.rs b/src/mod_{f}.rs\n--- a/src/mod_{f}.rs\n+++ b/src/mod_{f}.rs\n@@ -1,{n} +1,{n} @@\n",
            n = LINES_PER_FILE - 4
        ));
        for l in 0..LINES_PER_FILE - 4 {
            let sign = if l % 3 == 0 { '+' } else { ' ' };
            out.push_str(&format!(
                "{sign}    let value_{f}_{l} = parse_record_{}(&input_{l}, limit_{f}, variant_{variant});\n",
                l % 17
            ));
        }
    }
    out
}

fn finding(i: usize) -> serde_json::Value {
    let f = (i * 7) % FILES;
    let l = (i * 13) % (LINES_PER_FILE - 8) + 1;
    let severity = ["low", "medium", "high"][i % 3];
    serde_json::json!({
        "file": format!("src/mod_{f}.rs"), "line": l,
        // Half quote the line they cite (and pass the drift guard), half paraphrase it.
        "claim": if i.is_multiple_of(2) {
            format!("`let value_{f}_{l} = parse_record_{}(&input_{l}, limit_{f}, variant_0)` drops the error", l % 17)
        } else {
            format!("value_{f}_{l} ignores the error from parse_record_{} when input_{l} exceeds limit_{f}", l % 17)
        },
        "severity": severity, "confidence": 60 + (i % 40),
        "load_bearing": i.is_multiple_of(2), "category": "bug", "fix": "propagate the error"
    })
}

fn main() -> anyhow::Result<()> {
    let falsifiers = Arc::new(AtomicUsize::new(0));
    let lens = Arc::new(AtomicUsize::new(0));
    let (fc, lc) = (falsifiers.clone(), lens.clone());
    let responder = move |spec: &Spec| {
        if spec.prompt.starts_with("A reviewer flagged") {
            // The last falsifier of each iteration answers a second later.
            let n = fc.fetch_add(1, Ordering::SeqCst) + 1;
            let delay_ms = if n.is_multiple_of(5 * PER_LENS) { 1_000 } else { 0 };
            return Some(Script { text: r#"{"falsified": false}"#.into(), delay_ms, ..Default::default() });
        }
        let k = lc.fetch_add(1, Ordering::SeqCst);
        let list: Vec<_> = (0..PER_LENS).map(|i| finding(k * PER_LENS + i)).collect();
        Some(Script { text: serde_json::Value::Array(list).to_string(), ..Default::default() })
    };
    let provider =
        Arc::new(Mutex::new(ScriptedProvider { responder: Some(Box::new(responder)), ..Default::default() }));
    let home = tempfile::tempdir()?;
    let clock = ManualClock::new(1_767_225_600_000);
    let config = HostConfig {
        fs: self_evolve::home::replay_fs_config(home.path()),
        subagents: Box::new(provider),
        clock: Arc::new(clock.clone()),
        ..HostConfig::default()
    };
    let wasm = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm");
    let mut plugin = Plugin::load(wasm, config)?;
    let services: Vec<String> = ["agents", "subagents"].iter().map(|s| s.to_string()).collect();
    plugin.init("{}", &services)?.map_err(|e| anyhow::anyhow!(e.message))?;

    let request = |variant: usize| Request {
        mode: Mode::Code,
        artifact: diff(variant),
        artifact_sha: None,
        files: (0..FILES).map(|f| format!("src/mod_{f}.rs")).collect(),
        documents: vec![],
        repo: "/bench/repo".into(),
        branch: "bench".into(),
        commit: None,
        uncommitted: true,
        max_iter: Some(2),
        token_ceiling: Some(100_000_000),
        independence: Independence::Independent,
        self_review_ack: None,
        auto: true,
        commands: Some(vec![]),
        disabled_lenses: vec![],
    };
    assert_eq!(diff(0).lines().count(), FILES * LINES_PER_FILE);

    let mut first = Vec::new();
    let mut second = Vec::new();
    let mut whole = Vec::new();
    for sample in 0..15 {
        let ctx = user_context(&format!("bench-{sample}"));
        for (iteration, times) in [(0, &mut first), (1, &mut second)] {
            let started = Instant::now();
            let begun = plugin.review_loop_begin(&ctx, &request(iteration))?.map_err(anyhow::Error::msg)?;
            assert!(begun.contains("\"dispatched\""), "{begun}");
            // Lens replies, falsifier starts, 199 falsifier replies.
            while !plugin.pump_activations()?.is_empty() {}
            clock.advance(1_000);
            let t = Instant::now();
            let out = plugin.pump_activations()?;
            times.push(t.elapsed());
            whole.push(started.elapsed());
            let decision: serde_json::Value = serde_json::from_str(out.last().expect("a decision"))?;
            let outcome = decision["outcome"].as_str().unwrap_or_default();
            assert!(["continue", "review-clean", "review-exhausted"].contains(&outcome), "{outcome}");
            if sample == 0 {
                let count = |k: &str| decision[k].as_array().map_or(0, Vec::len);
                println!(
                    "  iteration {}: {} actionable, {} speculative, {} dropped ({})",
                    iteration + 1,
                    count("actionable"),
                    count("speculative"),
                    count("dropped"),
                    decision["outcome"]
                );
            }
        }
    }
    println!(
        "{:<64} median {:>10?}",
        "aggregate 200 findings, 5,000-line diff, iteration 1 (component)",
        median(first)
    );
    println!("{:<64} median {:>10?}", "aggregate 200 findings + dedup vs addressed, iteration 2", median(second));
    println!("{:<64} median {:>10?}", "whole iteration: begin, 5 lenses, 200 falsifiers, decision", median(whole));
    Ok(())
}
