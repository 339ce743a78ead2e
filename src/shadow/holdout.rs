//! D7: holdout discipline. Exact literals from the operator's `shadow-minds/holdout-keys.json`
//! (in the state root; the plugin never writes it) are replaced on every model-visible path,
//! and a final check refuses to persist anything still holding one. Keys never appear in
//! errors, status, provenance or logs.

use crate::host::{FsError, Host, Root};
use serde_json::Value;

pub const KEYS_PATH: &str = "shadow-minds/holdout-keys.json";
pub const MASK: &str = "[holdout]";

pub struct Holdout {
    /// Longest first, so a key containing another is replaced whole.
    keys: Vec<String>,
}

impl Holdout {
    /// Reads the key file: `["k1", "k2"]` or `{"keys": [...]}`. Missing, malformed, empty or
    /// duplicated keys reject the operation.
    pub fn load(host: &impl Host) -> Result<Holdout, String> {
        let bytes = match host.read(&Root::State, KEYS_PATH) {
            Ok(bytes) => bytes,
            Err(FsError::NotFound) => {
                return Err(format!("holdout is on but {KEYS_PATH} is missing; the operator must create it"));
            }
            Err(err) => return Err(format!("holdout keys unreadable: {err}")),
        };
        let value: Value = serde_json::from_slice(&bytes).map_err(|_| format!("{KEYS_PATH} is not valid JSON"))?;
        let list = match &value {
            Value::Array(list) => list,
            Value::Object(map) => {
                map.get("keys").and_then(Value::as_array).ok_or(format!("{KEYS_PATH} needs a `keys` list"))?
            }
            _ => return Err(format!("{KEYS_PATH} must be a list of strings")),
        };
        if list.is_empty() {
            return Err(format!("{KEYS_PATH} holds no keys"));
        }
        let mut keys: Vec<String> = Vec::with_capacity(list.len());
        for (i, key) in list.iter().enumerate() {
            let key = key.as_str().ok_or(format!("{KEYS_PATH}: entry {} is not a string", i + 1))?;
            if key.is_empty() {
                return Err(format!("{KEYS_PATH}: entry {} is empty", i + 1));
            }
            if keys.iter().any(|k| k == key) {
                return Err(format!("{KEYS_PATH}: entry {} duplicates an earlier key", i + 1));
            }
            keys.push(key.to_string());
        }
        keys.sort_by_key(|k| std::cmp::Reverse(k.len()));
        Ok(Holdout { keys })
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for key in &self.keys {
            if out.contains(key.as_str()) {
                out = out.replace(key.as_str(), MASK);
            }
        }
        out
    }

    /// The final invariant before anything is persisted or relayed.
    pub fn check(&self, text: &str) -> Result<(), String> {
        if self.keys.iter().any(|k| text.contains(k.as_str())) {
            return Err("refusing to persist: a holdout literal is still present".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeHost;
    use crate::host::WriteMode;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn with_keys(text: &str) -> FakeHost {
        let host = FakeHost::new(0);
        host.write(&Root::State, KEYS_PATH, text.as_bytes(), WriteMode::CreateNew).unwrap();
        host
    }

    #[test]
    fn every_key_file_fault_rejects_without_naming_a_key() {
        let faults = [
            (None, "missing"),
            (Some("{not json"), "not valid JSON"),
            (Some("[]"), "holds no keys"),
            (Some(r#"["alpha-secret", ""]"#), "entry 2 is empty"),
            (Some(r#"["alpha-secret", "alpha-secret"]"#), "duplicates"),
            (Some(r#"[1]"#), "not a string"),
            (Some(r#"{"other": []}"#), "needs a `keys` list"),
        ];
        for (text, needle) in faults {
            let host = match text {
                Some(t) => with_keys(t),
                None => FakeHost::new(0),
            };
            let err = Holdout::load(&host).err().unwrap();
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(!err.contains("alpha-secret"));
        }
    }

    #[test]
    fn literals_are_replaced_and_the_final_check_catches_leftovers() {
        let h = Holdout::load(&with_keys(r#"{"keys": ["answer-42", "the answer-42 key"]}"#)).unwrap();
        assert_eq!(h.redact("use the answer-42 key, then answer-42"), "use [holdout], then [holdout]");
        assert!(h.check("clean text").is_ok());
        let err = h.check("oops answer-42").unwrap_err();
        assert!(!err.contains("answer-42"));
    }
}
