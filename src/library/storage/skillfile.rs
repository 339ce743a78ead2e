//! `SKILL.md`: frontmatter + Markdown body. Parsing, the Agent Skills format rules, our
//! ownership stamp and lifecycle under `metadata`, and deterministic serialization.

use crate::library::storage::frontmatter::{self, Value, YamlError};
use std::collections::BTreeMap;

/// The stamp that marks a skill as ours (and so mutable).
pub const AUTHOR: &str = "self-evolve";

pub const KNOWN_KEYS: &[&str] = &["name", "description", "license", "compatibility", "metadata", "allowed-tools"];

/// Metadata keys this plugin owns.
pub mod meta {
    pub const AUTHORED_BY: &str = "authored-by";
    pub const CREATED_AT: &str = "created-at";
    /// The team library (machine) that created the skill, in a shared library.
    pub const LIBRARY: &str = "library";
    pub const UPDATED_AT: &str = "updated-at";
    pub const VERSION: &str = "version";
    pub const PINNED: &str = "pinned";
    pub const STATUS: &str = "status";
    /// Scanner findings the operator judged are not credentials (see `acknowledge`).
    pub const ACCEPTED_FINDINGS: &str = "accepted-findings";

    /// What the operator or the host owns: an agent's write never sets, changes or drops them
    /// (`SkillFile::keep_owned`). The operator's commands set `pinned` and acknowledge findings, the
    /// curator sets `status`, the host stamps the rest (`SkillFile::stamp`) and `library` on create.
    pub const OWNED: &[&str] =
        &[AUTHORED_BY, CREATED_AT, UPDATED_AT, VERSION, PINNED, STATUS, LIBRARY, ACCEPTED_FINDINGS];
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// Top-level frontmatter keys in source order.
    pub fields: Vec<(String, Value)>,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub message: String,
    /// 1-based line in the file, when known.
    pub line: Option<usize>,
}

/// One broken rule of the format. Errors for writes, warnings for reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub message: String,
    /// Tolerated in files this plugin did not write (`check` reports it as a warning):
    /// published skills exceed the description limit, and harnesses load them.
    pub lenient: bool,
}

impl SkillFile {
    /// Parses bytes as a SKILL.md. Refuses non-UTF-8, a missing or unclosed frontmatter,
    /// and YAML that is not a plain mapping (see `frontmatter::parse`).
    pub fn parse_bytes(bytes: &[u8]) -> Result<SkillFile, ParseError> {
        let text = std::str::from_utf8(bytes).map_err(|e| ParseError {
            message: format!("the file is not valid UTF-8 (first bad byte at offset {})", e.valid_up_to()),
            line: None,
        })?;
        SkillFile::parse(text)
    }

