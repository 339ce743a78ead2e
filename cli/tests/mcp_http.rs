//! `self-evolve serve` as remote clients meet it: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in tests/mcp-conformance/package-lock.json, run
//! on Node 22 from npm's `node` package) on every scenario that applies to a skills server, on
//! 2025-11-25 and 2026-07-28; and the gate before rmcp: tokens, revocation, Origin, bodies.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod mcp_support;
use mcp_support::{skill, wasm};

struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start(home: &Path, extra: &[&str]) -> Serve {
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

    fn port(&self) -> u16 {
        self.url.trim_start_matches("http://127.0.0.1:").trim_end_matches("/mcp").parse().unwrap()
    }

    /// One raw HTTP/1.1 POST to /mcp: the status and the body.
    fn post(&self, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let mut tcp = TcpStream::connect(("127.0.0.1", self.port())).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.port(),
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // A server that refuses early (a body past the bound) may close before all is sent.
        let _ = tcp.write_all(head.as_bytes()).and_then(|()| tcp.write_all(body.as_bytes()));
        let mut answer = String::new();
        let _ = tcp.read_to_string(&mut answer);
        let status = answer.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
        (status, body)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
const V2026: (&str, &str) = ("MCP-Protocol-Version", "2026-07-28");
const CALL: (&str, &str) = ("Mcp-Method", "tools/call");
const TOOL: (&str, &str) = ("Mcp-Name", "skill_manage");

fn create_body(name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{{META},"name":"skill_manage","arguments":{{"action":"create","name":"{name}","description":"Deploy {name}. Use when deploying {name}.","body":"Run the steps.\n"}}}}}}"#
    )
}

fn suite_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp-conformance")
}

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies() {
    let dir = suite_dir();
    let node = dir.join("node_modules/node/bin/node");
    let suite = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    assert!(node.is_file() && suite.is_file(), "run `npm ci` in {} first (./build.sh test does)", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    skill(&home.join("skills"), "pdf-forms", "Fill PDF forms. Use when a form must be filled.");
    std::fs::create_dir_all(home.join("skills/pdf-forms/references")).unwrap();
    std::fs::write(home.join("skills/pdf-forms/references/fields.md"), "# Fields\n").unwrap();
    let serve = Serve::start(&home, &[]);
    let run = |scenario: &str, version: Option<&str>| {
        let mut command = Command::new(&node);
        command.arg(&suite).args(["server", "--url", &serve.url, "--scenario", scenario]);
        if let Some(version) = version {
            command.args(["--spec-version", version]);
        }
        command.arg("--expected-failures").arg(dir.join("expected-failures.yaml"));
        let out = command.current_dir(tmp.path()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{scenario} on {version:?}:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("Passed:"), "{scenario}: {text}");
    };
    for scenario in [
        "server-stateless",
        "tools-list",
        "resources-list",
        "caching",
        "sep-2164-resource-not-found",
        "dns-rebinding-protection",
        "http-header-validation",
        "server-sse-multiple-streams",
    ] {
        run(scenario, Some("2026-07-28"));
    }
    for scenario in [
        "server-initialize",
        "server-session-lifecycle",
        "ping",
        "tools-list",
        "resources-list",
        "dns-rebinding-protection",
    ] {
        run(scenario, Some("2025-11-25"));
    }
    // The Skills Extension's scenarios run on the revision the suite picks for them (2026-07-28).
    for scenario in ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"] {
        run(scenario, None);
    }
}

