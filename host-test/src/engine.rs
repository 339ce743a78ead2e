//! The one shared `Engine` (epoch interruption on, a background ticker) and loading a
//! component with an on-disk cache keyed by the engine's compatibility hash and the wasm's sha256.

use anyhow::{Context, Result, anyhow};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// How often the epoch advances; deadlines are counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

static ENGINE: OnceLock<Result<Engine, String>> = OnceLock::new();

/// Whether the engine counts fuel (`SELF_EVOLVE_FUEL`, with the `profiling` feature only).
pub fn counting_fuel() -> bool {
    cfg!(feature = "profiling") && std::env::var_os("SELF_EVOLVE_FUEL").is_some()
}

/// The process-wide engine. The first call starts the epoch ticker thread.
pub fn engine() -> Result<&'static Engine> {
    ENGINE
        .get_or_init(|| {
            let mut config = Config::new();
            config.epoch_interruption(true);
            #[cfg(feature = "profiling")]
            // `SELF_EVOLVE_PERFMAP=jitdump` also keeps the compiled code, for `perf annotate`
            // (record with `-k 1`, then `perf inject --jit`).
            match std::env::var("SELF_EVOLVE_PERFMAP").as_deref() {
                Ok("jitdump") => {
                    config.profiler(wasmtime::ProfilingStrategy::JitDump);
                }
                Ok(_) => {
                    config.profiler(wasmtime::ProfilingStrategy::PerfMap);
                }
                Err(_) => {}
            }
            // `SELF_EVOLVE_FUEL=1` counts the wasm instructions each call runs (`Plugin::fuel_used`):
            // a measure of the component's work that does not move with the machine's noise.
            #[cfg(feature = "profiling")]
            config.consume_fuel(counting_fuel());
            let engine = Engine::new(&config).map_err(|e| format!("{e:#}"))?;
            let ticker = engine.clone();
            std::thread::Builder::new()
                .name("self-evolve-epoch".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(EPOCH_TICK);
                        ticker.increment_epoch();
                    }
                })
                .map_err(|e| format!("starting the epoch ticker: {e}"))?;
            Ok(engine)
        })
        .as_ref()
        .map_err(|e| anyhow!("creating the wasmtime engine: {e}"))
}

/// Whether a component came from the disk cache or was compiled now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Already loaded by this process.
    Memory,
    /// Read from the disk cache.
    Hit,
    Miss,
    Disabled,
}

/// `$SELF_EVOLVE_CACHE_DIR`, else `$XDG_CACHE_HOME/self-evolve`, else `~/.cache/self-evolve`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("SELF_EVOLVE_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("self-evolve"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("self-evolve"))
}

/// Bytes whose sha256 is known ahead (a component embedded in the binary, hashed when it was
/// built), by their address and length: `'static` bytes never change, so those two name them.
static KNOWN: Mutex<Vec<(usize, usize, &'static str)>> = Mutex::new(Vec::new());

/// Says that `bytes` have the sha256 `hex`, so `cache_key` need not hash them.
pub fn known_sha256(bytes: &'static [u8], hex: &'static str) {
    let mut known = KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let entry = (bytes.as_ptr() as usize, bytes.len(), hex);
    if !known.contains(&entry) {
        known.push(entry);
    }
}

/// The cache file name for these wasm bytes on this engine.
pub fn cache_key(engine: &Engine, wasm: &[u8]) -> String {
    let known = KNOWN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let named = known.iter().find(|(at, len, _)| *at == wasm.as_ptr() as usize && *len == wasm.len());
    let sha: String = match named.and_then(|(_, _, hex)| hex.get(..32)) {
        Some(hex) => hex.to_string(),
        None => Sha256::digest(wasm).iter().take(16).map(|b| format!("{b:02x}")).collect(),
    };
    drop(known);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    format!("{sha}-{:016x}.cwasm", hasher.finish())
}

/// Compiles `wasm`, or loads it precompiled from `cache_dir` when a matching entry exists.
/// A cache that cannot be read or written only costs a compile.
pub fn load_component(engine: &Engine, wasm: &[u8], cache_dir: Option<&Path>) -> Result<(Component, CacheOutcome)> {
    // One compile per process for the same bytes: concurrent loads wait for the first.
    static LOADED: Mutex<BTreeMap<String, Component>> = Mutex::new(BTreeMap::new());
    let key = cache_key(engine, wasm);
    let mut loaded = LOADED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(component) = loaded.get(&key) {
        return Ok((component.clone(), CacheOutcome::Memory));
    }
    let (component, outcome) = from_disk_or_compiled(engine, wasm, cache_dir, &key)?;
    loaded.insert(key, component.clone());
    Ok((component, outcome))
}

/// The component from `cache_dir`, else compiled now (and stored there), without this process's
/// memo.
pub fn load_from_disk_or_compile(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
) -> Result<(Component, CacheOutcome)> {
    from_disk_or_compiled(engine, wasm, cache_dir, &cache_key(engine, wasm))
}

/// `key` is `cache_key(engine, wasm)`, computed once by the caller: the sha256 of the
/// component's 2 MB is a millisecond of a hook process's ~8.
fn from_disk_or_compiled(
    engine: &Engine,
    wasm: &[u8],
    cache_dir: Option<&Path>,
    key: &str,
) -> Result<(Component, CacheOutcome)> {
    let Some(dir) = cache_dir else {
        return Ok((compile(engine, wasm)?, CacheOutcome::Disabled));
    };
    let path = dir.join(key);
    if path.is_file() {
        // SAFETY: the cache folder is the host's own; its files were written by `store` below
        // from a component this engine compiled, and the key pins both the wasm bytes and the
        // engine's compatibility hash. wasmtime still checks the header and version.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => return Ok((component, CacheOutcome::Hit)),
            Err(err) => eprintln!(
                "self-evolve: ignoring unusable cache entry {}",
                crate::text::shown_error(&format!("{}: {err:#}", path.display()))
            ),
        }
    }
    let component = compile(engine, wasm)?;
    if let Err(err) = store(&component, dir, &path) {
        eprintln!(
            "self-evolve: could not write the compile cache {}",
            crate::text::shown_error(&format!("{}: {err:#}", path.display()))
        );
    }
    Ok((component, CacheOutcome::Miss))
}

fn compile(engine: &Engine, wasm: &[u8]) -> Result<Component> {
    Component::new(engine, wasm)
        .map_err(|e| anyhow!("{e:#}"))
        .context("compiling the component (is it a component built by ./build.sh?)")
}

fn store(component: &Component, dir: &Path, path: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let bytes = component.serialize().map_err(|e| anyhow!("{e:#}"))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}