    pub fn parse(text: &str) -> Result<SkillFile, ParseError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let Some(rest) = strip_delimiter(text) else {
            return Err(ParseError {
                message: "the file must start with a `---` line opening the YAML frontmatter".into(),
                line: Some(1),
            });
        };
        let (yaml, body) = split_closing(rest).ok_or_else(|| ParseError {
            message: "the frontmatter is never closed: add a `---` line after it".into(),
            line: Some(1),
        })?;
        let fields = frontmatter::parse(yaml).map_err(|YamlError { message, line }| ParseError {
            message,
            // +1 for the opening `---` line; yaml-rust2 lines are 1-based.
            line: line.map(|l| l + 1),
        })?;
        Ok(SkillFile { fields, body: body.to_string() })
    }

    /// Deterministic text: known keys in canonical order, then the rest in source order;
    /// metadata keys sorted.
    pub fn to_text(&self) -> String {
        let mut ordered: Vec<(String, Value)> = Vec::with_capacity(self.fields.len());
        for key in KNOWN_KEYS {
            if let Some((k, v)) = self.fields.iter().find(|(k, _)| k == key) {
                let v = match (k.as_str(), v) {
                    ("metadata", Value::Map(entries)) => {
                        let mut sorted = entries.clone();
                        sorted.sort_by(|a, b| a.0.cmp(&b.0));
                        Value::Map(sorted)
                    }
                    _ => v.clone(),
                };
                ordered.push((k.clone(), v));
            }
        }
        ordered.extend(self.fields.iter().filter(|(k, _)| !KNOWN_KEYS.contains(&k.as_str())).cloned());
        let mut out = String::from("---\n");
        out.push_str(&frontmatter::emit(&ordered));
        out.push_str("---\n");
        out.push_str(&self.body);
        out
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_null()).and_then(Value::as_str)
    }

    pub fn set(&mut self, key: &str, value: Value) {
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.fields.push((key.to_string(), value)),
        }
    }

    pub fn name(&self) -> Option<&str> {
        self.get_str("name")
    }

    pub fn description(&self) -> Option<&str> {
        self.get_str("description")
    }

    /// `metadata` as strings (non-string values are left out; `validate` reports them).
    pub fn metadata(&self) -> BTreeMap<String, String> {
        match self.get("metadata") {
            Some(Value::Map(entries)) => {
                entries.iter().filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string()))).collect()
            }
            _ => BTreeMap::new(),
        }
    }

    pub fn meta(&self, key: &str) -> Option<String> {
        self.metadata().remove(key)
    }

    pub fn set_meta(&mut self, key: &str, value: &str) {
        let mut entries = match self.get("metadata") {
            Some(Value::Map(entries)) => entries.clone(),
            _ => Vec::new(),
        };
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = Value::str(value),
            None => entries.push((key.to_string(), Value::str(value))),
        }
        self.set("metadata", Value::Map(entries));
    }

    pub fn remove_meta(&mut self, key: &str) {
        if let Some((_, Value::Map(entries))) = self.fields.iter_mut().find(|(k, _)| k == "metadata") {
            entries.retain(|(k, _)| k != key);
        }
    }

    /// Whether this plugin wrote the skill (the ownership gate).
    pub fn is_ours(&self) -> bool {
        self.meta(meta::AUTHORED_BY).as_deref() == Some(AUTHOR)
    }

    pub fn is_pinned(&self) -> bool {
        self.meta(meta::PINNED).as_deref() == Some("true")
    }

    /// `active` unless the lifecycle says otherwise.
    pub fn status(&self) -> String {
        self.meta(meta::STATUS).unwrap_or_else(|| "active".into())
    }

    /// Sets every field the operator or the host owns (`meta::OWNED`) to what `previous` says,
    /// removing the ones it lacks: whatever the agent's text left out, changed or added.
    pub fn keep_owned(&mut self, previous: &SkillFile) {
        for key in meta::OWNED {
            match previous.meta(key) {
                Some(value) => self.set_meta(key, &value),
                None => self.remove_meta(key),
            }
        }
    }

    /// Stamps a skill as ours: created-at (kept when present), updated-at, version + 1.
    pub fn stamp(&mut self, now_iso: &str) {
        let version = self.meta(meta::VERSION).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0) + 1;
        self.set_meta(meta::AUTHORED_BY, AUTHOR);
        if self.meta(meta::CREATED_AT).is_none() {
            self.set_meta(meta::CREATED_AT, now_iso);
        }
        self.set_meta(meta::UPDATED_AT, now_iso);
        self.set_meta(meta::VERSION, &version.to_string());
    }

    /// The format's rules. `folder` is the skill's folder (or flat file stem) when known.
    pub fn validate(&self, folder: Option<&str>) -> Vec<Violation> {
        let mut out = Vec::new();
        let mut v = |rule: &'static str, message: String| {
            let lenient = rule == "description-too-long";
            out.push(Violation { rule, message, lenient })
        };
        match self.get("name") {
            None => v("name-missing", "`name` is required".into()),
            Some(value) => match value.as_str().filter(|_| !value.is_null()) {
                None => v("name-type", "`name` must be a string".into()),
                Some(name) => {
                    if let Err(why) = check_name(name) {
                        v("name-format", why);
                    }
                    if let Some(folder) = folder
                        && folder != name
                    {
                        v(
                            "name-folder",
                            format!("`name` is `{name}` but its folder is `{folder}`; they must be equal"),
                        );
                    }
                }
            },
        }
        match self.get("description") {
            None => v("description-missing", "`description` is required".into()),
            Some(value) => match value.as_str().filter(|_| !value.is_null()) {
                None => v("description-type", "`description` must be a non-empty string".into()),
                Some(text) => {
                    let n = text.chars().count();
                    if text.trim().is_empty() {
                        v("description-empty", "`description` must say what the skill does and when to use it".into());
                    } else if n > 1024 {
                        v("description-too-long", format!("`description` must be at most 1024 characters, found {n}"));
                    }
                }
            },
        }
        if let Some(value) = self.get("compatibility") {
            match value.as_str() {
                Some(text) if text.chars().count() <= 500 => {}
                Some(text) => v(
                    "compatibility-length",
                    format!("`compatibility` must be at most 500 characters, found {}", text.chars().count()),
                ),
                None => v("compatibility-type", "`compatibility` must be a string".into()),
            }
        }
        if let Some(value) = self.get("license")
            && value.as_str().is_none()
        {
            v("license-type", "`license` must be a string".into());
        }
        if let Some(value) = self.get("allowed-tools") {
            let ok = match value {
                Value::Str { .. } => true,
                Value::Seq(items) => items.iter().all(|i| matches!(i, Value::Str { .. })),
                Value::Map(_) => false,
            };
            if !ok {
                v("allowed-tools-type", "`allowed-tools` must be a string (or a list of strings)".into());
            }
        }
        match self.get("metadata") {
            None => {}
            Some(Value::Map(entries)) => {
                for (key, value) in entries {
                    if value.as_str().is_none() {
                        v("metadata-type", format!("`metadata.{key}` must be a string"));
                    }
                }
            }
            Some(_) => v("metadata-type", "`metadata` must be a mapping of strings to strings".into()),
        }
        for (key, _) in &self.fields {
            if !KNOWN_KEYS.contains(&key.as_str()) {
                v(
                    "unknown-key",
                    format!(
                        "unknown top-level key `{key}`; the format allows {} (put anything else under `metadata`)",
                        KNOWN_KEYS.join(", ")
                    ),
                );
            }
        }
        out
    }
}

