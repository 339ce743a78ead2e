//! The CLI subcommands that are more than a few lines.

pub mod check;
