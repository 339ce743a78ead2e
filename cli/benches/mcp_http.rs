//! MCP on the 2026-07-28 revision, over both transports (own harness;
//! `cargo bench -p self-evolve --bench mcp_http`): the real `self-evolve serve` on loopback and
//! the real `self-evolve mcp` over stdio, on one home of 10,000 skills, spoken to as a client's
//! transport does (stateless requests with `_meta`, no `initialize`). Latency (p50, p99) of
//! `server/discover` and of a warm first `skills/list` page on each; then the requests per
//! second `serve` holds with 64 concurrent keep-alive clients (discover, and list pages), the
//! latency they see, and the server's resident memory.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const SKILLS: usize = 10_000;
const CLIENTS: usize = 64;
const LOAD: Duration = Duration::from_secs(5);
const SYLLABLES: [&str; 10] = ["ka", "lo", "mi", "nu", "pe", "ro", "si", "ta", "vo", "ze"];
const WASM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm");

fn word(mut n: usize) -> String {
    let mut out = String::new();
    for _ in 0..5 {
        out.push_str(SYLLABLES[n % 10]);
        n /= 10;
    }
    out
}

fn request(id: u64, method: &str) -> String {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {"_meta": meta}}).to_string()
}

/// One keep-alive HTTP/1.1 connection to `serve`'s /mcp.
struct Http {
    port: u16,
    reader: BufReader<TcpStream>,
    next: u64,
}

impl Http {
    fn connect(port: u16) -> Http {
        let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect to serve");
        tcp.set_nodelay(true).expect("nodelay");
        Http { port, reader: BufReader::new(tcp), next: 1 }
    }

    /// One request and its JSON answer (read by Content-Length or chunks, whichever comes).
    fn call(&mut self, method: &str) -> Value {
        self.next += 1;
        let body = request(self.next, method);
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\nContent-Length: {}\r\n\r\n",
            self.port,
            body.len()
        );
        let tcp = self.reader.get_mut();
        tcp.write_all(head.as_bytes()).and_then(|()| tcp.write_all(body.as_bytes())).expect("send");
        let (mut length, mut chunked, mut line) = (None, false, String::new());
        self.reader.read_line(&mut line).expect("status line");
        assert!(line.starts_with("HTTP/1.1 200"), "{method}: {line}");
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            let header = line.trim_end().to_ascii_lowercase();
            if header.is_empty() {
                break;
            }
            if let Some(value) = header.strip_prefix("content-length:") {
                length = value.trim().parse::<usize>().ok();
            }
            chunked |= header.starts_with("transfer-encoding:") && header.contains("chunked");
        }
        let mut body = Vec::new();
        if let Some(length) = length {
            body.resize(length, 0);
            self.reader.read_exact(&mut body).expect("body");
        } else {
            assert!(chunked, "{method}: neither a length nor chunks");
            loop {
                line.clear();
                self.reader.read_line(&mut line).expect("chunk size");
                let size = usize::from_str_radix(line.trim(), 16).expect("chunk size");
                let start = body.len();
                body.resize(start + size + 2, 0);
                self.reader.read_exact(&mut body[start..]).expect("chunk");
                body.truncate(start + size);
                if size == 0 {
                    break;
                }
            }
        }
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer
    }
}

/// `self-evolve mcp` over stdio, the same stateless requests.
struct Stdio2026 {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Stdio2026 {
    fn start(home: &Path, cwd: &Path) -> Stdio2026 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .args(["--wasm", WASM, "mcp", "--home"])
            .arg(home)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run self-evolve mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        Stdio2026 { child, stdin, stdout, next: 1 }
    }

    fn call(&mut self, method: &str) -> Value {
        self.next += 1;
        writeln!(self.stdin, "{}", request(self.next, method)).expect("send");
        self.stdin.flush().expect("flush");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "mcp closed stdout");
            let answer: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if answer["id"] == self.next {
                assert!(answer.get("error").is_none(), "{method}: {answer}");
                return answer;
            }
        }
    }
}

