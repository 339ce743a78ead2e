//! `self-evolve setup HARNESS`: (to be written)
pub mod jsonc;
pub mod toml;
pub mod value;
pub mod yaml;
