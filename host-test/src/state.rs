//! What one plugin instance's `Store` holds: the capabilities and the memory limiter.

use crate::caps::clock::Clock;
use crate::caps::fs::FsCap;
use crate::caps::http::HttpCap;
use crate::caps::log::LogSink;
use crate::caps::subagent::SubagentProvider;
use std::sync::Arc;

pub struct HostState {
    pub fs: FsCap,
    pub http: HttpCap,
    pub subagents: Box<dyn SubagentProvider>,
    pub clock: Arc<dyn Clock>,
    pub log: LogSink,
    pub limiter: MemoryLimiter,
    /// Time this call spent waiting on the network or a process start (bounded by their own
    /// timeouts): the call's deadline is for the plugin's own work, so it is extended by this.
    pub host_wait: std::time::Duration,
}

/// Caps linear memory and tables; remembers that the cap was hit so a trap can be named.
pub struct MemoryLimiter {
    pub limit_bytes: usize,
    pub max_table_elements: usize,
    pub hit: bool,
}

/// The error a refused growth traps with.
#[derive(Debug)]
pub struct LimitExceeded(pub String);

impl std::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LimitExceeded {}

impl wasmtime::ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.limit_bytes {
            self.hit = true;
            return Err(wasmtime::Error::new(LimitExceeded(format!(
                "memory would grow to {desired} bytes, past the {} byte limit",
                self.limit_bytes
            ))));
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.max_table_elements {
            self.hit = true;
            return Err(wasmtime::Error::new(LimitExceeded(format!(
                "table would grow to {desired} elements, past the {} limit",
                self.max_table_elements
            ))));
        }
        Ok(true)
    }
}
