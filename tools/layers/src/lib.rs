//! The import graph of one crate's `src/`, read from its source: which file names which, and the
//! circles in it. `tests/workspace.rs` holds every crate of the workspace to "no circles" and the
//! product crate to its floors; `cargo run -p layers -- DIR` prints a crate's circles.
//!
//! A file imports another when it names a module path that resolves to it: `crate::a::b`,
//! `super::x`, `self::x`, or a child module it declares (`mod stage;` then `stage::f()`), in `use`
//! lines and inline alike, braces (`crate::{a, b::c}`) included. Test code is not read: files
//! named `tests.rs` or `*_tests.rs`, and a `#[cfg(test)] mod … {` block to its closing brace.
//! Names from other crates are not followed (cargo already forbids circles between crates).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's files by module path (`["live", "hook"]` for `src/live/hook.rs`) and their imports.
#[derive(Debug, Default)]
pub struct Graph {
    /// Module path → file, relative to `src/`.
    pub files: BTreeMap<Vec<String>, PathBuf>,
    /// File → the files it imports (never itself).
    pub edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
}

impl Graph {
    /// Reads every `.rs` file under `src` (the crate's source root).
    pub fn read(src: &Path) -> std::io::Result<Graph> {
        let mut graph = Graph::default();
        let mut sources = BTreeMap::new();
        collect(src, src, &mut graph.files, &mut sources)?;
        for (module, text) in &sources {
            let file = graph.files[module].clone();
            let mut targets = BTreeSet::new();
            for path in named_paths(module, &code_only(text)) {
                if let Some(target) = graph.resolve(&path)
                    && target != file
                {
                    targets.insert(target);
                }
            }
            graph.edges.insert(file, targets);
        }
        Ok(graph)
    }

    /// The file that holds the longest prefix of `path` that is a module.
    fn resolve(&self, path: &[String]) -> Option<PathBuf> {
        (1..=path.len()).rev().find_map(|n| self.files.get(&path[..n]).cloned())
    }

    /// Every circle: the strongly connected components of more than one file, each sorted.
    pub fn circles(&self) -> Vec<Vec<PathBuf>> {
        circles_of(&self.edges)
    }

    /// The graph collapsed to top-level modules (`live/hook.rs` → `live`; `lib.rs` → `lib`).
    pub fn folders(&self) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
        let top = |p: &Path| {
            PathBuf::from(
                p.iter().next().map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string()).unwrap_or_default(),
            )
        };
        let mut out: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (from, tos) in &self.edges {
            let entry = out.entry(top(from)).or_default();
            entry.extend(tos.iter().map(|t| top(t)).filter(|t| *t != top(from)));
        }
        out
    }
}

fn is_test_file(name: &str) -> bool {
    name == "tests.rs" || name.ends_with("_tests.rs")
}

fn collect(
    root: &Path,
    dir: &Path,
    files: &mut BTreeMap<Vec<String>, PathBuf>,
    sources: &mut BTreeMap<Vec<String>, String>,
) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.file_type()?.is_dir() {
            if name != "tests" && name != "bin" {
                collect(root, &path, files, sources)?;
            }
            continue;
        }
        if !name.ends_with(".rs") || is_test_file(&name) {
            continue;
        }
        let relative = path.strip_prefix(root).map_err(std::io::Error::other)?.to_path_buf();
        let mut module: Vec<String> = relative.iter().map(|s| s.to_string_lossy().to_string()).collect();
        let last = module.pop().unwrap_or_default();
        if !matches!(last.as_str(), "mod.rs" | "lib.rs" | "main.rs") {
            module.push(last.trim_end_matches(".rs").to_string());
        }
        sources.insert(module.clone(), std::fs::read_to_string(&path)?);
        files.insert(module, relative);
    }
    Ok(())
}

