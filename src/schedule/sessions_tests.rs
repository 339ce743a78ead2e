//! Tests for session state on disk: round trips, in-flight markers, files that are not ours,
//! the shared breaker, and the sweep of old sessions.

use super::*;
use crate::fake::FakeHost;
use crate::schedule::session_state::{InFlight, SessionState};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const MIN: u64 = 60_000;

fn flight(id: &str) -> Option<InFlight> {
    Some(InFlight { id: id.into(), started_ms: 5, turn: 3 })
}

#[test]
fn a_saved_session_loads_back_whole() {
    let host = FakeHost::new(1_000);
    let fresh = load(&host, "s1");
    assert_eq!(fresh.session, "s1");
    assert_eq!(fresh.review, SessionState::default());
    let mut stored = fresh.clone();
    stored.review.turn = 7;
    stored.review.turns_since_review = 2;
    stored.review.last_review_ms = Some(900);
    stored.review.digest.user_message("use pnpm", true);
    stored.reads.entry("main".into()).or_default().insert("pdf".into());
    save(&host, None, &stored);
    let back = load(&host, "s1");
    assert_eq!(back.review, stored.review);
    assert_eq!(back.reads, stored.reads);
    assert_eq!(back.updated_ms, 1_000);
    assert_eq!(load(&host, "s2").review.turn, 0, "sessions are separate");
}

#[test]
fn markers_follow_the_review_in_flight() {
    let host = FakeHost::new(0);
    let mut stored = load(&host, "s1");
    stored.review.in_flight = flight("act-1");
    save(&host, None, &stored);
    assert_eq!(session_of(&host, "act-1").as_deref(), Some("s1"));
    assert_eq!(in_flight(&host), vec![("s1".to_string(), "act-1".to_string())]);
    stored.review.in_flight = None;
    save(&host, Some("act-1"), &stored);
    assert_eq!(session_of(&host, "act-1"), None, "an ended review loses its marker");
    assert!(in_flight(&host).is_empty());
}

#[test]
fn a_file_that_is_not_this_sessions_state_starts_it_over() {
    let host = FakeHost::new(0);
    host.write(&Root::State, &generation_path("s1", 1), b"{not json", crate::host::WriteMode::Truncate).unwrap();
    assert_eq!(load(&host, "s1").review, SessionState::default());
    assert!(host.logged("starting it over"));
    // Another session's state under this name (a file copied by hand) is not taken for ours.
    let mut other = load(&host, "s2");
    other.review.turn = 9;
    let bytes = serde_json::to_vec(&other).unwrap();
    host.write(&Root::State, &generation_path("s1", 1), &bytes, crate::host::WriteMode::Truncate).unwrap();
    assert_eq!(load(&host, "s1").review.turn, 0);
    // A huge file is not parsed.
    let huge = vec![b' '; MAX_FILE_BYTES + 1];
    host.write(&Root::State, &generation_path("s1", 1), &huge, crate::host::WriteMode::Truncate).unwrap();
    assert_eq!(load(&host, "s1").session, "s1");
}

#[test]
fn a_generation_being_written_or_torn_leaves_the_one_before_in_force() {
    let host = FakeHost::new(0);
    let mut stored = load(&host, "s1");
    stored.review.turn = 4;
    save(&host, None, &stored);
    let mut stored = load(&host, "s1");
    stored.review.turn = 5;
    save(&host, None, &stored);
    assert_eq!(generations(&host, "s1"), [2], "older generations are removed");
    // A writer that died after creating generation 3 and before writing it whole.
    host.write(&Root::State, &generation_path("s1", 3), b"{\"v\":1,\"sess", crate::host::WriteMode::CreateNew).unwrap();
    assert_eq!(load(&host, "s1").review.turn, 5);
    // The next save takes a free number and clears both.
    let mut stored = load(&host, "s1");
    stored.review.turn = 6;
    save(&host, None, &stored);
    assert_eq!(generations(&host, "s1"), [4]);
    assert_eq!(load(&host, "s1").review.turn, 6);
}

#[test]
fn keys_are_safe_file_names_for_any_session_id() {
    for id in ["s1", "../../etc/passwd", "a/b", "", "\u{1b}[2J", &"x".repeat(10_000)] {
        let k = key(id);
        assert_eq!(k.len(), 24);
        assert!(k.chars().all(|c| c.is_ascii_hexdigit()), "{k}");
    }
    assert_ne!(key("s1"), key("s2"));
}

#[test]
fn breaker_failures_add_up_across_processes_and_reopen_after_the_window() {
    let host = FakeHost::new(0);
    // Three processes, each with fresh memory, each failing once.
    for _ in 0..3 {
        let mut memory = StoredBreaker::default();
        let before = breaker_before(&host, &memory, host.now_ms());
        let after = Breaker { consecutive_failures: before.consecutive_failures + 1, open: false };
        breaker_after(&host, &mut memory, &before, &after, host.now_ms());
    }
    let memory = StoredBreaker::default();
    assert!(breaker_before(&host, &memory, 0).open, "three failures in three processes open it");
    assert!(breaker_before(&host, &memory, BREAKER_OPEN_MS - 1).open);
    let half = breaker_before(&host, &memory, BREAKER_OPEN_MS);
    assert!(!half.open, "closed again after the window");
    assert_eq!(half.consecutive_failures, gate::BREAKER_THRESHOLD - 1, "one more failure reopens it");
    // A success resets it for everyone, even failures other processes added after it read it.
    let mut memory = StoredBreaker::default();
    let seen = breaker_before(&host, &memory, BREAKER_OPEN_MS);
    let failed = Breaker { consecutive_failures: seen.consecutive_failures + 1, open: false };
    breaker_after(&host, &mut memory, &seen, &failed, BREAKER_OPEN_MS);
    assert!(breaker_before(&host, &memory, BREAKER_OPEN_MS).open, "the half-open breaker's failure reopens it");
    let stale_view = Breaker { consecutive_failures: 1, open: false };
    breaker_after(&host, &mut memory, &stale_view, &Breaker::default(), BREAKER_OPEN_MS);
    assert_eq!(breaker_before(&host, &memory, BREAKER_OPEN_MS), Breaker::default());
    let mut memory = StoredBreaker::default();
    breaker_after(&host, &mut memory, &half, &Breaker::default(), BREAKER_OPEN_MS);
    assert_eq!(breaker_before(&host, &memory, BREAKER_OPEN_MS), Breaker::default());
}

