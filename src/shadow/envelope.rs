//! D3: the anchored report envelope. A reviewer's report is validated exactly as the seed
//! states before it is accepted; relays sort by severity; provenance keeps metadata only.

use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

pub const VERDICTS: [&str; 4] = ["challenge", "gap", "confirm", "uncertain"];
pub const QUIET: [&str; 2] = ["silent", "not_relevant"];
pub const MAX_REFS: usize = 8;
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    pub verdict: String,
    pub content: String,
    pub severity: Option<f64>,
    pub refs: Vec<u64>,
}

impl Envelope {
    pub fn is_quiet(&self) -> bool {
        QUIET.contains(&self.verdict.as_str())
    }

    /// Durable provenance: verdict, refs and optional severity — never the content.
    pub fn provenance(&self) -> Value {
        let mut v = json!({"verdict": self.verdict, "refs": self.refs});
        if let Some(s) = self.severity {
            v["severity"] = json!(s);
        }
        v
    }
}

/// Validates a report against the refs present in the exact projection the reviewer saw.
pub fn validate(report: &Value, projection_refs: &BTreeSet<u64>) -> Result<Envelope, String> {
    let obj: &Map<String, Value> = report.as_object().ok_or("a report is a JSON object")?;
    let verdict = obj.get("verdict").and_then(Value::as_str).ok_or("a report needs a `verdict`")?;
    let content = match obj.get("content") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err("`content` must be a string".into()),
    };
    if QUIET.contains(&verdict) {
        if !content.is_empty() {
            return Err(format!("a `{verdict}` report carries no content"));
        }
        if let Some(extra) = obj.keys().find(|k| k.as_str() != "verdict" && k.as_str() != "content") {
            return Err(format!("a `{verdict}` report carries no envelope fields, found `{extra}`"));
        }
        return Ok(Envelope { verdict: verdict.into(), content: String::new(), severity: None, refs: vec![] });
    }
    if !VERDICTS.contains(&verdict) {
        return Err(format!(
            "`verdict` must be one of {}, silent or not_relevant; found `{verdict}`",
            VERDICTS.join(", ")
        ));
    }
    if content.trim().is_empty() {
        return Err("a report needs non-empty `content`".into());
    }
    if let Some(extra) = obj.keys().find(|k| !["verdict", "content", "severity", "refs"].contains(&k.as_str())) {
        return Err(format!("unknown envelope field `{extra}`"));
    }
    let severity = match obj.get("severity") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let s = v.as_f64().filter(|s| s.is_finite() && (0.0..=1.0).contains(s));
            Some(s.ok_or("`severity` must be a finite number from 0 through 1")?)
        }
    };
    let refs = match obj.get("refs") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => {
            if list.len() > MAX_REFS {
                return Err(format!("at most {MAX_REFS} refs, found {}", list.len()));
            }
            let mut refs = Vec::with_capacity(list.len());
            for r in list {
                let n = r.as_u64().filter(|n| *n >= 1 && *n <= MAX_SAFE_INTEGER && r.is_u64());
                let n = n.ok_or("refs are positive safe integers")?;
                if refs.last().is_some_and(|prev| *prev >= n) {
                    return Err("refs must be ascending and unique".into());
                }
                if !projection_refs.contains(&n) {
                    return Err(format!("ref {n} is not in the projection the reviewer saw"));
                }
                refs.push(n);
            }
            refs
        }
        Some(_) => return Err("`refs` must be a list".into()),
    };
    Ok(Envelope { verdict: verdict.into(), content: content.into(), severity, refs })
}

/// Relay order: severity descending (unrated last), stable otherwise.
pub fn relay_order(envelopes: &mut [Envelope]) {
    envelopes.sort_by(|a, b| b.severity.unwrap_or(-1.0).total_cmp(&a.severity.unwrap_or(-1.0)));
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn refs() -> BTreeSet<u64> {
        (1..=20).collect()
    }

    #[test]
    fn accepting_cases() {
        let ok = [
            json!({"verdict": "challenge", "content": "the test was skipped", "severity": 0.8, "refs": [3, 7]}),
            json!({"verdict": "gap", "content": "cannot see the output"}),
            json!({"verdict": "confirm", "content": "fine", "severity": 0, "refs": []}),
            json!({"verdict": "uncertain", "content": "maybe", "severity": 1, "refs": [1, 2, 3, 4, 5, 6, 7, 8]}),
            json!({"verdict": "silent"}),
            json!({"verdict": "not_relevant", "content": ""}),
        ];
        for report in ok {
            validate(&report, &refs()).unwrap_or_else(|e| panic!("{report}: {e}"));
        }
    }

    #[test]
    fn rejecting_cases() {
        let bad = [
            (json!({"verdict": "approve", "content": "x"}), "verdict"),
            (json!({"content": "x"}), "needs a `verdict`"),
            (json!({"verdict": "challenge", "content": "  "}), "non-empty"),
            (json!({"verdict": "challenge", "content": "x", "severity": 1.5}), "severity"),
            (json!({"verdict": "challenge", "content": "x", "severity": "high"}), "severity"),
            (json!({"verdict": "challenge", "content": "x", "refs": [3, 2]}), "ascending"),
            (json!({"verdict": "challenge", "content": "x", "refs": [2, 2]}), "unique"),
            (json!({"verdict": "challenge", "content": "x", "refs": [0]}), "positive"),
            (json!({"verdict": "challenge", "content": "x", "refs": [1.5]}), "positive"),
            (json!({"verdict": "challenge", "content": "x", "refs": [-1]}), "positive"),
            (json!({"verdict": "challenge", "content": "x", "refs": [9007199254740992u64]}), "safe"),
            (json!({"verdict": "challenge", "content": "x", "refs": [1, 2, 3, 4, 5, 6, 7, 8, 9]}), "at most 8"),
            (json!({"verdict": "challenge", "content": "x", "refs": [99]}), "not in the projection"),
            (json!({"verdict": "challenge", "content": "x", "extra": 1}), "unknown envelope field"),
            (json!({"verdict": "silent", "content": "something"}), "no content"),
            (json!({"verdict": "not_relevant", "severity": 0.2}), "no envelope fields"),
            (json!({"verdict": "silent", "refs": []}), "no envelope fields"),
            (json!("challenge"), "JSON object"),
        ];
        for (report, needle) in bad {
            let err = validate(&report, &refs()).unwrap_err();
            assert!(err.contains(needle), "{report}: {err}");
        }
    }

    #[test]
    fn relays_sort_by_severity_and_provenance_keeps_metadata_only() {
        let mut list: Vec<Envelope> = [0.2, 0.9, 0.5]
            .iter()
            .map(|s| {
                validate(&json!({"verdict": "challenge", "content": "secret words", "severity": s}), &refs()).unwrap()
            })
            .collect();
        list.push(validate(&json!({"verdict": "gap", "content": "unrated"}), &refs()).unwrap());
        relay_order(&mut list);
        let order: Vec<Option<f64>> = list.iter().map(|e| e.severity).collect();
        assert_eq!(order, [Some(0.9), Some(0.5), Some(0.2), None]);
        let p = list[0].provenance();
        assert_eq!(p, json!({"verdict": "challenge", "refs": [], "severity": 0.9}));
        assert!(!p.to_string().contains("secret"));
    }
}
