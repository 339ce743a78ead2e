//! Shared set-up for end-to-end tests: the real component in the wasmtime host, with
//! temporary roots, a manual clock and captured logs.
#![allow(dead_code)]

use self_evolve_host::caps::log::Captured;
use self_evolve_host::{FsConfig, HostConfig, LogSink, ManualClock, Plugin, ProjectRoots};
use std::path::PathBuf;
use std::sync::Arc;

pub fn wasm_path() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dist/self-evolve.wasm");
    assert!(path.is_file(), "{} is missing: run ./build.sh first (./build.sh test does)", path.display());
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
        self.logs.lock().unwrap().iter().any(|(_, m)| m.contains(needle))
    }
    pub fn log_text(&self) -> String {
        self.logs.lock().unwrap().iter().map(|(_, m)| m.clone() + "\n").collect()
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
            ..FsConfig::default()
        },
        clock: Arc::new(clock.clone()),
        log,
        ..HostConfig::default()
    };
    tune(&mut config);
    let plugin = Plugin::load(wasm_path(), config).unwrap();
    TestHost { plugin, home, clock, logs }
}

pub fn host() -> TestHost {
    host_with(|_| {})
}

pub fn all_services() -> Vec<String> {
    ["tools", "commands", "system-prompt", "agents", "subagents"].iter().map(|s| s.to_string()).collect()
}

/// Every entry under `dir` with its bytes (folders, symlinks and special files marked; a FIFO is
/// never opened), for "nothing changed".
pub fn snapshot(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(base).unwrap().display().to_string();
            let ty = entry.file_type().unwrap();
            if ty.is_symlink() {
                out.insert(rel, b"<symlink>".to_vec());
            } else if ty.is_dir() {
                out.insert(rel + "/", Vec::new());
                walk(&path, base, out);
            } else if ty.is_file() {
                out.insert(rel, std::fs::read(&path).unwrap());
            } else {
                out.insert(rel, b"<special>".to_vec());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

impl TestHost {
    /// Calls skill_manage as the main agent of `session`; Ok(json) or Err(error json).
    pub fn skill(&mut self, session: &str, args: serde_json::Value) -> Result<serde_json::Value, serde_json::Value> {
        self.skill_as(session, "main", args)
    }

    pub fn skill_as(
        &mut self,
        session: &str,
        agent: &str,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, serde_json::Value> {
        let mut ctx = self_evolve_host::user_context(session);
        ctx.agent = agent.to_string();
        match self.plugin.tools_call(&ctx, "skill_manage", &args.to_string()).unwrap() {
            Ok(text) => Ok(serde_json::from_str(&text).unwrap()),
            Err(text) => Err(serde_json::from_str(&text).unwrap()),
        }
    }

    /// Writes a skill file by hand (not stamped: read-only to the plugin).
    pub fn hand_written(&self, name: &str, description: &str) {
        let dir = self.user_skills().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"))
            .unwrap();
    }
}

/// The usage ledger as every process recorded it: the `usage.json` snapshot with the records of
/// `usage.log` (and logs rotated for folding) applied, as
/// `{"skills": {name: {uses, createdMs, accepted: [{finding, by, atMs}]}}}`.
pub fn usage(state: &std::path::Path) -> serde_json::Value {
    let mut ledger: serde_json::Value = std::fs::read(state.join("usage.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| serde_json::json!({"skills": {}}));
    let folded: Vec<String> = ledger["folded"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default();
    let mut logs: Vec<String> = std::fs::read_dir(state)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("usage.log.") && !folded.contains(n))
        .collect();
    logs.sort();
    logs.push("usage.log".into());
    for log in logs {
        let text = std::fs::read_to_string(state.join(&log)).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let Some(skill) = v["s"].as_str() else { continue };
            let entry = &mut ledger["skills"][skill];
            if let (Some(finding), Some(ms)) = (v["a"].as_str(), v["t"].as_u64()) {
                let accepted = serde_json::json!({"finding": finding, "by": v["by"], "atMs": ms});
                match entry["accepted"].as_array_mut() {
                    Some(list) => list.push(accepted),
                    None => entry["accepted"] = serde_json::json!([accepted]),
                }
            } else if let Some(ms) = v["u"].as_u64() {
                entry["uses"] = (entry["uses"].as_u64().unwrap_or(0) + 1).into();
                entry["lastUsedMs"] = ms.into();
            } else if let Some(ms) = v["c"].as_u64()
                && entry["createdMs"].is_null()
            {
                entry["createdMs"] = ms.into();
            }
        }
    }
    ledger
}
