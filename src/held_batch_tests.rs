//! Tests for sessions held as a batch (`session_journal::BATCH_SERVICE`, a replay): nothing
//! written between flushes, everything at a flush and at the hand-back, a review's start written
//! at once, and another process that asks for a session getting it whole at the next flush.

use super::*;
use crate::fake::FakeHost;
use crate::host::{Host, Root};
use crate::schedule::session_holdings::{FLUSH_EVERY, Holdings};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn batch() -> Active {
    let mut active = Active::for_tests(true);
    active.holdings = Holdings::new(true, true);
    active
}

/// One event of `session`: a completed turn.
fn event(host: &FakeHost, process: &mut Active, session: &str) -> Result<(), crate::errors::ToolError> {
    let scope = process.enter(host, session, true)?;
    process.review.sessions.entry(session.into()).or_default().turn += 1;
    process.leave(host, scope);
    Ok(())
}

fn journals(host: &FakeHost, session: &str) -> Vec<String> {
    let folder = sessions::folder(session);
    let names = host.list_dir(&Root::State, &folder).unwrap_or_default().into_iter().map(|(name, _)| name);
    names.filter(|n| n.starts_with("journal.")).collect()
}

#[test]
fn a_batch_writes_nothing_between_flushes_and_everything_at_its_hand_back() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    event(&host, &mut replay, "s1").unwrap();
    let leased = journals(&host, "s1");
    assert!(leased.len() == 1 && leased[0].ends_with(".busy"), "busy between events: {leased:?}");
    let (writes, renames) = (host.writes_so_far(), host.renames_so_far());
    // The lease was the first event; the flush comes with the FLUSH_EVERY-th.
    for _ in 1..FLUSH_EVERY - 1 {
        event(&host, &mut replay, "s1").unwrap();
    }
    assert_eq!((host.writes_so_far() - writes, host.renames_so_far() - renames), (0, 0), "nothing per event");
    assert_eq!(journals(&host, "s1"), leased, "still busy");
    event(&host, &mut replay, "s1").unwrap();
    assert_eq!(host.writes_so_far() - writes, 1, "one record for the whole stretch");
    for _ in 0..10 {
        event(&host, &mut replay, "s1").unwrap();
    }
    let turns = u64::from(FLUSH_EVERY) + 10;
    assert!(replay.holdings.holds("s1"));
    replay.holdings.hand_back(&host);
    assert!(journals(&host, "s1").is_empty(), "folded and removed");
    assert!(!replay.holdings.holds("s1"));
    assert_eq!(sessions::load(&host, "s1").review.turn, turns, "every event, from the generation");
}

#[test]
fn a_review_that_starts_in_a_batch_is_written_with_its_marker_at_once() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    for _ in 0..3 {
        event(&host, &mut replay, "s1").unwrap();
    }
    let scope = replay.enter(&host, "s1", true).unwrap();
    replay.review.sessions.get_mut("s1").unwrap().in_flight =
        Some(crate::schedule::session_state::InFlight { id: "act-1".into(), started_ms: 1, turn: 3 });
    replay.leave(&host, scope);
    assert_eq!(sessions::session_of(&host, "act-1").as_deref(), Some("s1"));
    let read = sessions::load(&host, "s1");
    assert_eq!((read.review.turn, read.review.in_flight.map(|f| f.id)), (3, Some("act-1".into())), "the journal too");
    let scope = replay.enter(&host, "s1", true).unwrap();
    replay.review.sessions.get_mut("s1").unwrap().in_flight = None;
    replay.leave(&host, scope);
    assert_eq!(sessions::session_of(&host, "act-1"), None);
    assert_eq!(sessions::load(&host, "s1").review.in_flight, None);
}

