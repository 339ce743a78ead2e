//! The official MCP Python SDK's `Client` (the `mcp` package, pinned with every dependency in
//! tests/mcp-sdk-python/requirements.txt) against `self-evolve serve` over Streamable HTTP and
//! `self-evolve mcp` over stdio, on both revisions: `legacy` (initialize, 2025-11-25) and `auto`
//! (`server/discover`, 2026-07-28). The script checks what a Python agent sees; this test
//! checks the library it leaves behind.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod mcp_support;
use mcp_support::serve::Serve;
use mcp_support::wasm;

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-sdk-python")
}

/// A venv with the pinned SDK, made once per requirements file (kept in the target dir, so a
/// warm run does not reach PyPI again).
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let requirements = suite_dir().join("requirements.txt");
        let text = std::fs::read(&requirements).unwrap();
        let key: u64 = text.iter().fold(0xcbf29ce484222325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100000001b3));
        let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("mcp-sdk-python-{key:016x}"));
        let bin = venv.join("bin/python");
        if !venv.join("ready").is_file() {
            let _ = std::fs::remove_dir_all(&venv);
            let status = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().unwrap();
            assert!(status.success(), "python3 -m venv");
            let out = Command::new(&bin)
                .args(["-m", "pip", "install", "-q", "--disable-pip-version-check", "-r"])
                .arg(&requirements)
                .output()
                .unwrap();
            assert!(out.status.success(), "pip install: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::write(venv.join("ready"), "").unwrap();
        }
        bin
    })
}

/// Runs client.py with `args`; what it saw.
fn client(home: &Path, args: &[&str]) -> Value {
    let out = Command::new(python())
        .arg(suite_dir().join("client.py"))
        .args(args)
        .arg("--home")
        .arg(home)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_ACTIVATION")
        // stdio's server takes its project from here: a temp dir, never this checkout.
        .current_dir(home.parent().unwrap())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client.py {args:?}:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(stdout.trim()).unwrap()
}

fn assert_library(home: &Path) {
    let skills = home.join("skills");
    for name in ["python-first", "python-second"] {
        assert!(skills.join(name).join("SKILL.md").is_file(), "{name} landed");
    }
    assert!(!skills.join("python-aws").exists(), "the refused secret wrote nothing");
}

#[test]
fn the_python_sdk_over_http_on_both_revisions() {
    for (mode, revision) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let token = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .args(["serve", "token", "add", "alice", "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert!(token.status.success());
        let token = String::from_utf8(token.stdout).unwrap().trim().to_string();
        let serve = Serve::start(&home, &[]);
        let seen = client(&home, &["--url", &serve.url, "--token", &token, "--mode", mode]);
        assert_eq!(seen["protocolVersion"], revision, "{seen}");
        assert_eq!(seen["skills"], serde_json::json!(["python-first", "python-second"]), "{seen}");
        assert_eq!(seen["refused"], "secret-found");
        assert!(!seen["announced"].as_array().unwrap().is_empty(), "{mode}: the write was announced: {seen}");
        assert_library(&home);
        // A wrong token gets nothing, on either revision.
        let out = Command::new(python())
            .arg(suite_dir().join("client.py"))
            .args(["--url", &serve.url, "--token", "sevt_wrong", "--mode", mode, "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{mode}: a wrong token is refused");
    }
}

#[test]
fn the_python_sdk_over_stdio_on_both_revisions() {
    for (mode, revision) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let cli = env!("CARGO_BIN_EXE_self-evolve");
        let wasm = wasm();
        let seen = client(&home, &["--stdio", cli, wasm.to_str().unwrap(), "--mode", mode]);
        assert_eq!(seen["protocolVersion"], revision, "{seen}");
        assert_eq!(seen["skills"], serde_json::json!(["python-first", "python-second"]), "{seen}");
        assert_library(&home);
    }
}