impl Drop for Stdio2026 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Serve(Child, u16);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(home: &Path) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .args(["--wasm", WASM, "serve", "--bind", "127.0.0.1:0", "--home"])
        .arg(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run self-evolve serve");
    let mut url = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut url).expect("the URL");
    let port = url.trim().trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().expect("a port");
    Serve(child, port)
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    (at(0.50), at(0.99))
}

fn report(name: &str, samples: Vec<Duration>) {
    let n = samples.len();
    let (p50, p99) = percentiles(samples);
    println!("{name:<52} p50 {p50:>11.2?}  p99 {p99:>11.2?}  (n={n})");
}

/// `VmRSS` and `VmHWM` of a process, in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// `CLIENTS` threads, one connection each, sending `method` for `LOAD`: requests per second and
/// the latency each saw.
fn load(port: u16, method: &'static str) -> (f64, Vec<Duration>) {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(CLIENTS + 1));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (stop, start) = (stop.clone(), start.clone());
            std::thread::spawn(move || {
                let mut http = Http::connect(port);
                let mut samples = Vec::new();
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    http.call(method);
                    samples.push(t.elapsed());
                }
                samples
            })
        })
        .collect();
    start.wait();
    let t = Instant::now();
    std::thread::sleep(LOAD);
    stop.store(true, Ordering::Relaxed);
    let samples: Vec<Duration> = workers.into_iter().flat_map(|w| w.join().expect("a client")).collect();
    (samples.len() as f64 / t.elapsed().as_secs_f64(), samples)
}

fn main() {
    let base = tempfile::tempdir().expect("temp dir");
    let home = base.path().join("home");
    for i in 0..SKILLS {
        let name = format!("skill-{}", word(i));
        let folder = home.join("skills").join(&name);
        std::fs::create_dir_all(&folder).expect("skill folder");
        let text = format!(
            "---\nname: {name}\ndescription: {} {} {} chores. Use when {} breaks.\n---\nSteps.\n",
            word(i + 20_000),
            word(i + 40_000),
            word(i + 60_000),
            word(i + 80_000)
        );
        std::fs::write(folder.join("SKILL.md"), text).expect("SKILL.md");
    }
    println!("MCP 2026-07-28, {SKILLS} skills, stateless requests (no initialize):");

    let server = serve(&home);
    let mut http = Http::connect(server.1);
    // The first page builds and persists the index; a folder changed within the last second is
    // rescanned by every listing (listing::RACY_MS), so wait that out before timing warm pages.
    let first = http.call("skills/list");
    assert_eq!(first["result"]["skills"].as_array().map(Vec::len), Some(100));
    std::thread::sleep(Duration::from_millis(1100));
    http.call("skills/list");
    let time = |n: usize, mut call: Box<dyn FnMut() -> Value + '_>| -> Vec<Duration> {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                call();
                t.elapsed()
            })
            .collect()
    };
    report("HTTP  server/discover", time(1000, Box::new(|| http.call("server/discover"))));
    report("HTTP  skills/list, first page, warm", time(500, Box::new(|| http.call("skills/list"))));

    let mut stdio = Stdio2026::start(&home, base.path());
    stdio.call("skills/list");
    report("stdio server/discover", time(1000, Box::new(|| stdio.call("server/discover"))));
    report("stdio skills/list, first page, warm", time(500, Box::new(|| stdio.call("skills/list"))));
    drop(stdio);

    let (idle, _) = memory(server.0.id());
    for method in ["server/discover", "skills/list"] {
        let (rps, samples) = load(server.1, method);
        let (p50, p99) = percentiles(samples);
        println!("HTTP  {CLIENTS} clients, {method:<16} {rps:>8.0} req/s   p50 {p50:>9.2?}  p99 {p99:>9.2?}");
    }
    let (rss, peak) = memory(server.0.id());
    println!("serve resident memory: {idle:.1} MiB idle, {rss:.1} MiB after the load, peak {peak:.1} MiB");
}