/// The text without comments, literals and test-only modules: what the compiler reads as code
/// outside tests, with every comment and literal blanked (newlines kept).
pub fn code_only(text: &str) -> String {
    let blanked = blank_literals(text);
    let mut out = String::new();
    let mut lines = blanked.lines();
    while let Some(line) = lines.next() {
        if is_test_cfg(line.trim()) {
            let mut peek = lines.clone();
            if let Some(next) = peek.next()
                && mod_name(next).is_some()
                && next.trim_end().ends_with('{')
            {
                let indent = next.len() - next.trim_start().len();
                lines = peek;
                for inner in lines.by_ref() {
                    if inner.len() - inner.trim_start().len() == indent && inner.trim() == "}" {
                        break;
                    }
                }
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `#[cfg(test)]` or `#[cfg(all(test, …))]`: an attribute only test builds compile. (`any(test,
/// feature = …)` is compiled with the feature too, so it is read.)
fn is_test_cfg(line: &str) -> bool {
    line == "#[cfg(test)]" || (line.starts_with("#[cfg(all(test,") && line.ends_with(")]"))
}

/// The module a `mod NAME;` or `mod NAME {` line declares, whatever its visibility.
fn mod_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if let Some(after) = rest.strip_prefix("pub") {
        rest = after.trim_start();
        if rest.starts_with('(') {
            rest = rest.split_once(')').map_or("", |(_, after)| after).trim_start();
        }
    }
    let name: String = rest.strip_prefix("mod ")?.trim_start().chars().take_while(|c| is_ident(*c)).collect();
    (!name.is_empty()).then_some(name)
}

/// `text` with comments, strings (plain, raw, byte, multi-line) and char literals replaced by
/// spaces, newlines kept, so that what they hold is never taken for a path.
pub fn blank_literals(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, chars: &[char]| {
        for ch in chars {
            out.push(if *ch == '\n' { '\n' } else { ' ' });
        }
    };
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        // A line comment, to the end of the line.
        if at(0) == '/' && at(1) == '/' {
            let end = c[i..].iter().position(|ch| *ch == '\n').map_or(c.len(), |n| i + n);
            blank(&mut out, &c[i..end]);
            i = end;
        // A block comment; they nest.
        } else if at(0) == '/' && at(1) == '*' {
            let (mut depth, mut j) = (0usize, i);
            while j < c.len() {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            let end = j.min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        // A raw string: r"…", r#"…"#, br#"…"#.
        } else if let Some(end) = raw_string_end(&c, i) {
            blank(&mut out, &c[i..end]);
            i = end;
        // A string (and a byte string): escapes, and newlines inside.
        } else if at(0) == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        // A char literal ('x', '\'', '\u{1F600}'); a lifetime ('a) is code.
        } else if at(0) == '\'' && (at(1) == '\\' || (at(1) != '\'' && at(2) == '\'')) {
            let mut j = i + 1;
            if c[j] == '\\' {
                j += 2;
            }
            while j < c.len() && c[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(c.len());
            blank(&mut out, &c[i..end]);
            i = end;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Where the raw string opening at `i` ends (just past its closing `"` and hashes, or the text's
/// end), or `None` when none opens there (an `r` inside an identifier such as `bar"` opens none).
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    if i > 0 && is_ident(c[i - 1]) {
        return None;
    }
    let start = match (c.get(i), c.get(i + 1)) {
        (Some('r'), _) => i + 1,
        (Some('b'), Some('r')) => i + 2,
        _ => return None,
    };
    let hashes = c[start..].iter().take_while(|ch| **ch == '#').count();
    if c.get(start + hashes) != Some(&'"') {
        return None;
    }
    let closes = |j: usize| c[j] == '"' && c[j + 1..].iter().take_while(|ch| **ch == '#').count() >= hashes;
    let close = (start + hashes + 1..c.len()).find(|j| closes(*j));
    Some(close.map_or(c.len(), |j| j + 1 + hashes))
}

/// The absolute module paths `code` names, from module `here`.
pub fn named_paths(here: &[String], code: &str) -> Vec<Vec<String>> {
    let children: BTreeSet<String> =
        code.lines().filter(|l| l.trim_end().ends_with(';')).filter_map(mod_name).collect();
    // What `use` brought in by its last name (`use crate::x;` then `x::a::g()`).
    let mut aliases = BTreeMap::new();
    for statement in use_statements(code) {
        for path in scan(here, &statement, &children, &BTreeMap::new()) {
            if let Some(last) = path.last() {
                aliases.insert(last.clone(), path.clone());
            }
        }
    }
    scan(here, code, &children, &aliases)
}

/// The text of every `use …;` statement in `code`, whatever its visibility.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let after = &rest[at..];
        if rest[..at].chars().next_back().is_some_and(is_ident) {
            // `reuse `, `fuse `: a word that ends in "use", not a statement.
            rest = &after[4..];
            continue;
        }
        let end = after.find(';').map_or(after.len(), |n| n + 1);
        out.push(after[4..end].to_string());
        rest = &after[end..];
    }
    out
}

fn scan(
    here: &[String],
    code: &str,
    children: &BTreeSet<String>,
    aliases: &BTreeMap<String, Vec<String>>,
) -> Vec<Vec<String>> {
    // `super` is the parent module for `a/b.rs` ([a, b]) and `a/mod.rs` ([a]) alike.
    let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !(chars[i].is_ascii_lowercase() || chars[i] == '_')
            || (i > 0 && is_ident(chars[i - 1]))
            || (i > 1 && chars[i - 1] == ':' && chars[i - 2] == ':')
        {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        if !chars[i..].starts_with(&[':', ':']) {
            continue;
        }
        let base = match word.as_str() {
            "crate" => Vec::new(),
            "super" => parent.clone(),
            "self" => here.to_vec(),
            w if children.contains(w) => {
                let mut b = here.to_vec();
                b.push(w.to_string());
                b
            }
            w if aliases.contains_key(w) => aliases[w].clone(),
            _ => continue,
        };
        let (paths, next) = tail(&chars, i + 2, base);
        out.extend(paths);
        i = next;
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Reads `a::b::{c, d::e}` from `i`, returning every full path named and where it stopped.
fn tail(chars: &[char], mut i: usize, mut base: Vec<String>) -> (Vec<Vec<String>>, usize) {
    loop {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i < chars.len() && chars[i] == '{' {
            let mut out = Vec::new();
            i += 1;
            loop {
                while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ',') {
                    i += 1;
                }
                if i >= chars.len() || chars[i] == '}' {
                    return (out, i + 1);
                }
                let (paths, next) = tail(chars, i, base.clone());
                out.extend(paths);
                i = next;
                // Skip `as name`, `*`, or anything up to the next item.
                while i < chars.len() && chars[i] != ',' && chars[i] != '}' {
                    i += 1;
                }
            }
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        if word.is_empty() || word == "self" {
            return (vec![base], i);
        }
        if word == "super" {
            base.pop();
        } else {
            base.push(word);
        }
        if chars[i..].starts_with(&[':', ':']) {
            i += 2;
        } else {
            return (vec![base], i);
        }
    }
}

/// The circles of any graph: its strongly connected components of more than one node.
pub fn circles_of(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    strongly_connected(edges).into_iter().filter(|c| c.len() > 1).collect()
}

/// Tarjan's strongly connected components, each sorted, in a stable order.
fn strongly_connected(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in s.edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// Each circle as lines `a.rs -> b.rs` for the edges inside it, for a failure message.
pub fn describe(graph: &Graph, circle: &[PathBuf]) -> String {
    let mut lines = Vec::new();
    for from in circle {
        for to in graph.edges.get(from).into_iter().flatten().filter(|t| circle.contains(t)) {
            lines.push(format!("  {} -> {}", from.display(), to.display()));
        }
    }
    lines.join("\n")
}
