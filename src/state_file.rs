//! Files that many processes share (one home, several agents, several hosts): atomic replace
//! through a temp name no other process can hold, and short locks taken with `create-new` and
//! broken by age, loudly. Built on the fs capability alone: `create-new` is the one atomic claim.
//!
//! A lock's age is judged on the filesystem's time, never on a process's clock: the lock file's
//! mtime against the mtime of a probe written just now (`fs_now`). Processes of one home run on
//! different clocks (a replay's manual clock starts at 2026-01-01 and jumps from event to event;
//! a test host's stands still; a wall clock can be stepped back), and a lock judged stale by
//! another process's time was broken under a live holder: both wrote, and writes were lost. The
//! one kernel (or file server) every process writes through stamps both files.

use crate::errors::ToolError;
use crate::host::{FsError, Host, Level, Root, WriteMode};
use serde_json::json;
use std::cell::Cell;

/// Where locks live (the state root).
pub const LOCK_DIR: &str = "locks";
/// A lock untouched this long belongs to a process that died mid-operation; it is broken.
pub const STALE_LOCK_MS: u64 = 10_000;
/// A holder renews its lock once the stamp is this old (`Lock::refresh`): long before anyone
/// takes it for stale, and seldom enough that renewing between small steps costs nothing.
const RENEW_MS: u64 = STALE_LOCK_MS / 4;
/// How long a call waits for a lock another process holds before it answers `conflict`.
pub(crate) const WAIT_MS: u64 = 500;
/// Attempts, for clocks that do not move while we wait (a manual clock in a replay).
const MAX_ATTEMPTS: u32 = 2_000;

thread_local! {
    static COUNTER: Cell<u64> = const { Cell::new(0) };
}

/// A token no other call of this instance has used; with the clock, unique enough to tell this
/// holder's lock from one another process took after breaking ours.
pub(crate) fn token(host: &impl Host) -> String {
    let n = COUNTER.with(|c| {
        c.set(c.get().wrapping_add(1));
        c.get()
    });
    format!("{}-{n}", host.now_ms())
}

/// When a token (a lock file's content) says it was taken, by the taker's clock.
fn stamp(token: &str) -> Option<u64> {
    token.split('-').next().and_then(|ms| ms.parse().ok())
}

/// Why a stamp cannot be a live holder's, when it cannot: older than `limit`, or further than
/// that ahead of now. A stamp ahead of now (the clock was stepped back, or the file holds
/// garbage) would otherwise never age, and hold the lock for ever.
fn too_far(now: u64, taken: u64, limit: u64) -> Option<String> {
    if now.abs_diff(taken) <= limit {
        return None;
    }
    Some(if taken > now {
        format!("stamped {} ms in the future: the clock was stepped back, or the stamp is garbage", taken - now)
    } else {
        format!("{} ms old; its process died mid-operation", now - taken)
    })
}

/// Writes `bytes` to `path` atomically: a temp file in the same folder, claimed with
/// `create-new` under a name this call alone holds, then renamed over the target. A crash leaves
/// the old file or the new one, and at worst a temp file the next cleanup removes.
pub fn write_atomic(host: &impl Host, root: &Root, path: &str, bytes: &[u8]) -> Result<(), FsError> {
    let (dir, file) = path.rsplit_once('/').map_or(("", path), |(d, f)| (d, f));
    let mut last = FsError::AlreadyExists;
    for _ in 0..16 {
        let tmp = temp_name(dir, file, &token(host));
        match host.write(root, &tmp, bytes, WriteMode::CreateNew) {
            Ok(()) => {
                return host.rename(root, &tmp, path).inspect_err(|_| {
                    let _ = host.remove_file(root, &tmp);
                });
            }
            Err(FsError::AlreadyExists) => last = FsError::AlreadyExists,
            Err(err) => {
                let _ = host.remove_file(root, &tmp);
                return Err(err);
            }
        }
    }
    Err(last)
}

/// `.<file>.<token>.self-evolve-tmp` beside the target: hidden, and recognisable as debris.
pub fn temp_name(dir: &str, file: &str, token: &str) -> String {
    let name = format!(".{file}.{token}{TEMP_SUFFIX}");
    if dir.is_empty() { name } else { format!("{dir}/{name}") }
}

