//! Hermes' hooks in `config.yaml`: our handler as one item of a list under `top.event`
//! (`hooks: {post_tool_call: [{command: …}]}`), added beside a person's items, rewritten where it
//! stands, or cut out with whatever it leaves empty. The same textual edit as `yaml`'s entries,
//! proved the same way: the result is parsed again and must equal the original with exactly our
//! change, or nothing changes.

use super::value::V;
use super::yaml::{YamlDoc, flow, indent, is_content, key_of, parse_value, trailing_comment, value_after_colon};
use anyhow::{Result, bail};
use serde_json::Value;

type Ours<'a> = &'a dyn Fn(&Value) -> bool;

impl YamlDoc {
    /// Makes `top.key` hold `item` as its only item of ours (first one of ours replaced where it
    /// stands, the rest removed; appended when there is none). Returns whether anything changed.
    pub fn set_list_item(&mut self, top: &str, key: &str, item: &V, ours: Ours) -> Result<bool> {
        let before = self.value();
        let expected = with_item(&before, top, key, item, ours);
        if expected == before {
            return Ok(false);
        }
        let original = self.lines.clone();
        let result = self.write_item(top, key, item, ours);
        if result.is_err() || self.value() != expected {
            self.lines = original;
            let why = result.err().map(|e| format!(" ({e})")).unwrap_or_default();
            bail!(
                "its `{top}:` is laid out in a way setup cannot edit safely{why}; add this under `{top}:` yourself:\n  {key}:\n{}",
                render_item(item, 4).join("\n")
            );
        }
        Ok(true)
    }

    /// Removes every item of ours from the lists under `top`, and what that left empty.
    pub fn remove_list_items(&mut self, top: &str, ours: Ours) -> Result<bool> {
        let before = self.value();
        let expected = without_ours(&before, top, ours);
        if expected == before {
            return Ok(false);
        }
        let original = self.lines.clone();
        let keys: Vec<String> = before[top].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        for key in keys {
            while let Some((from, to)) = self.find_ours(top, &key, ours, 0) {
                self.lines.drain(from..to);
            }
            self.drop_if_empty(top, Some(&key));
        }
        self.drop_if_empty(top, None);
        if self.value() != expected {
            self.lines = original;
            bail!(
                "its `{top}:` is laid out in a way setup cannot edit safely; remove the self-evolve hooks under `{top}:` yourself"
            );
        }
        Ok(true)
    }

    /// The block of `top.key` (its line, the end of its block), the indent of `top`'s children.
    fn key_block(&self, top: &str, key: &str) -> Option<(usize, usize, usize)> {
        let (at, end) = self.top_block(top)?;
        let child = (at + 1..end).find(|&i| is_content(&self.lines[i])).map_or(2, |i| indent(&self.lines[i]));
        let line = (at + 1..end).find(|&i| key_of(&self.lines[i], child).as_deref() == Some(key))?;
        let stop = (line + 1..end)
            .find(|&i| {
                is_content(&self.lines[i])
                    && (indent(&self.lines[i]) < child
                        || (indent(&self.lines[i]) == child && !self.lines[i].trim_start().starts_with("- ")))
            })
            .unwrap_or(end);
        Some((line, self.content_end(line + 1, stop).max(line + 1), child))
    }

    /// The items of `top.key`: each `- ` line's range.
    fn items(&self, top: &str, key: &str) -> Vec<(usize, usize)> {
        let Some((line, end, _)) = self.key_block(top, key) else { return Vec::new() };
        let starts: Vec<usize> = (line + 1..end)
            .filter(|&i| self.lines[i].trim_start().starts_with("- ") || self.lines[i].trim() == "-")
            .collect();
        let Some(&first) = starts.first() else { return Vec::new() };
        let dash = indent(&self.lines[first]);
        let starts: Vec<usize> = starts.into_iter().filter(|&i| indent(&self.lines[i]) == dash).collect();
        starts
            .iter()
            .enumerate()
            .map(|(n, &from)| {
                let to = starts.get(n + 1).copied().unwrap_or(end);
                (from, self.content_end(from + 1, to).max(from + 1))
            })
            .collect()
    }

    /// The first item of ours under `top.key` at or after line `from`, as a line range.
    fn find_ours(&self, top: &str, key: &str, ours: Ours, from: usize) -> Option<(usize, usize)> {
        self.items(top, key).into_iter().find(|&(start, end)| start >= from && self.is_ours(start, end, ours))
    }

    /// Is the item on these lines ours? (It is read on its own, as the YAML it is.)
    fn is_ours(&self, from: usize, to: usize, ours: Ours) -> bool {
        let dash = indent(&self.lines[from]);
        let text: Vec<String> =
            self.lines[from..to].iter().map(|l| format!("  {}", l.get(dash..).unwrap_or(""))).collect();
        parse_value(&format!("x:\n{}\n", text.join("\n")))
            .ok()
            .and_then(|v| v["x"].get(0).cloned())
            .is_some_and(|v| ours(&v))
    }

