//! Reviewer quality (seed 004, "Shadow Mind"): probe classes (D1), the anchored report envelope
//! (D3), stagnation and novelty (D4), independence (D5), holdout (D7), budgets and decay (D8)
//! and the diagnostic value loop. `state.rs` ties them to roots (sessions) and events.

pub mod budget;
pub mod envelope;
pub mod holdout;
pub mod independence;
pub mod probes;
pub mod stagnation;
pub mod state;
pub mod value_loop;
