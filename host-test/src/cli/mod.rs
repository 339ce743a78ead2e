//! The CLI subcommands that are more than a few lines.

pub mod check;
pub mod gate_stats;
pub mod home;
pub mod replay;
