//! A `self-evolve mcp` process driven over raw stdio, line by line, for the MCP tests: start it
//! on a home and a project, send lines, read answers by id, close its input and read its log.
#![allow(dead_code)]

pub mod serve;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

pub struct Server {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Server {
    pub fn start(home: &Path, project: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
            .env_remove("SELF_EVOLVE_WASM")
            .env_remove("SELF_EVOLVE_ACTIVATION")
            .arg("--wasm")
            .arg(wasm())
            .args(["mcp", "--home"])
            .arg(home)
            .arg("--project")
            .arg(project)
            .current_dir(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = err.read_to_end(&mut buf);
            buf
        });
        Server { stdin: child.stdin.take(), child, lines, stderr }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        let _ = stdin.write_all(bytes);
        let _ = stdin.write_all(b"\n");
        let _ = stdin.flush();
    }

    pub fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// The answer to request `id`, or None when none came within `wait`.
    pub fn answer(&mut self, id: u64, wait: Duration) -> Option<Value> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            let line = self.lines.recv_timeout(left).ok()?;
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == json!(id) {
                return Some(value);
            }
        }
    }

    /// Every line written until one passes `done` (included) or `wait` runs out.
    pub fn until(&mut self, wait: Duration, mut done: impl FnMut(&Value) -> bool) -> Vec<Value> {
        let deadline = std::time::Instant::now() + wait;
        let mut lines = Vec::new();
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(line) = self.lines.recv_timeout(left) else { break };
            let value: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
            let stop = done(&value);
            lines.push(value);
            if stop {
                break;
            }
        }
        lines
    }

    pub fn initialize(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}));
        let answer = self.answer(1, Duration::from_secs(90)).expect("initialize answered");
        assert!(answer["result"].is_object(), "{answer}");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }

    /// Closes stdin, waits for the process, returns its stderr.
    pub fn finish(mut self) -> String {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
        String::from_utf8_lossy(&self.stderr.join().unwrap()).into_owned()
    }
}

pub fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    (tmp, home, project)
}

pub fn skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nUse it when testing.\n"),
    )
    .unwrap();
}
