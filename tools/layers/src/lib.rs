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

/// The text without comments, string literals and `#[cfg(test)]` modules.
pub fn code_only(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if is_test_cfg(line.trim()) {
            let mut peek = lines.clone();
            if let Some(next) = peek.next()
                && next.trim_start().starts_with("mod ")
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
        let code = strip_strings(line.split("//").next().unwrap_or(""));
        out.push_str(&code);
        out.push('\n');
    }
    out
}

/// `#[cfg(test)]`, `#[cfg(all(test, unix))]` and the like: an attribute that only tests compile.
fn is_test_cfg(line: &str) -> bool {
    line.starts_with("#[cfg(")
        && line.ends_with(")]")
        && line["#[cfg(".len()..].split(|c: char| !c.is_ascii_alphanumeric() && c != '_').any(|w| w == "test")
        && !line.contains("not(test")
}

fn strip_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_string {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => escaped = false,
            }
        } else if c == '"' {
            in_string = true;
        } else {
            out.push(c);
        }
    }
    out
}

/// The absolute module paths `code` names, from module `here`.
pub fn named_paths(here: &[String], code: &str) -> Vec<Vec<String>> {
    // `super` is the parent module for `a/b.rs` ([a, b]) and `a/mod.rs` ([a]) alike.
    let parent: Vec<String> = here[..here.len().saturating_sub(1)].to_vec();
    let children: BTreeSet<String> = code
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l.strip_prefix("pub ").or_else(|| l.strip_prefix("pub(crate) ")).unwrap_or(l);
            l.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')).map(|n| n.trim().to_string())
        })
        .collect();
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
