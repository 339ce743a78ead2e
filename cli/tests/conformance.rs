//! The conformance suite, Rust side: every scenario in tests/conformance/ replayed through the
//! real component must print exactly its `.expected` decision lines. hosts/node runs the same
//! scenarios against the same files, so both hosts agree byte for byte.
//! `UPDATE_CONFORMANCE=1 cargo test --test conformance` rewrites the expected files.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

fn scenarios() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

fn replay(file: &Path) -> String {
    replay_with(file, false)
}

/// Review loops (seed 003) are driven by a host's workflow engine inside one long-lived process;
/// their runs are not session state, so they are not replayed one process per event.
fn restartable(file: &Path) -> bool {
    !file.file_name().is_some_and(|n| n.to_string_lossy().starts_with("review-loop"))
}

fn replay_with(file: &Path, restart: bool) -> String {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm").arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm"));
    cmd.arg("replay").arg(file).arg("--json").arg("--home").arg(home.path());
    if restart {
        cmd.arg("--restart-each-event");
    }
    let gate = file.with_extension("gate.json");
    if gate.is_file() {
        cmd.arg("--gate-replies").arg(gate);
    }
    let out = cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).output().unwrap();
    assert!(out.status.success(), "{}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_scenario_prints_its_expected_decisions() {
    let scenarios = scenarios();
    assert!(scenarios.len() >= 4, "the suite holds the four scenario families");
    for file in scenarios {
        let actual = replay(&file);
        let expected_path = file.with_extension("expected");
        if std::env::var_os("UPDATE_CONFORMANCE").is_some() {
            std::fs::write(&expected_path, &actual).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_CONFORMANCE=1", expected_path.display()));
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "{} line {}", file.display(), i + 1);
        }
        assert_eq!(actual.lines().count(), expected.lines().count(), "{}", file.display());
    }
}

/// A process per event (hooks) must decide exactly what one process decides: the same scenarios
/// with a fresh instance before every event print the same lines.
#[test]
fn a_fresh_instance_per_event_prints_the_same_decisions() {
    let mut checked = 0;
    for file in scenarios().into_iter().filter(|f| restartable(f)) {
        let expected = std::fs::read_to_string(file.with_extension("expected")).unwrap();
        let actual = replay_with(&file, true);
        for (i, (a, e)) in actual.lines().zip(expected.lines()).enumerate() {
            assert_eq!(a, e, "{} line {} (restarting before every event)", file.display(), i + 1);
        }
        assert_eq!(actual.lines().count(), expected.lines().count(), "{}", file.display());
        checked += 1;
    }
    assert!(checked >= 4, "the session scenarios are all replayed with restarts");
}
