//! Curation: the use ledger (`ledger`: loads, uses and outcomes per skill), the evidence read from
//! session turns (`evidence`), what paired evaluations found (`evaluations`), and the curator's daily pass over them (`curator`: stale and unused
//! skills to archive, restores).
//!
//! May use `staging` (its archive moves), `history`, `guards` and `storage`; not `skill_manage`.

pub mod curator;
pub mod evaluations;
pub mod evidence;
pub mod ledger;
