//! The host guards itself: a guest that loops forever or grows memory past the cap ends in a
//! typed error (not a hang, not a crash), the instance is replaced, and the next call works.

use self_evolve_host::HostConfig;
use self_evolve_host::engine::{engine, load_component};
use self_evolve_host::sandbox::{CallError, Limits, Sandbox};
use std::time::{Duration, Instant};
use wasmtime::component::{Instance, Linker};

fn fixture(limits: Limits) -> Sandbox<Instance> {
    fixture_from("runaway.wat", limits)
}

fn fixture_from(file: &str, limits: Limits) -> Sandbox<Instance> {
    let engine = engine().unwrap();
    let wasm = wat::parse_file(format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let (component, _) = load_component(engine, &wasm, None).unwrap();
    let pre = Linker::new(engine).instantiate_pre(&component).unwrap();
    let config = HostConfig { limits, cache_dir: None, ..Default::default() };
    let (state, limits, _) = config.into_state();
    Sandbox::new(engine, state, limits, move |store| pre.instantiate(store)).unwrap()
}

fn call_u32(sandbox: &mut Sandbox<Instance>, name: &str) -> Result<u32, CallError> {
    sandbox.call(name, |instance, store| {
        let func = instance.get_typed_func::<(), (u32,)>(&mut *store, name)?;
        let (value,) = func.call(&mut *store, ())?;
        Ok(value)
    })
}

#[test]
fn an_endless_loop_is_stopped_at_the_deadline_and_the_next_call_works() {
    let mut sandbox = fixture(Limits { call_deadline: Duration::from_millis(100), ..Limits::default() });
    assert_eq!(call_u32(&mut sandbox, "ok"), Ok(42));
    let started = Instant::now();
    let err = sandbox
        .call("spin", |instance, store| {
            let func = instance.get_typed_func::<(), ()>(&mut *store, "spin")?;
            func.call(&mut *store, ())
        })
        .unwrap_err();
    // Not a timing assertion: a generous bound that only catches a hang.
    assert!(started.elapsed() < Duration::from_secs(30), "the host must not hang");
    assert_eq!(err, CallError::Timeout { export: "spin".into(), deadline_ms: 100 });
    assert!(err.to_string().contains("100 ms deadline"), "{err}");
    assert_eq!(sandbox.replacements, 1);
    assert_eq!(call_u32(&mut sandbox, "ok"), Ok(42), "a fresh instance answers");
}

#[test]
fn a_call_deadline_shorter_than_the_instantiation_does_not_fail_the_load_or_a_replacement() {
    // One epoch tick (5 ms) for each call; the guest's start function runs for tens of ms.
    // Instantiation gets at least INSTANTIATE_DEADLINE, first and after a restart alike.
    let mut sandbox =
        fixture_from("slow_start.wat", Limits { call_deadline: Duration::from_millis(1), ..Limits::default() });
    assert_eq!(call_u32(&mut sandbox, "ok"), Ok(42));
    sandbox.restart().unwrap();
    assert_eq!(call_u32(&mut sandbox, "ok"), Ok(42));
    assert_eq!(sandbox.replacements, 0);
}

#[test]
fn growing_memory_past_the_cap_is_a_typed_error_and_the_next_call_works() {
    let mut sandbox = fixture(Limits { memory_bytes: 8 << 20, ..Limits::default() });
    let err = call_u32(&mut sandbox, "grow").unwrap_err();
    match &err {
        CallError::MemoryLimit { export, limit_bytes, detail } => {
            assert_eq!(export, "grow");
            assert_eq!(*limit_bytes, 8 << 20);
            assert!(detail.contains("past the 8388608 byte limit"), "{detail}");
        }
        other => panic!("expected a memory-limit error, got {other:?}"),
    }
    assert_eq!(call_u32(&mut sandbox, "ok"), Ok(42));
    assert_eq!(sandbox.replacements, 1);
}
