//! `self-evolve mcp` driven over raw stdio by a hostile or broken client, and a hostile home or
//! project: every request with an id is answered, nothing hangs, nothing the client sent is
//! dumped into the server's log.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn wasm() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../dist/self-evolve.wasm");
    assert!(path.is_file(), "run ./build.sh first: {} is missing", path.display());
    path
}

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: std::thread::JoinHandle<Vec<u8>>,
}

impl Server {
    fn start(home: &Path, project: &Path) -> Server {
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

    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        let _ = stdin.write_all(bytes);
        let _ = stdin.write_all(b"\n");
        let _ = stdin.flush();
    }

    fn send(&mut self, message: Value) {
        self.send_raw(message.to_string().as_bytes());
    }

    /// The answer to request `id`, or None when none came within `wait`.
    fn answer(&mut self, id: u64, wait: Duration) -> Option<Value> {
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

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}));
        let answer = self.answer(1, Duration::from_secs(30)).expect("initialize answered");
        assert!(answer["result"].is_object(), "{answer}");
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    }

    /// Closes stdin, waits for the process, returns its stderr.
    fn finish(mut self) -> String {
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

fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    (tmp, home, project)
}

fn skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join(name)).unwrap();
    std::fs::write(
        dir.join(name).join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\nUse it when testing.\n"),
    )
    .unwrap();
}

const TOKEN: &str = "ghp_R8xQ2mZ7kP4vL9nW3tY6bJ1cF5hD0sA2eG7u";

/// A line past the 64 MiB bound (mcp/mod.rs MAX_REQUEST_LINE) is dropped by the transport
/// without any answer, though the server keeps serving: the client that sent it waits for its
/// answer forever. It must be answered (an error naming the bound).
#[test]
fn a_request_line_past_the_bound_gets_an_answer() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let content = "a".repeat(65 << 20);
    let line = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"skill_manage",
        "arguments":{"action":"create","name":"big","content":content}}})
    .to_string();
    server.send_raw(line.as_bytes());
    server.send(json!({"jsonrpc":"2.0","id":3,"method":"ping"}));
    // Request 2's answer comes first (the wire answers it as soon as the line ends).
    let answer = server.answer(2, Duration::from_secs(60));
    let ping = server.answer(3, Duration::from_secs(30));
    let stderr = server.finish();
    assert!(ping.is_some(), "the server still answers: {stderr}");
    assert!(answer.is_some(), "request 2 (a 65 MiB line) got no answer at all: the client hangs");
    let answer = answer.unwrap_or_default();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("64 MiB")), "{answer}");
    assert!(!home.join("skills/big").exists(), "nothing of the refused create was written");
}

/// A request nested deeper than the JSON parser's recursion limit (128) is valid JSON-RPC with
/// an id, yet it is dropped without an answer: the client waits forever.
#[test]
fn a_deeply_nested_request_gets_an_answer() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let nested = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"skill_manage","arguments":{{"action":"view","name":"x","extra":{nested}}}}}}}"#
    );
    server.send_raw(line.as_bytes());
    let answer = server.answer(2, Duration::from_secs(10));
    server.send(json!({"jsonrpc":"2.0","id":3,"method":"ping"}));
    let ping = server.answer(3, Duration::from_secs(10));
    let stderr = server.finish();
    assert!(ping.is_some(), "the server still runs: {stderr}");
    assert!(answer.is_some(), "request 2 (nested 200 deep) got no answer: the client hangs");
}

