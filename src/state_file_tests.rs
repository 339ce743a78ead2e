//! Locks and atomic writes on the fake host: holders, breakers, renewals, and ages judged on
//! the filesystem's time whatever the process's clock says.

use super::*;
use crate::fake::FakeHost;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

#[test]
fn a_lock_is_released_by_its_holder_only() {
    let host = FakeHost::new(1_000_000);
    let lock = super::lock(&host, "skill-a").unwrap();
    assert!(try_lock(&host, "skill-a").is_none(), "held");
    lock.release(&host);
    assert!(host.file(&Root::State, "locks/skill-a.lock").is_none());

    // Held past the stale age: another process breaks it and takes it; the first holder's
    // late release leaves the new holder's lock alone.
    let slow = super::lock(&host, "skill-a").unwrap();
    host.advance(STALE_LOCK_MS + 1);
    let other = super::lock(&host, "skill-a").unwrap();
    assert!(host.logged("breaking the stale lock"));
    slow.release(&host);
    assert!(host.file(&Root::State, "locks/skill-a.lock").is_some(), "the other holder's lock stays");
    assert!(try_lock(&host, "skill-a").is_none());
    other.release(&host);
    assert!(try_lock(&host, "skill-a").is_some());
}

#[test]
fn a_lock_retaken_since_it_was_judged_stale_is_not_broken_again() {
    // Two processes judged the same dead lock stale; the faster broke it and holds a fresh
    // one now. The slower one's break finds it live under the breaker and leaves it.
    let host = FakeHost::new(1_000_000);
    let path = "locks/skill-a.lock";
    let live = super::lock(&host, "skill-a").unwrap();
    assert!(matches!(break_stale(&host, path, "9-slow"), Claim::Retry));
    assert!(host.file(&Root::State, path).is_some(), "the live lock stays");
    assert!(!host.logged("breaking the stale lock"));
    assert!(host.file(&Root::State, &format!("{path}.break")).is_none(), "the breaker is gone");
    assert!(try_lock(&host, "skill-a").is_none(), "still held");
    live.release(&host);
}

#[test]
fn a_breaker_in_the_way_waits_and_a_dead_one_is_cleared() {
    let host = FakeHost::new(1_000_000);
    let path = "locks/skill-a.lock";
    let dead = super::lock(&host, "skill-a").unwrap();
    host.advance(STALE_LOCK_MS + 1);
    let breaker = format!("{path}.break");
    host.write(&Root::State, &breaker, token(&host).as_bytes(), WriteMode::CreateNew).unwrap();
    assert!(try_lock(&host, "skill-a").is_none(), "another process is breaking it");
    assert!(host.file(&Root::State, path).is_some());
    host.advance(STALE_BREAKER_MS + 1);
    let taken = try_lock(&host, "skill-a").expect("the dead breaker is cleared, then the dead lock");
    assert!(host.file(&Root::State, &breaker).is_none());
    drop(dead);
    taken.release(&host);
}

#[test]
fn a_lock_stamped_in_the_future_is_stale() {
    let host = FakeHost::new(1_000_000);
    let path = "locks/skill-a.lock";
    // A lock file from the future (written while the machine's time was far ahead, then set
    // back): judged by age alone it would never go stale.
    host.now.set(99_999_999);
    host.write(&Root::State, path, b"99999999999999-1", WriteMode::CreateNew).unwrap();
    host.now.set(1_000_000);
    let lock = super::lock(&host, "skill-a").expect("the garbage lock is broken");
    assert!(host.logged("ms in the future"));
    assert_eq!(host.file(&Root::State, path).unwrap(), lock.token.as_bytes());
    lock.release(&host);

    // A clock stepped back a little: the lock is still held.
    let held = super::lock(&host, "skill-a").unwrap();
    host.now.set(1_000_000 - STALE_LOCK_MS / 2);
    assert!(try_lock(&host, "skill-a").is_none(), "a stamp within the stale age is live either way");
    // Stepped back past the stale age: broken, and retaken by another process, whose lock
    // the first holder's release leaves alone (its stamp is from the future, not young).
    host.now.set(1_000_000 - STALE_LOCK_MS - 1);
    let other = try_lock(&host, "skill-a").expect("a stamp too far ahead is stale");
    held.release(&host);
    assert_eq!(host.file(&Root::State, path).unwrap(), other.token.as_bytes(), "the other holder's lock stays");
    other.release(&host);
    assert!(host.file(&Root::State, path).is_none());
}

#[test]
fn a_breaker_stamped_in_the_future_is_cleared() {
    let host = FakeHost::new(1_000_000);
    let path = "locks/skill-a.lock";
    let dead = super::lock(&host, "skill-a").unwrap();
    host.advance(STALE_LOCK_MS + 1);
    let breaker = format!("{path}.break");
    let now = host.now_ms();
    host.now.set(99_999_999);
    host.write(&Root::State, &breaker, b"99999999999999-1", WriteMode::CreateNew).unwrap();
    host.now.set(now);
    let taken = try_lock(&host, "skill-a").expect("the breaker from the future is cleared, then the dead lock");
    assert!(host.logged("clearing the stale breaker") && host.logged("ms in the future"));
    assert!(host.file(&Root::State, &breaker).is_none());
    assert_eq!(host.file(&Root::State, path).unwrap(), taken.token.as_bytes());
    drop(dead);
    taken.release(&host);
}

