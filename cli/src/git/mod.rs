//! The user skills root as a git working tree the host owns (the installed `git`, so the user's
//! credentials, signing and hooks apply; the plugin never sees it): running git, one lock on the
//! tree, and one commit per landed change, whose message comes from the plugin's version record
//! (summary, reason, and trailers for skill, actor, agent, session, review and library).
//! A service's floor: `live/` commits after each landing, `team/` syncs on top of it. Uses only
//! the home.

use crate::home::git_config::GitConfig;
use anyhow::{Context, Result, bail};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The user skills root, when it is a git working tree.
pub fn tree(home: &Path) -> Option<PathBuf> {
    let root = crate::home::user_skills(home);
    root.join(".git").exists().then_some(root)
}

/// Runs git in `root`; its stdout, or why it failed (with git's own words).
pub fn git(root: &Path, args: &[&str]) -> Result<String> {
    git_bytes(root, args).map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// How long one git command may run: a fetch waiting on a password prompt or a dead network
/// must not hold `sync` (or the MCP server's tick) forever.
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Variables that point git at another repository, work tree or index (git sets them while it
/// runs hooks, so a hook that calls an agent would send our commits elsewhere).
const REPOSITORY_VARIABLES: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
];

/// `git`, its stdout as bytes: for file contents and `-z` lists, which need not be UTF-8.
pub fn git_bytes(root: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let mut child = git_command(root, args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running git (is it installed?)")?;
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let out = std::thread::spawn(move || read_all(stdout.as_mut()));
    let err = std::thread::spawn(move || read_all(stderr.as_mut()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for git")? {
            break status;
        }
        if started.elapsed() > GIT_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "git {} did not finish within {} s and was stopped (a password prompt, or a remote that does \
                 not answer?)",
                args.first().unwrap_or(&""),
                GIT_TIMEOUT.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        // Some refusals ("nothing to commit") are on stdout.
        let words = if err.iter().all(u8::is_ascii_whitespace) { &out } else { &err };
        bail!(
            "git {}: {}",
            args.first().unwrap_or(&""),
            self_evolve_host::text::visible(String::from_utf8_lossy(words).trim())
        );
    }
    Ok(out)
}

/// `git -C root ARGS` in this repository whatever the environment says, names read literally,
/// and never a prompt.
pub fn git_command(root: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .args(args)
        // Never wait for a password on a terminal nobody watches.
        .env("GIT_TERMINAL_PROMPT", "0")
        // A file named `:(exclude)README.md` or `*.md` is a name, never a pattern.
        .env("GIT_LITERAL_PATHSPECS", "1");
    for variable in REPOSITORY_VARIABLES {
        command.env_remove(variable);
    }
    command
}

fn read_all(pipe: Option<&mut impl Read>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.read_to_end(&mut bytes);
    }
    bytes
}

/// Held while this home's git tree is changed (a commit, a sync): two processes never rebase,
/// commit or push in it at once. An advisory lock on `<home>/run/git.lock`, released by the
/// system when its process ends, however it ends.
pub struct TreeLock {
    _file: std::fs::File,
    home: PathBuf,
}

/// Homes whose tree this process holds: a commit asked for meanwhile (a staged conflict's plugin
/// run during `sync`, a tool call while the MCP server syncs) is left to the next one, rather
/// than waiting on its own process's lock.
static HELD_HERE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn held_here(home: &Path) -> bool {
    HELD_HERE.lock().map(|held| held.iter().any(|h| h == home)).unwrap_or(false)
}

impl Drop for TreeLock {
    fn drop(&mut self) {
        if let Ok(mut held) = HELD_HERE.lock() {
            held.retain(|h| *h != self.home);
        }
    }
}

pub fn lock_tree(home: &Path, wait: Duration) -> Result<TreeLock> {
    let dir = home.join("run");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("git.lock");
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    }
    let file = options.open(&path).with_context(|| format!("opening {}", path.display()))?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => {
                if let Ok(mut held) = HELD_HERE.lock() {
                    held.push(home.to_path_buf());
                }
                return Ok(TreeLock { _file: file, home: home.to_path_buf() });
            }
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "another sync or commit is running in this home ({} is held); try again when it is done",
                path.display()
            ),
            Err(std::fs::TryLockError::Error(e)) => return Err(e).context(format!("locking {}", path.display())),
        }
    }
}

/// Refuses to touch a tree where a rebase, merge, cherry-pick or revert waits to be finished
/// (by a person, or by a sync that was killed): committing there would land on a detached HEAD
/// that the next `rebase --abort` throws away.
pub fn ensure_settled(root: &Path) -> Result<()> {
    for marker in ["rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD"] {
        let path = git(root, &["rev-parse", "--git-path", marker])?;
        let path = root.join(path.trim_end_matches(['\n', '\r']));
        if path.exists() {
            bail!(
                "{} has a git operation in progress ({marker}): finish it (`git -C {} status` says how) or abort \
                 it (e.g. `git -C {} rebase --abort`); commits and sync wait until then, and nothing is lost",
                root.display(),
                root.display(),
                root.display()
            );
        }
    }
    Ok(())
}

/// The repository's own attributes, which win over any `.gitattributes` a teammate commits: no
/// merge driver (`merge=union` would splice both sides of a SKILL.md together without a
/// conflict), no clean or smudge filter (a filter runs a command, and LFS would fetch from a URL
/// the repository names), no encoding or end-of-line rewriting (the bytes are the skill).
const ATTRIBUTES: &str = "# self-evolve: team libraries are merged and stored as they are written\n\
                          * merge=text -filter -ident -text -working-tree-encoding\n";

