//! Tests for a session's state brought in and written back (`Active::enter`, `Active::leave`)
//! on the fake host: a session whose lock another process broke meanwhile is left to it.

use super::*;
use crate::fake::FakeHost;
use crate::schedule::sessions;
use crate::state_file::{STALE_LOCK_MS, try_lock};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn active() -> Active {
    Active::for_tests(false)
}

/// A session `s1` on disk at turn 1.
fn session_at_turn_one(host: &FakeHost) {
    let mut first = sessions::load(host, "s1");
    first.review.turn = 1;
    sessions::save(host, None, &first);
}

/// An event of `session` that took the session at turn 2 and then stalled past the lock's stale
/// age: another process may break its lock now.
fn stalled_event(host: &FakeHost, session: &str) -> (Active, SessionScope) {
    let mut active = active();
    let scope = active.enter(host, session, false).unwrap();
    active.review.sessions.entry(session.into()).or_default().turn = 2;
    host.advance(STALE_LOCK_MS + 1);
    (active, scope)
}

#[test]
fn a_session_whose_lock_was_lost_is_left_as_its_new_owner_wrote_it() {
    // The other process still holds the session when this one leaves it, or is done with it.
    for other_still_holds in [true, false] {
        let host = FakeHost::new(1_000_000);
        session_at_turn_one(&host);
        // This process stalls past the lock's stale age; another breaks the lock, takes the
        // session and saves its own event.
        let (mut active, scope) = stalled_event(&host, "s1");
        let other = try_lock(&host, &sessions::lock_name("s1")).expect("the stalled holder's lock is broken");
        assert!(host.logged("breaking the stale lock"));
        let mut theirs = sessions::load(&host, "s1");
        theirs.review.turn = 7;
        sessions::save(&host, None, &theirs);
        let other = if other_still_holds {
            Some(other)
        } else {
            other.release_keeping_folder(&host);
            None
        };
        let as_they_left_it = host.snapshot();

        active.leave(&host, scope);
        assert_eq!(
            host.snapshot(),
            as_they_left_it,
            "other still holds: {other_still_holds}: the stalled event wrote over the session's new owner"
        );
        assert_eq!(sessions::load(&host, "s1").review.turn, 7);
        assert!(host.logged("session `s1`: its lock was lost to another process"));
        assert!(active.review.sessions.is_empty(), "this process keeps nothing of the session");
        if let Some(other) = other {
            other.release_keeping_folder(&host);
        }
    }
}

#[test]
fn a_slow_event_whose_lock_nobody_broke_is_saved() {
    let host = FakeHost::new(1_000_000);
    session_at_turn_one(&host);
    let (mut active, scope) = stalled_event(&host, "s1");
    active.leave(&host, scope);
    assert_eq!(sessions::load(&host, "s1").review.turn, 2, "the lock was still ours: saved");
    assert!(!host.logged("its lock was lost"));
    let lock = format!("{}/{}.lock", crate::state_file::LOCK_DIR, sessions::lock_name("s1"));
    assert!(host.file(&crate::host::Root::State, &lock).is_none(), "released");
}

/// The session id is the host's (hostile) input: the warning of a lost lock writes it to the
/// operator's log as it came, a carriage return or an escape sequence with it, where the rest of
/// the plugin shows text for a person's eyes through `visible`.
#[test]
fn a_lost_lock_warning_escapes_the_session_id() {
    let host = FakeHost::new(1_000_000);
    let session = "s1\r\x1b[2Kall good";
    let (mut active, scope) = stalled_event(&host, session);
    let other = try_lock(&host, &sessions::lock_name(session)).expect("broken");
    active.leave(&host, scope);
    other.release_keeping_folder(&host);
    let logs = host.logs.borrow();
    let warning = logs.iter().map(|(_, m)| m).find(|m| m.contains("its lock was lost")).expect("warned");
    assert!(!warning.contains('\r') && !warning.contains('\x1b'), "{warning:?}");
}
