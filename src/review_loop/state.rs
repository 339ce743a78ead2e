//! The loop's files in the state root (seed 003, Steps 1–2 and "State archival"):
//! `review-loop/<session>.json` in the seed's shape, written atomically; the per-session and
//! per-repo locks taken with create-new; `<session>.log`; and `archive/<session>-<ts>.json`.

use crate::digest::sha256_hex;
use crate::host::{FsError, Host, Level, Root, WriteMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const DIR: &str = "review-loop";
/// A lock is stale after this long without its owner touching it (seed: 30 minutes).
pub const STALE_LOCK_MS: u64 = 30 * 60_000;

/// A session id as a file name: itself when it is a plain name, else a hash of it.
pub fn key(session: &str) -> String {
    let plain = !session.is_empty()
        && session.len() <= 80
        && !session.starts_with('.')
        && !session.starts_with("repo-")
        && session.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if plain { session.to_string() } else { format!("s-{}", &sha256_hex(session.as_bytes())[..16]) }
}

/// Seed 003's state shape, plus what a continuing iteration must not lose (mode, independence).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct State {
    pub session_id: String,
    pub started_at: String,
    /// Iterations completed (0-based index of the next one).
    pub iteration: u32,
    pub max_iterations: u32,
    pub cost_spent_input_tokens: u64,
    pub cost_spent_output_tokens: u64,
    /// The ceiling on input + output tokens (the seed's name, the seed's combined comparison).
    pub cost_ceiling_input_tokens: u64,
    pub last_diff_sha: Option<String>,
    /// Every iteration's findings; `addressed` marks those sent to be fixed.
    pub findings_history: Vec<Value>,
    pub completion: Option<String>,
    pub scope: Scope,
    pub mode: String,
    pub independence: Value,
    /// Activations whose token counts were estimated because the host reported none.
    #[serde(default)]
    pub estimated_activations: u32,
    /// The markdown verdict of a terminal run (archived with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Scope {
    pub branch: String,
    pub files: Vec<String>,
}

pub fn state_path(session: &str) -> String {
    format!("{DIR}/{}.json", key(session))
}

/// The saved state of a session's loop; `Ok(None)` when there is none.
pub fn load(host: &impl Host, session: &str) -> Result<Option<State>, String> {
    match host.read(&Root::State, &state_path(session)) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|err| {
            format!("{} is not a review-loop state ({err}); move it aside to start over", state_path(session))
        }),
        Err(FsError::NotFound) => Ok(None),
        Err(err) => Err(format!("cannot read {}: {err}", state_path(session))),
    }
}

/// Temp file + rename, so a crash leaves the old state or the new one, never half of one.
pub fn save(host: &impl Host, state: &State) -> Result<(), FsError> {
    let path = state_path(&state.session_id);
    write_atomic(host, &path, &redacted(host, state))
}

/// The state as JSON with every credential a reviewer quoted redacted: findings are model text
/// the plugin keeps, and the state root is shared and synced.
fn redacted(host: &impl Host, state: &State) -> Vec<u8> {
    let mut value = serde_json::to_value(state).unwrap_or_default();
    let n = crate::library::guards::scan::redact_json(&mut value);
    if n > 0 {
        host.log(Level::Warn, &format!("review loop: redacted {n} credential-bearing text(s) before saving the state"));
    }
    serde_json::to_vec_pretty(&value).unwrap_or_default()
}

pub fn write_atomic(host: &impl Host, path: &str, bytes: &[u8]) -> Result<(), FsError> {
    crate::state_file::write_atomic(host, &Root::State, path, bytes)
}

/// Moves the terminal state to `archive/<session>-<started ms>.json`; returns that path.
pub fn archive(host: &impl Host, state: &State, started_ms: u64) -> Result<String, FsError> {
    let path = format!("{DIR}/archive/{}-{started_ms}.json", key(&state.session_id));
    write_atomic(host, &path, &redacted(host, state))?;
    match host.remove_file(&Root::State, &state_path(&state.session_id)) {
        Ok(()) | Err(FsError::NotFound) => Ok(path),
        Err(err) => Err(err),
    }
}

/// Archived runs of this session (a second review shares the first one's context).
pub fn prior_runs(host: &impl Host, session: &str) -> Vec<String> {
    let prefix = format!("{}-", key(session));
    host.list_dir(&Root::State, &format!("{DIR}/archive"))
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| {
            name.strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".json"))
                .is_some_and(|ts| ts.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|(name, _)| format!("{DIR}/archive/{name}"))
        .collect()
}

/// Appends one line to `<session>.log`.
pub fn log(host: &impl Host, session: &str, line: &str) {
    let path = format!("{DIR}/{}.log", key(session));
    let line = crate::library::guards::scan::redact_secrets(line).unwrap_or_else(|| line.to_string());
    let stamped = format!("{} {line}\n", crate::time::iso(host.now_ms()));
    let _ = host.write(&Root::State, &path, stamped.as_bytes(), WriteMode::Append);
}

