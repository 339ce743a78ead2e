//! When a background review runs: the per-session scheduler, the digest it sends and the gate it asks.
//! May use the shell (`api`, `host`, `config`, `time`) and read the library's store; never writes skills.
//! `sessions` keeps each session's state (`session_state`) on disk, so a process per event decides as one
//! process does; `session_journal` lets a long-lived process hold a session in memory, one append per
//! event, and hand it over (`session_holdings`: which it holds; `session_takeover`: another process taking
//! one); both write through `session_store`.
//! `audit` keeps what each background review and curator pass did, for `/skills reviews`.

pub mod audit;
pub mod digest;
pub mod gate;
pub mod scheduler;
pub mod session_holdings;
pub mod session_journal;
pub mod session_state;
pub mod session_store;
pub mod session_takeover;
pub mod sessions;
