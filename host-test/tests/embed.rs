//! The README's embedding example, compiled and run against a temporary home.

#[path = "../examples/embed.rs"]
mod embed;

#[test]
fn the_embedding_example_runs() {
    let home = tempfile::tempdir().unwrap();
    let wasm = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    let lines = embed::run(&wasm, home.path()).unwrap();
    assert!(lines.iter().any(|l| l == "tool skill_manage"), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("skill_manage: {") && l.contains("\"written\"")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("decision: ") && l.contains("not due")), "{lines:?}");
    assert!(home.path().join("skills/lint-before-commit/SKILL.md").is_file());
}
