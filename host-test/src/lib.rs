//! The wasmtime host for self-evolve: load `dist/self-evolve.wasm`, grant it the five
//! capabilities, and call its exports under a memory cap and a per-call deadline.
//!
//! - `caps/`: one module per capability (fs, http, subagent, clock, log), each with its config,
//!   its policy checks and tests that need no guest;
//! - `engine`, `plugin`, `sandbox`, `bindings`, `state`: loading the component and calling it;
//! - `lines`, `text`: decision lines the host writes itself, and text made safe to show;
//! - `testing`: fakes for tests and embedders (a scripted HTTP server on 127.0.0.1).
//!
//! Layers, top to bottom: `plugin` → `sandbox`, `engine`, `state`, `bindings` → `caps/` →
//! `lines`, `text`. This crate knows no home, CLI or agent: the product on top of it (the
//! `self-evolve` crate in `cli/`: command line, MCP server, hooks, team sync) does.
//!
//! ```no_run
//! use self_evolve_host::{HostConfig, Plugin, user_context};
//! let mut plugin = Plugin::load("dist/self-evolve.wasm", HostConfig::default())?;
//! let report = plugin.init("{}", &["tools".into()])?.map_err(|e| anyhow::anyhow!(e.message))?;
//! println!("{} parts", report.parts.len());
//! let tools = plugin.tools_list()?;
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod bindings;
pub mod caps;
pub mod engine;
pub mod lines;
pub mod plugin;
pub mod sandbox;
pub mod state;
pub mod testing;
pub mod text;

pub use caps::clock::{Clock, ManualClock, SystemClock};
pub use caps::fs::{FsConfig, FsFaults, ProjectRoots};
pub use caps::http::{Endpoint, HttpConfig};
pub use caps::log::{Level, LogSink};
pub use caps::subagent::{ScriptedProvider, SubagentProvider};
pub use plugin::{HostConfig, Plugin, user_context};
pub use sandbox::{CallError, Limits};
