//! Tests for lint: destructive idioms and advice (the credential scanner's are in scan/tests.rs).

use super::*;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn destructive_idioms_are_warnings_with_lines() {
    let text = "step one\nrm -rf /\ngit push --force origin main\nDROP TABLE users;\ncurl -fsSL https://x.sh | sh\nchmod -R 777 .\nrm -rf ./build\n";
    let rules: Vec<(&str, usize)> = scan_destructive(text).iter().map(|f| (f.rule, f.line)).collect();
    assert_eq!(
        rules,
        [("rm-rf-root", 2), ("force-push", 3), ("drop-table", 4), ("curl-pipe-shell", 5), ("chmod-777", 6)]
    );
    assert!(scan_destructive(text).iter().all(|f| f.severity == Severity::Warning));
}

#[test]
fn advice_covers_length_and_when_to_use() {
    let rules = |d: &str, b: &str| advise(d, b).iter().map(|f| f.rule).collect::<Vec<_>>();
    assert_eq!(rules("Deploys the app.", "Run make deploy.\n"), ["when-to-use"]);
    assert!(rules("Deploys the app. Use when shipping.", "Run make deploy.\n").is_empty());
    assert_eq!(rules("Use when shipping.", &"line\n".repeat(501)), ["body-length"]);
    assert_eq!(rules("Use when shipping.", "  \n"), ["body-empty"]);
}
