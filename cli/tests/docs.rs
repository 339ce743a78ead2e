//! Runnable docs: every ```sh block of README.md and docs/*.md is run, block by block in page
//! order, in one temporary folder per page (a copy of examples/), with HOME set to a temporary
//! folder and this build's `self-evolve` first on PATH. A ```sh no-run block is shown only, and
//! may hold no command of our own CLI: every `self-evolve` command the docs show is run here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Fewer runnable blocks than this means the parser or the pages lost some.
const AT_LEAST_RUNNABLE: usize = 22;
/// One block gets this long (a debug build replays the example session in seconds).
const BLOCK_DEADLINE: Duration = Duration::from_secs(180);

struct Block {
    info: String,
    line: usize,
    body: String,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn pages() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    let mut pages = vec![repo().join("README.md")];
    pages.extend(docs);
    pages
}

/// Fenced blocks with their info string and the 1-based line of the opening fence. Fences may be
/// indented (a block inside a list item); the body keeps its lines with that indent removed.
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let block = Block { info: info.trim().to_string(), line: i + 1, body: String::new() };
                    open = Some((block, indent));
                }
            }
            Some((mut block, fence_indent)) => {
                if trimmed.starts_with("```") {
                    out.push(block);
                } else {
                    let cut = line.len().min(fence_indent).min(indent);
                    block.body.push_str(&line[cut..]);
                    block.body.push('\n');
                    open = Some((block, fence_indent));
                }
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    out
}

fn rel(page: &Path) -> String {
    page.strip_prefix(repo()).unwrap_or(page).display().to_string()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn run_block(page: &Path, block: &Block, work: &Path, home: &Path, cache: &Path) {
    let bin = Path::new(env!("CARGO_BIN_EXE_self-evolve"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let script = format!("set -euo pipefail\n{}", block.body);
    let mut command = Command::new("bash");
    command.arg("-c").arg(&script).current_dir(work);
    for (key, _) in std::env::vars() {
        if key.starts_with("SELF_EVOLVE_") || key.starts_with("GIT_") || key == "XDG_CACHE_HOME" {
            command.env_remove(key);
        }
    }
    let output_dir = tempfile::tempdir().unwrap();
    let stdout_path = output_dir.path().join("stdout");
    let stderr_path = output_dir.path().join("stderr");
    let mut child = command
        .env("HOME", home)
        .env("PATH", path)
        .env("SELF_EVOLVE_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("bash runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > BLOCK_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if status.is_some_and(|s| s.success()) {
        return;
    }
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let tail: String = {
        let lines: Vec<&str> = stdout.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    };
    let how = match status {
        Some(s) => format!("exited with {s}"),
        None => format!("ran past {} s", BLOCK_DEADLINE.as_secs()),
    };
    panic!(
        "{}:{}: the sh block {how}\n--- block ---\n{}--- stderr ---\n{stderr}\n--- stdout (last 20 lines) ---\n{tail}",
        rel(page),
        block.line,
        block.body
    );
}

#[test]
fn no_run_blocks_hold_no_command_of_ours() {
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for block in blocks(&text) {
            if block.info.starts_with("sh") && block.info != "sh" && block.info != "sh no-run" {
                bad.push(format!(
                    "{}:{}: unknown info string `{}` (use `sh` or `sh no-run`)",
                    rel(&page),
                    block.line,
                    block.info
                ));
            }
            if block.info != "sh no-run" {
                continue;
            }
            for (i, line) in block.body.lines().enumerate() {
                if line.trim_start().starts_with("self-evolve ") {
                    bad.push(format!(
                        "{}:{}: `{}` is in a no-run block; put our own commands in a runnable ```sh block",
                        rel(&page),
                        block.line + 1 + i,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_sh_block_runs() {
    let examples = repo().join("examples");
    let cache = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let runnable: Vec<Block> = blocks(&text).into_iter().filter(|b| b.info == "sh").collect();
        if runnable.is_empty() {
            continue;
        }
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let home = root.path().join("home");
        copy_dir(&examples, &work);
        std::fs::create_dir_all(&home).unwrap();
        for block in &runnable {
            run_block(&page, block, &work, &home, cache.path());
            ran += 1;
        }
    }
    assert!(ran >= AT_LEAST_RUNNABLE, "only {ran} runnable sh blocks found; expected at least {AT_LEAST_RUNNABLE}");
}
