//! `host.json`'s `git` block: the user skills root is a team's git working tree (`crate::git`
//! commits to it, `crate::team` syncs it).

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// `host.json`'s `git` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitConfig {
    pub remote: String,
    pub branch: String,
    /// Which library (machine, teammate) this home is: a commit trailer, and what teammates see.
    pub library: String,
    /// `self-evolve mcp` syncs this often (0: only `self-evolve sync`).
    pub sync_minutes: u64,
}

impl GitConfig {
    pub fn from_json(value: &Value) -> Result<GitConfig> {
        let obj = value.as_object().context("`git` must be a JSON object")?;
        if let Some(key) = obj.keys().find(|k| !["remote", "branch", "library", "syncMinutes"].contains(&k.as_str())) {
            bail!(
                "unknown key `git.{}` (known: remote, branch, library, syncMinutes)",
                self_evolve_host::text::visible(key)
            );
        }
        let sync_minutes = match obj.get("syncMinutes") {
            None => 0,
            Some(v) => v
                .as_u64()
                .filter(|m| *m <= 24 * 60)
                .context("`git.syncMinutes` must be a whole number of minutes from 0 to 1440")?,
        };
        let text = |key: &str, default: &str| -> Result<String> {
            match obj.get(key) {
                None => Ok(default.to_string()),
                Some(Value::String(s)) if valid_ref(s) => Ok(s.clone()),
                Some(_) => bail!("`git.{key}` must be a plain name (letters, digits, `-`, `_`, `.`, `/`)"),
            }
        };
        let library = text("library", "")?;
        Ok(GitConfig {
            remote: text("remote", "origin")?,
            branch: text("branch", "main")?,
            library: if library.is_empty() { hostname() } else { library },
            sync_minutes,
        })
    }
}

/// A remote, branch or library name: never an option to git, never a path trick.
fn valid_ref(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && !s.starts_with(['-', '.', '/'])
        && !s.contains("..")
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| valid_ref(h))
        .unwrap_or_else(|| "this-machine".into())
}
