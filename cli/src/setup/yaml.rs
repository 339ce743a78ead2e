//! Edits Hermes' `config.yaml` as text, line by line, and proves each edit with a YAML parser.
//! No maintained Rust YAML library writes a document back with its comments, so the edit is
//! textual: our entry is one block under a top-level mapping key (`mcp_servers:`), found by
//! indentation, added, rewritten key by key, or cut out. Then the result is parsed again and must
//! equal the original with exactly our change (yaml-rust2, the plugin's own YAML parser); when it
//! does not (a flow mapping, an anchor, a layout this reader does not follow), setup refuses and
//! changes nothing, showing the lines to add by hand.

use super::value::V;
use anyhow::{Result, bail};
use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

pub struct YamlDoc {
    pub(super) lines: Vec<String>,
    /// The file ended with a newline (kept as it was).
    final_newline: bool,
}

impl YamlDoc {
    pub fn parse(text: &str) -> Result<YamlDoc> {
        parse_value(text)?;
        let final_newline = text.is_empty() || text.ends_with('\n');
        let lines = text.lines().map(str::to_string).collect();
        Ok(YamlDoc { lines, final_newline })
    }

    pub fn text(&self) -> String {
        let mut text = self.lines.join("\n");
        if self.final_newline && !text.is_empty() {
            text.push('\n');
        }
        text
    }

    pub fn value(&self) -> Value {
        parse_value(&self.text()).unwrap_or(Value::Null)
    }

    /// Sets `top.name`'s keys to `entry`'s, each in place when present (keys a person added
    /// stay). Returns whether anything changed.
    pub fn set_entry(&mut self, top: &str, name: &str, entry: &V) -> Result<bool> {
        let before = self.value();
        let current = before.get(top).and_then(|t| t.get(name));
        if let Some(current) = current
            && entry.pairs().iter().all(|(k, v)| current.get(k) == Some(&v.to_json()))
        {
            return Ok(false);
        }
        let original = self.lines.clone();
        let result = self.write_entry(top, name, entry);
        let mut expected = before.clone();
        merge_entry(&mut expected, top, name, entry);
        if result.is_err() || self.value() != expected {
            self.lines = original;
            let why = result.err().map(|e| format!(" ({e})")).unwrap_or_default();
            bail!(
                "its `{top}:` is laid out in a way setup cannot edit safely{why}; add this under `{top}:` yourself:\n{}",
                render_entry(name, entry, 2, 2).join("\n")
            );
        }
        Ok(true)
    }

    /// Removes `top.name`, and `top:` when that left it empty. Returns whether it did.
    pub fn remove_entry(&mut self, top: &str, name: &str) -> Result<bool> {
        let before = self.value();
        if before.get(top).and_then(|t| t.get(name)).is_none() {
            return Ok(false);
        }
        let original = self.lines.clone();
        let mut expected = before.clone();
        if let Some(map) = expected.get_mut(top).and_then(Value::as_object_mut) {
            map.remove(name);
            if map.is_empty()
                && let Some(root) = expected.as_object_mut()
            {
                root.remove(top);
            }
        }
        let cut = self.cut_entry(top, name);
        if let (Ok(false), Some(root)) = (&cut, expected.as_object_mut()) {
            // A comment kept under `top:` keeps the key, which then holds nothing.
            root.entry(top.to_string()).or_insert(Value::Null);
        }
        if cut.is_err() || self.value() != expected {
            self.lines = original;
            bail!(
                "its `{top}:` is laid out in a way setup cannot edit safely; remove `{name}` under `{top}:` yourself"
            );
        }
        Ok(true)
    }

    /// The top-level key's line, and the end (exclusive) of the block under it.
    pub(super) fn top_block(&self, top: &str) -> Option<(usize, usize)> {
        let at = self.lines.iter().position(|l| key_of(l, 0).as_deref() == Some(top))?;
        let end = (at + 1..self.lines.len())
            .find(|&i| is_content(&self.lines[i]) && indent(&self.lines[i]) == 0)
            .unwrap_or(self.lines.len());
        Some((at, end))
    }

    /// The last line holding content in `from..to`, plus one (`from` when there is none).
    pub(super) fn content_end(&self, from: usize, to: usize) -> usize {
        (from..to).rev().find(|&i| is_content(&self.lines[i])).map_or(from, |i| i + 1)
    }

