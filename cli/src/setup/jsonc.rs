//! Edits a JSON (or JSON-with-comments) config file in place, through a concrete syntax tree
//! (jsonc-parser's CST): every key, comment, blank line and the file's order stay as they were;
//! only the entries setup owns change. Strict JSON files are checked with serde_json first, so a
//! file the harness itself could not read is refused rather than "repaired".

use super::value::V;
use anyhow::{Result, bail};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

pub struct JsonDoc {
    root: CstRootNode,
}

/// How a harness lists hook handlers under an event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HookShape {
    /// Claude Code, Codex, Gemini CLI: `{"Event": [{"matcher": "…", "hooks": [handler, …]}]}`.
    Grouped,
    /// Cursor: `{"event": [handler, …]}`.
    Flat,
}

/// One hook setup wants: under `event`, a group with `matcher` (grouped shape) holding `handler`.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: String,
    pub matcher: Option<String>,
    pub handler: V,
}

impl JsonDoc {
    /// `comments`: the harness reads comments (JSONC: strip the comments, then JSON); else strict
    /// JSON. Trailing commas are refused in both, as the harnesses' parsers refuse them.
    pub fn parse(text: &str, comments: bool) -> Result<JsonDoc> {
        let text = if text.trim().is_empty() { "{}\n" } else { text };
        if !comments && let Err(err) = serde_json::from_str::<Value>(text) {
            bail!("it is not valid JSON ({err}); fix it or move it aside, then run setup again");
        }
        let options = ParseOptions {
            allow_comments: comments,
            allow_trailing_commas: false,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            ..ParseOptions::default()
        };
        let root = CstRootNode::parse(text, &options).map_err(|err| {
            anyhow::anyhow!(
                "it is not valid JSON{} ({err}); fix it, then run setup again",
                if comments { "C" } else { "" }
            )
        })?;
        if root.value().is_none_or(|v| v.as_object().is_none()) {
            bail!("it does not hold a JSON object at the top; fix it or move it aside, then run setup again");
        }
        let doc = JsonDoc { root };
        doc.check_unique_keys(&doc.top(), "")?;
        Ok(doc)
    }

    pub fn text(&self) -> String {
        self.root.to_string()
    }

    /// The whole document as a value (for tests and comparisons).
    pub fn value(&self) -> Value {
        self.root.to_serde_value().unwrap_or(Value::Null)
    }

    fn top(&self) -> CstObject {
        self.root.object_value_or_set()
    }