pub const TEMP_SUFFIX: &str = ".self-evolve-tmp";

/// Whether `name` is a temp file of `write_atomic` (possibly left by a dead process).
pub fn is_temp(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(TEMP_SUFFIX)
}

/// A lock this call holds; release it with `release` (a dead holder's lock goes stale).
#[derive(Debug)]
pub struct Lock {
    path: Option<String>,
    token: String,
    /// `refresh` calls since the lock was taken or renewed on a clock that did not move.
    standing: u32,
    /// A held session's busy journal (`session_journal`), renewed by appending an empty line.
    journal: Option<String>,
}

/// On a clock that does not move, `refresh` asks the filesystem's time once per this many calls.
const PROBE_EVERY: u32 = 16;

impl Lock {
    /// The hold a session's holder has on its busy journal during an event: other processes
    /// judge it on the journal's mtime, and `refresh` renews that by appending an empty line.
    pub fn journal(host: &impl Host, busy: String) -> Lock {
        Lock { path: None, token: token(host), standing: 0, journal: Some(busy) }
    }

    pub fn release(self, host: &impl Host) {
        self.release_inner(host, true);
    }

    /// Releases the lock but leaves the lock folder: for locks taken on every event (a session's),
    /// where removing and re-creating the folder would be two more calls each time.
    pub fn release_keeping_folder(self, host: &impl Host) {
        self.release_inner(host, false);
    }

    fn release_inner(self, host: &impl Host, tidy: bool) {
        let Some(path) = self.path else { return };
        // Only our own: a lock broken as stale and retaken by another process is theirs. No other
        // process breaks a lock younger than `STALE_LOCK_MS` on the filesystem's time, so one
        // taken within half of that by our own clock is ours without reading it back (a hold
        // that long is seconds of real time on any clock that moves at all). Either way: a clock
        // stepped back since makes our stamp one from the future, and we read it back.
        let young = stamp(&self.token).is_some_and(|t| host.now_ms().abs_diff(t) < STALE_LOCK_MS / 2);
        let ours = young || host.read(&Root::State, &path).is_ok_and(|b| b == self.token.as_bytes());
        if ours {
            let _ = host.remove_file(&Root::State, &path);
            // Leave no trace when nothing else is locked (a refusal changes nothing on disk).
            if tidy {
                let _ = host.remove_dir(&Root::State, LOCK_DIR);
            }
        }
    }

    /// Renews the lock, a heartbeat for a holder still at work (a long copy, a slow call) that
    /// would otherwise be taken for dead and broken: the lock file is replaced atomically by a
    /// fresh token. Cheap to call often: a stamp younger than `RENEW_MS` is kept as it is.
    /// `false` (logged) when the lock may no longer be ours: it was broken as stale, and what is
    /// done under it now may race another process.
    pub fn refresh(&mut self, host: &impl Host) -> bool {
        if self.journal.is_some() {
            return self.refresh_journal(host);
        }
        let Some(path) = &self.path else { return true };
        let age = hold_age(&self.token, &mut self.standing, host, path);
        if age < RENEW_MS {
            return true;
        }
        let fresh = token(host);
        // Under the breaker: no process removes the lock between our check that it is still
        // ours and its replacement (a lock retaken by another process in that gap would be
        // overwritten, and both would hold it).
        let breaker = format!("{path}.break");
        let renewed = match take_breaker(host, &breaker, &fresh) {
            Ok(true) => {
                let ours = host.read(&Root::State, path).is_ok_and(|b| b == self.token.as_bytes());
                let renewed = ours && write_atomic(host, &Root::State, path, fresh.as_bytes()).is_ok();
                if let Err(err) = host.remove_file(&Root::State, &breaker) {
                    host.log(Level::Warn, &format!("could not remove the breaker `{breaker}`: {err}"));
                }
                renewed
            }
            // Another process is judging the lock right now: it leaves one this young alone, and
            // the next call renews it.
            Ok(false) | Err(_) if age < STALE_LOCK_MS / 2 => return true,
            Ok(false) | Err(_) => false,
        };
        if renewed {
            self.token = fresh;
            self.standing = 0;
        } else {
            host.log(
                Level::Warn,
                &format!("could not renew the lock `{path}`: another process broke it as stale, or the write failed"),
            );
        }
        renewed
    }
}

