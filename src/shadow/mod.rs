//! Reviewer quality (seed 004, "Shadow Mind"): probe classes (D1), the anchored report
//! envelope (D3), reviewer independence (D5). Stagnation (D4), holdout (D7), budgets (D8),
//! the value loop and the `shadow` export are not built yet.

pub mod envelope;
pub mod independence;
pub mod probes;
