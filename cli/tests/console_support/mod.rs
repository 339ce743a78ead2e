//! The operator console's tests' shared parts: the real `self-evolve` binary, a home as a
//! person's looks after some use (made by the real CLI: a replayed session, a skill with two
//! versions, approval on, three staged writes, one held for a credential finding), the
//! `self-evolve ui` process and raw HTTP requests to it with every header chosen by the test.
//! `console_browser.rs` drives it in Chromium; `console_api.rs` speaks to it directly.
#![allow(dead_code)] // each test binary uses its own part

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the screenshots and logs go (test artefacts, kept after the run).
pub fn artefacts() -> PathBuf {
    let dir = repo().join("target/console-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// The CLI and the home
// ---------------------------------------------------------------------------------------------

/// The real binary, as the other CLI tests run it: this checkout's component, a shared compile
/// cache, nothing from the caller's environment that names a home or a session.
pub fn cli(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_self-evolve"));
    cmd.current_dir(cwd)
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env("SELF_EVOLVE_WASM", repo().join("dist/self-evolve.wasm"))
        .env_remove("SELF_EVOLVE_HOME")
        .env_remove("SELF_EVOLVE_ACTIVATION")
        .env_remove("SELF_EVOLVE_SESSION")
        .env_remove("SELF_EVOLVE_AGENT")
        .env_remove("SELF_EVOLVE_CWD")
        .stdin(Stdio::null());
    cmd
}

pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A value the scanner takes for a credential (the operator knows it is a fixture).
pub fn fixture() -> String {
    format!("API_KEY = \"{}{}\"", "q8Zr7kq2", "Lp9xW3vT")
}

/// What the hostile skill's body holds: markup, a terminal colour escape, a bidi override, a
/// zero-width space, a tab and trailing spaces.
pub fn hostile_body() -> String {
    "# Hostile\n\n<script>window.pwned=1</script>\n<img src=x onerror=\"window.pwned=2\">\n\u{1b}[31mred\u{1b}[0m and \u{202e}evil\u{200b}\ttabbed  \n".to_string()
}

pub struct Home {
    /// Holds the home and serves as every command's working folder (outside any git checkout,
    /// so no project scope is found).
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    /// The staged writes: two plain creates and one held for a `generic-secret` finding.
    pub alpha: String,
    pub beta: String,
    pub held: String,
}

impl Home {
    pub fn run(&self, args: &[&str]) -> Output {
        cli(self.dir.path()).args(args).arg("--home").arg(&self.path).output().unwrap()
    }

    /// `self-evolve ARGS --home H`, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "self-evolve {args:?}: {}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// One `skill_manage` call from session s1, through every guard; its JSON answer (a refusal
    /// included).
    pub fn tool(&self, call: Value) -> Value {
        let out = self.run(&["tool", "skill_manage", &call.to_string(), "--session", "s1"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        serde_json::from_str(stdout.trim())
            .or_else(|_| serde_json::from_str(stderr.trim()))
            .unwrap_or_else(|_| panic!("tool {call}: no JSON answer: {}", text(&out)))
    }

    /// Stages a create (approval is on) and returns its pending id.
    pub fn stage(&self, name: &str, description: &str, body: &str, reason: &str) -> String {
        let answer = self.tool(
            json!({"action": "create", "name": name, "description": description, "body": body, "reason": reason}),
        );
        let id = answer["id"].as_str().or(answer["details"]["held"].as_str());
        id.unwrap_or_else(|| panic!("{name} was not staged: {answer}")).to_string()
    }

    pub fn pending(&self) -> Vec<String> {
        let out: Value = serde_json::from_str(&self.ok(&["skills", "pending", "--json"])).unwrap();
        out["pending"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
    }

    pub fn skill_file(&self, name: &str) -> PathBuf {
        self.path.join("skills").join(name).join("SKILL.md")
    }

    /// Every file and folder of the home with its bytes, but the persisted listing
    /// (`self-evolve/index/`), which any read refreshes.
    pub fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                if rel == "self-evolve/index" {
                    continue;
                }
                let ty = entry.file_type().unwrap();
                if ty.is_dir() {
                    out.insert(rel + "/", Vec::new());
                    walk(&path, base, out);
                } else if ty.is_file() {
                    out.insert(rel, std::fs::read(&path).unwrap());
                } else {
                    out.insert(rel, b"<other>".to_vec());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.path, &self.path, &mut out);
        out
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A home as a person's looks after some use, made by the real CLI: the example library and its
/// recorded session replayed (gates.jsonl, reviews, history), `release-checklist` created and
/// patched (two versions), then write approval on and three writes staged from session s1.
pub fn prepare_home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("home");
    copy_dir(&repo().join("examples/library"), &path.join("skills"));
    let mut home = Home { dir, path, alpha: String::new(), beta: String::new(), held: String::new() };
    let examples = repo().join("examples");
    home.ok(&[
        "replay",
        examples.join("session.jsonl").to_str().unwrap(),
        "--gate-replies",
        examples.join("gate-replies.json").to_str().unwrap(),
    ]);
    assert!(home.path.join("self-evolve/gates.jsonl").is_file(), "the replay leaves the gate's records");

    let created = home.tool(json!({"action": "create", "name": "release-checklist",
        "description": "Steps to cut a release of this repository. Use when tagging a version.",
        "body": "# Release checklist\n\n1. Run the full test suite.\n2. Update CHANGELOG.md.\n3. Tag the commit.\n",
        "reason": "the user listed the release steps twice"}));
    assert_eq!(created["status"], "written", "{created}");
    home.tool(json!({"action": "view", "name": "release-checklist"}));
    let patched = home.tool(json!({"action": "patch", "name": "release-checklist",
        "old_string": "2. Update CHANGELOG.md.",
        "new_string": "2. Move the Unreleased entries of CHANGELOG.md under the new version.",
        "reason": "the user keeps a changelog"}));
    assert_eq!(patched["status"], "written", "{patched}");

    home.ok(&["skills", "approval", "on"]);
    home.alpha = home.stage(
        "alpha-notes",
        "Notes on the alpha service. Use when touching alpha.",
        "# Alpha\n\nRestart alpha with `make alpha-restart`.\n",
        "alpha restarts came up twice",
    );
    home.beta = home.stage(
        "beta-notes",
        "Notes on the beta queue. Use when the beta queue stalls.",
        "# Beta\n\nDrain the beta queue before deploying.\n",
        "the beta queue stalled",
    );
    home.held = home.stage(
        "api-fixtures",
        "Fixtures for the API client tests. Use when writing API tests.",
        &format!("Use this fixture:\n{}\n", fixture()),
        "the API tests need a fixture",
    );
    let pending = home.pending();
    assert_eq!(pending, [home.alpha.clone(), home.beta.clone(), home.held.clone()], "three staged writes");
    home
}

// ---------------------------------------------------------------------------------------------
// The console process
// ---------------------------------------------------------------------------------------------

/// `self-evolve ui --no-open --port 0 --home H`, running; killed when dropped.
pub struct Console {
    pub child: Child,
    /// The launch URL it printed (`http://127.0.0.1:PORT/?token=TOKEN`).
    pub url: String,
    pub port: u16,
    pub token: String,
    pub stderr: PathBuf,
}

impl Console {
    pub fn start(home: &Home, name: &str) -> Console {
        Console::start_with(home, name, &[])
    }

    /// As `start`, with `env` set for the console process.
    pub fn start_with(home: &Home, name: &str, env: &[(&str, &str)]) -> Console {
        let stderr = artefacts().join(format!("{name}-ui.stderr"));
        let mut child = cli(home.dir.path())
            .envs(env.iter().copied())
            .args(["ui", "--no-open", "--port", "0", "--home"])
            .arg(&home.path)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("self-evolve console: ") => break line,
                Ok(_) => continue,
                Err(_) => {
                    let _ = child.kill();
                    let status = child.wait().unwrap();
                    panic!(
                        "`self-evolve ui` printed no `self-evolve console: URL` line in 60 s ({status}); stderr:\n{}",
                        std::fs::read_to_string(&stderr).unwrap_or_default()
                    );
                }
            }
        };
        let url = line.trim_start_matches("self-evolve console: ").trim().to_string();
        let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("not a loopback URL: {line}"));
        let (port, query) = rest.split_once('/').unwrap();
        let token = query.strip_prefix("?token=").unwrap_or_else(|| panic!("no token in {line}")).to_string();
        assert!(token.len() == 64 && token.bytes().all(|b| b.is_ascii_hexdigit()), "a 256-bit hex token: {token}");
        let port = port.parse().unwrap();
        Console { child, url, port, token, stderr }
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer read off a raw socket.
pub struct Answer {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.trim().eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
    }
}

/// One request as written (head lines, then `body`), over its own connection: the test chooses
/// every header, `Host` included.
pub fn raw(port: u16, head: &[String], body: &str) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut request = head.join("\r\n");
    request.push_str(&format!("\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if bytes.is_empty() => panic!("no answer to {head:?}: {e}"),
            Err(_) => break,
        }
        // Stop at the end of a Content-Length body (a server may keep the connection open).
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok());
            if length.is_some_and(|length: usize| bytes.len() >= end + 4 + length) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    Answer { status, head: head.to_string(), body: body.to_string() }
}