#[test]
fn a_token_admits_its_person_and_a_revoked_one_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let add = |name: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .args(["serve", "token", "add", name, "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let alice = add("alice");
    let bob = add("bob");
    let serve = Serve::start(&home, &[]);
    let skills = home.join("skills");

    let (status, _) = serve.post(&[V2026], &create_body("no-token"));
    assert_eq!(status, 401);
    let wrong = "Bearer sevt_0000000000000000000000000000000000000000000000000000000000000000";
    let (status, _) = serve.post(&[V2026, ("Authorization", wrong)], &create_body("wrong-token"));
    assert_eq!(status, 401);
    assert!(!skills.join("no-token").exists() && !skills.join("wrong-token").exists(), "refused: nothing written");

    let bearer = format!("Bearer {alice}");
    let (status, body) = serve.post(&[V2026, CALL, TOOL, ("Authorization", &bearer)], &create_body("alice-deploy"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#"\"status\":\"written\""#), "{body}");
    // The write is alice's in the history.
    let history = std::fs::read_dir(home.join("self-evolve")).unwrap().count();
    assert!(history > 0);
    let found = grep(&home.join("self-evolve"), "http-alice");
    assert!(found, "the history names alice's session");

    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .args(["serve", "token", "remove", "alice", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    assert!(out.status.success());
    let (status, _) = serve.post(&[V2026, CALL, TOOL, ("Authorization", &bearer)], &create_body("after-revoke"));
    assert_eq!(status, 401, "revoked on the running server");
    assert!(!skills.join("after-revoke").exists());
    let (status, _) =
        serve.post(&[V2026, CALL, TOOL, ("Authorization", &format!("Bearer {bob}"))], &create_body("bob-deploy"));
    assert_eq!(status, 200);
    // The last token revoked, the server does not open up: it refuses everyone.
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .args(["serve", "token", "remove", "bob", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    assert!(out.status.success());
    let bearer_bob = format!("Bearer {bob}");
    for auth in [None, Some(bearer_bob.as_str())] {
        let mut headers = vec![V2026, CALL, TOOL];
        if let Some(auth) = auth {
            headers.push(("Authorization", auth));
        }
        let (status, _) = serve.post(&headers, &create_body("after-last-revoke"));
        assert_eq!(status, 401, "{auth:?}");
    }
    assert!(!skills.join("after-last-revoke").exists());
}

fn grep(dir: &Path, needle: &str) -> bool {
    std::fs::read_dir(dir).unwrap().flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            grep(&path, needle)
        } else {
            std::fs::read(&path).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

#[test]
fn bad_requests_get_the_spec_s_errors_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let serve = Serve::start(&home, &[]);
    let skills = home.join("skills");
    let code =
        |body: &str| serde_json::from_str::<Value>(body).map(|v| v["error"]["code"].clone()).unwrap_or(Value::Null);

    let (status, body) = serve.post(&[V2026], "{not json");
    assert_eq!((status, code(&body)), (400, json!(-32700)), "{body}");
    let (status, body) = serve.post(&[V2026, ("Origin", "http://evil.example.com")], &create_body("from-evil"));
    assert_eq!(status, 403, "{body}");
    let (status, body) = serve.post(&[("MCP-Protocol-Version", "2025-06-18")], &create_body("wrong-header"));
    assert_eq!(status, 400, "{body}");
    let removed = format!(r#"{{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{{{META}}}}}"#);
    let (status, body) = serve.post(&[V2026, ("Mcp-Method", "logging/setLevel")], &removed);
    assert_eq!((status, code(&body)), (404, json!(-32601)), "{body}");
    let big = format!(r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"x":"{}"}}}}"#, "a".repeat(65 << 20));
    let (status, _) = serve.post(&[V2026], &big);
    assert_eq!(status, 413);
    for name in ["from-evil", "wrong-header"] {
        assert!(!skills.join(name).exists(), "{name}: nothing written");
    }
    // And the server still serves.
    let (status, body) =
        serve.post(&[V2026, ("Mcp-Method", "tools/call"), ("Mcp-Name", "skill_manage")], &create_body("still-serving"));
    assert_eq!(status, 200, "{body}");
    assert!(skills.join("still-serving/SKILL.md").is_file());
}

#[test]
fn beyond_loopback_without_a_token_it_does_not_start() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_self-evolve"))
        .args(["serve", "--bind", "0.0.0.0:0", "--home"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("serve token add"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