    fn write_item(&mut self, top: &str, key: &str, item: &V, ours: Ours) -> Result<()> {
        if let Some((from, to)) = self.find_ours(top, key, ours, 0) {
            let rendered = render_item(item, indent(&self.lines[from]));
            let after = from + rendered.len();
            self.lines.splice(from..to, rendered);
            while let Some((from, to)) = self.find_ours(top, key, ours, after) {
                self.lines.drain(from..to);
            }
            return Ok(());
        }
        let Some((at, end)) = self.top_block(top) else {
            if !self.lines.is_empty() {
                self.lines.push(String::new());
            }
            self.lines.push(format!("{top}:"));
            self.lines.push(format!("  {key}:"));
            self.lines.extend(render_item(item, 4));
            return Ok(());
        };
        let rest = value_after_colon(&self.lines[at]);
        if !rest.is_empty() {
            if !matches!(rest, "{}" | "null" | "~") {
                bail!("`{top}:` holds a value on its own line");
            }
            self.lines[at] = format!("{top}:{}", trailing_comment(&self.lines[at]));
        }
        let Some((line, block_end, child)) = self.key_block(top, key) else {
            let child =
                (at + 1..end).find(|&i| is_content(&self.lines[i])).map_or(2, |i| indent(&self.lines[i])).max(1);
            let insert = self.content_end(at + 1, end).max(at + 1);
            let mut block = vec![format!("{}{key}:", " ".repeat(child))];
            block.extend(render_item(item, child + 2));
            self.lines.splice(insert..insert, block);
            return Ok(());
        };
        let rest = value_after_colon(&self.lines[line]);
        if !rest.is_empty() {
            if !matches!(rest, "[]" | "null" | "~") {
                bail!("`{top}.{key}:` is a flow list");
            }
            self.lines[line] = format!("{}{key}:{}", " ".repeat(child), trailing_comment(&self.lines[line]));
        }
        let dash = self.items(top, key).first().map_or(child + 2, |&(from, _)| indent(&self.lines[from]));
        self.lines.splice(block_end..block_end, render_item(item, dash));
        Ok(())
    }

    /// Cuts `top.key` (or `top` itself, `key` None) when nothing but blank lines is left under it.
    fn drop_if_empty(&mut self, top: &str, key: Option<&str>) {
        let (line, end) = match key {
            Some(key) => match self.key_block(top, key) {
                Some((line, end, _)) => (line, end),
                None => return,
            },
            None => match self.top_block(top) {
                Some(block) => block,
                None => return,
            },
        };
        if (line + 1..end).any(|i| !self.lines[i].trim().is_empty()) || !value_after_colon(&self.lines[line]).is_empty()
        {
            return;
        }
        self.lines.drain(line..end);
        if key.is_none() && line > 0 && line == self.lines.len() && self.lines[line - 1].trim().is_empty() {
            self.lines.pop();
        }
    }
}

/// An item's lines: `- first: …` at `dash`, the other keys two further in.
fn render_item(item: &V, dash: usize) -> Vec<String> {
    item.pairs()
        .iter()
        .enumerate()
        .map(|(n, (k, v))| {
            let lead = if n == 0 { format!("{}- ", " ".repeat(dash)) } else { " ".repeat(dash + 2) };
            format!("{lead}{k}: {}", flow(v))
        })
        .collect()
}

fn with_item(before: &Value, top: &str, key: &str, item: &V, ours: Ours) -> Value {
    let mut value = before.clone();
    if !value.is_object() {
        value = Value::Object(Default::default());
    }
    let root = value.as_object_mut().expect("an object");
    let top = root.entry(top).or_insert(Value::Null);
    if !top.is_object() {
        *top = Value::Object(Default::default());
    }
    let list = top.as_object_mut().expect("an object").entry(key).or_insert(Value::Null);
    let mut items: Vec<Value> = list.as_array().cloned().unwrap_or_default();
    match items.iter().position(ours) {
        Some(first) => {
            items[first] = item.to_json();
            let mut n = 0;
            items.retain(|v| {
                n += 1;
                n - 1 == first || !ours(v)
            });
        }
        None => items.push(item.to_json()),
    }
    *list = Value::Array(items);
    value
}

fn without_ours(before: &Value, top: &str, ours: Ours) -> Value {
    let mut value = before.clone();
    let Some(map) = value.get_mut(top).and_then(Value::as_object_mut) else { return value };
    let keys: Vec<String> = map.keys().cloned().collect();
    for key in keys {
        if let Some(items) = map.get_mut(&key).and_then(Value::as_array_mut) {
            let had = items.len();
            items.retain(|v| !ours(v));
            if items.is_empty() && had > 0 {
                map.remove(&key);
            }
        }
    }
    if map.is_empty()
        && let Some(root) = value.as_object_mut()
    {
        root.remove(top);
    }
    value
}

#[cfg(test)]
#[path = "yaml_lists_tests.rs"]
mod tests;
