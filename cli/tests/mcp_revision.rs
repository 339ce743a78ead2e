//! `self-evolve mcp` on MCP 2026-07-28 beside the older handshakes, over raw stdio: a client that
//! never sends `initialize` (SEP-2567) is served request by request, with the revision's errors
//! and cache hints; one that holds `subscriptions/listen` hears a landed write; an `initialize`
//! on 2025-06-18 or 2025-11-25 works as it did. And two wire defects: a request read before the
//! input ends is answered, and an id is free as soon as its answer has arrived.

use serde_json::{Value, json};
use std::time::Duration;

mod mcp_support;
use mcp_support::{Server, dirs, skill};

const WAIT: Duration = Duration::from_secs(90);

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"}})
}

/// A 2026-07-28 request: its params with `_meta` added.
fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn create(id: u64, name: &str, description: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": "skill_manage",
        "arguments": {"action": "create", "name": name, "description": description, "body": "Run the steps in order.\n"}}),
    )
}

fn code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {answer}"))
}

#[test]
fn a_2026_client_is_served_without_initialize() {
    let (_tmp, home, project) = dirs();
    skill(&home.join("skills"), "pdf-forms", "Fill PDF forms. Use when a form must be filled.");
    let mut server = Server::start(&home, &project);

    server.send(request(1, "server/discover", json!({})));
    let discover = server.answer(1, WAIT).expect("discover answered");
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete", "{discover}");
    let versions: Vec<&str> =
        result["supportedVersions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        assert!(versions.contains(&version), "{version}: {discover}");
    }
    assert!(result["capabilities"]["tools"].is_object(), "{discover}");
    assert!(result["capabilities"]["extensions"]["io.modelcontextprotocol/skills"].is_object(), "{discover}");
    assert_eq!(result["capabilities"]["resources"]["listChanged"], true, "{discover}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "self-evolve", "{discover}");
    assert_eq!((result["ttlMs"].as_u64(), result["cacheScope"].as_str()), (Some(300_000), Some("public")));

    // Missing `_meta` (or part of it): -32602; an unknown revision: -32022 naming both sides.
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(code(&server.answer(2, WAIT).unwrap()), -32602);
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}));
    assert_eq!(code(&server.answer(3, WAIT).unwrap()), -32602);
    let mut unknown = request(4, "tools/list", json!({}));
    unknown["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    server.send(unknown);
    let refused = server.answer(4, WAIT).unwrap();
    assert_eq!(code(&refused), -32022, "{refused}");
    assert_eq!(refused["error"]["data"]["requested"], "v999.0.0", "{refused}");
    assert!(refused["error"]["data"]["supported"].as_array().is_some_and(|s| s.contains(&json!("2026-07-28"))));

    // The lists, with the revision's fields.
    server.send(request(5, "tools/list", json!({})));
    let tools = server.answer(5, WAIT).unwrap();
    assert_eq!(tools["result"]["tools"][0]["name"], "skill_manage", "{tools}");
    assert_eq!(tools["result"]["resultType"], "complete");
    assert_eq!(
        (tools["result"]["ttlMs"].as_u64(), tools["result"]["cacheScope"].as_str()),
        (Some(300_000), Some("public"))
    );
    server.send(request(6, "skills/list", json!({})));
    let skills = server.answer(6, WAIT).unwrap();
    let result = &skills["result"];
    assert_eq!(
        (result["resultType"].as_str(), result["ttlMs"].as_u64(), result["cacheScope"].as_str()),
        (Some("complete"), Some(0), Some("private")),
        "{skills}"
    );
    assert_eq!(result["skills"][0]["uri"], "skill://pdf-forms/SKILL.md", "{skills}");
    assert_eq!(result["skills"][0]["frontmatter"]["name"], "pdf-forms", "{skills}");
    server.send(request(7, "skills/get", json!({"uri": "skill://pdf-forms/SKILL.md"})));
    let got = server.answer(7, WAIT).unwrap();
    assert_eq!(got["result"]["skill"]["uri"], "skill://pdf-forms/SKILL.md", "{got}");
    assert!(got["result"].get("nextCursor").is_none() && got["result"]["ttlMs"] == 0, "{got}");
    server.send(request(8, "skills/get", json!({"uri": "skill://no-such-skill/SKILL.md"})));
    assert_eq!(code(&server.answer(8, WAIT).unwrap()), -32602);
    server.send(request(9, "resources/read", json!({"uri": "skill://pdf-forms/SKILL.md"})));
    let read = server.answer(9, WAIT).unwrap();
    assert!(read["result"]["contents"][0]["text"].as_str().is_some_and(|t| t.starts_with("---")), "{read}");
    assert_eq!(read["result"]["cacheScope"], "private", "{read}");

    // Methods the revision removed are unknown, whatever their params hold.
    for (id, method, params) in [
        (10, "ping", json!({})),
        (11, "logging/setLevel", json!({})),
        (12, "logging/setLevel", json!({"level": "debug"})),
        (13, "resources/subscribe", json!({})),
        (14, "resources/unsubscribe", json!({"uri": "skill://pdf-forms/SKILL.md"})),
        (15, "initialize", json!({})),
        (16, "unknown/method", json!({})),
    ] {
        server.send(request(id, method, params));
        let answer = server.answer(id, WAIT).unwrap_or_else(|| panic!("{method} answered"));
        assert_eq!(code(&answer), -32601, "{method}: {answer}");
    }
    let stderr = server.finish();
    assert!(!stderr.contains("32002"), "{stderr}");
}

