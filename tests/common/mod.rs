//! Shared set-up for end-to-end tests: the real component in the wasmtime host, with
//! temporary roots, a manual clock and captured logs.
#![allow(dead_code)]

use self_evolve_host::caps::log::Captured;
use self_evolve_host::{FsConfig, HostConfig, LogSink, ManualClock, Plugin, ProjectRoots};
use std::path::PathBuf;
use std::sync::Arc;

pub fn wasm_path() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dist/self-evolve.wasm");
    assert!(
        path.is_file(),
        "{} is missing: run ./build.sh first (./build.sh test does)",
        path.display()
    );
    path
}

pub struct TestHost {
    pub plugin: Plugin,
    pub home: tempfile::TempDir,
    pub clock: ManualClock,
    pub logs: Captured,
}

impl TestHost {
    pub fn user_skills(&self) -> PathBuf {
        self.home.path().join("skills")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join("self-evolve")
    }
    pub fn logged(&self, needle: &str) -> bool {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .any(|(_, m)| m.contains(needle))
    }
    pub fn log_text(&self) -> String {
        self.logs
            .lock()
            .unwrap()
            .iter()
            .map(|(_, m)| m.clone() + "\n")
            .collect()
    }
}

/// A host with user-skills and state roots in a fresh temporary home; `tune` adjusts the config.
pub fn host_with(tune: impl FnOnce(&mut HostConfig)) -> TestHost {
    let home = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_767_225_600_000); // 2026-01-01T00:00:00Z
    let (log, logs) = LogSink::capturing();
    let mut config = HostConfig {
        cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("component-cache")),
        fs: FsConfig {
            user_skills: Some(home.path().join("skills")),
            state: Some(home.path().join("self-evolve")),
            projects: ProjectRoots::default(),
        },
        clock: Arc::new(clock.clone()),
        log,
        ..HostConfig::default()
    };
    tune(&mut config);
    let plugin = Plugin::load(wasm_path(), config).unwrap();
    TestHost {
        plugin,
        home,
        clock,
        logs,
    }
}

pub fn host() -> TestHost {
    host_with(|_| {})
}

pub fn all_services() -> Vec<String> {
    ["tools", "commands", "system-prompt", "agents", "subagents"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
