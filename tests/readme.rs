//! The configuration reference (docs/configuration.md) matches the plugin's key list and defaults.

use self_evolve_plugin::config::{DefaultValue, KEYS};

#[test]
fn every_config_key_is_documented_once_with_its_default() {
    let page = "docs/configuration.md";
    let doc = std::fs::read_to_string(format!("{}/{page}", env!("CARGO_MANIFEST_DIR"))).unwrap();
    for key in KEYS {
        let default = match key.default {
            DefaultValue::Bool(b) => b.to_string(),
            DefaultValue::Int(n) => n.to_string(),
            DefaultValue::Float(f) => f.to_string(),
            DefaultValue::Str(s) => s.to_string(),
        };
        let row = format!("| `{}` | `{default}` |", key.path);
        assert_eq!(doc.matches(&row).count(), 1, "{page} needs exactly one row starting {row}");
    }
    let rows = doc.lines().filter(|l| l.starts_with("| `") && l.contains("` | `")).count();
    assert!(rows >= KEYS.len());
}
