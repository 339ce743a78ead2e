//! YAML frontmatter as a small value tree: parsed from yaml-rust2 events (refusing anchors,
//! aliases, tags and oversized or deep documents) and emitted deterministically.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

/// Largest frontmatter accepted, in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// Deepest nesting of mappings and sequences accepted.
pub const MAX_DEPTH: usize = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Any scalar, as its text. `plain` marks unquoted scalars (which YAML may read as
    /// numbers, booleans or null).
    Str {
        text: String,
        plain: bool,
    },
    Seq(Vec<Value>),
    /// Keys in source order.
    Map(Vec<(String, Value)>),
}

impl Value {
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str { text: text.into(), plain: false }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str { text, .. } => Some(text),
            _ => None,
        }
    }

    /// A plain `~`, `null` or empty scalar.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Str { text, plain: true } if text.is_empty() || text == "~" || text.eq_ignore_ascii_case("null"))
    }

    fn same(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Str { text: a, .. }, Value::Str { text: b, .. }) => a == b,
            (Value::Seq(a), Value::Seq(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same(y)),
            (Value::Map(a), Value::Map(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|((ka, va), (kb, vb))| ka == kb && va.same(vb))
            }
            _ => false,
        }
    }
}

/// Equality that ignores scalar style (what a round trip must preserve).
pub fn same_content(a: &[(String, Value)], b: &[(String, Value)]) -> bool {
    Value::Map(a.to_vec()).same(&Value::Map(b.to_vec()))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub message: String,
    /// 1-based line within the frontmatter, when known.
    pub line: Option<usize>,
}

fn err(message: impl Into<String>, line: Option<usize>) -> YamlError {
    YamlError { message: message.into(), line }
}

/// Parses a frontmatter document whose top level must be a mapping with string keys.
pub fn parse(text: &str) -> Result<Vec<(String, Value)>, YamlError> {
    if text.len() > MAX_FRONTMATTER_BYTES {
        return Err(err(format!("frontmatter is {} bytes; the limit is {MAX_FRONTMATTER_BYTES}", text.len()), None));
    }
    let mut parser = Parser::new_from_str(text);
    // Containers under construction: (key waiting for its value, partial value).
    enum Frame {
        Map(Vec<(String, Value)>, Option<String>),
        Seq(Vec<Value>),
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Value> = None;
    let mut documents = 0;
    loop {
        let (event, mark) =
            parser.next_token().map_err(|e| err(format!("invalid YAML: {}", e.info()), Some(e.marker().line())))?;
        let line = Some(mark.line());
        let value = match event {
            Event::StreamEnd => break,
            Event::StreamStart | Event::Nothing | Event::DocumentEnd => continue,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(err("the frontmatter holds more than one YAML document", line));
                }
                continue;
            }
            Event::Alias(_) => return Err(err("YAML aliases (*name) are not allowed in skill frontmatter", line)),
            Event::Scalar(text, style, anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                Some(Value::Str { text, plain: style == TScalarStyle::Plain })
            }
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) if stack.len() >= MAX_DEPTH => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                return Err(err(format!("the frontmatter nests deeper than {MAX_DEPTH} levels"), line));
            }
            Event::SequenceStart(anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                stack.push(Frame::Seq(Vec::new()));
                None
            }
            Event::MappingStart(anchor, tag) => {
                refuse_anchor_or_tag(anchor, tag.is_some(), line)?;
                stack.push(Frame::Map(Vec::new(), None));
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq(items)) => Some(Value::Seq(items)),
                _ => return Err(err("unbalanced sequence", line)),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map(entries, None)) => Some(Value::Map(entries)),
                _ => return Err(err("unbalanced mapping", line)),
            },
        };
        let Some(value) = value else { continue };
        match stack.last_mut() {
            None => root = Some(value),
            Some(Frame::Seq(items)) => items.push(value),
            Some(Frame::Map(entries, pending)) => match pending.take() {
                None => match value {
                    Value::Str { text, .. } => {
                        if entries.iter().any(|(k, _)| *k == text) {
                            return Err(err(format!("duplicate key `{text}`"), line));
                        }
                        *pending = Some(text);
                    }
                    _ => return Err(err("mapping keys must be plain strings", line)),
                },
                Some(key) => entries.push((key, value)),
            },
        }
    }
    match root {
        Some(Value::Map(entries)) => Ok(entries),
        None => Ok(Vec::new()),
        Some(Value::Str { text, plain: true }) if text.is_empty() => Ok(Vec::new()),
        Some(_) => Err(err("the frontmatter must be a mapping of keys to values", Some(1))),
    }
}

fn refuse_anchor_or_tag(anchor: usize, tagged: bool, line: Option<usize>) -> Result<(), YamlError> {
    if anchor > 0 {
        return Err(err("YAML anchors (&name) are not allowed in skill frontmatter", line));
    }
    if tagged {
        return Err(err("YAML tags (!tag) are not allowed in skill frontmatter", line));
    }
    Ok(())
}

/// Emits a mapping as block YAML, keys in the given order. Same input, same bytes.
pub fn emit(entries: &[(String, Value)]) -> String {
    let mut out = String::new();
    emit_map(entries, 0, &mut out);
    out
}

