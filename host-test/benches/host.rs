//! Host benchmarks (own harness; `cargo bench -p self-evolve-host --bench host`):
//! cold compile, load from the disk cache, instantiation from `InstancePre`, one empty
//! export round trip, and the component's size. Needs dist/self-evolve.wasm (./build.sh).

use self_evolve_host::bindings::PluginPre;
use self_evolve_host::engine::{engine, load_component, load_from_disk_or_compile};
use self_evolve_host::plugin::linker;
use self_evolve_host::{HostConfig, Plugin};
use std::time::{Duration, Instant};
use wasmtime::Store;

fn measure(name: &str, iterations: usize, mut f: impl FnMut()) {
    f(); // warm-up
    let mut samples: Vec<Duration> = (0..iterations)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    samples.sort();
    let median = samples[samples.len() / 2];
    let p95 = samples[samples.len() * 95 / 100];
    println!("{name:<40} median {:>12?}   p95 {:>12?}   (n={iterations})", median, p95);
}

fn main() -> anyhow::Result<()> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm");
    let wasm = std::fs::read(path).map_err(|e| anyhow::anyhow!("{path}: {e} (run ./build.sh first)"))?;
    println!("component size                           {} bytes ({:.1} KiB)", wasm.len(), wasm.len() as f64 / 1024.0);
    let engine = engine()?;
    let cache = tempfile::tempdir()?;

    measure("cold compile (no cache)", 5, || {
        load_from_disk_or_compile(engine, &wasm, None).unwrap();
    });
    load_from_disk_or_compile(engine, &wasm, Some(cache.path()))?;
    measure("load from disk cache", 50, || {
        load_from_disk_or_compile(engine, &wasm, Some(cache.path())).unwrap();
    });

    let (component, _) = load_component(engine, &wasm, Some(cache.path()))?;
    let pre = PluginPre::new(linker(engine)?.instantiate_pre(&component)?)?;
    measure("instantiate from InstancePre", 200, || {
        let (state, _, _) = HostConfig { cache_dir: None, ..Default::default() }.into_state();
        let mut store = Store::new(engine, state);
        store.set_epoch_deadline(1_000);
        pre.instantiate(&mut store).unwrap();
    });
    measure("cached load + instantiate (Plugin::from_bytes, in-process memo)", 50, || {
        Plugin::from_bytes(&wasm, HostConfig { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() })
            .unwrap();
    });

    let mut plugin =
        Plugin::from_bytes(&wasm, HostConfig { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() })?;
    measure("empty export round trip (events.tick)", 20_000, || {
        plugin.tick().unwrap();
    });
    plugin.init("{}", &[])?.map_err(|e| anyhow::anyhow!(e.message))?;
    measure("tools.list round trip, no services granted", 5_000, || {
        plugin.tools_list().unwrap();
    });
    // The Python bench's setup: the five services granted, so the tools are listed whole.
    let home = tempfile::tempdir()?;
    let mut config = HostConfig { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() };
    config.fs.user_skills = Some(home.path().join("skills"));
    config.fs.state = Some(home.path().join("state"));
    let mut granted = Plugin::from_bytes(&wasm, config)?;
    let services: Vec<String> =
        ["tools", "commands", "system-prompt", "agents", "subagents"].iter().map(|s| s.to_string()).collect();
    granted
        .init(r#"{"review":{"turnInterval":10000,"toolCallThreshold":100000}}"#, &services)?
        .map_err(|e| anyhow::anyhow!(e.message))?;
    println!("tools listed with the services granted: {}", granted.tools_list()?.len());
    measure("tools.list round trip, services granted", 5_000, || {
        granted.tools_list().unwrap();
    });
    Ok(())
}
