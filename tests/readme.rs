//! The README's configuration table matches the plugin's key list and defaults.

use self_evolve_plugin::config::{DefaultValue, KEYS};

#[test]
fn every_config_key_is_documented_once_with_its_default() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for key in KEYS {
        let default = match key.default {
            DefaultValue::Bool(b) => b.to_string(),
            DefaultValue::Int(n) => n.to_string(),
            DefaultValue::Float(f) => f.to_string(),
            DefaultValue::Str(s) => s.to_string(),
        };
        let row = format!("| `{}` | `{default}` |", key.path);
        assert_eq!(readme.matches(&row).count(), 1, "README needs exactly one row starting {row}");
    }
    let rows = readme.lines().filter(|l| l.starts_with("| `") && l.contains("` | `")).count();
    assert!(rows >= KEYS.len());
}