/// 1–64 of `a-z 0-9 -`, no leading, trailing or doubled `-`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("a name is 1–64 characters, `{name}` has {}", name.chars().count()));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')) {
        return Err(format!("`{name}` contains `{bad}`; use only lowercase letters a-z, digits and `-`"));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!("`{name}` has a leading, trailing or doubled `-`"));
    }
    Ok(())
}

fn strip_delimiter(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---")?;
    let rest = rest.trim_start_matches([' ', '\t']);
    rest.strip_prefix("\r\n").or_else(|| rest.strip_prefix('\n'))
}

/// Splits at the first line that is exactly `---` (trailing spaces allowed).
fn split_closing(rest: &str) -> Option<(&str, &str)> {
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']).trim_end_matches([' ', '\t']);
        if bare == "---" {
            return Some((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    const GOOD: &str = "---\nname: pdf-tools\ndescription: Extract text from PDFs. Use when a PDF is given.\n---\n# PDF tools\n\nBody.\n";

    #[test]
    fn parses_splits_and_round_trips() {
        let skill = SkillFile::parse(GOOD).unwrap();
        assert_eq!(skill.name(), Some("pdf-tools"));
        assert_eq!(skill.body, "# PDF tools\n\nBody.\n");
        assert!(skill.validate(Some("pdf-tools")).is_empty());
        assert_eq!(skill.to_text(), GOOD);
        assert_eq!(SkillFile::parse(&skill.to_text()).unwrap(), skill);
    }

    #[test]
    fn crlf_bom_and_a_body_holding_rules_are_fine() {
        let text = "\u{feff}---\r\nname: a\r\ndescription: b\r\n---\r\nbody\n---\nmore\n";
        let skill = SkillFile::parse(text).unwrap();
        assert_eq!(skill.name(), Some("a"));
        assert_eq!(skill.body, "body\n---\nmore\n");
    }

    #[test]
    fn structural_errors_name_the_problem() {
        assert!(SkillFile::parse("name: x\n").unwrap_err().message.contains("start with a `---`"));
        assert!(SkillFile::parse("---\nname: x\n").unwrap_err().message.contains("never closed"));
        assert!(SkillFile::parse_bytes(b"---\nname: \xff\n---\n").unwrap_err().message.contains("UTF-8"));
        let e = SkillFile::parse("---\nname: x\ndescription: [oops\n---\n").unwrap_err();
        assert!(e.line.is_some(), "{e:?}");
    }

    #[test]
    fn format_rules() {
        let rules = |text: &str, folder: Option<&str>| -> Vec<&'static str> {
            SkillFile::parse(text).unwrap().validate(folder).iter().map(|v| v.rule).collect()
        };
        assert_eq!(rules("---\ndescription: d\n---\n", None), ["name-missing"]);
        assert_eq!(rules("---\nname: Bad_Name\ndescription: d\n---\n", None), ["name-format"]);
        assert_eq!(rules("---\nname: a--b\ndescription: d\n---\n", None), ["name-format"]);
        assert_eq!(rules(&format!("---\nname: {}\ndescription: d\n---\n", "a".repeat(65)), None), ["name-format"]);
        assert_eq!(rules("---\nname: a\ndescription: d\n---\n", Some("b")), ["name-folder"]);
        assert_eq!(rules("---\nname: a\ndescription: \"\"\n---\n", None), ["description-empty"]);
        assert_eq!(rules("---\nname: a\ndescription:\n---\n", None), ["description-type"]);
        assert_eq!(
            rules(&format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025)), None),
            ["description-too-long"]
        );
        assert_eq!(
            rules(&format!("---\nname: a\ndescription: d\ncompatibility: {}\n---\n", "c".repeat(501)), None),
            ["compatibility-length"]
        );
        assert_eq!(rules("---\nname: a\ndescription: d\nmetadata:\n  k: [1]\n---\n", None), ["metadata-type"]);
        assert_eq!(rules("---\nname: a\ndescription: d\nmetadata: x\n---\n", None), ["metadata-type"]);
        assert_eq!(rules("---\nname: a\ndescription: d\nversion: 2\n---\n", None), ["unknown-key"]);
        assert!(rules("---\nname: a\ndescription: d\nallowed-tools: Bash Read\nlicense: MIT\n---\n", None).is_empty());
    }

    #[test]
    fn stamp_and_lifecycle_live_under_metadata() {
        let mut skill = SkillFile::parse(GOOD).unwrap();
        assert!(!skill.is_ours());
        skill.stamp("2026-01-01T00:00:00.000Z");
        skill.stamp("2026-01-02T00:00:00.000Z");
        assert!(skill.is_ours());
        assert_eq!(skill.meta(meta::VERSION).as_deref(), Some("2"));
        assert_eq!(skill.meta(meta::CREATED_AT).as_deref(), Some("2026-01-01T00:00:00.000Z"));
        assert_eq!(skill.meta(meta::UPDATED_AT).as_deref(), Some("2026-01-02T00:00:00.000Z"));
        assert_eq!(skill.status(), "active");
        assert!(skill.validate(Some("pdf-tools")).is_empty(), "the stamp adds no top-level keys");
        let text = skill.to_text();
        assert!(text.contains("metadata:\n  authored-by: self-evolve\n  created-at:"), "{text}");
        assert_eq!(SkillFile::parse(&text).unwrap().to_text(), text);
    }
}
