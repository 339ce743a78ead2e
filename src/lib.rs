//! self-evolve: a governed, self-improving skill library for agent harnesses.
//! Policy lives in ordinary Rust behind the `Host` port; `adapter.rs` (wasm only) binds it to the WIT.
//!
//! The tree follows the architecture:
//! - `library/`: the skill library (storage, guards, history, staging, curation, the `skill_manage`
//!   write path; see `library/mod.rs`);
//! - `schedule/`: when a background review runs (scheduler, digest, gate);
//! - `review_loop/`, `feedback/`, `shadow/`: the three engines (seeds 003, 001, 004);
//! - the shell: `plugin` (dispatch), `active` (state after init), `command/` (`/skills`),
//!   `config/`, `api` (export shapes), `host` (the port), `adapter` (the only binding-aware file),
//!   and small shared utilities (`errors`, `time`, `digest`, `rounds`, `guidance`, `visible`).
//!
//! Dependencies point one way, floor by floor (`tools/layers` checks it): `adapter` → `plugin` →
//! `command/` → `active` → the engines and `schedule/` side by side → `library/` → `config/`,
//! `state_file` → the port (`host`) and the utilities.

mod active;
pub mod api;
pub mod command;
pub mod config;
pub mod digest;
pub mod errors;
pub mod feedback;
pub mod guidance;
pub mod host;
pub mod library;
pub mod plugin;
pub mod review_loop;
pub mod rounds;
pub mod schedule;
pub mod shadow;
pub mod state_file;
pub mod time;
pub mod visible;

#[cfg(any(test, feature = "fake-host"))]
pub mod fake;
#[cfg(test)]
mod sinks_tests;

// Not in the wasm32 unit-test build: the tests run under Node, which has no WIT imports to give.
#[cfg(all(target_arch = "wasm32", not(test)))]
mod adapter;

pub use plugin::Plugin;
