//! Runnable docs: every ```sh block of README.md and docs/*.md is run, block by block in page
//! order, in one temporary folder per page (a copy of examples/), with HOME set to a temporary
//! folder and this build's `self-evolve` first on PATH. A ```sh exit=N block shows a refusal: it
//! must exit with N (it stops at its first failing command). A ```sh serve block starts a server
//! that runs until stopped (`self-evolve ui`): it must print its `http://127.0.0.1:PORT/?token=…`
//! link, the link must let a browser in and serve a read, then the block is stopped (for
//! `self-evolve serve`, its `http://127.0.0.1:PORT/mcp` must answer `server/discover`). A ```sh
//! no-run block is shown only,
//! and may hold no command of our own CLI: every `self-evolve` command the docs show is run here.
//! Other shell fences (bash, shell, console, zsh) are refused, so nothing escapes the two rules.

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

/// The exit status a runnable block must end with: 0 for ```sh, N for ```sh exit=N; `None` for
/// any other block.
fn expected_exit(info: &str) -> Option<i32> {
    match info {
        "sh" => Some(0),
        _ => info.strip_prefix("sh exit=").and_then(|n| n.parse().ok()),
    }
}

/// Where a shell line runs `self-evolve` itself: at its start or after `|`, `&&`, `||`, `;`, `$(`
/// or a backquote (not as an argument to another tool, as in `claude mcp add … -- self-evolve mcp`).
fn runs_ours(line: &str) -> bool {
    let mut rest = line.trim_start();
    loop {
        if rest.starts_with("self-evolve ") || rest == "self-evolve" {
            return true;
        }
        let next = ["|", "&&", ";", "$(", "`"].iter().filter_map(|sep| rest.find(sep).map(|at| at + sep.len())).min();
        match next {
            Some(at) => rest = rest[at..].trim_start_matches(['|', '&']).trim_start(),
            None => return false,
        }
    }
}

/// The info string of a block that starts a server (`self-evolve ui`).
const SERVE: &str = "sh serve";

