//! self-evolve, the product: the `self-evolve` binary and everything only it needs, on top of the
//! wasmtime host library (`self-evolve-host`, in `host-test/`).
//!
//! Floors, top to bottom; a floor uses only the floors under it:
//! - front doors: `cli/` (the subcommands), `mcp/` (the MCP server), `hook/` (Claude Code's and
//!   Codex's hook entry);
//! - services: `live/` (live sessions and their reviewers), `team/` (team libraries over git);
//! - the home: `home/` (roots, `config.json`, `host.json`) and `component` (which component runs);
//! - the host library (`self_evolve_host`) and the plugin it loads.
//!
//! `tests/layers.rs` in this crate keeps it so: no two files import each other, directly or
//! around a loop, and no floor imports a floor above it.

/// `println!` for the CLI: a closed pipe (`self-evolve … | head`) ends the program quietly
/// instead of panicking.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(err) = writeln!(std::io::stdout(), $($arg)*) {
            if err.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
        }
    }};
}

// Front doors.
pub mod cli;
pub mod hook;
pub mod mcp;
// Services.
pub mod check;
pub mod events;
pub mod git;
pub mod live;
pub mod team;
// The home.
pub mod component;
pub mod home;
pub mod identity;
pub mod input;
