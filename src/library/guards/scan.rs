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

/// `value` as compact JSON with every string value redacted, as `redact_json` on its
/// `serde_json::to_value` would leave it (keys and numbers stay), written in one pass: no
/// `Value` tree is built and copied (a held session's journal record at every event, `session_journal`).
/// Fields keep the order `value` serializes them in.
pub fn to_redacted_vec<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Redacting::default());
    value.serialize(&mut serializer)?;
    Ok(out)
}

/// A compact formatter that collects each string value whole (its unescaped text) and writes it
/// redacted when it ends; a key passes through as written.
#[derive(Default)]
struct Redacting {
    in_key: bool,
    /// The string value being collected, when one is.
    text: Option<String>,
}

impl serde_json::ser::Formatter for Redacting {
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        self.in_key = true;
        if first { Ok(()) } else { writer.write_all(b",") }
    }

    fn end_object_key<W: ?Sized + std::io::Write>(&mut self, _writer: &mut W) -> std::io::Result<()> {
        self.in_key = false;
        Ok(())
    }

    fn begin_string<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        if self.in_key {
            return writer.write_all(b"\"");
        }
        self.text = Some(String::new());
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        match &mut self.text {
            Some(text) => {
                text.push_str(fragment);
                Ok(())
            }
            None => writer.write_all(fragment.as_bytes()),
        }
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        use serde_json::ser::CharEscape;
        let Some(text) = &mut self.text else {
            return serde_json::ser::CompactFormatter.write_char_escape(writer, escape);
        };
        text.push(match escape {
            CharEscape::Quote => '"',
            CharEscape::ReverseSolidus => '\\',
            CharEscape::Solidus => '/',
            CharEscape::Backspace => '\u{8}',
            CharEscape::FormFeed => '\u{c}',
            CharEscape::LineFeed => '\n',
            CharEscape::CarriageReturn => '\r',
            CharEscape::Tab => '\t',
            CharEscape::AsciiControl(byte) => char::from(byte),
        });
        Ok(())
    }

    fn end_string<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        let Some(text) = self.text.take() else {
            return writer.write_all(b"\"");
        };
        let clean = redact_secrets(&text);
        serde_json::to_writer(writer, clean.as_deref().unwrap_or(&text)).map_err(std::io::Error::other)
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

    #[test]
    fn redacted_vec_reads_back_as_redact_json_leaves_a_value() {
        let key = format!("{}{}", "AKIA", "Z7QX3M2K9LPT4WNB");
        let pem = format!(
            "-----BEGIN {}PRIVATE KEY-----\n{}\n-----END {}PRIVATE KEY-----",
            "RSA ",
            "MIIEow".repeat(40),
            "RSA "
        );
        let mut value = serde_json::json!({
            "plain": "tabs\tquotes\" back\\slash \u{1} ünï",
            "secret": format!("key {key} here"),
            "pem": pem,
            format!("key {key}"): [format!("{key}"), 3, null, true, 2.5, {"deep": {"n": -7, "s": "ok"}}],
            "empty": "",
            "n": 18446744073709551615u64,
        });
        let written = to_redacted_vec(&value).unwrap();
        let read: serde_json::Value = serde_json::from_slice(&written).unwrap();
        redact_json(&mut value);
        assert_eq!(read, value);
        assert!(!read["pem"].as_str().unwrap().contains("MIIEow"), "a multi-line credential is redacted whole");
        assert!(!read["secret"].as_str().unwrap().contains(&key));
        // A key stays as written, as `redact_json` leaves keys.
        assert!(read.as_object().unwrap().contains_key(&format!("key {key}")));
    }
}