/// bash running `block` as a page's reader would: this build first on PATH, HOME the page's
/// temporary one, nothing from the caller's environment that names a home or an agent's config.
fn block_command(block: &Block, work: &Path, home: &Path, cache: &Path) -> Command {
    let bin = Path::new(env!("CARGO_BIN_EXE_self-evolve"));
    let path = format!("{}:{}", bin.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
    let script = format!("set -euo pipefail\n{}", block.body);
    let mut command = Command::new("bash");
    command.arg("-c").arg(&script).current_dir(work);
    for (key, _) in std::env::vars() {
        // `setup` blocks write where these point: the temporary HOME, never a real agent's config.
        let moves_config =
            matches!(key.as_str(), "CODEX_HOME" | "CLAUDE_CONFIG_DIR" | "GEMINI_CLI_HOME" | "HERMES_HOME");
        if key.starts_with("SELF_EVOLVE_") || key.starts_with("GIT_") || key == "XDG_CACHE_HOME" || moves_config {
            command.env_remove(key);
        }
    }
    command.env("HOME", home).env("PATH", path).env("SELF_EVOLVE_CACHE_DIR", cache).stdin(Stdio::null());
    command
}

fn run_block(page: &Path, block: &Block, work: &Path, home: &Path, cache: &Path) {
    let expected = expected_exit(&block.info).unwrap_or(0);
    let output_dir = tempfile::tempdir().unwrap();
    let stdout_path = output_dir.path().join("stdout");
    let stderr_path = output_dir.path().join("stderr");
    let mut child = block_command(block, work, home, cache)
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
    if status.is_some_and(|s| s.code() == Some(expected)) {
        return;
    }
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let tail: String = {
        let lines: Vec<&str> = stdout.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    };
    let how = match status {
        Some(s) => format!("exited with {s} (expected {expected})"),
        None => format!("ran past {} s", BLOCK_DEADLINE.as_secs()),
    };
    panic!(
        "{}:{}: the sh block {how}\n--- block ---\n{}--- stderr ---\n{stderr}\n--- stdout (last 20 lines) ---\n{tail}",
        rel(page),
        block.line,
        block.body
    );
}

/// One HTTP/1.1 GET on loopback with `Host` as a browser sends it; the status and head.
fn get(port: u16, target: &str, cookie: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("the served link's port 127.0.0.1:{port}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    let request = format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{cookie}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let head = text.split("\r\n\r\n").next().unwrap_or_default().to_string();
    (head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0), head)
}

/// One `server/discover` POSTed to `self-evolve serve`'s endpoint; the whole answer.
fn discover(port: u16) -> String {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(request.as_bytes());
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A ```sh serve block: runs until it prints its launch link, which must let a browser in (a
/// session cookie) and answer a read with it; then the block's process group is stopped.
fn run_serve_block(page: &Path, block: &Block, work: &Path, home: &Path, cache: &Path) {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let output_dir = tempfile::tempdir().unwrap();
    let stderr_path = output_dir.path().join("stderr");
    // The browser a person's desktop would start: a stand-in that notes the link it was given.
    let opener = output_dir.path().join("bin");
    std::fs::create_dir_all(&opener).unwrap();
    let opened = output_dir.path().join("opened");
    let script = format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", opened.display());
    for name in ["xdg-open", "open"] {
        let path = opener.join(name);
        std::fs::write(&path, &script).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let mut command = block_command(block, work, home, cache);
    let path = command.get_envs().find(|(k, _)| *k == "PATH").and_then(|(_, v)| v).unwrap().to_owned();
    let mut child = command
        .env("PATH", format!("{}:{}", opener.display(), path.to_string_lossy()))
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr_path).unwrap())
        .spawn()
        .expect("bash runs");
    let stdout = child.stdout.take().unwrap();
    // The whole group (bash and the server it started) is stopped however this ends, a failed
    // check's panic included.
    struct Group(std::process::Child);
    impl Drop for Group {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", self.0.id())]).status();
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let group = Group(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + BLOCK_DEADLINE;
    let link = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => match line.find("http://127.0.0.1:") {
                Some(at) => break Some(line[at..].trim().to_string()),
                None => continue,
            },
            Err(_) => break None,
        }
    };
    let checked = link.as_deref().map(|link| {
        let rest = &link["http://127.0.0.1:".len()..];
        let (port, target) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let port: u16 = port.parse().map_err(|_| format!("no port in {link}"))?;
        if target == "/mcp" {
            // `self-evolve serve`: the endpoint answers a 2026-07-28 client's first request.
            let answer = discover(port);
            return match answer.contains(" 200 ") && answer.contains("supportedVersions") {
                true => Ok(()),
                false => Err(format!("{link} did not answer server/discover: {answer}")),
            };
        }
        let (status, head) = get(port, target, None);
        let cookie = head
            .lines()
            .find_map(|l| l.strip_prefix("Set-Cookie: ").or_else(|| l.strip_prefix("set-cookie: ")))
            .and_then(|c| c.split(';').next())
            .map(str::to_string);
        let Some(cookie) = cookie.filter(|_| status == 303) else {
            return Err(format!("the link {link} let no browser in: {head}"));
        };
        let (status, head) = get(port, "/api/read?args=pending", Some(&cookie));
        if status != 200 {
            return Err(format!("a read with the link's session: {head}"));
        }
        // Unless the block said --no-open, the person's browser was started on the link.
        let wait = Instant::now() + Duration::from_secs(10);
        let seen = loop {
            let seen = std::fs::read_to_string(&opened).unwrap_or_default();
            if !seen.is_empty() || Instant::now() > wait || block.body.contains("--no-open") {
                break seen;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        match (block.body.contains("--no-open"), seen.trim() == link) {
            (true, _) if seen.is_empty() => Ok(()),
            (false, true) => Ok(()),
            _ => Err(format!("the browser was started with {seen:?}, not the link {link}")),
        }
    });
    drop(group);
    let why = match checked {
        Some(Ok(())) => return,
        Some(Err(why)) => why,
        None => format!("printed no http://127.0.0.1:PORT link in {} s", BLOCK_DEADLINE.as_secs()),
    };
    panic!(
        "{}:{}: the sh serve block {why}\n--- block ---\n{}--- stderr ---\n{}",
        rel(page),
        block.line,
        block.body,
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
}

#[test]
fn no_run_blocks_hold_no_command_of_ours() {
    let mut bad = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for block in blocks(&text) {
            let word = block.info.split_whitespace().next().unwrap_or("");
            let shell = ["sh", "bash", "shell", "console", "zsh", "shell-session"].contains(&word);
            if shell && expected_exit(&block.info).is_none() && block.info != "sh no-run" && block.info != SERVE {
                bad.push(format!(
                    "{}:{}: unknown info string `{}` (use `sh`, `sh exit=N`, `sh serve` or `sh no-run`)",
                    rel(&page),
                    block.line,
                    block.info
                ));
            }
            if block.info != "sh no-run" {
                continue;
            }
            for (i, line) in block.body.lines().enumerate() {
                if runs_ours(line) {
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
        let runnable: Vec<Block> =
            blocks(&text).into_iter().filter(|b| expected_exit(&b.info).is_some() || b.info == SERVE).collect();
        if runnable.is_empty() {
            continue;
        }
        let root = tempfile::tempdir().unwrap();
        let work = root.path().join("work");
        let home = root.path().join("home");
        copy_dir(&examples, &work);
        std::fs::create_dir_all(&home).unwrap();
        for block in &runnable {
            if block.info == SERVE {
                run_serve_block(&page, block, &work, &home, cache.path());
            } else {
                run_block(&page, block, &work, &home, cache.path());
            }
            ran += 1;
        }
    }
    assert!(ran >= AT_LEAST_RUNNABLE, "only {ran} runnable sh blocks found; expected at least {AT_LEAST_RUNNABLE}");
}

#[test]
fn our_commands_are_found_wherever_a_shell_line_runs_them() {
    for line in [
        "self-evolve mcp",
        "  self-evolve skills list",
        "cd x && self-evolve check .",
        "echo {} | self-evolve event",
        "x=$(self-evolve config --defaults)",
    ] {
        assert!(runs_ours(line), "{line}");
    }
    for line in [
        "claude mcp add self-evolve -- self-evolve mcp",
        "cargo install --path cli",
        "gemini mcp add self-evolve self-evolve mcp",
    ] {
        assert!(!runs_ours(line), "{line}");
    }
}
