//! `self-evolve serve` as remote clients meet it: the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in tests/mcp-conformance/package-lock.json, run
//! on Node 22 from npm's `node` package) on every scenario that applies to a skills server, on
//! 2025-11-25 and 2026-07-28; and the gate before rmcp: tokens, revocation, Origin, bodies.

use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod mcp_support;
use mcp_support::serve::Serve;
use mcp_support::skill;

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

/// A client that loses its connection mid-request: cut inside the body, nothing is written; cut
/// right after the whole request, without reading the answer, the write lands whole. Either
/// way no half-written skill and no stray temporary file is left, and the server goes on serving.
#[test]
fn a_request_cut_off_mid_write_lands_whole_or_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let serve = Serve::start(&home, &[]);
    let skills = home.join("skills");
    let headers = [V2026, CALL, TOOL];

    let body = create_body("cut-in-body");
    let mut tcp = TcpStream::connect(("127.0.0.1", serve.port())).unwrap();
    tcp.write_all(serve.head(&headers, body.len()).as_bytes()).unwrap();
    tcp.write_all(&body.as_bytes()[..body.len() / 2]).unwrap();
    drop(tcp);

    let mut cut = Vec::new();
    for i in 0..20 {
        let name = format!("cut-after-{i}");
        let body = create_body(&name);
        let mut tcp = TcpStream::connect(("127.0.0.1", serve.port())).unwrap();
        tcp.write_all(serve.head(&headers, body.len()).as_bytes()).unwrap();
        tcp.write_all(body.as_bytes()).unwrap();
        tcp.shutdown(std::net::Shutdown::Both).unwrap();
        cut.push(name);
    }
    // The server still serves, and by the time this answer comes every earlier request is done.
    let (status, answer) = serve.post(&headers, &create_body("after-the-cuts"));
    assert_eq!(status, 200, "{answer}");
    std::thread::sleep(Duration::from_millis(500));

    assert!(!skills.join("cut-in-body").exists(), "a request cut inside its body writes nothing");
    for entry in std::fs::read_dir(&skills).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        assert!(name == "after-the-cuts" || cut.contains(&name), "a stray entry in skills/: {name}");
        let files: Vec<_> = std::fs::read_dir(entry.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(files, vec![std::ffi::OsString::from("SKILL.md")], "{name}: only its SKILL.md");
        let text = std::fs::read_to_string(entry.path().join("SKILL.md")).unwrap();
        let head = format!("---\nname: {name}\ndescription: Deploy {name}. Use when deploying {name}.\n");
        assert!(text.starts_with(&head) && text.ends_with("\n---\nRun the steps.\n"), "{name}: whole: {text:?}");
    }
}

/// Inside one 2025-11-25 session over HTTP, a client reuses an id as soon as its answer arrived,
/// thousands of times, alternating two methods: every answer carries that id and belongs to the
/// request just sent (a stale entry for the id would hand one request's answer to the other).
#[test]
fn an_id_reused_in_an_http_session_as_soon_as_answered_is_always_answered_right() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    skill(&home.join("skills"), "pdf-forms", "Fill PDF forms. Use when a form must be filled.");
    let serve = Serve::start(&home, &[]);
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"reuse","version":"0"}}}"#;
    let (status, head, body) = serve.exchange(&[], init);
    assert_eq!(status, 200, "{body}");
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")).map(|(_, v)| v.trim())
        })
        .expect("a session id")
        .to_string();
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let (status, _) = serve.post(&headers, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(status, 202);
    let answer = |body: &str| -> Value {
        // A JSON body, or the SSE event carrying it (after a priming event with no data).
        let json = body.lines().find_map(|l| l.strip_prefix("data: ").filter(|d| d.starts_with('{'))).unwrap_or(body);
        serde_json::from_str(json.trim()).unwrap_or(Value::Null)
    };
    let mut wrong = Vec::new();
    for i in 0..2000 {
        let (method, key) = if i % 2 == 0 { ("tools/list", "tools") } else { ("resources/list", "resources") };
        let (status, body) = serve.post(&headers, &format!(r#"{{"jsonrpc":"2.0","id":7,"method":"{method}"}}"#));
        let answer = answer(&body);
        if status != 200 || answer["id"] != 7 || answer["result"].get(key).is_none() {
            wrong.push(format!("{i}: {status} {body}"));
        }
    }
    assert!(wrong.is_empty(), "{} of 2000 answered wrong, first: {:?}", wrong.len(), wrong.first());
}