    fn write_entry(&mut self, top: &str, name: &str, entry: &V) -> Result<()> {
        let Some((at, end)) = self.top_block(top) else {
            // No such key: the block goes at the end, after a blank line (which a removal takes).
            if !self.lines.is_empty() {
                self.lines.push(String::new());
            }
            self.lines.push(format!("{top}:"));
            self.lines.extend(render_entry(name, entry, 2, 2));
            return Ok(());
        };
        let rest = value_after_colon(&self.lines[at]);
        if !rest.is_empty() {
            // `mcp_servers: {}` or `mcp_servers: null` becomes a block; anything else is refused.
            if !matches!(rest, "{}" | "null" | "~") {
                bail!("`{top}:` holds a value on its own line");
            }
            self.lines[at] = format!("{top}:{}", trailing_comment(&self.lines[at]));
        }
        let children: Vec<usize> = (at + 1..end).filter(|&i| is_content(&self.lines[i])).collect();
        let child_indent = children.first().map_or(2, |&i| indent(&self.lines[i]));
        let step = if child_indent == 0 { 2 } else { child_indent };
        let Some(key_line) =
            children.iter().copied().find(|&i| key_of(&self.lines[i], child_indent).as_deref() == Some(name))
        else {
            let insert = self.content_end(at + 1, end).max(at + 1);
            let block = render_entry(name, entry, child_indent.max(1), step);
            self.lines.splice(insert..insert, block);
            return Ok(());
        };
        // Our entry exists: each of our keys rewritten where it is, or added at its end.
        let entry_end = (key_line + 1..end)
            .find(|&i| is_content(&self.lines[i]) && indent(&self.lines[i]) <= child_indent)
            .unwrap_or(end);
        let entry_end = self.content_end(key_line + 1, entry_end).max(key_line + 1);
        let inner: Vec<usize> = (key_line + 1..entry_end).filter(|&i| is_content(&self.lines[i])).collect();
        let key_indent = inner.first().map_or(child_indent + step, |&i| indent(&self.lines[i]));
        let mut end_of_entry = entry_end;
        for (key, value) in entry.pairs() {
            let found =
                (key_line + 1..end_of_entry).find(|&i| key_of(&self.lines[i], key_indent).as_deref() == Some(key));
            let line = format!("{}{key}: {}", " ".repeat(key_indent), flow(value));
            match found {
                Some(i) => {
                    let value_end = (i + 1..end_of_entry)
                        .find(|&j| is_content(&self.lines[j]) && indent(&self.lines[j]) <= key_indent)
                        .unwrap_or(end_of_entry);
                    let value_end = self.content_end(i + 1, value_end).max(i + 1);
                    let removed = value_end - i;
                    self.lines.splice(i..value_end, [line]);
                    end_of_entry = end_of_entry + 1 - removed;
                }
                None => {
                    self.lines.insert(end_of_entry, line);
                    end_of_entry += 1;
                }
            }
        }
        Ok(())
    }

    /// Cuts our entry out; returns whether `top:` went too (nothing, not even a comment, was left
    /// under it).
    fn cut_entry(&mut self, top: &str, name: &str) -> Result<bool> {
        let Some((at, end)) = self.top_block(top) else { bail!("no `{top}:`") };
        let children: Vec<usize> = (at + 1..end).filter(|&i| is_content(&self.lines[i])).collect();
        let child_indent = children.first().map_or(2, |&i| indent(&self.lines[i]));
        let Some(key_line) =
            children.iter().copied().find(|&i| key_of(&self.lines[i], child_indent).as_deref() == Some(name))
        else {
            bail!("no `{name}` under `{top}:`");
        };
        let entry_end = (key_line + 1..end)
            .find(|&i| is_content(&self.lines[i]) && indent(&self.lines[i]) <= child_indent)
            .unwrap_or(end);
        let entry_end = self.content_end(key_line + 1, entry_end).max(key_line + 1);
        self.lines.drain(key_line..entry_end);
        let end = end - (entry_end - key_line);
        if (at + 1..end).any(|i| !self.lines[i].trim().is_empty()) {
            return Ok(false);
        }
        self.lines.drain(at..end);
        // The blank line setup put before a block it added at the end of the file.
        if at > 0 && at == self.lines.len() && self.lines[at - 1].trim().is_empty() {
            self.lines.pop();
        }
        Ok(true)
    }
}

