//! Staged writes: with `writeApproval` on, a change waits under `pending/` in the state root until
//! an operator decides. `pending` owns the entries (format, stage, list, load, discard, prune);
//! `coalesce` builds a change on the entry pending for its file and stages archives; `archive`
//! makes an archive (the moves, and what a staged one records); `approval` is the operator's side
//! (diff, approve, reject). Layers inside: pending, archive ← coalesce ← approval.
//!
//! May use `history`, `guards`, `storage` and `dedupe`; nothing above (`curation`, `skill_manage`).

pub mod approval;
pub mod archive;
pub mod coalesce;
pub mod pending;
