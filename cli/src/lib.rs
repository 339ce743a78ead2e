//! self-evolve, the product: the `self-evolve` binary and everything only it needs, on top of the
//! wasmtime host library (`self-evolve-host`, in `host-test/`).
//!
//! Floors, top to bottom; a floor uses only its own and the floors under it:
//! - front doors: `cli/` (the subcommands), `mcp/` (the MCP server), `hook/` (Claude Code's and
//!   Codex's hook entry, and `self-evolve event`), `console/` (`self-evolve ui`, the operator's
//!   web page);
//! - services: `operator` (the operator's `/skills` line, one path for the CLI and the console);
//!   `team/` (team sync) on `live/` (live sessions and their reviewers) on `git/` (the skills
//!   root as a git tree); `eval/` (paired evaluations of skills); `check/` (checking skill folders), `events/` (the session event lines
//!   replay and `event` read), `gate_stats` (a gates.jsonl summary) and `setup/` (an agent
//!   harness's config files);
//! - the home: `home/` (roots, `config.json`, `host.json`), `component` (which component runs),
//!   `identity` (operator or reviewer), `input` (bounded line reading);
//! - the host library (`self_evolve_host`) and the plugin it loads.
//!
//! `tools/layers` keeps it so (`cargo test -p layers`): no two files import each other, directly
//! or around a loop (a folder's `mod.rs` and its children included), and a folder uses only
//! folders on floors below its own (`FLOORS` in tools/layers/tests/workspace.rs, for every crate).

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
pub mod console;
pub mod hook;
pub mod mcp;
// Services.
pub mod check;
// `eval` runs agents in process groups (POSIX); the binary does not start elsewhere (main.rs).
#[cfg(unix)]
pub mod eval;
pub mod events;
pub mod gate_stats;
pub mod git;
pub mod live;
pub mod operator;
pub mod setup;
pub mod team;
// The home.
pub mod component;
pub mod home;
pub mod identity;
pub mod input;