fn emit_map(entries: &[(String, Value)], indent: usize, out: &mut String) {
    for (key, value) in entries {
        push_indent(out, indent);
        out.push_str(&scalar(key));
        out.push(':');
        emit_child(value, indent, out);
    }
}

fn emit_child(value: &Value, indent: usize, out: &mut String) {
    match value {
        Value::Str { text, .. } => {
            out.push(' ');
            out.push_str(&block_or_scalar(text, indent + 2));
            out.push('\n');
        }
        Value::Map(entries) if entries.is_empty() => out.push_str(" {}\n"),
        Value::Seq(items) if items.is_empty() => out.push_str(" []\n"),
        Value::Map(entries) => {
            out.push('\n');
            emit_map(entries, indent + 2, out);
        }
        Value::Seq(items) => {
            out.push('\n');
            for item in items {
                push_indent(out, indent + 2);
                out.push('-');
                emit_child(item, indent + 2, out);
            }
        }
    }
}

fn push_indent(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A multi-line text as a `|-` literal block when that is exact, else a scalar.
fn block_or_scalar(text: &str, indent: usize) -> String {
    let literal_ok = text.contains('\n')
        && !text.starts_with([' ', '\n'])
        && !text.ends_with('\n')
        && !text.chars().any(|c| c.is_control() && c != '\n')
        && text.lines().all(|l| !l.ends_with(' ') && !l.ends_with('\t'));
    if !literal_ok {
        return scalar(text);
    }
    let mut out = String::from("|-");
    for line in text.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.extend(std::iter::repeat_n(' ', indent));
            out.push_str(line);
        }
    }
    out
}

/// A scalar plain when YAML would read it back as this same string, else double-quoted.
pub fn scalar(text: &str) -> String {
    if plain_safe(text) { text.to_string() } else { quoted(text) }
}

fn plain_safe(text: &str) -> bool {
    let Some(first) = text.chars().next() else { return false };
    if text.trim() != text || "-?:,[]{}#&*!|>'\"%@`".contains(first) || first.is_ascii_digit() || "+.".contains(first) {
        return false;
    }
    if text.contains(": ") || text.contains(" #") || text.ends_with(':') || text.chars().any(|c| c.is_control()) {
        return false;
    }
    let lower = text.to_ascii_lowercase();
    !matches!(
        lower.as_str(),
        "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "~" | "y" | "n" | ".nan" | ".inf"
    )
}

fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn s(text: &str) -> Value {
        Value::str(text)
    }

    #[test]
    fn reads_quoted_escaped_block_and_commented_yaml() {
        let doc = "# a comment\nname: my-skill # trailing comment\ndescription: \"Tab\\there, \\\"quoted\\\", \\u00e9\"\nlicense: 'it''s fine'\nnotes: |-\n  line one\n\n  line three\nmetadata:\n  a: b\n";
        let entries = parse(doc).unwrap();
        let get = |k: &str| entries.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(get("name").as_str(), Some("my-skill"));
        assert_eq!(get("description").as_str(), Some("Tab\there, \"quoted\", é"));
        assert_eq!(get("license").as_str(), Some("it's fine"));
        assert_eq!(get("notes").as_str(), Some("line one\n\nline three"));
        assert_eq!(get("metadata"), Value::Map(vec![("a".into(), Value::Str { text: "b".into(), plain: true })]));
    }

    #[test]
    fn refuses_anchors_aliases_tags_and_bombs() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        assert!(parse(bomb).unwrap_err().message.contains("anchors"));
        assert!(parse("a: *x\n").is_err());
        assert!(parse("a: !!python/object x\n").unwrap_err().message.contains("tags"));
        let big = format!("description: {}\n", "x".repeat(MAX_FRONTMATTER_BYTES));
        assert!(parse(&big).unwrap_err().message.contains("limit"));
        let deep = format!("a: {}1{}\n", "[".repeat(40), "]".repeat(40));
        assert!(parse(&deep).unwrap_err().message.contains("deeper"));
        assert!(parse("a: 1\na: 2\n").unwrap_err().message.contains("duplicate key"));
        assert!(parse("- a\n- b\n").unwrap_err().message.contains("mapping"));
        assert!(parse("a: [unclosed\n").unwrap_err().line.is_some());
    }

    #[test]
    fn emits_what_it_reads_back_identically() {
        let entries = vec![
            ("name".to_string(), s("my-skill")),
            ("description".to_string(), s("Use when: things \"happen\" # not a comment")),
            ("multi".to_string(), s("first line\n\n  indented line\nlast")),
            ("odd".to_string(), s(" leading space\nand trailing \n")),
            ("looks-like".to_string(), Value::Seq(vec![s("true"), s("1.5"), s("-dash"), s("")])),
            ("metadata".to_string(), Value::Map(vec![("version".into(), s("3")), ("pinned".into(), s("false"))])),
            ("empty".to_string(), Value::Map(vec![])),
        ];
        let text = emit(&entries);
        let back = parse(&text).unwrap();
        assert!(same_content(&entries, &back), "{text}\n{back:?}");
        assert_eq!(emit(&back), text, "deterministic: emitting the re-read value gives the same bytes");
        assert!(text.contains("multi: |-\n  first line\n\n    indented line\n  last\n"), "{text}");
        assert!(text.contains("version: \"3\""), "numbers-as-strings stay strings: {text}");
    }
}