    /// A key written twice is read one way by one parser and another way by the next: refused
    /// wherever setup reads or writes.
    fn check_unique_keys(&self, object: &CstObject, at: &str) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for prop in object.properties() {
            let name = prop.decoded_name().unwrap_or_default();
            if !seen.insert(name.clone()) {
                bail!("the key `{at}{name}` is written twice; keep one, then run setup again");
            }
            if let Some(inner) = prop.object_value() {
                self.check_unique_keys(&inner, &format!("{at}{name}."))?;
            }
            if let Some(array) = prop.array_value() {
                for element in array.elements() {
                    if let Some(inner) = element.as_object() {
                        self.check_unique_keys(&inner, &format!("{at}{name}[]."))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The object at `path` below the top, created (empty) where missing when `create`.
    fn object_at(&self, path: &[&str], create: bool) -> Result<Option<CstObject>> {
        let mut object = self.top();
        for (i, key) in path.iter().enumerate() {
            let next = match object.get(key) {
                Some(prop) => match prop.object_value() {
                    Some(inner) => inner,
                    None => bail!("`{}` is not an object; fix it, then run setup again", path[..=i].join(".")),
                },
                None if create => object.append(key, CstInputValue::Object(Vec::new())).object_value_or_set(),
                None => return Ok(None),
            };
            object = next;
        }
        Ok(Some(object))
    }

    /// Sets `path.name` to `entry`, a map: each of its keys is written (in place when present, so
    /// the entry keeps its position and any key a person added to it). Returns whether anything
    /// changed.
    pub fn set_entry(&self, path: &[&str], name: &str, entry: &V) -> Result<bool> {
        let parent = self.object_at(path, true)?.expect("created");
        let Some(prop) = parent.get(name) else {
            parent.append(name, to_cst(entry));
            return Ok(true);
        };
        let Some(object) = prop.object_value() else {
            bail!(
                "`{}` is not an object; fix it or remove it, then run setup again",
                [path, &[name]].concat().join(".")
            );
        };
        let mut changed = false;
        for (key, value) in entry.pairs() {
            match object.get(key) {
                Some(existing) if existing.to_serde_value() == Some(value.to_json()) => {}
                Some(existing) => {
                    existing.set_value(to_cst(value));
                    changed = true;
                }
                None => {
                    object.append(key, to_cst(value));
                    changed = true;
                }
            }
        }
        Ok(changed)
    }

    /// Sets top-level `key` to `value` when the file has no such key; leaves it as it is otherwise.
    pub fn set_default(&self, key: &str, value: &V) -> Result<()> {
        let top = self.top();
        if top.get(key).is_none() {
            top.append(key, to_cst(value));
        }
        Ok(())
    }

    /// Removes `path.name`, then every object on `path` that this left empty.
    pub fn remove_entry(&self, path: &[&str], name: &str) -> Result<bool> {
        let Some(parent) = self.object_at(path, false)? else { return Ok(false) };
        let Some(prop) = parent.get(name) else { return Ok(false) };
        prop.remove();
        self.prune(path);
        Ok(true)
    }

    /// Removes the objects and arrays along `path` (deepest first) that are empty.
    fn prune(&self, path: &[&str]) {
        for depth in (1..=path.len()).rev() {
            let Ok(Some(parent)) = self.object_at(&path[..depth - 1], false) else { return };
            let Some(prop) = parent.get(path[depth - 1]) else { continue };
            let empty = match prop.value() {
                Some(CstNode::Container(c)) => c.children_exclude_trivia_and_tokens().is_empty(),
                _ => false,
            };
            if empty && !has_comment(&prop.value()) {
                prop.remove();
            }
        }
    }

    /// Makes `hooks_path` hold exactly `wanted` of our hook handlers (`ours` says which handlers
    /// are ours): one handler per wanted event, replaced in place when it differs, appended when
    /// missing; ours under events no longer wanted are removed. A group a person shares with our
    /// handler keeps its matcher and their handlers. Returns whether anything changed.
    pub fn set_hooks(
        &self,
        hooks_path: &[&str],
        shape: HookShape,
        wanted: &[Hook],
        ours: &dyn Fn(&Value) -> bool,
    ) -> Result<bool> {
        let before = self.text();
        let hooks = self.object_at(hooks_path, true)?.expect("created");
        for hook in wanted {
            let list = match hooks.get(&hook.event) {
                Some(prop) => match prop.array_value() {
                    Some(list) => list,
                    None => {
                        bail!("`{}.{}` is not a list; fix it, then run setup again", hooks_path.join("."), hook.event)
                    }
                },
                None => hooks.append(&hook.event, CstInputValue::Array(Vec::new())).array_value_or_set(),
            };
            let group = match shape {
                HookShape::Flat => hook.handler.clone(),
                HookShape::Grouped => {
                    let mut pairs = Vec::new();
                    if let Some(matcher) = &hook.matcher {
                        pairs.push(("matcher".to_string(), V::str(matcher)));
                    }
                    pairs.push(("hooks".to_string(), V::List(vec![hook.handler.clone()])));
                    V::Map(pairs)
                }
            };
            let mut placed = false;
            for element in list.elements() {
                let Some(value) = element.to_serde_value() else { continue };
                match shape {
                    HookShape::Flat if ours(&value) => {
                        if placed {
                            element.remove();
                        } else if value != group.to_json() {
                            replace(&list, element, &group);
                        }
                        placed = true;
                    }
                    HookShape::Flat => {}
                    HookShape::Grouped => {
                        let Some(handlers) = element.as_object().and_then(|o| o.array_value("hooks")) else { continue };
                        let mine: Vec<CstNode> = handlers
                            .elements()
                            .into_iter()
                            .filter(|h| h.to_serde_value().is_some_and(|v| ours(&v)))
                            .collect();
                        if mine.is_empty() {
                            continue;
                        }
                        let alone = mine.len() == handlers.elements().len();
                        if placed {
                            remove_handlers(&element, &handlers, mine);
                        } else if alone {
                            if value != group.to_json() {
                                replace(&list, element, &group);
                            }
                        } else {
                            let mut rest = mine.into_iter();
                            if let Some(first) = rest.next()
                                && first.to_serde_value() != Some(hook.handler.to_json())
                            {
                                replace(&handlers, first, &hook.handler);
                            }
                            rest.for_each(CstNode::remove);
                        }
                        placed = true;
                    }
                }
            }
            if !placed {
                list.append(to_cst(&group));
            }
        }
        // Ours under events no longer wanted (an older setup's) go.
        let events: Vec<String> = hooks.properties().iter().filter_map(|p| p.decoded_name()).collect();
        for event in events {
            if !wanted.iter().any(|h| h.event == event) {
                self.remove_hooks_of(hooks_path, &event, shape, ours);
            }
        }
        Ok(self.text() != before)
    }

    /// Removes every handler of ours under `hooks_path`, and what that left empty.
    pub fn remove_hooks(&self, hooks_path: &[&str], shape: HookShape, ours: &dyn Fn(&Value) -> bool) -> Result<bool> {
        let before = self.text();
        let Some(hooks) = self.object_at(hooks_path, false)? else { return Ok(false) };
        let events: Vec<String> = hooks.properties().iter().filter_map(|p| p.decoded_name()).collect();
        for event in events {
            self.remove_hooks_of(hooks_path, &event, shape, ours);
        }
        self.prune(hooks_path);
        Ok(self.text() != before)
    }

    fn remove_hooks_of(&self, hooks_path: &[&str], event: &str, shape: HookShape, ours: &dyn Fn(&Value) -> bool) {
        let Ok(Some(hooks)) = self.object_at(hooks_path, false) else { return };
        let Some(list) = hooks.get(event).and_then(|p| p.array_value()) else { return };
        let mut touched = false;
        for element in list.elements() {
            match shape {
                HookShape::Flat => {
                    if element.to_serde_value().is_some_and(|v| ours(&v)) {
                        element.remove();
                        touched = true;
                    }
                }
                HookShape::Grouped => {
                    let Some(handlers) = element.as_object().and_then(|o| o.array_value("hooks")) else { continue };
                    let mine: Vec<CstNode> = handlers
                        .elements()
                        .into_iter()
                        .filter(|h| h.to_serde_value().is_some_and(|v| ours(&v)))
                        .collect();
                    if !mine.is_empty() {
                        remove_handlers(&element, &handlers, mine);
                        touched = true;
                    }
                }
            }
        }
        if touched {
            self.prune(&[hooks_path, &[event]].concat());
        }
    }
}

/// Puts `value` where `element` of `list` is.
fn replace(list: &CstArray, element: CstNode, value: &V) {
    let at = element.element_index().unwrap_or(0);
    element.remove();
    list.insert(at, to_cst(value));
}

/// Removes `mine` from a group's `hooks` list, and the group itself when nothing else was in it.
fn remove_handlers(group: &CstNode, handlers: &CstArray, mine: Vec<CstNode>) {
    if mine.len() == handlers.elements().len() {
        group.clone().remove();
    } else {
        mine.into_iter().for_each(CstNode::remove);
    }
}

/// Does a container hold a comment (which a person wrote, so it is not ours to drop)?
fn has_comment(node: &Option<CstNode>) -> bool {
    let Some(CstNode::Container(container)) = node else { return false };
    container.children().iter().any(|c| c.is_comment())
}

pub fn to_cst(value: &V) -> CstInputValue {
    match value {
        V::Str(s) => CstInputValue::String(s.clone()),
        V::Int(n) => CstInputValue::Number(n.to_string()),
        V::Bool(b) => CstInputValue::Bool(*b),
        V::List(items) => CstInputValue::Array(items.iter().map(to_cst).collect()),
        V::Map(pairs) => CstInputValue::Object(pairs.iter().map(|(k, v)| (k.clone(), to_cst(v))).collect()),
    }
}

#[cfg(test)]
#[path = "jsonc_tests.rs"]
mod tests;
