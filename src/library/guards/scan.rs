//! The credential scanner as the library uses it: the `self-evolve-scan` crate (its own crate so
//! the component builds this hot path at opt-level 3 while the rest stays built for size), its
//! findings adapted to the library's `Finding`, and JSON redaction for state the plugin
//! keeps. Rules, probes and judgements live in `crates/scan`.

use crate::library::guards::finding::{Finding, Severity};

pub use self_evolve_scan::{LineCounter, MAX_SECRET_FINDINGS, RuleId, fingerprint, redact_secrets};

/// Every credential in `text` (at most `MAX_SECRET_FINDINGS`), one finding per rule and line.
pub fn scan_secrets(text: &str) -> Vec<Finding> {
    self_evolve_scan::scan_secrets(text)
        .into_iter()
        .map(|f| Finding {
            rule: f.rule,
            severity: Severity::Secret,
            line: f.line,
            message: f.message,
            fingerprint: Some(f.fingerprint),
        })
        .collect()
}

/// Redacts every string in a JSON value (keys and numbers stay); returns how many changed.
pub fn redact_json(value: &mut serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(text) => match redact_secrets(text) {
            Some(clean) => {
                *text = clean;
                1
            }
            None => 0,
        },
        serde_json::Value::Array(items) => items.iter_mut().map(redact_json).sum(),
        serde_json::Value::Object(map) => map.values_mut().map(redact_json).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn findings_are_secrets_with_fingerprints_and_json_is_redacted_in_place() {
        let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
        let text = format!("the reviewer saw `aws_access_key_id = {key}` in config.py\n");
        let findings = scan_secrets(&text);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].severity, Severity::Secret);
        assert!(findings[0].fingerprint.as_deref().is_some_and(|f| f.starts_with("aws-access-key-id@")));
        let mut value = serde_json::json!({"findings": [{"claim": text, "line": 3}], "note": "plain"});
        assert_eq!(redact_json(&mut value), 1);
        assert!(!value.to_string().contains(&key));
        assert_eq!(value["findings"][0]["line"], 3);
    }
}