#[test]
fn a_process_that_asks_for_a_batch_session_gets_it_whole_at_the_next_flush() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    let mut hook = Active::for_tests(false);
    for _ in 0..10 {
        event(&host, &mut replay, "s1").unwrap();
    }
    // The hook finds the journal busy past its wait: it asks, and is refused for now with
    // nothing changed.
    let before = journals(&host, "s1");
    let err = event(&host, &mut hook, "s1").unwrap_err();
    assert_eq!(err.code, "conflict");
    assert_eq!(journals(&host, "s1"), before);
    let want = format!("{}/want", sessions::folder("s1"));
    assert!(host.stat(&Root::State, &want).is_ok(), "the ask stays for the holder");
    // The batch's next flush writes its 10 turns and hands the journal back.
    for _ in 10..FLUSH_EVERY {
        event(&host, &mut replay, "s1").unwrap();
    }
    assert!(!replay.holdings.holds("s1"), "handed back");
    assert!(host.stat(&Root::State, &want).is_err(), "the ask is answered");
    assert!(journals(&host, "s1").iter().all(|j| j.ends_with(".jsonl")), "idle: {:?}", journals(&host, "s1"));
    // The hook's next try takes it with every turn; the batch counts on from disk.
    event(&host, &mut hook, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, u64::from(FLUSH_EVERY) + 1);
    event(&host, &mut replay, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, u64::from(FLUSH_EVERY) + 2, "nothing lost or counted twice");
    assert!(!replay.holdings.holds("s1"), "kept on disk per event from then on");
}

#[test]
fn a_batch_holder_taken_as_dead_says_so_at_its_next_flush_and_keeps_nothing() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    for _ in 0..5 {
        event(&host, &mut replay, "s1").unwrap();
    }
    // The batch stalls past the stale age with its journal busy; a hook takes it as dead.
    host.advance(crate::state_file::STALE_LOCK_MS * 3);
    let mut hook = Active::for_tests(false);
    event(&host, &mut hook, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 1, "what the journal held (the lease) and the hook's");
    assert!(!host.logged("took it while this one stalled"));
    for _ in 5..FLUSH_EVERY {
        event(&host, &mut replay, "s1").unwrap();
    }
    assert!(!replay.holdings.holds("s1"));
    assert!(host.logged("another process took it while this one stalled mid-event"), "the loss is said");
    // From then on the batch counts on from disk, per event.
    event(&host, &mut replay, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 2);
}

#[test]
fn a_batch_lists_the_markers_again_when_it_changed_one_or_every_flush_of_ticks() {
    let host = FakeHost::new(1_000_000);
    let mut holdings = Holdings::new(true, true);
    let mark = |activation: &str, session: &str| {
        let body = serde_json::json!({"session": session, "activation": activation}).to_string();
        host.write(
            &Root::State,
            &crate::schedule::session_store::in_flight_path(activation),
            body.as_bytes(),
            crate::host::WriteMode::CreateNew,
        )
        .unwrap();
    };
    mark("a1", "s1");
    assert_eq!(holdings.in_flight(&host), [("s1".to_string(), "a1".to_string())]);
    // Another process's marker: seen within FLUSH_EVERY ticks, not listed for at every tick.
    mark("a2", "s2");
    assert_eq!(holdings.in_flight(&host).len(), 1);
    // One this instance removes (or writes) is seen at the next tick.
    crate::schedule::session_store::remove_marker(&host, "a1");
    assert_eq!(holdings.in_flight(&host), [("s2".to_string(), "a2".to_string())]);
    mark("a3", "s3");
    for _ in 1..FLUSH_EVERY {
        assert_eq!(holdings.in_flight(&host).len(), 1);
    }
    assert_eq!(holdings.in_flight(&host).len(), 2, "listed again after FLUSH_EVERY ticks");
    // One another process removed (its review ended there) is read again before it is given:
    // entering that session would take it from the process that holds it.
    let listed = holdings.in_flight(&host).len();
    host.remove_file(&Root::State, &crate::schedule::session_store::in_flight_path("a3")).unwrap();
    assert_eq!(holdings.in_flight(&host).len(), listed - 1, "a3's marker is gone");
    // A host that is not a batch lists them at every tick.
    mark("a4", "s4");
    assert_eq!(Holdings::new(true, false).in_flight(&host).len(), 2);
}

