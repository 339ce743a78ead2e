//! `usage.json` in the state root: per-skill use counts, last use and creation, and the
//! curator's last run. Written atomically; a corrupt ledger is set aside, never fatal.

use crate::host::{FsError, Host, Level, Root, WriteMode};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const PATH: &str = "usage.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub uses: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_ms: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ledger {
    #[serde(default = "version")]
    pub version: u32,
    #[serde(default)]
    pub skills: BTreeMap<String, Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curator_last_run_ms: Option<u64>,
}

fn version() -> u32 {
    1
}

impl Ledger {
    /// Loads the ledger; a missing one is empty, a corrupt one is renamed aside with a warning.
    pub fn load(host: &impl Host) -> Ledger {
        let bytes = match host.read(&Root::State, PATH) {
            Ok(bytes) => bytes,
            Err(FsError::NotFound) => return Ledger { version: 1, ..Ledger::default() },
            Err(err) => {
                host.log(Level::Warn, &format!("ledger {PATH} unreadable ({err}); starting empty"));
                return Ledger { version: 1, ..Ledger::default() };
            }
        };
        match serde_json::from_slice::<Ledger>(&bytes) {
            Ok(ledger) => ledger,
            Err(err) => {
                let aside = format!("usage.corrupt-{}.json", host.now_ms());
                let moved = host.rename(&Root::State, PATH, &aside);
                host.log(
                    Level::Warn,
                    &format!(
                        "ledger {PATH} is corrupt ({err}); {} and starting empty",
                        if moved.is_ok() { format!("set aside as {aside}") } else { "could not set it aside".into() }
                    ),
                );
                Ledger { version: 1, ..Ledger::default() }
            }
        }
    }

    /// Writes atomically (temp + rename) in the state root.
    pub fn save(&self, host: &impl Host) -> Result<(), FsError> {
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| FsError::Io(e.to_string()))?;
        let tmp = ".usage.json.self-evolve-tmp";
        let _ = host.remove_file(&Root::State, tmp);
        host.write(&Root::State, tmp, &bytes, WriteMode::CreateNew)?;
        host.rename(&Root::State, tmp, PATH).inspect_err(|_| {
            let _ = host.remove_file(&Root::State, tmp);
        })
    }

    pub fn record_use(&mut self, skill: &str, now_ms: u64) {
        let usage = self.skills.entry(skill.to_string()).or_default();
        usage.uses += 1;
        usage.last_used_ms = Some(now_ms);
    }

    pub fn record_created(&mut self, skill: &str, now_ms: u64) {
        let usage = self.skills.entry(skill.to_string()).or_default();
        usage.created_ms.get_or_insert(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn round_trips_and_counts() {
        let host = FakeHost::new(1_000);
        let mut ledger = Ledger::load(&host);
        ledger.record_created("pdf", 1_000);
        ledger.record_use("pdf", 2_000);
        ledger.record_use("pdf", 3_000);
        ledger.save(&host).unwrap();
        let again = Ledger::load(&host);
        assert_eq!(again.skills["pdf"], Usage { uses: 2, last_used_ms: Some(3_000), created_ms: Some(1_000) });
        assert!(host.file(&Root::State, ".usage.json.self-evolve-tmp").is_none(), "no temp file left");
    }

    #[test]
    fn a_corrupt_ledger_is_set_aside_with_a_warning() {
        let host = FakeHost::new(5_000);
        host.write(&Root::State, PATH, b"{not json", WriteMode::CreateNew).unwrap();
        let ledger = Ledger::load(&host);
        assert!(ledger.skills.is_empty());
        assert_eq!(host.file(&Root::State, "usage.corrupt-5000.json").as_deref(), Some(&b"{not json"[..]));
        assert!(host.logged("corrupt"));
    }
}