/// Nothing the server answers on this revision is -32002 ("not initialized"), which 2026-07-28
/// forbids: a request before any lifecycle with no `_meta` at all is -32602 instead.
#[test]
fn no_request_is_refused_as_not_initialized() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    for (id, method) in [(1, "tools/list"), (2, "skills/list"), (3, "resources/list"), (4, "tools/call")] {
        server.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}));
        let answer = server.answer(id, WAIT).unwrap_or_else(|| panic!("{method} answered"));
        assert_ne!(code(&answer), -32002, "{method}: {answer}");
    }
    // The session is still open to either lifecycle: an `initialize` after them works.
    server.initialize();
    server.finish();
}

#[test]
fn a_listening_client_hears_a_landed_write_and_nothing_for_a_refused_one() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.send(request(
        1,
        "subscriptions/listen",
        json!({"notifications": {"resourcesListChanged": true, "toolsListChanged": true}}),
    ));
    let ack = server.until(WAIT, |l| l["method"] == "notifications/subscriptions/acknowledged");
    let ack = ack.last().expect("acknowledged");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1, "{ack}");
    // Only what the server declares is accepted: its tool list never changes.
    assert_eq!(ack["params"]["notifications"], json!({"resourcesListChanged": true}), "{ack}");

    // A refused write (a credential in it) sends nothing and writes nothing.
    let secret = "Deploy with ghp_R8xQ2mZ7kP4vL9nW3tY6bJ1cF5hD0sA2eG7u for the token.";
    let mut refused = create(2, "leaky-deploy", "Deploy the leaky service. Use when deploying.");
    refused["params"]["arguments"]["body"] = json!(secret);
    server.send(refused);
    let lines = server.until(WAIT, |l| l["id"] == 2);
    assert_eq!(lines.last().unwrap()["result"]["isError"], true, "{lines:?}");
    assert!(!lines.iter().any(|l| l["method"] == "notifications/resources/list_changed"), "{lines:?}");
    assert!(!home.join("skills/leaky-deploy").exists());

    server.send(create(3, "deploy-staging", "Deploy to staging. Use when a change goes to staging."));
    let mut lines = server.until(WAIT, |l| l["id"] == 3);
    assert_ne!(lines.last().unwrap()["result"]["isError"], true, "{lines:?}");
    if !lines.iter().any(|l| l["method"] == "notifications/resources/list_changed") {
        lines = server.until(Duration::from_secs(10), |l| l["method"] == "notifications/resources/list_changed");
    }
    let note = lines.iter().find(|l| l["method"] == "notifications/resources/list_changed").expect("list_changed");
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1, "{note}");
    assert!(home.join("skills/deploy-staging/SKILL.md").is_file());
    // The listen ends when the client cancels it; its answer is then not sent.
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    server.send(request(4, "tools/list", json!({})));
    let after = server.until(WAIT, |l| l["id"] == 4);
    assert!(after.iter().all(|l| l["id"] != 1), "{after:?}");
    server.finish();
}

#[test]
fn initialize_on_2025_06_18_and_2025_11_25_works_as_before() {
    for version in ["2025-06-18", "2025-11-25"] {
        let (_tmp, home, project) = dirs();
        let mut server = Server::start(&home, &project);
        server.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":version,"capabilities":{},"clientInfo":{"name":"old","version":"0"}}}));
        let init = server.answer(1, WAIT).expect("initialize answered");
        assert_eq!(init["result"]["protocolVersion"], version, "{init}");
        assert!(init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/skills"].is_object(), "{init}");
        server.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        server.send(json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
        assert_eq!(server.answer(2, WAIT).unwrap()["result"], json!({}));
        server.send(json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}));
        let tools = server.answer(3, WAIT).unwrap();
        for key in ["resultType", "ttlMs", "cacheScope"] {
            assert!(tools["result"].get(key).is_none(), "{version} {key}: {tools}");
        }
        let mut write = create(4, "deploy-staging", "Deploy to staging. Use when a change goes to staging.");
        write["params"].as_object_mut().unwrap().remove("_meta");
        server.send(write);
        let lines = server.until(WAIT, |l| l["method"] == "notifications/resources/list_changed");
        assert!(lines.iter().any(|l| l["method"] == "notifications/resources/list_changed"), "{version}: {lines:?}");
        server.finish();
    }
}

/// The input ends right after a write: the write landed, and its answer was never sent (rmcp
/// drops what is still running when its input ends). Now every request read is answered first.
#[test]
fn a_write_read_just_before_the_input_ends_is_answered() {
    for round in 0..4 {
        let (_tmp, home, project) = dirs();
        let mut server = Server::start(&home, &project);
        server.initialize();
        let name = format!("eof-write-{}", ["one", "two", "three", "four"][round]);
        let mut write = create(7, &name, "Check the answer at the end of input. Use when testing.");
        write["params"].as_object_mut().unwrap().remove("_meta");
        server.send(write);
        drop(server.stdin.take());
        let answer = server.answer(7, WAIT);
        server.finish();
        let landed = home.join("skills").join(&name).join("SKILL.md").is_file();
        let answer = answer.unwrap_or_else(|| panic!("round {round}: no answer (landed: {landed})"));
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        assert!(landed, "round {round}: the answer says written");
    }
}

/// A client that reuses an id as soon as it has read its answer (MCP allows it) is served every
/// time: the id is free once its answer is on its way, not after the write returns.
#[test]
fn an_id_is_free_as_soon_as_its_answer_arrived() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let mut refused = 0;
    for round in 0..3000u64 {
        let method = if round % 2 == 0 { "ping" } else { "tools/list" };
        server.send(json!({"jsonrpc": "2.0", "id": 5, "method": method}));
        let answer = server.answer(5, Duration::from_secs(30)).unwrap_or_else(|| panic!("round {round}: no answer"));
        refused += usize::from(answer.get("error").is_some());
    }
    server.finish();
    assert_eq!(refused, 0, "answers refused as still in flight");
}