#[test]
fn a_holder_that_renews_its_lock_is_not_broken_and_one_that_does_not_is() {
    let host = FakeHost::new(1_000_000);
    let mut renewing = super::lock(&host, "skill-a").unwrap();
    let silent = super::lock(&host, "skill-b").unwrap();
    // Renewing a young lock is free: nothing is written.
    let before = host.snapshot();
    assert!(renewing.refresh(&host));
    assert_eq!(host.snapshot(), before);
    for _ in 0..3 {
        host.advance(STALE_LOCK_MS / 2);
        assert!(renewing.refresh(&host));
    }
    assert!(try_lock(&host, "skill-a").is_none(), "renewed: held past the stale age, not broken");
    let path = "locks/skill-a.lock";
    assert_eq!(host.file(&Root::State, path).unwrap(), renewing.token.as_bytes());
    let locks: Vec<String> = host.list_dir(&Root::State, LOCK_DIR).unwrap().into_iter().map(|(n, _)| n).collect();
    assert_eq!(locks, ["skill-a.lock", "skill-b.lock"], "no temp file left");
    let other = try_lock(&host, "skill-b").expect("the lock that was never renewed is broken");
    assert!(host.logged("breaking the stale lock `locks/skill-b.lock`"));
    assert!(!host.logged("breaking the stale lock `locks/skill-a.lock`"));

    // A holder renewing too late finds its lock taken: it says so, and leaves the new one.
    let mut late = silent;
    assert!(!late.refresh(&host));
    assert!(host.logged("could not renew the lock `locks/skill-b.lock`"));
    assert_eq!(host.file(&Root::State, "locks/skill-b.lock").unwrap(), other.token.as_bytes());
    assert!(host.file(&Root::State, "locks/skill-b.lock.break").is_none());
    late.release(&host);
    other.release(&host);
    renewing.release(&host);
    assert!(host.file(&Root::State, LOCK_DIR).is_none() && host.list_dir(&Root::State, LOCK_DIR).is_err());
}

#[test]
fn a_lock_is_judged_on_the_filesystem_s_time_not_on_the_judge_s_clock() {
    // Two replays into one home: each process's manual clock is its own (one at event
    // t+3 s, the other at t+15 s, or at 2026-01-01 beside a live hook on the wall clock),
    // while the real time between them is milliseconds. Judged by the judge's clock, the
    // live lock looked 12 s old and was broken: both processes wrote, and writes were lost.
    let host = FakeHost::new(1_767_225_603_000);
    let held = super::lock(&host, "skill-a").unwrap();
    for step in [12_000, 300_000_000, -600_000_000] {
        host.step_process_clock(step);
        assert!(try_lock(&host, "skill-a").is_none(), "a live lock broken after a clock step of {step} ms");
        assert!(matches!(super::lock(&host, "skill-a"), Err(e) if e.code == "conflict"));
    }
    assert!(!host.logged("breaking the stale lock"));
    assert_eq!(host.file(&Root::State, "locks/skill-a.lock").unwrap(), held.token.as_bytes());
    // The filesystem's time moves past the stale age: a holder that died is broken, on any
    // process clock.
    host.advance(STALE_LOCK_MS + 1);
    let other = try_lock(&host, "skill-a").expect("a lock untouched for the stale age on the filesystem's time");
    assert!(host.logged("breaking the stale lock `locks/skill-a.lock`"));
    held.release(&host);
    assert_eq!(host.file(&Root::State, "locks/skill-a.lock").unwrap(), other.token.as_bytes());
    other.release(&host);
    let state: Vec<String> = host.list_dir(&Root::State, "").unwrap().into_iter().map(|(n, _)| n).collect();
    assert!(state.iter().all(|n| !is_temp(n)), "no probe left: {state:?}");
}

#[test]
fn a_holder_whose_clock_stands_still_renews_by_the_filesystem_s_time() {
    // A replay's manual clock does not move within one event, however long a gate call
    // under a lock takes: the holder renews by the filesystem's time, so it is not broken.
    let host = FakeHost::new(1_000_000);
    let mut holder = super::lock(&host, "skill-a").unwrap();
    for _ in 0..5 {
        host.advance(RENEW_MS);
        host.step_process_clock(-(RENEW_MS as i64)); // real time moved, this process's clock did not
        for _ in 0..PROBE_EVERY {
            assert!(holder.refresh(&host));
        }
    }
    assert!(try_lock(&host, "skill-a").is_none(), "renewed on the filesystem's time: not broken");
    assert!(!host.logged("breaking the stale lock"));
    holder.release(&host);
}

#[test]
fn a_breaker_left_by_a_dead_process_does_not_stop_a_holder_from_renewing() {
    // A process killed between breaking a lock and removing its breaker left the breaker;
    // before, every later holder's renewal took it for a live breaker and failed, and the
    // lock was broken under a holder that renewed all along.
    let host = FakeHost::new(1_000_000);
    let path = "locks/skill-a.lock";
    host.write(&Root::State, &format!("{path}.break"), b"990000-1", WriteMode::CreateNew).unwrap();
    let mut holder = super::lock(&host, "skill-a").unwrap();
    let mut answers = Vec::new();
    for _ in 0..4 {
        host.advance(RENEW_MS);
        answers.push(holder.refresh(&host));
    }
    host.advance(1);
    let other = try_lock(&host, "skill-a");
    assert!(
        other.is_none(),
        "a holder renewing every {RENEW_MS} ms lost its lock to another process (refresh answered {answers:?})"
    );
    assert_eq!(answers, [true; 4]);
    assert!(host.logged("clearing the stale breaker `locks/skill-a.lock.break`"));
    assert!(host.file(&Root::State, "locks/skill-a.lock.break").is_none());
    holder.release(&host);
}