#[test]
fn without_a_state_root_the_breaker_is_this_processs() {
    let host = FakeHost::default();
    host.now.set(0);
    let mut memory = StoredBreaker::default();
    for _ in 0..3 {
        let before = breaker_before(&host, &memory, 0);
        let after = Breaker { consecutive_failures: before.consecutive_failures + 1, open: false };
        breaker_after(&host, &mut memory, &before, &after, 0);
    }
    assert!(breaker_before(&host, &memory, 10 * MIN).open);
    assert!(!breaker_before(&host, &StoredBreaker::default(), 10 * MIN).open);
}

#[test]
fn the_sweep_removes_week_old_sessions_but_not_reviews_in_flight() {
    forget_last_sweep_look();
    let host = FakeHost::new(0);
    let mut old = load(&host, "old");
    old.review.turn = 1;
    save(&host, None, &old);
    let mut busy = load(&host, "busy");
    busy.review.in_flight = flight("act-9");
    save(&host, None, &busy);
    host.advance(KEEP_MS + MIN);
    let mut recent = load(&host, "recent");
    recent.review.turn = 1;
    save(&host, None, &recent);
    sweep(&host);
    assert!(generations(&host, "old").is_empty());
    assert!(!generations(&host, "busy").is_empty());
    assert!(!generations(&host, "recent").is_empty());
    // At most once a day.
    host.advance(KEEP_MS + MIN);
    sweep(&host);
    assert!(generations(&host, "recent").is_empty(), "a day later it is swept");
}

/// A state `load` would reject is never written: the generation before stays in force, with the
/// review counters; the read registry keeps skill names only.
#[test]
fn a_state_too_large_to_load_back_is_never_written() {
    let host = FakeHost::new(0);
    let mut stored = load(&host, "s1");
    stored.review.turn = 4;
    stored.review.in_flight = flight("act-1");
    save(&host, None, &stored);
    let before = load(&host, "s1");
    let mut grown = before.clone();
    grown.reads.entry("main".into()).or_default().extend(["pdf".to_string(), "x".repeat(400_000)]);
    grown.review.turn = 5;
    save(&host, Some("act-1"), &grown);
    let back = load(&host, "s1");
    assert_eq!(back.review.turn, 5, "an unchecked name is dropped, the rest saved");
    assert_eq!(back.reads["main"].iter().collect::<Vec<_>>(), ["pdf"]);
    let mut huge = back.clone();
    huge.review.turn = 6;
    huge.review.last_outcome = Some("y".repeat(MAX_FILE_BYTES));
    save(&host, Some("act-1"), &huge);
    assert!(host.logged("not saved"));
    let kept = load(&host, "s1");
    assert_eq!((kept.review.turn, kept.review.in_flight.clone()), (5, flight("act-1")), "not started over");
    assert!(!host.logged("starting it over"));
}

/// A host that passes any string as a loaded skill's name (a hook's `tool_input.skill`) cannot
/// grow the session's state: only a skill name registers a read.
#[test]
fn a_load_whose_name_is_no_skill_name_registers_nothing() {
    use crate::api::{CallContext, Origin, ToolEvent, TurnStatus};
    let host = FakeHost::new(1_000);
    let mut plugin = crate::plugin::Plugin::new(host);
    let services = ["tools", "commands", "agents", "subagents"].map(String::from);
    plugin.init(r#"{"review": {"enabled": true, "turnInterval": 100}}"#, &services).unwrap();
    let ctx =
        CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: "/w".into() };
    plugin.user_message(&ctx, "go", true);
    plugin.turn_end(&ctx, TurnStatus::Completed);
    let name = "a".repeat(400_000);
    for name in [name.as_str(), "Not A Skill", "pdf"] {
        let args_json = serde_json::json!({"name": name}).to_string();
        plugin.tool_result(&ctx, &ToolEvent { tool: "skill".into(), args_json, ok: true, output: String::new() });
    }
    let stored = load(plugin.host(), "s1");
    assert_eq!(stored.review.turn, 1, "the session's counters survive");
    assert_eq!(stored.reads["main"].iter().collect::<Vec<_>>(), ["pdf"]);
    let size = serde_json::to_vec(&stored).unwrap().len();
    assert!(size < 16 << 10, "the session state grew to {size} bytes");
}

/// A look at the sweep's mark stamped after now (the clock stepped back) does not hold the
/// sweep off until the clock passes it.
#[test]
fn a_clock_stepped_back_does_not_hold_the_sweep_off() {
    forget_last_sweep_look();
    sweep(&FakeHost::new(30 * KEEP_MS));
    let host = FakeHost::new(0);
    let mut old = load(&host, "old");
    old.review.turn = 1;
    save(&host, None, &old);
    host.advance(KEEP_MS + MIN);
    sweep(&host);
    assert!(generations(&host, "old").is_empty(), "swept although an earlier look was stamped later");
}

/// The session's generations on disk, newest first.
fn generations(host: &FakeHost, session: &str) -> Vec<u64> {
    listing(host, session).0
}
