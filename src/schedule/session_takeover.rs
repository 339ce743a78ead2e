//! Taking a session from the process that holds it (`session_journal`): under the session's
//! lock, each of its journals is renamed to `.taken` (waiting while its holder is in an event, and
//! asking a batch holder for it), folded into the next generation and removed. A journal that
//! moved between the listing and its taking, or that continues a newer generation than the one
//! read, sends the caller back to list the session again (`sessions::load_for_update`).

use crate::errors::ToolError;
use crate::host::{FsError, Host, Level, Root, WriteMode};
use crate::schedule::session_journal::{
    BATCH_MARK, Journal, MAX_WAITS, MAX_WAITS_BATCH, State, apply, base_of, want_path,
};
use crate::schedule::session_store::{self as sessions, Stored};
use crate::state_file;

/// Under the session's lock: takes every journal of the session from its holder, folds the ones
/// that continue `stored` (the newest generation) and writes the result as the next generation.
/// `Ok(false)` when a journal was in neither place it was looked for: the caller lists the
/// session again (see `take`). `Err(conflict)` while a live holder is in an event past the lock's
/// wait.
pub fn take_over(
    host: &impl Host,
    session: &str,
    stored: &mut Stored,
    journals: Vec<Journal>,
) -> Result<bool, ToolError> {
    if journals.is_empty() {
        return Ok(true);
    }
    let mut taken = Vec::new();
    for journal in journals {
        match take(host, session, journal)? {
            Some(journal) => taken.push(journal),
            // What was taken so far stays `.taken`, for the next listing to fold.
            None => return Ok(false),
        }
    }
    let mut read = Vec::new();
    for journal in &taken {
        if let Ok(bytes) = host.read(&Root::State, &journal.path(session, State::Taken)) {
            // Compacted by its holder since the listing (a generation newer than the one read
            // here continues it): listed again, the journal kept `.taken` for that listing to
            // fold. Dropped as stale, its records were lost, and the save after it removed the
            // generation that held the rest.
            if base_of(&bytes).is_some_and(|base| base > stored.generation) {
                return Ok(false);
            }
            read.push(bytes);
        }
    }
    let mut folded = false;
    for bytes in &read {
        folded |= apply(host, session, stored.generation, bytes, stored);
    }
    if folded {
        let before = stored.generation;
        match sessions::write_next(host, stored) {
            Some(generation) => stored.generation = generation,
            // The journal stays `.taken`: the next process folds it again.
            None => return Err(not_saved(session)),
        }
        host.log(
            Level::Debug,
            &format!(
                "session `{}`: took it over from its holder (generation {before} → {})",
                sessions::key(session),
                stored.generation
            ),
        );
    }
    for journal in &taken {
        let _ = host.remove_file(&Root::State, &journal.path(session, State::Taken));
    }
    Ok(true)
}

fn not_saved(session: &str) -> ToolError {
    ToolError::new(
        "io",
        format!("could not save session `{}` taken over from its holder", sessions::key(session)),
        "retry once; if it persists, tell the operator",
    )
}

/// Renames one journal to `.taken`; `None` when it was in neither place looked for: its holder
/// handed it back between the two looks (alive, idle again), or folded it into a generation and
/// removed it (released). Either way the session is listed again; never taken for gone, which
/// dropped a live journal's records and started the session over from the generation before.
/// While it is busy, the session is asked for (`want`): a batch holder hands it back at its next
/// flush; a holder per event does at its event's end anyway. A batch runs its next flush within
/// a few ms, inside the wait of a process on the wall clock.
fn take(host: &impl Host, session: &str, journal: Journal) -> Result<Option<Journal>, ToolError> {
    if journal.state == State::Taken {
        return Ok(Some(Journal { stem: journal.stem, state: State::Taken }));
    }
    // Only a batch holder looks for an ask; a holder per event hands back at its event's end,
    // and a refusal from waiting on one leaves nothing behind.
    let batch = journal.stem.ends_with(BATCH_MARK);
    let want = want_path(&sessions::folder(session));
    let waits = if batch { MAX_WAITS_BATCH } else { MAX_WAITS };
    let mut asked = !batch;
    let taken = take_waiting(host, session, journal, waits, || {
        if !asked {
            asked = true;
            // Already there: another process asked first; one ask is enough.
            let _ = host.write(&Root::State, &want, b"", WriteMode::CreateNew);
        }
    });
    // Taken, or gone (under the session's lock either answers any ask, this one's or an earlier
    // taker's that gave up): the marker goes, or the next batch to hold the session would hand
    // it back at its first flush. Still busy (`conflict`): it stays, and the batch hands the
    // session back at its next flush, for the next try to find.
    if batch && taken.is_ok() {
        let _ = host.remove_file(&Root::State, &want);
    }
    taken
}

fn take_waiting(
    host: &impl Host,
    session: &str,
    journal: Journal,
    waits: u32,
    mut ask: impl FnMut(),
) -> Result<Option<Journal>, ToolError> {
    let taken = Journal { stem: journal.stem.clone(), state: State::Taken };
    let started = host.now_ms();
    for _ in 0..waits {
        // Idle first: most of the time the holder is between events.
        match host.rename(&Root::State, &journal.path(session, State::Idle), &taken.path(session, State::Taken)) {
            Ok(()) => return Ok(Some(taken)),
            Err(FsError::NotFound) => {}
            Err(err) => return Err(io(session, &err)),
        }
        let busy = journal.path(session, State::Busy);
        match host.stat(&Root::State, &busy) {
            // Neither idle nor busy: handed back, or taken by another.
            Err(FsError::NotFound) => return Ok(None),
            Err(err) => return Err(io(session, &err)),
            Ok(_) => ask(),
        }
        if host.now_ms().saturating_sub(started) > state_file::WAIT_MS {
            break;
        }
    }
    let busy = journal.path(session, State::Busy);
    let Some(why) = state_file::too_old(host, &busy, state_file::STALE_LOCK_MS) else {
        return Err(state_file::conflict(&format!("session {}", sessions::key(session))));
    };
    host.log(Level::Warn, &format!("taking the journal `{busy}` from a holder that stopped mid-event ({why})"));
    match host.rename(&Root::State, &busy, &taken.path(session, State::Taken)) {
        Ok(()) => {
            // A folder where the busy journal was: a holder that was only stalled fails its next
            // append there (`wrong-kind`) and knows, where it would have made a new file. It goes
            // with the session's folder (`sessions::sweep`).
            let _ = host.create_dir_all(&Root::State, &busy);
            Ok(Some(taken))
        }
        Err(FsError::NotFound) => Ok(None),
        Err(err) => Err(io(session, &err)),
    }
}

fn io(session: &str, err: &FsError) -> ToolError {
    ToolError::new(
        "io",
        format!("could not take session `{}` from its holder: {err}", sessions::key(session)),
        "retry once; if it persists, tell the operator",
    )
}