/// How long since the hold at `path` (stamped `token`) was taken or renewed. A clock that has
/// not moved since (a replay's manual clock within one event) says nothing of how long it has
/// been held: others judge it on the filesystem's time, and so does its holder, every
/// `PROBE_EVERY` calls on such a clock (`standing` counts them; a probe is three fs calls, and a
/// long copy calls `refresh` between files).
fn hold_age(token: &str, standing: &mut u32, host: &impl Host, path: &str) -> u64 {
    let now = host.now_ms();
    let mut age = stamp(token).map_or(u64::MAX, |t| now.abs_diff(t));
    if age == 0 {
        *standing += 1;
        if standing.is_multiple_of(PROBE_EVERY)
            && let (Some(taken), Some(fs_now)) = (taken_ms(host, path), fs_now(host))
        {
            age = fs_now.abs_diff(taken);
        }
    }
    age
}

impl Lock {
    /// `refresh` of a journal hold: an empty line appended once the last is `RENEW_MS` old.
    fn refresh_journal(&mut self, host: &impl Host) -> bool {
        let Some(busy) = &self.journal else { return true };
        if hold_age(&self.token, &mut self.standing, host, busy) < RENEW_MS {
            return true;
        }
        if host.write(&Root::State, busy, b"\n", WriteMode::Append).is_err() {
            host.log(Level::Warn, &format!("could not renew the journal `{busy}`"));
            return false;
        }
        self.token = token(host);
        self.standing = 0;
        true
    }
}

/// Takes the lock `name` (a short key such as `skill-pdf-tables`), waiting briefly while another
/// process holds it; a stale lock is broken with a warning. Without a state root there is no
/// shared place for locks, so the lock is a no-op (a host that maps no state root runs one
/// process per home). Busy past the wait: `conflict`.
pub fn lock(host: &impl Host, name: &str) -> Result<Lock, ToolError> {
    let token = token(host);
    if !host.has_root(&Root::State) {
        return Ok(Lock { path: None, token, standing: 0, journal: None });
    }
    let path = format!("{LOCK_DIR}/{name}.lock");
    let started = host.now_ms();
    for _ in 0..MAX_ATTEMPTS {
        match claim(host, &path, &token) {
            Claim::Taken => return Ok(Lock { path: Some(path), token, standing: 0, journal: None }),
            Claim::Retry => continue,
            Claim::Busy => {}
            Claim::Failed(err) => {
                return Err(ToolError::new(
                    "io",
                    format!("could not take the lock `{path}`: {err}"),
                    "retry once; if it persists, tell the operator",
                ));
            }
        }
        if host.now_ms().saturating_sub(started) > WAIT_MS {
            break;
        }
    }
    Err(conflict(name))
}

/// When the lock (or breaker) at `path` was taken or last renewed, on the filesystem's time: its
/// mtime (a renewal replaces the file).
fn taken_ms(host: &impl Host, path: &str) -> Option<u64> {
    host.stat(&Root::State, path).ok().map(|s| s.modified_ms)
}

/// The filesystem's time now: the mtime of a probe written under a name no other call holds,
/// then removed (one left by a crash is debris the state root's cleanup removes). `None` when
/// the probe cannot be written: then no lock is judged stale.
pub(crate) fn fs_now(host: &impl Host) -> Option<u64> {
    let probe = temp_name("", "clock", &token(host));
    host.write(&Root::State, &probe, b"", WriteMode::CreateNew).ok()?;
    let now = host.stat(&Root::State, &probe).ok().map(|s| s.modified_ms);
    let _ = host.remove_file(&Root::State, &probe);
    now
}

/// Why the lock or breaker at `path` cannot be a live holder's, when it cannot (see `too_far`),
/// judged on the filesystem's time.
pub(crate) fn too_old(host: &impl Host, path: &str, limit: u64) -> Option<String> {
    let taken = taken_ms(host, path)?;
    too_far(fs_now(host)?, taken, limit)
}

/// Takes the lock `name` only if it is free right now (or stale): for work that whoever comes
/// next can do instead, such as folding a log.
pub fn try_lock(host: &impl Host, name: &str) -> Option<Lock> {
    let token = token(host);
    if !host.has_root(&Root::State) {
        return None;
    }
    let path = format!("{LOCK_DIR}/{name}.lock");
    // A second attempt only after a stale lock was broken.
    for _ in 0..2 {
        match claim(host, &path, &token) {
            Claim::Taken => return Some(Lock { path: Some(path), token, standing: 0, journal: None }),
            Claim::Retry => continue,
            Claim::Busy | Claim::Failed(_) => return None,
        }
    }
    None
}

