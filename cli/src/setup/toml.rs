//! Edits Codex's `config.toml` in place with toml_edit: comments, blank lines, key order and
//! every table a person wrote stay; only `[mcp_servers.NAME]` (and a `notify` of ours, which
//! hooks replace) change.

use super::value::V;
use anyhow::{Result, bail};
use serde_json::Value;
use toml_edit::{DocumentMut, Item, TableLike};

pub struct TomlDoc {
    doc: DocumentMut,
}

impl TomlDoc {
    pub fn parse(text: &str) -> Result<TomlDoc> {
        match text.parse::<DocumentMut>() {
            Ok(doc) => Ok(TomlDoc { doc }),
            Err(err) => {
                bail!(
                    "it is not valid TOML ({}); fix it, then run setup again",
                    err.to_string().trim().replace('\n', " ")
                )
            }
        }
    }

    pub fn text(&self) -> String {
        self.doc.to_string()
    }

    pub fn value(&self) -> Value {
        table_json(self.doc.as_table())
    }

    /// Sets `[table.name]`'s keys to `entry`'s (each in place when present; keys a person added
    /// stay). Returns whether anything changed.
    pub fn set_entry(&mut self, table: &str, name: &str, entry: &V) -> Result<bool> {
        let root = self.doc.as_table_mut();
        if !root.contains_key(table) {
            let mut created = toml_edit::Table::new();
            created.set_implicit(true);
            root.insert(table, Item::Table(created));
        }
        // `mcp_servers = { … }` or `mcp_servers.x.command = …`: a new entry is written the same way.
        let inline =
            root.get(table).is_some_and(|i| i.is_inline_table() || i.as_table().is_some_and(|t| t.is_dotted()));
        let Some(parent) = root.get_mut(table).and_then(Item::as_table_like_mut) else {
            bail!("`{table}` is not a table; fix it, then run setup again");
        };
        if !parent.contains_key(name) {
            let mut created = toml_edit::Table::new();
            for (key, value) in entry.pairs() {
                created.insert(key, Item::Value(to_toml(value)));
            }
            if inline {
                parent.insert(name, Item::Value(toml_edit::Value::InlineTable(created.into_inline_table())));
            } else {
                parent.insert(name, Item::Table(created));
            }
            return Ok(true);
        }
        let Some(ours) = parent.get_mut(name).and_then(Item::as_table_like_mut) else {
            bail!("`{table}.{name}` is not a table; fix it or remove it, then run setup again");
        };
        let mut changed = false;
        for (key, value) in entry.pairs() {
            if ours.get(key).map(item_json) != Some(value.to_json()) {
                ours.insert(key, Item::Value(to_toml(value)));
                changed = true;
            }
        }
        Ok(changed)
    }

    /// Removes `[table.name]`, and `table` when that left it empty and nobody wrote its header.
    pub fn remove_entry(&mut self, table: &str, name: &str) -> Result<bool> {
        let root = self.doc.as_table_mut();
        let Some(parent) = root.get_mut(table).and_then(Item::as_table_like_mut) else { return Ok(false) };
        if parent.remove(name).is_none() {
            return Ok(false);
        }
        let implicit = root.get(table).and_then(Item::as_table).is_some_and(toml_edit::Table::is_implicit);
        let empty = root.get(table).and_then(Item::as_table_like).is_some_and(|t| t.is_empty());
        if empty && implicit {
            root.remove(table);
        }
        Ok(true)
    }

    /// Removes a top-level `key = ["…self-evolve", …]` whose program is ours (Codex's `notify`,
    /// which its hooks replace). Returns whether it did; another program there is left alone.
    pub fn remove_our_program(&mut self, key: &str) -> bool {
        let ours = self
            .doc
            .get(key)
            .and_then(Item::as_array)
            .and_then(|a| a.get(0))
            .and_then(toml_edit::Value::as_str)
            .is_some_and(|program| {
                let name = program.rsplit(['/', '\\']).next().unwrap_or(program);
                matches!(name, "self-evolve" | "self-evolve.exe")
            });
        if ours {
            self.doc.remove(key);
        }
        ours
    }
}

fn to_toml(value: &V) -> toml_edit::Value {
    match value {
        V::Str(s) => s.as_str().into(),
        V::Int(n) => (*n).into(),
        V::Bool(b) => (*b).into(),
        V::List(items) => toml_edit::Value::Array(items.iter().map(to_toml).collect()),
        V::Map(pairs) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in pairs {
                table.insert(k, to_toml(v));
            }
            toml_edit::Value::InlineTable(table)
        }
    }
}

fn item_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(value) => value_json(value),
        Item::Table(table) => table_json(table),
        Item::ArrayOfTables(tables) => Value::Array(tables.iter().map(|t| table_json(t)).collect()),
    }
}

fn table_json(table: &dyn TableLike) -> Value {
    Value::Object(table.iter().map(|(k, v)| (k.to_string(), item_json(v))).collect())
}

fn value_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(s) => Value::String(s.value().clone()),
        toml_edit::Value::Integer(n) => Value::from(*n.value()),
        toml_edit::Value::Float(f) => Value::from(*f.value()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
        toml_edit::Value::Array(items) => Value::Array(items.iter().map(value_json).collect()),
        toml_edit::Value::InlineTable(table) => table_json(table),
    }
}

#[cfg(test)]
#[path = "toml_tests.rs"]
mod tests;
