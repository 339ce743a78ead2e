//! Tests for sessions held in memory by a long-lived process (`session_journal`), through
//! `Active::enter`/`leave` on the fake host, two `Active`s standing for two processes: one
//! append per event, hand-over to a process per event with nothing lost or counted twice, a
//! holder that died or stalled mid-event, compaction, and the bound on sessions held.

use super::*;
use crate::fake::FakeHost;
use crate::host::{Host, Root, WriteMode};
use crate::schedule::session_holdings::MAX_HELD;
use crate::state_file::STALE_LOCK_MS;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn process(owner: bool) -> Active {
    Active::for_tests(owner)
}

/// One event of `session`: a completed turn, and a skill read by the main agent.
fn event(host: &FakeHost, process: &mut Active, session: &str, skill: &str) {
    let scope = process.enter(host, session, true).expect("the session is free");
    process.review.sessions.entry(session.into()).or_default().turn += 1;
    process.reads.mark(session, "main", skill);
    process.leave(host, scope);
}

/// The files of a session's folder, by name.
fn files(host: &FakeHost, session: &str) -> Vec<String> {
    let folder = sessions::folder(session);
    host.list_dir(&Root::State, &folder).unwrap_or_default().into_iter().map(|(name, _)| name).collect()
}

fn journals(host: &FakeHost, session: &str) -> Vec<String> {
    files(host, session).into_iter().filter(|n| n.starts_with("journal.")).collect()
}

#[test]
fn a_held_session_costs_one_append_per_event_and_reads_back_whole_elsewhere() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    event(&host, &mut server, "s1", "pdf");
    let generations_after_lease = files(&host, "s1").len();
    let (writes, renames) = (host.writes_so_far(), host.renames_so_far());
    for i in 0..10 {
        event(&host, &mut server, "s1", &format!("skill-{i}"));
    }
    // Per event: one append; two renames (the claim and its release); no lock, no generation.
    assert_eq!(host.writes_so_far() - writes, 10, "one write per event");
    assert_eq!(host.renames_so_far() - renames, 20);
    assert_eq!(files(&host, "s1").len(), generations_after_lease, "no generation per event");
    assert!(host.list_dir(&Root::State, "locks").unwrap_or_default().is_empty(), "no lock left");
    let journal = journals(&host, "s1");
    assert_eq!(journal.len(), 1);
    assert!(journal[0].ends_with(".jsonl"), "idle between events: {journal:?}");

    // Another process reading the session (without changing it) sees every event.
    let read = sessions::load(&host, "s1");
    assert_eq!(read.review.turn, 11);
    assert_eq!(read.reads["main"].len(), 11);
    assert_eq!(journals(&host, "s1"), journal, "a reader takes nothing");
}

#[test]
fn another_process_takes_the_session_over_with_nothing_lost_or_counted_twice() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    let mut hook = process(false);
    for _ in 0..5 {
        event(&host, &mut server, "s1", "pdf");
    }
    // A process per event (a hook) takes the session: the journal is folded into a generation.
    event(&host, &mut hook, "s1", "git");
    assert!(journals(&host, "s1").is_empty(), "folded and removed: {:?}", files(&host, "s1"));
    assert_eq!(sessions::load(&host, "s1").review.turn, 6);
    // The server's next event finds its journal taken: it reads the session from disk, counts
    // on from the hook's turn, and keeps it on disk per event from then on.
    event(&host, &mut server, "s1", "pdf");
    let state = sessions::load(&host, "s1");
    assert_eq!(state.review.turn, 7, "nothing lost, nothing counted twice");
    assert_eq!(state.reads["main"].iter().collect::<Vec<_>>(), ["git", "pdf"]);
    assert!(!server.holdings.holds("s1"));
    assert!(journals(&host, "s1").is_empty(), "a session lost once is not leased again");
    event(&host, &mut hook, "s1", "pdf");
    event(&host, &mut server, "s1", "pdf");
    assert_eq!(sessions::load(&host, "s1").review.turn, 9);
    assert!(host.logged("served by another process too"));
}

#[test]
fn a_takeover_waits_for_an_event_in_progress_and_refuses_while_it_is_live() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    let mut hook = process(false);
    event(&host, &mut server, "s1", "pdf");
    // The server is in an event (its journal is busy) when the hook comes.
    let scope = server.enter(&host, "s1", true).unwrap();
    server.review.sessions.get_mut("s1").unwrap().turn += 1;
    let before = host.snapshot();
    let refused = hook.enter(&host, "s1", true).err().expect("a live holder's event is not taken from it");
    assert_eq!(refused.code, "conflict");
    assert!(hook.review.sessions.is_empty());
    // Nothing changed but the lock the hook took and let go of.
    let mut now = host.snapshot();
    now.values_mut().for_each(|files| files.retain(|path, _| !path.starts_with("locks")));
    let mut was = before;
    was.values_mut().for_each(|files| files.retain(|path, _| !path.starts_with("locks")));
    assert_eq!(now, was);
    server.leave(&host, scope);
    event(&host, &mut hook, "s1", "git");
    assert_eq!(sessions::load(&host, "s1").review.turn, 3);
}