/// An ask with no taker left to answer it (it gave up): the batch hands the session back all the
/// same, and its own next event takes the journal from disk with nothing lost.
#[test]
fn a_batch_that_handed_a_session_back_counts_on_from_disk() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    for _ in 0..10 {
        event(&host, &mut replay, "s1").unwrap();
    }
    let want = format!("{}/want", sessions::folder("s1"));
    host.write(&Root::State, &want, b"", crate::host::WriteMode::CreateNew).unwrap();
    for _ in 10..FLUSH_EVERY {
        event(&host, &mut replay, "s1").unwrap();
    }
    assert!(!replay.holdings.holds("s1"));
    event(&host, &mut replay, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, u64::from(FLUSH_EVERY) + 1);
}

/// The batch compacts its journal in the flush that answers an ask (a generation written, the
/// journal started over from it) after the asker read the generation before: the journal now
/// continues a generation newer than the asker's. Taken for stale, its records were dropped and
/// the asker's save removed the generation that held the rest.
#[test]
fn a_journal_compacted_while_its_taker_waited_is_folded_on_the_newer_generation() {
    use crate::schedule::session_store::{encode, generation_path};
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    let mut hook = Active::for_tests(false);
    for _ in 0..10 {
        event(&host, &mut replay, "s1").unwrap();
    }
    let busy = format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0]);
    let idle = busy.replace(".busy", ".jsonl");
    // As the batch's flush does when it compacts and hands back: generation 1 holds the ten
    // turns, the journal starts over from it, and goes idle.
    let want = format!("{}/want", sessions::folder("s1"));
    let mut stored = replay.holdings.get_mut("s1").unwrap().current().clone();
    stored.v = crate::schedule::session_store::VERSION;
    host.interleave(&want, move |host| {
        host.write(
            &Root::State,
            &generation_path("s1", 1),
            &encode(&stored).unwrap(),
            crate::host::WriteMode::CreateNew,
        )
        .unwrap();
        let header = serde_json::json!({"journal": 1, "base": 1, "session": "s1"}).to_string() + "\n";
        host.write(&Root::State, &busy, header.as_bytes(), crate::host::WriteMode::Truncate).unwrap();
        host.rename(&Root::State, &busy, &idle).unwrap();
    });
    event(&host, &mut hook, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 11, "the ten turns and the hook's");
    assert!(journals(&host, "s1").is_empty());
}

#[test]
fn an_ask_left_by_a_taker_that_gave_up_goes_when_the_batch_hands_the_session_back() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    let mut hook = Active::for_tests(false);
    for _ in 0..3 {
        event(&host, &mut replay, "s1").unwrap();
    }
    assert_eq!(event(&host, &mut hook, "s1").unwrap_err().code, "conflict");
    let want = format!("{}/want", sessions::folder("s1"));
    assert!(host.stat(&Root::State, &want).is_ok());
    replay.holdings.hand_back(&host);
    assert!(host.stat(&Root::State, &want).is_err(), "answered by the hand-back");
    // A marker a gone taker left, found by the next one: removed once the session is taken.
    host.write(&Root::State, &want, b"", crate::host::WriteMode::CreateNew).unwrap();
    let mut next = batch();
    event(&host, &mut next, "s1").unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 3);
    for _ in 1..FLUSH_EVERY {
        event(&host, &mut next, "s1").unwrap();
    }
    assert!(next.holdings.holds("s1"), "not handed back at its first flush for an ask no one made");
}

#[test]
fn events_of_sessions_a_batch_does_not_hold_count_towards_its_flush() {
    let host = FakeHost::new(1_000_000);
    let mut replay = batch();
    event(&host, &mut replay, "s1").unwrap();
    let journal = format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0]);
    let size = host.file(&Root::State, &journal).unwrap().len();
    replay.holdings.lose(&host, "s2");
    for _ in 0..FLUSH_EVERY {
        event(&host, &mut replay, "s2").unwrap();
    }
    assert!(host.file(&Root::State, &journal).unwrap().len() > size, "s1 flushed while s2 ran on disk");
    assert_eq!(sessions::load(&host, "s1").review.turn, 1);
}
