//! `self-evolve check` end to end: the real binary, the real component, real folders.

use std::path::{Path, PathBuf};
use std::process::Command;

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

fn check(args: &[&Path], json: bool) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.arg("--wasm").arg(wasm()).arg("check");
    if json {
        cmd.arg("--json");
    }
    let out = cmd.args(args).env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap())
}

fn write_skill(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("SKILL.md"), text).unwrap();
}

#[test]
fn the_published_corpus_passes_with_json_findings() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-skills");
    if !corpus.is_dir() {
        eprintln!("SKIPPED: {} is absent", corpus.display());
        return;
    }
    let (code, out) = check(&[&corpus], true);
    assert_eq!(code, 0, "{out}");
    for line in out.lines() {
        let f: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(f["path"].is_string() && f["line"].is_u64() && f["rule"].is_string() && f["message"].is_string());
        assert_ne!(f["severity"], "error", "{line}");
    }
}

#[test]
fn errors_exit_non_zero_and_warnings_do_not() {
    let dir = tempfile::tempdir().unwrap();
    write_skill(
        dir.path(),
        "deploy",
        "---\nname: deploy\ndescription: Deploy to staging. Use when deploying.\n---\nrm -rf /\n",
    );
    let (code, out) = check(&[dir.path()], false);
    assert_eq!(code, 0, "a destructive idiom is a warning: {out}");
    assert!(out.contains("warning [rm-rf-root]"), "{out}");

    write_skill(dir.path(), "mismatch", "---\nname: other-name\ndescription: Use when testing.\n---\nbody\n");
    let (code, out) = check(&[dir.path()], false);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("error [name-folder]"), "{out}");

    let single = tempfile::tempdir().unwrap();
    let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
    write_skill(single.path(), "leaky", "---\nname: leaky\ndescription: Use when leaking.\n---\nbody\n");
    std::fs::create_dir_all(single.path().join("leaky/scripts")).unwrap();
    std::fs::write(single.path().join("leaky/scripts/env.sh"), format!("AWS={key}\n")).unwrap();
    let (code, out) = check(&[&single.path().join("leaky")], true);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("\"rule\":\"aws-access-key-id\""), "{out}");
    assert!(!out.contains(&key), "the secret is never printed");
}
