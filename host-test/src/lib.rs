//! The wasmtime host for self-evolve: load `dist/self-evolve.wasm`, grant it the five
//! capabilities, and call its exports under a memory cap and a per-call deadline.
//!
//! - `caps/`: one module per capability (fs, http, subagent, clock, log), each with its config,
//!   its policy checks and tests that need no guest;
//! - `engine`, `plugin`, `sandbox`, `bindings`, `state`: loading the component and calling it;
//! - `cli/`: the `self-evolve` command line; `lines`: decision lines the host writes itself;
//! - `testing`: fakes for tests (a scripted HTTP server on 127.0.0.1).
//!
//! The MCP server (`mcp/`) and live sessions with real reviewer providers (`live/`) take folders
//! of their own beside `caps/` and `cli/`.
//!
//! ```no_run
//! use self_evolve_host::{HostConfig, Plugin, user_context};
//! let mut plugin = Plugin::load("dist/self-evolve.wasm", HostConfig::default())?;
//! let report = plugin.init("{}", &["tools".into()])?.map_err(|e| anyhow::anyhow!(e.message))?;
//! println!("{} parts", report.parts.len());
//! let tools = plugin.tools_list()?;
//! # Ok::<(), anyhow::Error>(())
//! ```

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

pub mod bindings;
pub mod caps;
pub mod cli;
pub mod component;
pub mod engine;
pub mod lines;
pub mod live;
pub mod mcp;
pub mod plugin;
pub mod sandbox;
pub mod state;
pub mod team;
pub mod testing;
pub mod text;

pub use caps::clock::{Clock, ManualClock, SystemClock};
pub use caps::fs::{FsConfig, FsFaults, ProjectRoots};
pub use caps::http::{Endpoint, HttpConfig};
pub use caps::log::{Level, LogSink};
pub use caps::subagent::{ScriptedProvider, SubagentProvider};
pub use plugin::{HostConfig, Plugin, user_context};
pub use sandbox::{CallError, Limits};