/// What one attempt at a lock came to.
enum Claim {
    Taken,
    /// Held by a live process.
    Busy,
    /// Worth trying again at once: a stale lock was broken, or the empty lock folder was
    /// removed by another process between our mkdir and create.
    Retry,
    Failed(FsError),
}

/// One attempt: create the lock file with `create-new`; a lock in the way whose taker's clock
/// says it is stale is removed, loudly.
fn claim(host: &impl Host, path: &str, token: &str) -> Claim {
    match host.write(&Root::State, path, token.as_bytes(), WriteMode::CreateNew) {
        Ok(()) => return Claim::Taken,
        Err(FsError::AlreadyExists) => {}
        Err(FsError::NotFound) => return Claim::Retry,
        Err(err) => return Claim::Failed(err),
    }
    match stale(host, path) {
        Some(_) => break_stale(host, path, token),
        None => Claim::Busy,
    }
}

/// Why the lock at `path` is stale, when it is (see `too_far`).
fn stale(host: &impl Host, path: &str) -> Option<String> {
    too_old(host, path, STALE_LOCK_MS)
}

/// Takes the breaker `<lock>.break` (`Ok(false)`: another process holds it now). One left by a
/// process that died holding it is cleared once, loudly: otherwise it would keep every later
/// holder from renewing the lock, and every other process from breaking it, for ever.
fn take_breaker(host: &impl Host, breaker: &str, token: &str) -> Result<bool, FsError> {
    let mut cleared = false;
    loop {
        match host.write(&Root::State, breaker, token.as_bytes(), WriteMode::CreateNew) {
            Ok(()) => return Ok(true),
            Err(FsError::AlreadyExists) if !cleared => {
                let Some(why) = too_old(host, breaker, STALE_BREAKER_MS) else {
                    return Ok(false);
                };
                host.log(Level::Warn, &format!("clearing the stale breaker `{breaker}` ({why})"));
                let _ = host.remove_file(&Root::State, breaker);
                cleared = true;
            }
            Err(FsError::AlreadyExists) => return Ok(false),
            Err(err) => return Err(err),
        }
    }
}

/// A breaker of a lock left by a dead process is itself dead past this (breaking takes a few
/// file operations).
const STALE_BREAKER_MS: u64 = 2_000;

/// Removes the stale lock at `path`, if it is still stale, holding `<path>.break`. Without the
/// breaker, two processes that both judged the same dead lock stale could each remove it, and
/// the slower one would remove the live lock the faster one had taken since: both would hold
/// it. Under the breaker the lock is judged again, so a lock retaken meanwhile is left alone.
fn break_stale(host: &impl Host, path: &str, token: &str) -> Claim {
    let breaker = format!("{path}.break");
    match take_breaker(host, &breaker, token) {
        Ok(true) => {}
        Ok(false) => return Claim::Busy,
        Err(FsError::NotFound) => return Claim::Retry,
        Err(err) => return Claim::Failed(err),
    }
    if let Some(why) = stale(host, path) {
        host.log(Level::Warn, &format!("breaking the stale lock `{path}` ({why})"));
        let _ = host.remove_file(&Root::State, path);
    }
    let _ = host.remove_file(&Root::State, &breaker);
    Claim::Retry
}

/// The refusal for a lost race: nothing was written; the agent reads again and retries.
pub fn conflict(what: &str) -> ToolError {
    ToolError::new(
        "conflict",
        format!("another process is changing `{what}` right now; nothing was written"),
        "view the skill again, then retry the change against what is there now",
    )
    .with_details(json!({"resource": what}))
}

/// Runs `f` holding the lock `name`; long work renews it (`Lock::refresh`).
pub fn with_lock<H: Host, T>(
    host: &H,
    name: &str,
    f: impl FnOnce(&mut Lock) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let mut lock = lock(host, name)?;
    let result = f(&mut lock);
    lock.release(host);
    result
}

#[cfg(test)]
#[path = "state_file_tests.rs"]
mod tests;