#[test]
fn a_holder_that_died_mid_event_is_taken_over_loudly_and_one_that_stalled_says_what_it_lost() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    let mut hook = process(false);
    event(&host, &mut server, "s1", "pdf");
    event(&host, &mut server, "s1", "pdf");
    let scope = server.enter(&host, "s1", true).unwrap();
    server.review.sessions.get_mut("s1").unwrap().turn = 100;
    host.advance(STALE_LOCK_MS + 1);
    event(&host, &mut hook, "s1", "git");
    assert!(host.logged("from a holder that stopped mid-event"));
    assert_eq!(sessions::load(&host, "s1").review.turn, 3, "the two recorded events, and the hook's");
    let taken_state = host.snapshot();
    // The stalled holder wakes and ends its event: its append lands in a new file, which it
    // notices, removes, and says so; the session stays as the hook left it.
    server.leave(&host, scope);
    assert!(host.logged("another process took it while this one stalled mid-event"));
    assert_eq!(host.snapshot(), taken_state);
    assert!(!server.holdings.holds("s1"));
    // The folder left where the journal was goes with the session's folder, a week later.
    assert!(
        host.list_dir(&Root::State, &sessions::folder("s1"))
            .unwrap()
            .iter()
            .any(|(_, k)| *k == crate::host::EntryKind::Dir)
    );
    host.advance(sessions::KEEP_MS + 1);
    sessions::forget_last_sweep_look();
    sessions::sweep(&host);
    assert!(host.list_dir(&Root::State, &sessions::folder("s1")).is_err(), "swept whole");
}

#[test]
fn a_long_event_renews_its_busy_journal_so_it_is_not_taken_for_dead() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    let mut hook = process(false);
    event(&host, &mut server, "s1", "pdf");
    let scope = server.enter(&host, "s1", true).unwrap();
    for _ in 0..8 {
        host.advance(STALE_LOCK_MS / 4);
        // A slow gate call renews its hold between attempts (`gate::ask`).
        assert!(server.review.session_lock.as_mut().unwrap().refresh(&host));
    }
    assert_eq!(hook.enter(&host, "s1", true).err().map(|e| e.code), Some("conflict"));
    server.review.sessions.get_mut("s1").unwrap().turn += 1;
    server.leave(&host, scope);
    assert!(!host.logged("stalled mid-event"), "the renewals are the holder's own bytes");
    event(&host, &mut hook, "s1", "git");
    assert_eq!(sessions::load(&host, "s1").review.turn, 3);
}

#[test]
fn a_long_journal_is_folded_into_a_generation_by_its_holder() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    for _ in 0..600 {
        event(&host, &mut server, "s1", "pdf");
    }
    let names = files(&host, "s1");
    assert_eq!(names.len(), 2, "one generation and one journal: {names:?}");
    let journal = host.file(&Root::State, &format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0])).unwrap();
    assert!(journal.split(|b| *b == b'\n').count() < 300, "restarted at each fold");
    assert_eq!(sessions::load(&host, "s1").review.turn, 600);
    let mut hook = process(false);
    event(&host, &mut hook, "s1", "pdf");
    assert_eq!(sessions::load(&host, "s1").review.turn, 601);
}

#[test]
fn a_torn_last_record_is_skipped_and_a_stale_journal_is_not_folded() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    for _ in 0..3 {
        event(&host, &mut server, "s1", "pdf");
    }
    let journal = format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0]);
    // A crash mid-append leaves part of a record.
    host.write(&Root::State, &journal, br#"{"review":{"turn":99"#, WriteMode::Append).unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 3);
    // A taker that crashed after writing the generation, before removing the journal: the
    // journal continues a generation that is no longer the newest, and is not folded again.
    let mut hook = process(false);
    event(&host, &mut hook, "s1", "git");
    let mut folded = sessions::load(&host, "s1");
    let stale = format!("{}/journal.{:016x}.1-1.jsonl", sessions::folder("s1"), folded.generation - 1);
    let header = format!("{{\"journal\":1,\"base\":{},\"session\":\"s1\"}}\n", folded.generation - 1);
    let record = "{\"review\":{\"turn\":50},\"t\":1}\n";
    host.write(&Root::State, &stale, format!("{header}{record}").as_bytes(), WriteMode::CreateNew).unwrap();
    assert_eq!(sessions::load(&host, "s1").review.turn, 4);
    event(&host, &mut hook, "s1", "git");
    folded = sessions::load(&host, "s1");
    assert_eq!(folded.review.turn, 5);
    assert!(journals(&host, "s1").is_empty(), "the stale journal went with the takeover");
}

