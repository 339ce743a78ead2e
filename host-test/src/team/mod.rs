//! Team libraries over git: the user skills root as a git working tree the host owns (the
//! installed `git`, so the user's credentials, signing and hooks apply; the plugin never sees it).
//! Each landed change becomes one commit whose message comes from the plugin's version record
//! (summary, reason, and trailers for skill, actor, agent, session, review and library);
//! `self-evolve sync` fetches, replays local commits onto the remote branch, scans every outgoing
//! file with the plugin's scanner and pushes.

mod stage;
pub mod sync;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

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
            bail!("unknown key `git.{}` (known: remote, branch, library, syncMinutes)", crate::text::visible(key));
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

/// The user skills root, when it is a git working tree.
pub fn tree(home: &Path) -> Option<PathBuf> {
    let root = crate::cli::home::user_skills(home);
    root.join(".git").exists().then_some(root)
}

/// Runs git in `root`; its stdout, or why it failed (with git's own words).
pub fn git(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        // Never wait for a password on a terminal nobody watches.
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .context("running git (is it installed?)")?;
    if !out.status.success() {
        bail!("git {}: {}", args.first().unwrap_or(&""), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Commits what landed in the user skills root since the last commit: one commit per skill,
/// its message from the plugin's newest version record of that skill. Returns the summaries.
pub fn commit_landed(home: &Path, config: &GitConfig) -> Result<Vec<String>> {
    let Some(root) = tree(home) else { return Ok(Vec::new()) };
    let status = git(&root, &["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
    let mut by_skill: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut fields = status.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let (code, path) = entry.split_at(entry.len().min(3));
        if code.starts_with('R') || code.starts_with('C') {
            fields.next(); // the rename's source
        }
        let top = path.split('/').next().unwrap_or(path);
        // Hidden entries are the plugin's temp files and debris: never committed.
        if top.starts_with('.') || path.is_empty() {
            continue;
        }
        let skill = top.strip_suffix(".md").unwrap_or(top).to_string();
        by_skill.entry(skill).or_default().push(path.to_string());
    }
    let mut made = Vec::new();
    for (skill, paths) in by_skill {
        let mut add = vec!["add", "-A", "--"];
        add.extend(paths.iter().map(String::as_str));
        git(&root, &add)?;
        let gone = !root.join(&skill).exists() && !root.join(format!("{skill}.md")).exists();
        // The version record speaks for this change only when it is newer than the skill's last
        // commit (an archive or a restore records none).
        let last_commit_s: u64 = git(&root, &["log", "-1", "--format=%ct", "--", &skill])
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        let message = if gone {
            let name = crate::text::visible(&skill);
            format!("{name}: archived or removed\n\nSkill: {name}\nLibrary: {}", config.library)
        } else {
            message(home, &skill, config, last_commit_s * 1000)
        };
        let mut commit = vec!["commit", "-q", "-m", message.as_str(), "--"];
        commit.extend(paths.iter().map(String::as_str));
        git(&root, &commit)?;
        made.push(message.lines().next().unwrap_or("").to_string());
    }
    Ok(made)
}

/// A commit message for `skill`'s newest landed version (one recorded after `since_ms`): a
/// summary, the reason, trailers.
pub fn message(home: &Path, skill: &str, config: &GitConfig, since_ms: u64) -> String {
    let record = newest_version(home, skill).filter(|r| r["atMs"].as_u64().is_some_and(|at| at + 1000 >= since_ms));
    let s = |key: &str| record.as_ref().and_then(|r| r[key].as_str()).unwrap_or("").to_string();
    // Everything in a message is shown to people by `git log`: one line each, escapes visible.
    let clean = |text: String| crate::text::visible(&text.replace(['\n', '\r'], " ")).to_string();
    let operation = if record.is_some() { clean(s("operation")) } else { "change".to_string() };
    let version = record.as_ref().and_then(|r| r["version"].as_u64());
    let skill = clean(skill.to_string());
    let summary = match version {
        Some(v) => format!("{skill}: {operation} (v{v})"),
        None => format!("{skill}: {operation}"),
    };
    let mut out = summary;
    let reason = clean(s("reason"));
    if !reason.is_empty() {
        out.push_str(&format!("\n\n{reason}"));
    }
    out.push_str(&format!("\n\nSkill: {skill}"));
    let actor = clean(s("actor"));
    out.push_str(&format!("\nActor: {}", if actor.is_empty() { "unknown".into() } else { actor.clone() }));
    for (trailer, value) in [("Agent", clean(s("by"))), ("Session", clean(s("session")))] {
        if !value.is_empty() {
            out.push_str(&format!("\n{trailer}: {value}"));
        }
    }
    if actor == "reviewer" {
        out.push_str(&format!("\nReview: {}", clean(s("by"))));
    }
    out.push_str(&format!("\nLibrary: {}", config.library));
    out
}

/// The plugin's newest version record of a user-scope skill (`history/user/<skill>/<V>.json`).
fn newest_version(home: &Path, skill: &str) -> Option<Value> {
    let dir = crate::cli::home::state(home).join("history").join("user").join(skill);
    let newest = std::fs::read_dir(&dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse::<u64>().ok())
        .max()?;
    let bytes = std::fs::read(dir.join(format!("{newest}.json"))).ok().filter(|b| b.len() < 1 << 20)?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_message_shows_control_characters_and_keeps_one_line_per_field() {
        let home = tempfile::tempdir().unwrap();
        let config = GitConfig::from_json(&json!({"library": "laptop-0"})).unwrap();
        let dir = crate::cli::home::state(home.path()).join("history/user/evil");
        std::fs::create_dir_all(&dir).unwrap();
        let record = json!({"version": 2, "operation": "patch", "actor": "agent", "by": "main", "session": "s1",
            "reason": "line one\nSkill: forged\u{1b}[2J", "atMs": u64::MAX / 2});
        std::fs::write(dir.join("2.json"), record.to_string()).unwrap();
        let message = message(home.path(), "evil", &config, 0);
        assert!(message.starts_with("evil: patch (v2)\n\nline one Skill: forged\\u{1b}[2J\n"), "{message}");
        assert_eq!(message.lines().filter(|l| l.starts_with("Skill:")).count(), 1, "no forged trailer: {message}");
        let weird = super::message(home.path(), "we\u{1b}ird", &config, 0);
        assert!(weird.starts_with("we\\u{1b}ird: change"), "{weird}");
    }

    #[test]
    fn the_git_block_is_checked_by_name() {
        let c =
            GitConfig::from_json(&json!({"remote": "team", "branch": "skills", "library": "alice-laptop"})).unwrap();
        assert_eq!((c.remote.as_str(), c.branch.as_str(), c.library.as_str()), ("team", "skills", "alice-laptop"));
        let d = GitConfig::from_json(&json!({})).unwrap();
        assert_eq!((d.remote.as_str(), d.branch.as_str()), ("origin", "main"));
        for bad in [
            json!({"remote": "--upload-pack=x"}),
            json!({"branch": "../x"}),
            json!({"push": true}),
            json!({"syncMinutes": -1}),
            json!([]),
        ] {
            assert!(GitConfig::from_json(&bad).is_err(), "{bad}");
        }
    }
}