pub fn protect_attributes(root: &Path) -> Result<()> {
    let path = git(root, &["rev-parse", "--git-path", "info/attributes"])?;
    let path = root.join(path.trim_end_matches(['\n', '\r']));
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current.contains(ATTRIBUTES) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(ATTRIBUTES);
    std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
}

/// Commits what landed in the user skills root since the last commit: one commit per skill,
/// its message from the plugin's newest version record of that skill. Returns the summaries.
pub fn commit_landed(home: &Path, config: &GitConfig) -> Result<Vec<String>> {
    let Some(root) = tree(home) else { return Ok(Vec::new()) };
    if held_here(home) {
        return Ok(Vec::new());
    }
    let _lock = lock_tree(home, Duration::from_secs(10))?;
    commit_landed_locked(home, &root, config)
}

/// `commit_landed` for a caller that holds the tree's lock.
pub fn commit_landed_locked(home: &Path, root: &Path, config: &GitConfig) -> Result<Vec<String>> {
    ensure_settled(root)?;
    protect_attributes(root)?;
    let root = root.to_path_buf();
    let status = git_bytes(&root, &["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
    let mut by_skill: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut fields = status.split(|&b| b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let (code, path) = entry.split_at(entry.len().min(3));
        if code.starts_with(b"R") || code.starts_with(b"C") {
            fields.next(); // the rename's source
        }
        // The plugin writes UTF-8 names only: another name was made by hand, and is left to
        // the person who made it (it could not be passed to git as this host passes names).
        let Ok(path) = std::str::from_utf8(path) else { continue };
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
            let name = self_evolve_host::text::visible(&skill);
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
    // Everything in a message is shown to people by `git log` and goes to the remote: redacted
    // (before the line breaks go, which a PEM key needs to be known whole), one line each,
    // escapes visible. The plugin refuses a credential in a reason; this holds if one gets by.
    let clean = |text: String| {
        let text = self_evolve_scan::redact_secrets(&text).unwrap_or(text);
        self_evolve_host::text::visible(&text.replace(['\n', '\r'], " ")).to_string()
    };
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
    let dir = crate::home::state(home).join("history").join("user").join(skill);
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
        let dir = crate::home::state(home.path()).join("history/user/evil");
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
    fn a_message_never_carries_a_credential_from_the_record() {
        let home = tempfile::tempdir().unwrap();
        let config = GitConfig::from_json(&json!({"library": "laptop-0"})).unwrap();
        let dir = crate::home::state(home.path()).join("history/user/deploy");
        std::fs::create_dir_all(&dir).unwrap();
        let token = format!("ghp_{}", "k3Y9mQ2xV7bN4pL8wR1tZ6cF0hJ5sD3gA2eU");
        let body: String =
            (0..12).map(|i| format!("MIIEow{i:02}AKCAQEAyZ8vQ3mT5nB7kL2pX4wR9sD1fG6hJ0cV{i:02}\n")).collect();
        let key = format!("-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----");
        let record = json!({"version": 3, "operation": "patch", "actor": "reviewer", "by": token, "session": "s1",
            "reason": format!("rotated {token}; key:\n{key}"), "atMs": u64::MAX / 2});
        std::fs::write(dir.join("3.json"), record.to_string()).unwrap();
        let message = message(home.path(), "deploy", &config, 0);
        assert!(message.contains("[redacted: github-pat]"), "{message}");
        assert!(message.contains("[redacted: private-key]"), "{message}");
        for secret in [&token[4..], "yZ8vQ3mT5nB7kL2p", "END RSA PRIVATE"] {
            assert!(!message.contains(secret), "{secret} in {message}");
        }
    }

    #[test]
    fn one_process_at_a_time_changes_a_homes_tree() {
        let home = tempfile::tempdir().unwrap();
        let held = lock_tree(home.path(), Duration::ZERO).unwrap();
        let second = lock_tree(home.path(), Duration::from_millis(100)).err().expect("the tree is held");
        assert!(second.to_string().contains("another sync or commit is running"), "{second}");
        // This process's own commits while it holds the tree wait for the holder's.
        assert!(held_here(home.path()));
        drop(held);
        assert!(!held_here(home.path()));
        lock_tree(home.path(), Duration::ZERO).expect("free once released");
    }

    #[test]
    fn a_tree_in_the_middle_of_a_rebase_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]).unwrap();
        ensure_settled(root).unwrap();
        std::fs::create_dir_all(root.join(".git/rebase-merge")).unwrap();
        let err = ensure_settled(root).unwrap_err().to_string();
        assert!(err.contains("rebase-merge") && err.contains("nothing is lost"), "{err}");
    }

    #[test]
    fn the_repositorys_own_attributes_are_written_once_and_kept_with_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]).unwrap();
        std::fs::write(root.join(".git/info/attributes"), "*.png binary").unwrap();
        protect_attributes(root).unwrap();
        protect_attributes(root).unwrap();
        let text = std::fs::read_to_string(root.join(".git/info/attributes")).unwrap();
        assert!(text.starts_with("*.png binary\n") && text.matches("merge=text").count() == 1, "{text}");
        std::fs::write(root.join(".gitattributes"), "* merge=union filter=lfs\n").unwrap();
        let attrs = git(root, &["check-attr", "merge", "filter", "--", "a/SKILL.md"]).unwrap();
        assert!(attrs.contains("merge: text") && attrs.contains("filter: unset"), "{attrs}");
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