#[test]
fn past_its_bound_a_holder_hands_back_the_session_unused_longest() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    for i in 0..=MAX_HELD {
        event(&host, &mut server, &format!("s{i}"), "pdf");
        event(&host, &mut server, &format!("s{i}"), "pdf");
    }
    assert!(!server.holdings.holds("s0"), "the first session was handed back");
    assert!(journals(&host, "s0").is_empty());
    assert_eq!(sessions::load(&host, "s0").review.turn, 2, "in its generation");
    assert!(server.holdings.holds(&format!("s{MAX_HELD}")));
    // Leased again at its next event, from where it was.
    event(&host, &mut server, "s0", "pdf");
    assert_eq!(sessions::load(&host, "s0").review.turn, 3);
}

#[test]
fn a_review_started_in_a_held_session_is_found_by_its_marker() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    event(&host, &mut server, "s1", "pdf");
    let scope = server.enter(&host, "s1", true).unwrap();
    server.review.sessions.get_mut("s1").unwrap().in_flight =
        Some(crate::schedule::session_state::InFlight { id: "act-1".into(), started_ms: 1, turn: 1 });
    server.leave(&host, scope);
    assert_eq!(sessions::session_of(&host, "act-1").as_deref(), Some("s1"));
    let scope = server.enter(&host, "s1", true).unwrap();
    server.review.sessions.get_mut("s1").unwrap().in_flight = None;
    server.leave(&host, scope);
    assert_eq!(sessions::session_of(&host, "act-1"), None);
}

#[test]
fn reads_of_a_held_session_are_kept_in_memory_and_recorded() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    server.with_reads(&host, "s1", |active| active.reads.mark("s1", "main", "pdf"));
    let seen = server.with_reads(&host, "s1", |active| active.reads.has_read("s1", "main", "pdf"));
    assert!(seen);
    assert!(server.holdings.holds("s1"));
    assert!(sessions::load(&host, "s1").reads["main"].contains("pdf"));
}

#[test]
fn a_process_without_the_service_never_holds_a_session() {
    let host = FakeHost::new(1_000_000);
    let mut hook = process(false);
    event(&host, &mut hook, "s1", "pdf");
    assert!(journals(&host, "s1").is_empty());
    assert!(!hook.holdings.holds("s1"));
}

#[test]
fn a_journal_record_keeps_no_credential() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    event(&host, &mut server, "s1", "pdf");
    let key = ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat();
    let scope = server.enter(&host, "s1", true).unwrap();
    server.review.sessions.get_mut("s1").unwrap().last_outcome = Some(format!("the reviewer said {key}"));
    server.leave(&host, scope);
    let journal = host.file(&Root::State, &format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0])).unwrap();
    let text = String::from_utf8_lossy(&journal);
    assert!(!text.contains(&key) && text.contains("[redacted: github-pat]"), "{text}");
}

/// A holder hands its journal back between a taker's failed rename of the idle name and its look
/// at the busy one: the journal is neither where the taker tried nor where it looked, yet alive.
/// Taken for gone, its records were dropped and the session started over from the generation
/// before (found by two real processes: a replay and a call that needed its session).
#[test]
fn a_journal_handed_back_between_the_takers_two_looks_is_still_taken_whole() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    let mut hook = process(false);
    for _ in 0..5 {
        event(&host, &mut server, "s1", "pdf");
    }
    // The server is in an event (its journal busy); it hands it back at the worst moment.
    let scope = server.enter(&host, "s1", true).unwrap();
    let busy = format!("{}/{}", sessions::folder("s1"), journals(&host, "s1")[0]);
    let idle = busy.replace(".busy", ".jsonl");
    let at = busy.clone();
    host.interleave_before_stat(&at, move |host| host.rename(&Root::State, &busy, &idle).unwrap());
    event(&host, &mut hook, "s1", "git");
    assert_eq!(sessions::load(&host, "s1").review.turn, 6, "the server's five turns and the hook's");
    assert!(journals(&host, "s1").is_empty(), "folded: {:?}", files(&host, "s1"));
    drop(scope);
}

/// A holder whose compaction cannot write its generation (here every free number is taken by
/// something else) leaves its journal idle, with every record, for the next process: never busy
/// with no one to end the event.
#[test]
fn a_holder_whose_compaction_fails_leaves_its_journal_idle_and_whole() {
    let host = FakeHost::new(1_000_000);
    let mut server = process(true);
    event(&host, &mut server, "s1", "pdf");
    for generation in 1..=9 {
        host.create_dir_all(&Root::State, &crate::schedule::session_store::generation_path("s1", generation)).unwrap();
    }
    let mut events = 1;
    for i in 0..300 {
        event(&host, &mut server, "s1", &format!("skill-{i}"));
        events += 1;
        if !server.holdings.holds("s1") {
            break;
        }
    }
    assert!(!server.holdings.holds("s1"), "the failed compaction lost the session");
    let journal = journals(&host, "s1");
    assert!(journal.len() == 1 && journal[0].ends_with(".jsonl"), "idle: {journal:?}");
    for generation in 1..=9 {
        host.remove_dir(&Root::State, &crate::schedule::session_store::generation_path("s1", generation)).unwrap();
    }
    let turn = sessions::load(&host, "s1").review.turn;
    assert_eq!(turn, events, "every record in it: {:?}", files(&host, "s1"));
}
