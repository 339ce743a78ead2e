//! MCP server benchmarks (own harness; `cargo bench -p self-evolve --bench mcp`): the real
//! `self-evolve mcp` process over stdio, spoken to as raw JSON-RPC (what a client's transport
//! does): start to the first `tools/list` answer (compiled component cached), a `skill_manage`
//! create round trip, and `skills/list` over 10,000 skills (first page ever, first page in a
//! fresh process with the persisted index, warm page, every page), and a warm `resources/list`.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const SKILLS: usize = 10_000;
const SYLLABLES: [&str; 10] = ["ka", "lo", "mi", "nu", "pe", "ro", "si", "ta", "vo", "ze"];

fn word(mut n: usize) -> String {
    let mut out = String::new();
    for _ in 0..5 {
        out.push_str(SYLLABLES[n % 10]);
        n /= 10;
    }
    out
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Server {
    fn start(home: &Path, project: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .args(["--wasm", concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm"), "mcp", "--home"])
            .arg(home)
            .arg("--project")
            .arg(project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("run target/release/self-evolve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Server { child, stdin, stdout, next: 1 }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write to the server");
        self.stdin.flush().expect("flush");
    }

    /// One request, and its answer (notifications in between are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).expect("read from the server") == 0 {
                panic!("the server closed stdout");
            }
            let message: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn initialize(&mut self) {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}});
        self.request("initialize", params);
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn report(name: &str, samples: Vec<Duration>) {
    let n = samples.len();
    println!("{name:<58} median {:>12?}  (n={n})", median(samples));
}

fn main() {
    let base = tempfile::tempdir().expect("temp dir");
    let home = base.path().join("home");
    let project = base.path().join("project");
    std::fs::create_dir_all(project.join(".git")).expect("project");
    for i in 0..SKILLS {
        let (root, name) = if i % 2 == 0 {
            (home.join("skills"), format!("user-{}", word(i)))
        } else {
            (project.join(".dsh/skills"), format!("project-{}", word(i)))
        };
        std::fs::create_dir_all(root.join(&name)).expect("skill folder");
        let text = format!(
            "---\nname: {name}\ndescription: {} {} {} chores. Use when {} breaks.\n---\nSteps.\n",
            word(i + 20_000),
            word(i + 40_000),
            word(i + 60_000),
            word(i + 80_000)
        );
        std::fs::write(root.join(&name).join("SKILL.md"), text).expect("SKILL.md");
    }
    println!("self-evolve mcp over stdio, {SKILLS} skills (half user, half project):");
    // The first start compiles or loads the component into the cache; measure the ones after.
    let mut server = Server::start(&home, &project);
    server.initialize();
    drop(server);
    report(
        "start to the first tools/list answer (cached component)",
        (0..10)
            .map(|_| {
                let t = Instant::now();
                let mut server = Server::start(&home, &project);
                server.initialize();
                let tools = server.request("tools/list", json!({}));
                assert_eq!(tools["tools"][0]["name"], "skill_manage");
                t.elapsed()
            })
            .collect(),
    );

    let mut server = Server::start(&home, &project);
    server.initialize();
    let t = Instant::now();
    let first = server.request("skills/list", json!({}));
    println!("{:<58} {:>19?}", "skills/list, first page ever (no persisted index)", t.elapsed());
    assert_eq!(first["skills"].as_array().map(Vec::len), Some(100));
    // A skills folder changed within the last second is rescanned by every listing (its mtime is
    // not trusted yet, see listing::RACY_MS); the library was just generated, so wait that out.
    std::thread::sleep(Duration::from_millis(1100));
    report(
        "skills/list, first page, warm",
        (0..20)
            .map(|_| {
                let t = Instant::now();
                server.request("skills/list", json!({}));
                t.elapsed()
            })
            .collect(),
    );
    report(
        "skills/list, first page, within a second of a write",
        (0..10)
            .map(|i| {
                let args = json!({"action": "create", "name": format!("fresh-{}", word(i + 95_000)),
                    "description": format!("{} {} {} jobs. Use when {} is late.", word(i + 96_000), word(i + 97_000), word(i + 98_000), word(i + 99_000)),
                    "body": "Steps.\n"});
                server.request("tools/call", json!({"name": "skill_manage", "arguments": args}));
                let t = Instant::now();
                server.request("skills/list", json!({}));
                t.elapsed()
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(1100));
    let t = Instant::now();
    let (mut cursor, mut count) = (None::<String>, 0);
    loop {
        let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
        let page = server.request("skills/list", params);
        count += page["skills"].as_array().map_or(0, Vec::len);
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    println!("{:<58} {:>19?}  ({count} skills)", "skills/list, every page", t.elapsed());
    assert_eq!(count, SKILLS + 10);
    report(
        "skills/list, first page in a fresh process (persisted index)",
        (0..5)
            .map(|_| {
                let mut fresh = Server::start(&home, &project);
                fresh.initialize();
                let t = Instant::now();
                fresh.request("skills/list", json!({}));
                t.elapsed()
            })
            .collect(),
    );
    report(
        "resources/list, first page, warm",
        (0..20)
            .map(|_| {
                let t = Instant::now();
                server.request("resources/list", json!({}));
                t.elapsed()
            })
            .collect(),
    );
    report(
        "tools/call skill_manage create (round trip)",
        (0..50)
            .map(|i| {
                let args = json!({"action": "create", "name": format!("bench-{}", word(i + 90_000)),
                    "description": format!("{} {} {} tasks. Use when {} is due.", word(i + 91_000), word(i + 92_000), word(i + 93_000), word(i + 94_000)),
                    "body": "Steps.\n"});
                let t = Instant::now();
                let result = server.request("tools/call", json!({"name": "skill_manage", "arguments": args}));
                let elapsed = t.elapsed();
                assert_eq!(result["isError"], false, "{result}");
                elapsed
            })
            .collect(),
    );
}
