//! One run of one task in one arm: the task's folder copied to a fresh temporary folder (never
//! the user's checkout), the agent started there from its command template with an environment
//! that names only what the run needs, then the task's check. Each child runs in its own process
//! group, killed whole at its timeout or when the evaluation is interrupted (`Children`).

use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What one run came to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub success: bool,
    /// `passed`, `failed` (the check's exit status), `agent-timeout`, `check-timeout`,
    /// `agent-failed-to-start`.
    pub status: String,
    pub agent_exit: Option<i32>,
    pub ms: u64,
    /// What the agent printed about the tokens it used (`usage`), when it printed any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<super::usage::Tokens>,
}

/// The process groups of the children running now, so an interrupt can kill every one.
#[derive(Debug, Clone, Default)]
pub struct Children(Arc<Mutex<BTreeSet<u32>>>);

impl Children {
    fn add(&self, pid: u32) {
        if let Ok(mut set) = self.0.lock() {
            set.insert(pid);
        }
    }

    fn remove(&self, pid: u32) {
        if let Ok(mut set) = self.0.lock() {
            set.remove(&pid);
        }
    }

    /// Kills every running child's whole process group.
    pub fn kill_all(&self) {
        let groups: Vec<u32> = self.0.lock().map(|set| set.iter().copied().collect()).unwrap_or_default();
        for pid in groups {
            kill_group(pid);
        }
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Splits a command template into words as a shell would split it (single and double quotes,
/// backslash escapes), without expanding anything; `{prompt}` and `{task}` are then replaced
/// inside each word, so a prompt is always one argument whatever it holds.
pub fn words(template: &str) -> Result<Vec<String>> {
    let (mut out, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => bail!("the agent template has an unclosed `'`"),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => word.extend(chars.next()),
                        Some(c) => word.push(c),
                        None => bail!("the agent template has an unclosed `\"`"),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    if out.is_empty() {
        bail!("the agent template is empty");
    }
    if !out.iter().any(|w| w.contains("{prompt}")) {
        bail!("the agent template never says `{{prompt}}`: the agent would not get the task");
    }
    Ok(out)
}

/// What a run needs besides its task.
pub struct Setup<'a> {
    pub template: &'a [String],
    /// The arm's home, given to the agent as SELF_EVOLVE_HOME.
    pub home: &'a Path,
    /// Variables passed through from this process's environment (`--env`), besides PATH, HOME,
    /// LANG and TERM.
    pub pass_env: &'a [String],
    pub timeout: Duration,
    pub children: &'a Children,
}

/// Runs `task` once: copy, agent, check.
pub fn run(task: &super::suite::Task, setup: &Setup) -> Result<Outcome> {
    let started = Instant::now();
    let work = tempfile::Builder::new().prefix("self-evolve-eval-").tempdir()?;
    let copy = work.path().join("work");
    match &task.git_ref {
        // By then `evaluate` has replaced the ref with the commit it named at the start.
        Some(commit) => clone_at(&task.folder, commit, &copy)?,
        None => copy_tree(&task.folder, &copy).with_context(|| format!("copying {}", task.folder.display()))?,
    }
    let argv: Vec<String> =
        setup.template.iter().map(|w| w.replace("{prompt}", &task.prompt).replace("{task}", &task.id)).collect();
    let mut agent = Command::new(&argv[0]);
    agent.args(&argv[1..]).stdout(Stdio::piped());
    // What the agent prints is read as it prints it, its last `usage::TAIL_BYTES` kept in memory
    // for the tokens it reports: never a file, which a runaway agent would grow until the disk
    // filled, before its timeout.
    let mut printed = None;
    let agent = spawn_bounded_with(agent, &copy, setup, |child| printed = child.stdout.take().map(Tail::start));
    let tokens = printed.and_then(|tail| super::usage::parse(&String::from_utf8_lossy(&tail.finish())));
    let outcome = |success: bool, status: &str, agent_exit: Option<i32>| Outcome {
        success,
        status: status.into(),
        agent_exit,
        ms: started.elapsed().as_millis() as u64,
        tokens,
    };
    let agent = match agent {
        Ok(result) => result,
        Err(_) => return Ok(outcome(false, "agent-failed-to-start", None)),
    };
    let Some(agent_exit) = agent else { return Ok(outcome(false, "agent-timeout", None)) };
    let mut check = Command::new("sh");
    check.arg("-c").arg(&task.check).stdout(Stdio::null());
    match spawn_bounded(check, &copy, setup)? {
        None => Ok(outcome(false, "check-timeout", agent_exit)),
        Some(Some(0)) => Ok(outcome(true, "passed", agent_exit)),
        Some(_) => Ok(outcome(false, "failed", agent_exit)),
    }
}

/// Runs `command` (its standard output set by the caller) in `cwd`, in its own process group,
/// with only the named environment; its exit code (`Some(None)`: killed by a signal), or `None`
/// past the timeout (its group killed).
fn spawn_bounded(command: Command, cwd: &Path, setup: &Setup) -> Result<Option<Option<i32>>> {
    spawn_bounded_with(command, cwd, setup, |_| {})
}

/// `spawn_bounded`, with `started` given the child as soon as it runs (to read its output).
fn spawn_bounded_with(
    mut command: Command,
    cwd: &Path,
    setup: &Setup,
    started: impl FnOnce(&mut std::process::Child),
) -> Result<Option<Option<i32>>> {
    command.current_dir(cwd).env_clear().stdin(Stdio::null()).stderr(Stdio::null());
    for name in ["PATH", "HOME", "LANG", "TERM"].iter().map(|s| s.to_string()).chain(setup.pass_env.iter().cloned()) {
        if let Some(value) = std::env::var_os(&name) {
            command.env(name, value);
        }
    }
    command.env("SELF_EVOLVE_HOME", setup.home);
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = command.spawn()?;
    started(&mut child);
    let pid = child.id();
    setup.children.add(pid);
    let deadline = Instant::now() + setup.timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status.code());
        }
        if Instant::now() >= deadline {
            kill_group(pid);
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Whatever the child left behind in its group goes with it.
    kill_group(pid);
    setup.children.remove(pid);
    Ok(status)
}

/// A fresh clone of the repository `from` at `commit` (resolved once, before the first run:
/// `commit_of`) in `to`, cut off from it: objects copied, not linked; no remote, so nothing the
/// agent does (a push, say) reaches the user's repository; no branch, tag or reflog but the
/// detached HEAD, and the objects only they reached pruned, so the run cannot read a later
/// commit's answer; links checked out as plain files, and kept so (`core.symlinks` in the
/// clone's own config); no hooks run.
fn clone_at(from: &Path, commit: &str, to: &Path) -> Result<()> {
    git(&[
        os("clone"),
        os("--quiet"),
        os("--no-hardlinks"),
        os("--no-checkout"),
        os("--"),
        from.as_os_str(),
        to.as_os_str(),
    ])
    .with_context(|| format!("cloning {}", from.display()))?;
    let here = |args: &[&str]| -> Result<String> {
        let mut all = vec![os("-C"), to.as_os_str()];
        all.extend(args.iter().map(|a| os(a)));
        git(&all)
    };
    here(&["config", "core.symlinks", "false"])?;
    here(&["checkout", "--quiet", "--detach", commit])
        .with_context(|| format!("checking out {commit} of {}", from.display()))?;
    here(&["remote", "remove", "origin"])?;
    for name in here(&["for-each-ref", "--format=%(refname)"])?.lines().filter(|l| !l.is_empty()) {
        here(&["update-ref", "-d", name])?;
    }
    here(&["reflog", "expire", "--expire=now", "--all"])?;
    here(&["gc", "--quiet", "--prune=now"]).map(drop)
}

/// The commit `git_ref` names in the repository `repo` (any of its branches, tags or revisions):
/// checked for every task before an evaluation starts, and checked out by its hash in a clone.
pub fn commit_of(repo: &Path, git_ref: &str) -> Result<String> {
    let spec = format!("{git_ref}^{{commit}}");
    git(&[os("-C"), repo.as_os_str(), os("rev-parse"), os("--verify"), os("--end-of-options"), os(&spec)])
        .with_context(|| format!("`{git_ref}` names no commit of {}", repo.display()))
}

fn os(s: &str) -> &std::ffi::OsStr {
    std::ffi::OsStr::new(s)
}

fn git(args: &[&std::ffi::OsStr]) -> Result<String> {
    let mut command = Command::new("git");
    // Nothing of this process's git context: a `GIT_DIR` (set for a git hook, say) would turn
    // `-C <clone>` into commands on the user's repository.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
    let out = command
        .args(["-c", "core.symlinks=false", "-c", "core.hooksPath=/dev/null", "-c", "advice.detachedHead=false"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .context("running git (a task with a `ref` needs git on PATH)")?;
    if !out.status.success() {
        bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Copies regular files and folders; a link or a special file in a task's folder is refused (a
/// run never reaches outside its copy through one).
pub(super) fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        } else {
            bail!(
                "{} is a link or a special file; a task's folder holds only files and folders",
                entry.path().display()
            );
        }
    }
    Ok(())
}

/// The last `usage::TAIL_BYTES` of what a child prints, read on a thread as it prints it.
struct Tail {
    kept: std::sync::Arc<std::sync::Mutex<std::collections::VecDeque<u8>>>,
    done: std::sync::mpsc::Receiver<()>,
}

impl Tail {
    fn start(mut from: std::process::ChildStdout) -> Tail {
        use std::io::Read;
        let kept = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let (tx, done) = std::sync::mpsc::channel();
        let into = kept.clone();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 << 10];
            while let Ok(n @ 1..) = from.read(&mut chunk) {
                let Ok(mut kept) = into.lock() else { return };
                kept.extend(&chunk[..n]);
                let over = kept.len().saturating_sub(super::usage::TAIL_BYTES as usize);
                kept.drain(..over);
            }
            let _ = tx.send(());
        });
        Tail { kept, done }
    }

    /// What was kept, once the output ended; a descendant that escaped the agent's process group
    /// and holds the output open is given a second, then what was read so far is taken.
    fn finish(self) -> Vec<u8> {
        let _ = self.done.recv_timeout(Duration::from_secs(1));
        self.kept.lock().map(|kept| kept.iter().copied().collect()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_splits_as_a_shell_would_and_never_splits_the_prompt() {
        let w = words(r#"claude -p {prompt} --name 'a b' "c \"d\"" e\ f"#).unwrap();
        assert_eq!(w, ["claude", "-p", "{prompt}", "--name", "a b", "c \"d\"", "e f"]);
        assert!(words("claude -p").unwrap_err().to_string().contains("{prompt}"));
        assert!(words("x '{prompt}").unwrap_err().to_string().contains("unclosed"));
        assert!(words("  ").is_err());
    }
}
