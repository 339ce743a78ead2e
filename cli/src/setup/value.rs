//! What setup writes, as an ordered value: an entry keeps the order its harness's docs show
//! (`command` before `args`), which `serde_json::Value` (sorted maps here) would lose. Each format
//! module renders it its own way; comparisons go through `to_json`, where order does not count.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
pub enum V {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<V>),
    Map(Vec<(String, V)>),
}

impl V {
    pub fn str(text: impl Into<String>) -> V {
        V::Str(text.into())
    }

    pub fn strs<S: AsRef<str>>(items: &[S]) -> V {
        V::List(items.iter().map(|s| V::Str(s.as_ref().to_string())).collect())
    }

    pub fn map(pairs: Vec<(&str, V)>) -> V {
        V::Map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    pub fn to_json(&self) -> Value {
        match self {
            V::Str(s) => Value::String(s.clone()),
            V::Int(n) => Value::from(*n),
            V::Bool(b) => Value::Bool(*b),
            V::List(items) => Value::Array(items.iter().map(V::to_json).collect()),
            V::Map(pairs) => Value::Object(pairs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }

    /// The pairs of a map (empty for anything else).
    pub fn pairs(&self) -> &[(String, V)] {
        match self {
            V::Map(pairs) => pairs,
            _ => &[],
        }
    }
}

/// Is this shell command one of ours: its first word names a `self-evolve` binary (bare, by path,
/// or quoted) and a later word is `hook`? How setup finds the hook entries it wrote, whatever
/// binary path or home they carry, so a second run replaces them instead of adding more.
pub fn is_our_hook_command(command: &str) -> bool {
    let words = shell_words(command);
    let Some(first) = words.first() else { return false };
    let name = first.rsplit(['/', '\\']).next().unwrap_or(first);
    matches!(name, "self-evolve" | "self-evolve.exe") && words[1..].iter().any(|w| w == "hook")
}

/// Splits a command line as `sh` would for plain words and single or double quotes (enough to
/// recognise our own commands; nothing here is ever run).
fn shell_words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            // Inside double quotes a backslash escapes only these (a Windows path keeps its own).
            (Some('"'), '\\') => match chars.clone().next() {
                Some(next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    word.push(next);
                }
                _ => word.push('\\'),
            },
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '\\') => {
                word.extend(chars.next());
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// A word quoted for `sh` only when it needs to be (`'…'`, with `'` written `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+' | b':' | b'=' | b','));
    if plain { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_hook_commands_are_recognised_by_binary_name_and_the_hook_word() {
        for ours in [
            "self-evolve hook",
            "/usr/local/bin/self-evolve --home /h hook --harness codex",
            "'/home/me/my tools/self-evolve' --home '/home/me/.dsh' hook",
            r#""C:\tools\self-evolve.exe" hook"#,
        ] {
            assert!(is_our_hook_command(ours), "{ours}");
        }
        for theirs in ["", "self-evolve mcp", "echo self-evolve hook", "/bin/self-evolver hook", "hook self-evolve"] {
            assert!(!is_our_hook_command(theirs), "{theirs}");
        }
    }

    #[test]
    fn words_are_quoted_only_when_needed_and_read_back_the_same() {
        for word in ["/usr/bin/self-evolve", "/home/me/my tools/x", "it's", "", "$HOME", "a\"b"] {
            let quoted = shell_quote(word);
            assert_eq!(shell_words(&quoted), vec![word.to_string()], "{quoted}");
        }
        assert_eq!(shell_quote("/usr/bin/self-evolve"), "/usr/bin/self-evolve");
    }
}
