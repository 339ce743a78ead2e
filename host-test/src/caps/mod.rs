//! The five capabilities the host grants, one module each. None of them knows the guest:
//! each has its own config, its own policy checks and tests that run without a component.
//! May use `text` (how a log line is shown); never the floors above (`plugin`, `sandbox`,
//! `engine`, `state`, `bindings`), which wire these into a component.

pub mod clock;
pub mod fs;
pub mod http;
pub mod log;
pub mod subagent;
