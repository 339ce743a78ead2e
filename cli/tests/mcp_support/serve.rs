//! A `self-evolve serve` process on a free loopback port, for the HTTP tests: its URL (the first
//! line it prints) and one raw HTTP/1.1 POST at a time, so a test sees exactly the status and
//! body a client would.

use super::wasm;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Serve {
    pub child: Child,
    pub url: String,
}

impl Serve {
    pub fn start(home: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR"))
            .env_remove("SELF_EVOLVE_ACTIVATION")
            .arg("--wasm")
            .arg(wasm())
            .args(["serve", "--home"])
            .arg(home)
            .args(["--bind", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "the URL first: {line:?}");
        Serve { child, url: line.trim().to_string() }
    }

    pub fn port(&self) -> u16 {
        self.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().unwrap()
    }

    /// The head of a POST to /mcp carrying `length` body bytes, with `headers` added.
    pub fn head(&self, headers: &[(&str, &str)], length: usize) -> String {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {length}\r\nConnection: close\r\n",
            self.port()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        head
    }

    /// One raw HTTP/1.1 POST to /mcp: the status and the body.
    pub fn post(&self, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let (status, _, body) = self.exchange(headers, body);
        (status, body)
    }

    /// One raw HTTP/1.1 POST to /mcp: the status, the response head and the body.
    pub fn exchange(&self, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut tcp = TcpStream::connect(("127.0.0.1", self.port())).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let head = self.head(headers, body.len());
        // A server that refuses early (a body past the bound) may close before all is sent.
        let _ = tcp.write_all(head.as_bytes()).and_then(|()| tcp.write_all(body.as_bytes()));
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_string(), body.to_string())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