/// A request line that is not UTF-8 (a broken client) is dropped without an answer, though its
/// id is readable.
#[test]
fn a_request_with_invalid_utf8_gets_an_answer() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let mut line =
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"skill_manage","arguments":{"action":"view","name":"x"#
            .to_vec();
    line.extend_from_slice(b"\xff\xfe");
    line.extend_from_slice(br#""}}}"#);
    server.send_raw(&line);
    let answer = server.answer(2, Duration::from_secs(10));
    server.send(json!({"jsonrpc":"2.0","id":3,"method":"ping"}));
    let ping = server.answer(3, Duration::from_secs(10));
    let stderr = server.finish();
    assert!(ping.is_some(), "the server still runs: {stderr}");
    assert!(answer.is_some(), "request 2 (invalid UTF-8) got no answer: the client hangs");
}

/// A notification before `initialize` (a client that sends them out of order) ends the server
/// (rmcp's ExpectedInitializeRequest), and mcp/mod.rs prints that error, which holds the whole
/// message in Debug form: a credential and megabytes of the client's text reach the log.
#[test]
fn a_notification_before_initialize_is_not_dumped_into_the_log() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    let reason = format!("{TOKEN} {}", "x".repeat(4 << 20));
    server.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":reason}}));
    server.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile","version":"0"}}}));
    let answer = server.answer(1, Duration::from_secs(30));
    let stderr = server.finish();
    let problems = [
        (stderr.contains(TOKEN), "the credential reached the log".to_string()),
        (stderr.len() >= 64 << 10, format!("{} bytes of the client's message went to the log", stderr.len())),
        (answer.is_none(), "the server quit: `initialize` after the early notification was never answered".into()),
    ];
    let found: Vec<&String> = problems.iter().filter(|(bad, _)| *bad).map(|(_, what)| what).collect();
    assert!(found.is_empty(), "{found:?}; stderr starts: {}", &stderr[..stderr.len().min(300)]);
}

/// Two requests that share an id (a broken client): rmcp keeps one cancellation token per id,
/// so the first answer cancels the second request and the second answer is dropped. Both are
/// answered, or the second is refused; neither is dropped in silence.
#[test]
fn requests_that_share_an_id_are_each_answered() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    for name in ["dup-one", "dup-two"] {
        let content = format!(
            "---\nname: {name}\ndescription: A skill {name} for id reuse testing\n---\n\n# {name}\n\nUse it when testing ids.\n"
        );
        server.send(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"skill_manage",
            "arguments":{"action":"create","name":name,"description":format!("A skill {name} for id reuse testing"),"content":content}}}));
    }
    let first = server.answer(9, Duration::from_secs(15));
    let second = server.answer(9, Duration::from_secs(10));
    server.finish();
    let on_disk: Vec<bool> = ["dup-one", "dup-two"].iter().map(|n| home.join("skills").join(n).exists()).collect();
    assert!(first.is_some(), "no answer at all");
    assert!(
        second.is_some(),
        "the second request with id 9 got no answer (landed on disk: {on_disk:?}); first: {first:?}"
    );
    // The second is refused as a reused id (its refusal may come first), and only the first landed.
    let answers = [first.unwrap_or_default(), second.unwrap_or_default()];
    let refused: Vec<&Value> = answers.iter().filter(|a| a["error"]["code"] == -32600).collect();
    assert_eq!(refused.len(), 1, "{answers:?}");
    assert!(refused[0]["error"]["message"].as_str().is_some_and(|m| m.contains("still in flight")), "{answers:?}");
    assert!(answers.iter().any(|a| a["result"].is_object()), "{answers:?}");
    assert_eq!(on_disk, [true, false], "the refused request wrote nothing");
}

/// A client that never reads its output but keeps asking: answers pile up in the server's
/// memory without bound (the 64-request bound frees its permit when the plugin answers, before
/// the answer is written out, and rmcp writes each answer from a task of its own).
#[test]
fn a_client_that_never_reads_cannot_grow_the_server_without_bound() {
    let (_tmp, home, project) = dirs();
    let user = home.join("skills");
    skill(&user, "big-notes", "A skill with a large reference file");
    std::fs::write(user.join("big-notes/notes.md"), "word ".repeat((4 << 20) / 5)).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
        .env_remove("SELF_EVOLVE_WASM")
        .arg("--wasm")
        .arg(wasm())
        .args(["mcp", "--home"])
        .arg(&home)
        .arg("--project")
        .arg(&project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped()) // never read
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |v: Value| {
        stdin.write_all(format!("{v}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"deaf","version":"0"}}}));
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let rss = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    std::thread::sleep(Duration::from_secs(2));
    let before = rss(child.id());
    for id in 0..120u64 {
        // Paced so that the 64-request bound is never what refuses them.
        send(
            json!({"jsonrpc":"2.0","id":100 + id,"method":"resources/read","params":{"uri":"skill://big-notes/notes.md"}}),
        );
        std::thread::sleep(Duration::from_millis(40));
    }
    std::thread::sleep(Duration::from_secs(3));
    let after = rss(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        after.saturating_sub(before) < 256 << 20,
        "the server grew by {} MiB of answers nobody reads ({} MiB -> {} MiB)",
        after.saturating_sub(before) >> 20,
        before >> 20,
        after >> 20
    );
}