/// The entry as block lines at `indent`, its keys one `step` deeper, values in flow style.
fn render_entry(name: &str, entry: &V, indent: usize, step: usize) -> Vec<String> {
    let mut lines = vec![format!("{}{}:", " ".repeat(indent), scalar_key(name))];
    for (key, value) in entry.pairs() {
        lines.push(format!("{}{key}: {}", " ".repeat(indent + step), flow(value)));
    }
    lines
}

fn scalar_key(name: &str) -> String {
    if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        name.to_string()
    } else {
        Value::String(name.to_string()).to_string()
    }
}

/// A value in YAML flow style: strings double-quoted with JSON's escapes (which YAML reads the
/// same), lists in brackets, maps in braces.
pub(super) fn flow(value: &V) -> String {
    match value {
        V::Str(s) => Value::String(s.clone()).to_string(),
        V::Int(n) => n.to_string(),
        V::Bool(b) => b.to_string(),
        V::List(items) => format!("[{}]", items.iter().map(flow).collect::<Vec<_>>().join(", ")),
        V::Map(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line that holds YAML (not blank, not only a comment).
pub(super) fn is_content(line: &str) -> bool {
    let trimmed = line.trim();
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

/// The key a `key:` line at exactly `at` columns names (plain or quoted).
pub(super) fn key_of(line: &str, at: usize) -> Option<String> {
    if indent(line) != at {
        return None;
    }
    let rest = &line[at..];
    let (key, after) = if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"')?;
        (quoted[..end].to_string(), &quoted[end + 1..])
    } else if let Some(quoted) = rest.strip_prefix('\'') {
        let end = quoted.find('\'')?;
        (quoted[..end].to_string(), &quoted[end + 1..])
    } else {
        let end = rest.find(':')?;
        (rest[..end].trim_end().to_string(), &rest[end..])
    };
    let after = after.trim_start();
    let after = after.strip_prefix(':')?;
    (after.is_empty() || after.starts_with([' ', '\t'])).then_some(key)
}

/// What follows `key:` on its line, without a trailing comment.
pub(super) fn value_after_colon(line: &str) -> &str {
    let after = line.split_once(':').map_or("", |(_, v)| v);
    after.split(" #").next().unwrap_or("").trim()
}

pub(super) fn trailing_comment(line: &str) -> String {
    line.find(" #").map(|i| line[i..].to_string()).unwrap_or_default()
}

fn merge_entry(root: &mut Value, top: &str, name: &str, entry: &V) {
    if !root.is_object() {
        *root = Value::Object(Default::default());
    }
    let Some(root) = root.as_object_mut() else { return };
    let top = root.entry(top).or_insert(Value::Null);
    if !top.is_object() {
        *top = Value::Object(Default::default());
    }
    let Some(top) = top.as_object_mut() else { return };
    let ours = top.entry(name).or_insert(Value::Null);
    if !ours.is_object() {
        *ours = Value::Object(Default::default());
    }
    if let Some(ours) = ours.as_object_mut() {
        for (k, v) in entry.pairs() {
            ours.insert(k.clone(), v.to_json());
        }
    }
}

/// The document as a value; refuses what is not one YAML document holding a mapping (or nothing).
pub(super) fn parse_value(text: &str) -> Result<Value> {
    let docs = match YamlLoader::load_from_str(text) {
        Ok(docs) => docs,
        Err(err) => bail!("it is not valid YAML ({err}); fix it, then run setup again"),
    };
    match docs.as_slice() {
        [] => Ok(Value::Object(Default::default())),
        [Yaml::Null] => Ok(Value::Object(Default::default())),
        [doc @ Yaml::Hash(_)] => Ok(yaml_json(doc)),
        [_] => bail!("it does not hold a mapping at the top; fix it, then run setup again"),
        _ => bail!("it holds more than one YAML document; setup edits only a single one"),
    }
}

pub(super) fn yaml_json(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::String(s) | Yaml::Real(s) => Value::String(s.clone()),
        Yaml::Integer(n) => Value::from(*n),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(yaml_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s.clone(),
                        other => yaml_json(other).to_string(),
                    };
                    (key, yaml_json(v))
                })
                .collect(),
        ),
        Yaml::Null | Yaml::BadValue => Value::Null,
        Yaml::Alias(n) => Value::String(format!("*alias{n}")),
    }
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
