//! Tests for a journal's names and its fold: which files are journals, which journals continue a
//! generation, and where a fold stops. The hand-over itself is tested through `Active`
//! (`held_tests.rs`).

use super::*;
use crate::fake::FakeHost;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn names_say_which_state_a_journal_is_in() {
    let parse = |name: &str| Journal::parse(name).map(|j| (j.stem, j.state));
    assert_eq!(parse("journal.00000003.7-1.jsonl"), Some(("journal.00000003.7-1".into(), State::Idle)));
    assert_eq!(parse("journal.00000003.7-1.busy"), Some(("journal.00000003.7-1".into(), State::Busy)));
    assert_eq!(parse("journal.00000003.7-1.taken"), Some(("journal.00000003.7-1".into(), State::Taken)));
    assert_eq!(parse("0000000000000003.json"), None, "a generation");
    assert_eq!(parse("journal.00000003.7-1.jsonl.tmp"), None);
    assert_eq!(parse("notes.jsonl"), None);
}

fn header(base: u64, session: &str) -> String {
    format!("{{\"journal\":1,\"base\":{base},\"session\":\"{session}\"}}\n")
}

#[test]
fn only_a_journal_of_this_session_continuing_this_generation_is_folded() {
    let host = FakeHost::new(0);
    let record = "{\"review\":{\"turn\":4},\"t\":9}\n";
    let fresh = || Stored { session: "s1".into(), ..Stored::default() };
    for (bytes, folds) in [
        (format!("{}{record}", header(2, "s1")), true),
        (format!("{}{record}", header(1, "s1")), false),
        (format!("{}{record}", header(2, "s2")), false),
        (format!("{}{record}", header(2, "s1").replace("\"journal\":1", "\"journal\":2")), false),
        (format!("not json\n{record}"), false),
        // A header still being written.
        (header(2, "s1").trim_end().to_string(), false),
    ] {
        let mut stored = fresh();
        assert_eq!(apply(&host, "s1", 2, bytes.as_bytes(), &mut stored), folds, "{bytes}");
        assert_eq!(stored.review.turn, if folds { 4 } else { 0 }, "{bytes}");
    }
}

#[test]
fn a_fold_replaces_parts_in_order_and_stops_at_a_record_that_does_not_parse() {
    let host = FakeHost::new(0);
    let mut stored = Stored { session: "s1".into(), ..Stored::default() };
    let bytes = [
        header(0, "s1"),
        "{\"review\":{\"turn\":1},\"reads\":{\"main\":[\"pdf\"]},\"t\":1}\n".into(),
        "\n".into(),
        "{\"review\":{\"turn\":2},\"t\":2}\n".into(),
        "{\"review\":{\"turn\":\n".into(),
        "{\"review\":{\"turn\":9},\"t\":9}\n".into(),
    ]
    .concat();
    assert!(apply(&host, "s1", 0, bytes.as_bytes(), &mut stored));
    assert_eq!(stored.review.turn, 2, "the empty line is a renewal; the torn record ends the fold");
    assert!(stored.reads["main"].contains("pdf"), "a part no later record names stays");
    assert_eq!(stored.updated_ms, 2);
    assert!(host.logged("a journal record does not parse"));
}
