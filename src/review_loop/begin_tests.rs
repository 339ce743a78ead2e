//! Races of `begin` with other processes on the fake host: a refused begin leaves the shared
//! `review-loop/` folder to another process's first write into it.

use super::super::tests::{DIFF, ctx, req};
use super::super::{Loops, Mode};
use super::state;
use crate::config::Config;
use crate::fake::FakeHost;
use crate::host::Root;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

const NOW: u64 = 60_000_000;

/// Another process's begin, of session `s2` in its own repository: its first write into
/// `review-loop/` is its session lock.
fn begin_s2(host: &FakeHost) -> Value {
    let mut r = req(Mode::Code, DIFF);
    r.repo = "/work/other".into();
    Loops::default().begin(host, &Config::default().review_loop, &ctx("s2"), r).expect("begin")
}

/// A begin refused after it took its locks (no reviewer could start) releases them while another
/// process's begin has just made `review-loop/` for its first lock and not yet written it. Before,
/// the refusal removed the then empty `review-loop/` under that write, which failed with
/// `NotFound`: the other begin took its lock for busy and was skipped. `review-loop/` is shared,
/// so a refused begin leaves it.
#[test]
fn a_refused_begin_leaves_the_review_loop_folder_to_another_processs_first_lock() {
    // What the other begin leaves when it runs alone.
    let alone = FakeHost::new(NOW);
    assert_eq!(begin_s2(&alone)["outcome"], "dispatched");

    let host = FakeHost::new(NOW);
    let refused = Rc::new(RefCell::new(None));
    let seen = refused.clone();
    host.interleave_inside_write(state::DIR, move |host| {
        host.refuse_starts.set(true);
        let config = Config::default().review_loop;
        *seen.borrow_mut() = Loops::default().begin(host, &config, &ctx("s1"), req(Mode::Code, DIFF)).err();
        host.refuse_starts.set(false);
    });
    let out = begin_s2(&host);

    let refused = refused.borrow_mut().take();
    assert!(refused.is_some_and(|e| e.code == "no-reviewer"), "the refused begin ran inside the other's first write");
    assert_eq!(out["outcome"], "dispatched", "{out}");
    let disk = host.snapshot();
    let paths: Vec<String> = disk[&Root::State].keys().cloned().collect();
    let mut expected = vec![
        state::DIR.to_string(),
        state::repo_lock("/work/other"),
        state::session_lock("s2"),
        state::state_path("s2"),
    ];
    expected.sort();
    assert_eq!(paths, expected, "the other begin's locks and state, nothing of the refused one");
    assert_eq!(disk, alone.snapshot(), "byte for byte what the other begin leaves alone");
}
