//! `./build.sh demo` tells the same story every day: examples/demo.sh (what the demo runs) with
//! this build, its output held line for line to examples/demo.out. The demo's clock starts at
//! replay's fixed t = 0, the example library's dates are set relative to it, and the operator's
//! `/skills` look afterwards is replayed on that clock too (`examples/operator.jsonl`), so nothing
//! here depends on today's date. After a deliberate change: `SELF_EVOLVE_BLESS=1 cargo test -p
//! self-evolve --test demo` rewrites examples/demo.out; read its diff before committing it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The demo's output with what differs between machines and builds put in words: the home's
/// temporary path, and `inspect`'s component size and cache state.
fn normalized(out: &str, home: &Path) -> String {
    // `inspect` prints real paths: a temp folder reached through a link (macOS's /var) is named
    // by its target there.
    let real = std::fs::canonicalize(home).unwrap_or_else(|_| home.to_path_buf());
    let out = out.replace(&real.display().to_string(), "$HOME_DIR").replace(&home.display().to_string(), "$HOME_DIR");
    out.lines()
        .map(|line| {
            for key in ["component  ", "size       ", "cache      "] {
                if line.starts_with(key) {
                    return format!("{key}…");
                }
            }
            line.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn the_demo_prints_the_pinned_story() {
    let home = tempfile::tempdir().unwrap();
    let wasm = repo().join("dist/self-evolve.wasm");
    let out = Command::new("bash")
        // As a person runs it: no component, home, reviewer identity or cache from the caller.
        .env_remove("SELF_EVOLVE_WASM")
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .env_remove("SELF_EVOLVE_CWD")
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .arg(repo().join("examples/demo.sh"))
        .arg(env!("CARGO_BIN_EXE_self-evolve"))
        .arg(&wasm)
        .arg(home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "demo.sh failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let got = normalized(&stdout, home.path());
    let pinned_path = repo().join("examples/demo.out");
    if std::env::var_os("SELF_EVOLVE_BLESS").is_some() {
        std::fs::write(&pinned_path, &got).unwrap();
    }
    let pinned = std::fs::read_to_string(&pinned_path).unwrap_or_default();
    if got != pinned {
        let first = got
            .lines()
            .zip(pinned.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(got.lines().count().min(pinned.lines().count()));
        panic!(
            "the demo's output changed at line {} (got / pinned):\n{}\n{}\n(SELF_EVOLVE_BLESS=1 rewrites examples/demo.out)",
            first + 1,
            got.lines().nth(first).unwrap_or("<end>"),
            pinned.lines().nth(first).unwrap_or("<end>")
        );
    }
    // The story itself: every decision narrated, none printed as raw JSON.
    assert!(
        got.contains("⌛ curator: deploy-staging active → stale (never used since created 2025-10-14: 78 days idle")
    );
    assert!(!got.lines().any(|l| l.get(10..).is_some_and(|rest| rest.trim_start().starts_with("{\"kind\""))), "{got}");
}

/// The README's sample of the replay is the demo's own lines (a line cut short with `…` matches
/// on the part before it), so the first thing a newcomer reads cannot drift from what runs.
#[test]
fn the_readmes_sample_is_the_demos_output() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let pinned = std::fs::read_to_string(repo().join("examples/demo.out")).unwrap();
    let after = readme.split("Each completed turn is a decision").nth(1).expect("README's sample");
    let sample = after.split("```text\n").nth(1).and_then(|b| b.split("```").next()).expect("a text block");
    assert!(sample.lines().count() >= 5, "{sample}");
    for line in sample.lines() {
        let known = match line.split_once('…') {
            Some((head, _)) => pinned.lines().any(|l| l.starts_with(head)),
            None => pinned.lines().any(|l| l == line),
        };
        assert!(known, "README.md shows a line the demo does not print:\n{line}");
    }
}