/// What a lock file holds: who took it, for which run, and when it was last touched
/// (the plugin's clock, so a manual clock ages it and fs timestamps do not matter).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LockOwner {
    pub owner: String,
    pub run: String,
    pub session: String,
    pub touched_ms: u64,
}

pub fn session_lock(session: &str) -> String {
    format!("{DIR}/{}.lock", key(session))
}

/// `repo-<hash of the repository's top level>.lock`.
pub fn repo_lock(repo: &str) -> String {
    format!("{DIR}/repo-{}.lock", &sha256_hex(repo.as_bytes())[..16])
}

#[derive(Debug, PartialEq)]
pub enum Acquire {
    Taken,
    /// Taken after removing a stale lock (its owner and age are reported).
    TakenStale(LockOwner),
    Busy(Option<LockOwner>),
}

/// Takes `path` with create-new. When it exists, a lock untouched for 30 minutes whose owner is
/// gone (`alive` says no) is removed and the take retried once; anything else is busy.
pub fn acquire(host: &impl Host, path: &str, me: &LockOwner, alive: impl Fn(&LockOwner) -> bool) -> Acquire {
    let bytes = serde_json::to_vec(me).unwrap_or_default();
    match host.write(&Root::State, path, &bytes, WriteMode::CreateNew) {
        Ok(()) => return Acquire::Taken,
        Err(FsError::AlreadyExists) => {}
        Err(_) => return Acquire::Busy(None),
    }
    let held: Option<LockOwner> = host.read(&Root::State, path).ok().and_then(|b| serde_json::from_slice(&b).ok());
    let now = host.now_ms();
    let stale = match &held {
        Some(owner) => now.saturating_sub(owner.touched_ms) > STALE_LOCK_MS && !alive(owner),
        // An unreadable lock has no owner to ask: its file age decides.
        None => host.stat(&Root::State, path).is_ok_and(|s| now.saturating_sub(s.modified_ms) > STALE_LOCK_MS),
    };
    if !stale {
        return Acquire::Busy(held);
    }
    let _ = host.remove_file(&Root::State, path);
    match host.write(&Root::State, path, &bytes, WriteMode::CreateNew) {
        Ok(()) => Acquire::TakenStale(held.unwrap_or(LockOwner {
            owner: "unknown".into(),
            run: String::new(),
            session: String::new(),
            touched_ms: 0,
        })),
        Err(_) => Acquire::Busy(None),
    }
}

/// Whether the lock at `path` still names `run` (it may have been broken and retaken).
fn held_by(host: &impl Host, path: &str, run: &str) -> bool {
    host.read(&Root::State, path)
        .ok()
        .and_then(|b| serde_json::from_slice::<LockOwner>(&b).ok())
        .is_some_and(|o| o.run == run)
}

/// Removes the lock if it is still ours (never someone else's that replaced a stale one).
pub fn release(host: &impl Host, path: &str, run: &str) {
    if held_by(host, path, run) {
        let _ = host.remove_file(&Root::State, path);
    }
}

/// Refreshes `touched_ms` of a lock this run holds.
pub fn touch(host: &impl Host, path: &str, me: &LockOwner) {
    if held_by(host, path, &me.run) {
        let _ = write_atomic(host, path, &serde_json::to_vec(me).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn me(run: &str, at: u64) -> LockOwner {
        LockOwner { owner: "inst-1".into(), run: run.into(), session: "s1".into(), touched_ms: at }
    }

    #[test]
    fn session_keys_are_safe_file_names() {
        assert_eq!(key("sess-1.a_b"), "sess-1.a_b");
        for odd in ["../x", "a/b", "", ".hidden", "repo-x", &"x".repeat(81), "ü"] {
            let k = key(odd);
            assert!(k.starts_with("s-") && k.len() == 18, "{odd:?} → {k}");
        }
    }

    #[test]
    fn a_held_lock_is_busy_until_stale_and_dead() {
        let host = FakeHost::new(1_000_000);
        host.map_root(Root::State);
        let path = session_lock("s1");
        assert_eq!(acquire(&host, &path, &me("rl-1", 1_000_000), |_| false), Acquire::Taken);
        // Fresh: busy even if the owner looks dead.
        assert!(matches!(acquire(&host, &path, &me("rl-2", 1_000_000), |_| false), Acquire::Busy(Some(_))));
        host.advance(STALE_LOCK_MS + 1);
        // Old but alive: busy.
        assert!(matches!(acquire(&host, &path, &me("rl-2", host.now_ms()), |_| true), Acquire::Busy(Some(_))));
        // Old and gone: broken once, taken.
        let got = acquire(&host, &path, &me("rl-2", host.now_ms()), |_| false);
        assert!(matches!(got, Acquire::TakenStale(ref o) if o.run == "rl-1"), "{got:?}");
        // Releasing someone else's lock does nothing.
        release(&host, &path, "rl-1");
        assert!(host.file(&Root::State, &path).is_some());
        release(&host, &path, "rl-2");
        assert!(host.file(&Root::State, &path).is_none());
    }
}
