//! self-evolve: a governed, self-improving skill library for agent harnesses.
//! Policy lives in ordinary Rust behind the `Host` port; `adapter.rs` (wasm only) binds it to the WIT.

pub mod api;
pub mod approval;
pub mod check;
pub mod command;
pub mod config;
pub mod curator;
pub mod dedupe;
pub mod digest;
pub mod errors;
pub mod feedback;
pub mod frontmatter;
pub mod gate;
pub mod guards;
pub mod guidance;
pub mod host;
pub mod ledger;
pub mod lint;
pub mod plugin;
pub mod review;
pub mod review_loop;
pub mod rounds;
pub mod shadow;
pub mod skill_manage;
pub mod skillfile;
pub mod store;
pub mod time;
pub mod tools;

#[cfg(any(test, feature = "fake-host"))]
pub mod fake;

#[cfg(target_arch = "wasm32")]
mod adapter;

pub use plugin::Plugin;
