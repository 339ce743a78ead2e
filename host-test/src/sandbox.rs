//! Guarded calls into an instance: a fresh `Store` per instance with a memory cap and an
//! epoch deadline per export call. A trap becomes a typed `CallError` and the instance is
//! replaced, keeping the host's capabilities; the host never hangs on a plugin.

use crate::engine::EPOCH_TICK;
use crate::state::HostState;
use std::time::Duration;
use wasmtime::{Engine, Store, Trap};

/// The least time an instantiation gets, whatever the call deadline.
pub const INSTANTIATE_DEADLINE: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub memory_bytes: usize,
    pub call_deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: 64 << 20, call_deadline: Duration::from_secs(2) }
    }
}

/// How a call into the plugin failed. The instance has been replaced when this is returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The export ran past its deadline and was interrupted.
    Timeout { export: String, deadline_ms: u64 },
    /// The plugin tried to grow memory (or a table) past the cap.
    MemoryLimit { export: String, limit_bytes: usize, detail: String },
    /// Any other trap: a panic in the plugin, an out-of-bounds access, …
    Trap { export: String, message: String },
    /// No instance could be made after an earlier failure.
    Unavailable { message: String },
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout { export, deadline_ms } => {
                write!(f, "plugin export `{export}` ran past its {deadline_ms} ms deadline and was stopped")
            }
            CallError::MemoryLimit { export, limit_bytes, detail } => {
                write!(f, "plugin export `{export}` hit the {limit_bytes} byte memory limit ({detail})")
            }
            CallError::Trap { export, message } => {
                write!(f, "plugin export `{export}` trapped: {message}")
            }
            CallError::Unavailable { message } => {
                write!(f, "plugin instance unavailable: {message}")
            }
        }
    }
}

impl std::error::Error for CallError {}

type Instantiate<B> = Box<dyn Fn(&mut Store<HostState>) -> wasmtime::Result<B> + Send + Sync>;

pub struct Sandbox<B> {
    engine: Engine,
    store: Option<Store<HostState>>,
    bindings: Option<B>,
    instantiate: Instantiate<B>,
    limits: Limits,
    /// How many times the instance was replaced after a failure.
    pub replacements: u64,
}

impl<B> Sandbox<B> {
    pub fn new(
        engine: &Engine,
        state: HostState,
        limits: Limits,
        instantiate: impl Fn(&mut Store<HostState>) -> wasmtime::Result<B> + Send + Sync + 'static,
    ) -> anyhow::Result<Sandbox<B>> {
        let mut sandbox = Sandbox {
            engine: engine.clone(),
            store: None,
            bindings: None,
            instantiate: Box::new(instantiate),
            limits,
            replacements: 0,
        };
        let mut store = sandbox.new_store(state);
        store.set_epoch_deadline(sandbox.instantiate_ticks());
        let bindings =
            (sandbox.instantiate)(&mut store).map_err(|e| anyhow::anyhow!("instantiating the plugin: {e:#}"))?;
        sandbox.store = Some(store);
        sandbox.bindings = Some(bindings);
        Ok(sandbox)
    }

    fn new_store(&self, mut state: HostState) -> Store<HostState> {
        state.limiter.limit_bytes = self.limits.memory_bytes;
        state.limiter.hit = false;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        if crate::engine::counting_fuel() {
            // Counting only: as much fuel as a store can hold, read back by `fuel`.
            let _ = store.set_fuel(u64::MAX);
        }
        // The deadline is for the plugin's own work: time it spent waiting on the host's network
        // or process starts (each bounded by its own timeout) extends it once; past that, a trap.
        store.epoch_deadline_callback(|mut ctx| {
            let waited = std::mem::take(&mut ctx.data_mut().host_wait);
            if waited.is_zero() {
                return Err(wasmtime::Error::new(Trap::Interrupt));
            }
            let ticks = waited.as_millis().div_ceil(EPOCH_TICK.as_millis()) as u64;
            Ok(wasmtime::UpdateDeadline::Continue(ticks + 1))
        });
        store
    }

    fn deadline_ticks(&self) -> u64 {
        (self.limits.call_deadline.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }

    /// Instantiation runs guest code too (start functions, the runtime's setup), under the same
    /// epoch deadline: a call deadline of a tick or two would sometimes fail the load itself, so
    /// it gets at least `INSTANTIATE_DEADLINE` (as in the Python host).
    fn instantiate_ticks(&self) -> u64 {
        self.deadline_ticks().max((INSTANTIATE_DEADLINE.as_millis() / EPOCH_TICK.as_millis()) as u64)
    }

    /// Fuel spent in this store so far, where the engine counts it (`engine::counting_fuel`).
    pub fn fuel_used(&self) -> Option<u64> {
        let left = self.store.as_ref()?.get_fuel().ok()?;
        Some(u64::MAX - left)
    }

    pub fn state(&self) -> Option<&HostState> {
        self.store.as_ref().map(|s| s.data())
    }

    pub fn state_mut(&mut self) -> Option<&mut HostState> {
        self.store.as_mut().map(|s| s.data_mut())
    }

    /// Calls into the instance under the deadline. On failure the instance is replaced.
    pub fn call<R>(
        &mut self,
        export: &str,
        f: impl FnOnce(&B, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        if self.bindings.is_none() {
            self.replace()?;
        }
        let ticks = self.deadline_ticks();
        let (Some(store), Some(bindings)) = (self.store.as_mut(), self.bindings.as_ref()) else {
            return Err(CallError::Unavailable { message: "no store".into() });
        };
        store.set_epoch_deadline(ticks);
        store.data_mut().limiter.hit = false;
        store.data_mut().host_wait = std::time::Duration::ZERO;
        match f(bindings, store) {
            Ok(value) => Ok(value),
            Err(err) => {
                let error = self.classify(export, &err);
                // A trapped instance may not be entered again: start a fresh one.
                self.bindings = None;
                let _ = self.replace();
                Err(error)
            }
        }
    }

    fn classify(&self, export: &str, err: &wasmtime::Error) -> CallError {
        let export = export.to_string();
        let hit = self.store.as_ref().is_some_and(|s| s.data().limiter.hit);
        if hit {
            return CallError::MemoryLimit {
                export,
                limit_bytes: self.limits.memory_bytes,
                detail: format!("{err:#}"),
            };
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => {
                CallError::Timeout { export, deadline_ms: self.limits.call_deadline.as_millis() as u64 }
            }
            Some(trap) => CallError::Trap { export, message: trap.to_string() },
            None => CallError::Trap { export, message: format!("{err:#}") },
        }
    }

    fn replace(&mut self) -> Result<(), CallError> {
        self.replacements += 1;
        self.fresh_instance()
    }

    /// A new instance over the same host state, as a new process would start: nothing the old
    /// instance held in memory survives (not counted as a replacement).
    pub fn restart(&mut self) -> Result<(), CallError> {
        self.bindings = None;
        self.fresh_instance()
    }

    fn fresh_instance(&mut self) -> Result<(), CallError> {
        let store = self.store.take().ok_or_else(|| CallError::Unavailable { message: "store lost".into() })?;
        let mut store = self.new_store(store.into_data());
        store.set_epoch_deadline(self.instantiate_ticks());
        let result = (self.instantiate)(&mut store);
        self.store = Some(store);
        match result {
            Ok(bindings) => {
                self.bindings = Some(bindings);
                Ok(())
            }
            Err(err) => Err(CallError::Unavailable { message: format!("re-instantiating failed: {err:#}") }),
        }
    }
}
