//! `self-evolve mcp` driven over raw stdio by a hostile or broken client, and a hostile home or
//! project: every request with an id is answered, nothing hangs, nothing the client sent is
//! dumped into the server's log.

use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod mcp_support;
use mcp_support::{Server, dirs, skill, wasm};

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

/// The MCP TypeScript SDK writes a request as `{...request, jsonrpc: "2.0", id}`: its id comes
/// after the params. A line past the bound whose id is at its end is answered with that id (the
/// wire keeps the line's first and last 64 KiB), and a string near the end holding `"id":7` is
/// not taken for it.
#[test]
fn a_request_line_past_the_bound_with_its_id_last_gets_an_answer_with_that_id() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let content = "a".repeat(65 << 20);
    // Key order as the TS SDK writes it (json! would sort the keys, putting `id` first).
    let ts = |id: u64, last: &str| {
        let mut line = format!(
            r#"{{"method":"tools/call","params":{{"name":"skill_manage","arguments":{{"action":"create","name":"big","content":"{content}"}},"#
        );
        line.push_str(last);
        line.push_str(&format!(r#"}},"jsonrpc":"2.0","id":{id}}}"#));
        line
    };
    let plain = ts(42, r#""note":"x""#);
    // A string near the end that reads as an id, escaped quotes and all, and one in an object.
    let decoy = ts(43, r#""note":"\"id\":7, \\\"id\": 8 {\"id\":9}","more":{"id":7}"#);
    for (line, id) in [(plain, 42u64), (decoy, 43)] {
        assert!(serde_json::from_str::<Value>(&line).is_ok(), "the line is JSON");
        server.send_raw(line.as_bytes());
        drop(line);
        server.send(json!({"jsonrpc":"2.0","id":100 + id,"method":"ping"}));
        let lines = server.until(Duration::from_secs(60), |v| v["id"] == json!(100 + id));
        let refusals: Vec<&Value> = lines.iter().filter(|v| v.get("error").is_some()).collect();
        assert_eq!(refusals.len(), 1, "exactly one answer to the long line: {lines:?}");
        let answer = refusals[0];
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(answer["error"]["message"].as_str().is_some_and(|m| m.contains("64 MiB")), "{answer}");
        assert!(
            lines.iter().any(|v| v["id"] == json!(100 + id) && v["result"].is_object()),
            "ping answered: {lines:?}"
        );
    }
    let stderr = server.finish();
    assert!(!home.join("skills/big").exists(), "nothing of the refused create was written: {stderr}");
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

/// Whether an answer's `id` is `id`: numbers by value (JSON-RPC's `7` and `7.0` are one id), an
/// absent `id` matches nothing.
fn answers(line: &Value, id: &Value) -> bool {
    match (line.get("id"), id) {
        (Some(Value::Number(a)), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Some(a), b) => a == b,
        (None, _) => false,
    }
}

fn is_answer_to(id: Value) -> impl Fn(&Value) -> bool {
    move |line| answers(line, &id)
}

fn create(id: Value, name: &str) -> Value {
    // Words of each name's own: no two test skills look alike to the duplicate guard.
    let mut hash =
        name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let syllables = ["ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "xe", "yo", "za", "be", "do", "fi", "gu"];
    let words: Vec<String> = (0..8)
        .map(|_| {
            hash = hash.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
            (0..3).map(|k| syllables[((hash >> (4 * k)) & 15) as usize]).collect()
        })
        .collect();
    let description = format!("Use when {}", words[..4].join(" "));
    let content =
        format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n\n{}.\n", words[4..].join(" "));
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"skill_manage",
        "arguments":{"action":"create","name":name,"description":description,"content":content}}})
}

/// Requests with a readable id that rmcp refuses to read (a wrong `jsonrpc`, `params` that are
/// not an object, no method or one that is not a string, a method beside a result): rmcp answers
/// each without its id, so the client never learns which request failed, and none of them gives
/// back its place among the 16 waiting: the 17th request is never answered.
#[test]
fn a_request_rmcp_cannot_read_is_answered_with_its_id_and_frees_its_place() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let shapes = [
        r#"{"jsonrpc":"1.0","id":ID,"method":"ping"}"#,
        r#"{"jsonrpc":2,"id":ID,"method":"ping"}"#,
        r#"{"id":ID,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":"x"}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":7}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":[1]}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":"ping","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":ID}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":ID,"method":null,"params":{}}"#,
    ];
    let mut sent = Vec::new();
    for round in 0..3 {
        for (i, shape) in shapes.iter().enumerate() {
            let id = 100 + round * 100 + i as u64;
            server.send_raw(shape.replace("ID", &id.to_string()).as_bytes());
            sent.push((id, *shape));
        }
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(
        lines.iter().any(is_answer_to(json!(999))),
        "ping 999 after 30 refused requests was never answered: {stderr}"
    );
    let mut wrong = Vec::new();
    for (id, shape) in &sent {
        let got: Vec<&Value> = lines.iter().filter(|l| answers(l, &json!(id))).collect();
        let ok = got.len() == 1 && matches!(got[0]["error"]["code"].as_i64(), Some(-32600 | -32602));
        if !ok {
            wrong.push(format!("{id} {shape}: {got:?}"));
        }
    }
    let idless = lines.iter().filter(|l| l.get("id").is_none()).count();
    assert!(wrong.is_empty(), "not answered once with their id ({idless} answers had no id): {wrong:#?}");
}

/// A request whose id is not a string or a number (an object, an array, a boolean, null) is
/// answered with `"id": null`, as JSON-RPC 2.0 asks, and takes no place among the 16 waiting.
#[test]
fn a_request_whose_id_is_invalid_is_answered_with_a_null_id() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let ids = [json!({"a":1}), json!([1]), json!(true), json!(null)];
    for round in 0..5 {
        for id in &ids {
            server.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/list","params":{"round":round}}));
        }
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 was never answered: {stderr}");
    let nulls = lines.iter().filter(|l| l.get("id") == Some(&Value::Null) && l["error"]["code"] == -32600).count();
    assert_eq!(nulls, 20, "each of the 20 requests with an invalid id gets a -32600 with id null: {lines:#?}");
}

/// `7` and `7.0` (and `8` and `8e0`, `0` and `-0`) are one id to rmcp, which reads every number
/// as an i64, but two to the wire: both are passed on, the first answer cancels the second
/// request, whose write may land with no answer at all. The second is refused as a reused id.
/// A string `"9"` and a number `9` are two ids (rmcp's NumberOrString), both served.
#[test]
fn ids_equal_in_value_are_one_id() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let pairs = [
        (json!(7), serde_json::from_str::<Value>("7.0").unwrap()),
        (json!(8), serde_json::from_str::<Value>("8e0").unwrap()),
        (json!(0), serde_json::from_str::<Value>("-0").unwrap()),
    ];
    let mut verdicts = Vec::new();
    for (n, (first, second)) in pairs.iter().enumerate() {
        let (a, b) = (format!("pair-{n}-first"), format!("pair-{n}-second"));
        server.send(create(first.clone(), &a));
        server.send(create(second.clone(), &b));
        let mut seen = 0;
        let mut lines = server.until(Duration::from_secs(15), |l| {
            seen += usize::from(answers(l, first));
            seen == 2
        });
        lines.extend(server.until(Duration::from_secs(1), |_| false));
        let got: Vec<&Value> = lines.iter().filter(|l| answers(l, first)).collect();
        let refused = got.iter().filter(|l| l["error"]["code"] == -32600).count();
        let results = got.iter().filter(|l| l["result"].is_object()).count();
        let on_disk = [&a, &b].map(|name| home.join("skills").join(name).exists());
        verdicts.push(((first.clone(), second.clone()), got.len(), refused, results, on_disk));
    }
    server.send(create(json!("9"), "string-nine"));
    server.send(create(json!(9), "number-nine"));
    let mut seen = 0;
    let lines = server.until(Duration::from_secs(20), |l| {
        seen += usize::from(l.get("id") == Some(&json!("9")) || l.get("id") == Some(&json!(9)));
        seen == 2
    });
    server.finish();
    for ((first, second), answered, refused, results, on_disk) in &verdicts {
        assert!(
            *answered == 2 && *refused == 1 && *results == 1 && *on_disk == [true, false],
            "ids {first} and {second}: {answered} answers, {refused} refused as reused, {results} results, on disk {on_disk:?}"
        );
    }
    for (id, name) in [(json!("9"), "string-nine"), (json!(9), "number-nine")] {
        let got: Vec<&Value> = lines.iter().filter(|l| l.get("id") == Some(&id)).collect();
        assert!(got.len() == 1 && got[0]["result"].is_object(), "{id}: {got:?}");
        assert!(home.join("skills").join(name).exists(), "{name} landed");
    }
}

/// An id the server cannot represent (rmcp keeps ids as i64: a fraction, past 2^63, a float
/// past 2^53) is refused with -32600 and its id as sent, and nothing is written; rmcp answered
/// without the id and kept the request's place.
#[test]
fn an_id_rmcp_cannot_represent_is_refused_with_that_id() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let ids = ["1.5", "1e300", "9223372036854775808", "18446744073709551615", "9007199254740992.0", "-1e19"];
    let mut sent = Vec::new();
    for round in 0..3 {
        for (i, id) in ids.iter().enumerate() {
            let name = format!("odd-id-{round}-{i}");
            let line = create(json!("ID"), &name).to_string().replace("\"ID\"", id);
            server.send_raw(line.as_bytes());
            sent.push((serde_json::from_str::<Value>(id).unwrap(), name));
        }
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 was never answered: {stderr}");
    for (id, name) in &sent {
        // Each id was sent once a round.
        let got: Vec<&Value> = lines.iter().filter(|l| l.get("id") == Some(id)).collect();
        assert!(got.len() == 3 && got.iter().all(|l| l["error"]["code"] == -32600), "id {id}: {got:?}");
        assert!(!home.join("skills").join(name).exists(), "{name} was written");
    }
}

/// A request reusing the id of one just cancelled: rmcp forgets the cancelled request at once,
/// but its handler still ends with an answer, which rmcp then sends as the answer to the new
/// request and cancels the new one: a create lands (or not) with "cancelled" as its only answer.
/// Now the id stays taken until the cancelled request is over: the new request is refused as a
/// reused id, or served once that is so; never answered with another request's answer. And a
/// cancelled request still gives its place back: 20 of them do not stop the server.
#[test]
fn an_id_reused_after_its_cancellation_gets_its_own_answer() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let mut verdicts = Vec::new();
    for n in 0..6u64 {
        let id = json!(10 + n);
        server.send(create(id.clone(), &format!("cancelled-{n}")));
        server.send(
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id,"reason":"test"}}),
        );
        let name = format!("reused-{n}");
        server.send(create(id.clone(), &name));
        // The reused request's own answer: refused as in flight, or about its skill.
        let mine = move |l: &Value| {
            let refused = l["error"]["code"] == -32600
                && l["error"]["message"].as_str().is_some_and(|m| m.contains("still in flight"));
            answers(l, &json!(10 + n)) && (refused || l.to_string().contains(&format!("reused-{n}")))
        };
        let mut lines = server.until(Duration::from_secs(15), mine);
        lines.extend(server.until(Duration::from_secs(1), |_| false));
        let got: Vec<Value> = lines.into_iter().filter(|l| answers(l, &id)).collect();
        let own: Vec<&Value> = got.iter().filter(|l| mine(l)).collect();
        let landed = home.join("skills").join(&name).exists();
        let written =
            own.len() == 1 && own[0]["result"]["content"][0]["text"].as_str().is_some_and(|t| t.contains("written"));
        // Another answer for the id may only be the cancelled create's, sent before its cancellation.
        let strays = got.iter().filter(|l| !mine(l) && !l.to_string().contains(&format!("cancelled-{n}"))).count();
        verdicts.push((id, own.len() == 1 && strays == 0 && landed == written, got, landed));
    }
    for n in 0..20u64 {
        let id = json!(100 + n);
        server.send(json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":"skill://index.json"}}));
        server.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":id}}));
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 after 20 cancelled requests: {stderr}");
    for (id, fine, got, landed) in verdicts {
        assert!(fine, "id {id}: answers {got:?}, the reused request's skill landed: {landed}");
    }
}

/// An `initialize` rmcp cannot read (no protocolVersion, fields of the wrong type) is answered
/// with an error and its id, and the session goes on: the wire took it as the handshake begun,
/// so the good `initialize` after it was told to send `initialize`, and the session ended. A
/// ping before `initialize` was refused -32002, though MCP allows it.
#[test]
fn a_malformed_initialize_is_answered_and_the_session_goes_on() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    let client = json!({"name":"hostile","version":"0"});
    // A ping may come before `initialize` (MCP's lifecycle): answered, not refused.
    server.send(json!({"jsonrpc":"2.0","id":"early","method":"ping"}));
    server.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{},"clientInfo":client}}));
    server.send(json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":"all","clientInfo":5}}));
    server.send(json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":"2025-06-18"}));
    server.send(json!({"jsonrpc":"2.0","id":4,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":client}}));
    let lines = server.until(Duration::from_secs(90), is_answer_to(json!(4)));
    server.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    server.send(json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}));
    let tools = server.answer(5, Duration::from_secs(10));
    let stderr = server.finish();
    let ping: Vec<&Value> = lines.iter().filter(|l| l["id"] == "early").collect();
    assert!(ping.len() == 1 && ping[0]["result"].is_object(), "a ping before initialize: {ping:?}");
    for id in 1..=3 {
        let got: Vec<&Value> = lines.iter().filter(|l| answers(l, &json!(id))).collect();
        assert!(
            got.len() == 1 && matches!(got[0]["error"]["code"].as_i64(), Some(-32600 | -32602)),
            "malformed initialize {id}: {got:?}"
        );
    }
    let init = lines.iter().find(|l| answers(l, &json!(4)));
    assert!(init.is_some_and(|a| a["result"]["serverInfo"]["name"] == "self-evolve"), "{lines:?}; stderr: {stderr}");
    assert!(tools.is_some_and(|t| t["result"]["tools"][0]["name"] == "skill_manage"), "the session goes on: {stderr}");
}

/// A JSON-RPC batch (an array; MCP 2025-06-18 removed batching): rmcp answered it with one
/// error without any id (after the handshake) or not at all (before it), so the requests in it
/// were never answered. Each request in it is refused with its id, in one array as JSON-RPC
/// answers a batch; an empty batch is one -32600; notifications in it are not answered; no
/// place is taken.
#[test]
fn a_batch_is_refused_request_by_request() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.send(json!([{"jsonrpc":"2.0","id":"early","method":"ping"}]));
    let early = server.until(Duration::from_secs(90), |_| true);
    server.initialize();
    for n in 0..20 {
        server.send(json!([
            {"jsonrpc":"2.0","id":10 + 2 * n,"method":"ping"},
            {"jsonrpc":"2.0","id":11 + 2 * n,"method":"tools/list"},
            {"jsonrpc":"2.0","method":"notifications/initialized"},
            5
        ]));
    }
    server.send(json!([]));
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 after 20 batches: {stderr}");
    let batch = |line: &Value, ids: &[Value]| {
        line.as_array().is_some_and(|items| {
            items.len() == ids.len()
                && items.iter().zip(ids).all(|(item, id)| item["id"] == *id && item["error"]["code"] == -32600)
        })
    };
    assert!(early.len() == 1 && batch(&early[0], &[json!("early")]), "a batch before initialize: {early:?}");
    for n in 0..20 {
        // The `5` is no message: an error with id null.
        let ids = [json!(10 + 2 * n), json!(11 + 2 * n), Value::Null];
        assert!(lines.iter().filter(|l| batch(l, &ids)).count() == 1, "batch {n}: {lines:#?}");
    }
    let empty = lines.iter().filter(|l| l["id"] == Value::Null && l["error"]["code"] == -32600).count();
    assert_eq!(empty, 1, "the empty batch: {lines:#?}");
}

/// Responses sent by the client (a result or an error with an id; the server asked nothing) are
/// not requests: never answered, whatever their id, before the handshake or after, and the
/// session goes on. rmcp answered one with an id it cannot read.
#[test]
fn responses_from_the_client_are_never_answered() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    let responses = [
        json!({"jsonrpc":"2.0","id":50,"result":{}}),
        json!({"jsonrpc":"2.0","id":51,"error":{"code":-1,"message":"no"}}),
        json!({"jsonrpc":"2.0","id":{"x":1},"result":{}}),
        json!({"jsonrpc":"2.0","id":1.5,"result":{}}),
        json!({"jsonrpc":"2.0","error":{"code":-1,"message":"no id"}}),
        json!({"jsonrpc":"2.0","id":52,"result":{},"error":{"code":-1,"message":"both"}}),
    ];
    for response in &responses {
        server.send(response.clone());
    }
    server.initialize();
    for response in &responses {
        server.send(response.clone());
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999: {stderr}");
    assert_eq!(lines.len(), 1, "only the ping is answered: {lines:#?}");
}

/// Ids with control characters, and an id of a megabyte, come back exactly as sent in every
/// answer: before a lifecycle (rmcp's -32602 for a request with no `_meta`), rmcp's, the wire's refusal of a bad shape and of a reused id;
/// none of it reaches the log. rmcp answered the bad shape without the id.
#[test]
fn odd_ids_come_back_exactly_in_every_answer_and_never_reach_the_log() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    let escape = json!(format!("\u{1b}]0;{TOKEN}\u{7}\u{0}\r\n\u{9b}2J\u{202e}"));
    let long = json!("i".repeat(1 << 20));
    let short = |l: &Vec<Value>| l.iter().map(|l| l.to_string().chars().take(160).collect()).collect::<Vec<String>>();
    server.send(json!({"jsonrpc":"2.0","id":escape,"method":"tools/list"}));
    let early = server.until(Duration::from_secs(90), |_| true);
    assert!(early.len() == 1 && early[0]["id"] == escape && early[0]["error"]["code"] == -32602, "{:?}", short(&early));
    server.initialize();
    for id in [&escape, &long] {
        server.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/list"}));
        let served = server.until(Duration::from_secs(10), |_| true);
        assert!(served.len() == 1 && served[0]["id"] == *id && served[0]["result"].is_object(), "{:?}", short(&served));
        server.send(json!({"jsonrpc":"2.0","id":id,"method":"tools/list","params":"bad"}));
        let refused = server.until(Duration::from_secs(10), |_| true);
        let ok = refused.len() == 1 && refused[0]["id"] == *id && refused[0]["error"]["code"] == -32600;
        assert!(ok, "the bad shape: {:?}", short(&refused));
    }
    server.send(create(escape.clone(), "slow-one"));
    server.send(create(escape.clone(), "slow-two"));
    let mut seen = 0;
    let lines = server.until(Duration::from_secs(20), |l| {
        seen += usize::from(l["id"] == escape);
        seen == 2
    });
    let stderr = server.finish();
    let results = lines.iter().filter(|l| l["id"] == escape && l["result"].is_object()).count();
    let refused = lines.iter().filter(|l| l["id"] == escape && l["error"]["code"] == -32600).count();
    assert!(results == 1 && refused == 1, "the reused id: {:?}", short(&lines));
    assert!(!stderr.contains('\u{1b}') && !stderr.contains(TOKEN) && stderr.len() < 4096, "{stderr:?}");
}

/// A cancellation naming its request as rmcp does but not as the wire did (`7.0` for `7`): rmcp
/// cancelled the request and dropped its answer, the wire kept its place, so 16 of them stopped
/// the server. Now the wire names requests as rmcp does.
#[test]
fn a_cancellation_finds_its_request_by_the_id_s_value() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    for n in 0..24u64 {
        let id = 100 + n;
        server.send(json!({"jsonrpc":"2.0","id":id,"method":"resources/read","params":{"uri":"skill://index.json"}}));
        let cancel =
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}.0}}}}"#);
        server.send_raw(cancel.as_bytes());
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 after 24 cancelled reads: {lines:?} {stderr}");
}

/// A key given twice (`id`, `jsonrpc`, `_meta` in params) and a byte order mark before the
/// message: the wire read one message (the last of each key, the mark skipped) and rmcp another
/// (a duplicate field: refused without an id, so the place was never given back; the mark: the
/// wire answered -32700 what rmcp serves). Now rmcp is passed the message as the wire read it.
#[test]
fn a_message_is_passed_on_as_the_wire_read_it() {
    let (_tmp, home, project) = dirs();
    let mut server = Server::start(&home, &project);
    server.initialize();
    let shapes = [
        (r#"{"jsonrpc":"2.0","id":1,"id":ID,"method":"ping"}"#, "ping"),
        (r#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":ID,"method":"ping"}"#, "ping"),
        (r#"{"jsonrpc":"2.0","id":ID,"method":"tools/list","params":{"_meta":{},"_meta":{}}}"#, "tools"),
        ("\u{feff}{\"jsonrpc\":\"2.0\",\"id\":ID,\"method\":\"tools/list\"}", "tools"),
    ];
    let mut sent = Vec::new();
    for round in 0..6u64 {
        for (i, (shape, what)) in shapes.iter().enumerate() {
            let id = 100 + round * 10 + i as u64;
            server.send_raw(shape.replace("ID", &id.to_string()).as_bytes());
            sent.push((id, *what, *shape));
        }
    }
    server.send(json!({"jsonrpc":"2.0","id":999,"method":"ping"}));
    let lines = server.until(Duration::from_secs(20), is_answer_to(json!(999)));
    let stderr = server.finish();
    assert!(lines.iter().any(is_answer_to(json!(999))), "ping 999 was never answered: {stderr}");
    for (id, what, shape) in sent {
        let got: Vec<&Value> = lines.iter().filter(|l| answers(l, &json!(id))).collect();
        let served = match what {
            "ping" => got.len() == 1 && got[0]["result"].is_object(),
            _ => got.len() == 1 && got[0]["result"]["tools"][0]["name"] == "skill_manage",
        };
        assert!(served, "{shape} as {id}: {got:?}");
    }
}

/// The `skills/list` entry of `name` (its files' digests by URI), from a page.
fn listed_files(page: &Value, name: &str) -> Vec<(String, String)> {
    let skill = page["result"]["skills"].as_array().unwrap().iter().find(|s| s["frontmatter"]["name"] == name);
    let files = skill.unwrap_or_else(|| panic!("{name} listed: {page}"))["resources"].as_array().unwrap();
    files.iter().map(|f| (f["uri"].as_str().unwrap().to_string(), f["digest"].as_str().unwrap().to_string())).collect()
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex(&sha2::Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file written by another process, then stamped with `mtime` (`File::set_modified`).
fn write_stamped(path: &Path, text: &str, mtime: std::time::SystemTime) {
    std::fs::write(path, text).unwrap();
    std::fs::File::options().write(true).open(path).unwrap().set_modified(mtime).unwrap();
}

/// The server keeps each served entry's digests while the skill's files and folders stat as they
/// did. A rewrite under it that keeps the size and an mtime within the racy window (stamped back,
/// as `touch -r` does), an atomic replace stamped back to the replaced file's mtime, and a plain
/// edit of the same size are each served at once: every page equals a fresh process's page.
#[test]
fn a_home_rewritten_under_the_server_never_gets_stale_digests() {
    let (_tmp, home, project) = dirs();
    let skills = home.join("skills");
    skill(&skills, "alpha", "Alpha for testing.");
    skill(&skills, "bravo", "Bravo for testing.");
    let now = std::time::SystemTime::now();
    // alpha's file: an mtime in the racy window (ahead of the clock) for the whole test;
    // bravo's: long settled, so its entry is kept from the first page.
    let (racy, settled) = (now + Duration::from_secs(120), now - Duration::from_secs(60));
    let alpha = skills.join("alpha/references/api.md");
    let bravo = skills.join("bravo/references/api.md");
    for (file, stamp) in [(&alpha, racy), (&bravo, settled)] {
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        write_stamped(file, "version 1\n", stamp);
        for dir in [file.parent().unwrap(), file.parent().unwrap().parent().unwrap()] {
            std::fs::File::open(dir).unwrap().set_modified(settled).unwrap();
        }
    }
    std::fs::File::open(skills.join("bravo/SKILL.md")).unwrap().set_modified(settled).unwrap();

    let mut server = Server::start(&home, &project);
    server.initialize();
    let mut id = 10;
    let mut page = |server: &mut Server| {
        id += 1;
        server.send(json!({"jsonrpc":"2.0","id":id,"method":"skills/list","params":{}}));
        server.answer(id, Duration::from_secs(60)).expect("skills/list answered")
    };
    let uncached = || {
        let mut fresh = Server::start(&home, &project);
        fresh.initialize();
        fresh.send(json!({"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}));
        let answer = fresh.answer(2, Duration::from_secs(60)).expect("skills/list answered");
        fresh.finish();
        answer["result"].clone()
    };
    let digest_of = |page: &Value, name: &str| {
        let uri = format!("skill://{name}/references/api.md");
        listed_files(page, name).into_iter().find(|(u, _)| *u == uri).unwrap().1
    };
    let first = page(&mut server);
    assert_eq!(digest_of(&first, "alpha"), sha256(b"version 1\n"));
    assert_eq!(page(&mut server)["result"], first["result"]);

    // Same size, stamped back to the same mtime, within the racy window.
    write_stamped(&alpha, "version 2\n", racy);
    let second = page(&mut server);
    assert_eq!(digest_of(&second, "alpha"), sha256(b"version 2\n"));
    assert_eq!(second["result"], uncached());

    // An atomic replace (a new inode) of a kept entry's file, stamped back to its mtime.
    let replacing = bravo.with_file_name("api.md.new");
    write_stamped(&replacing, "version 3\n", settled);
    std::fs::rename(&replacing, &bravo).unwrap();
    let third = page(&mut server);
    assert_eq!(digest_of(&third, "bravo"), sha256(b"version 3\n"));
    assert_eq!(third["result"], uncached());

    // Settled and kept again, then a plain edit of the same size.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(page(&mut server)["result"], third["result"]);
    std::fs::write(&bravo, "version 4\n").unwrap();
    let fourth = page(&mut server);
    assert_eq!(digest_of(&fourth, "bravo"), sha256(b"version 4\n"));
    assert_eq!(fourth["result"], uncached());
    server.finish();
}

/// The session files under `home`'s state root, by name.
fn session_files(home: &Path) -> Vec<String> {
    let Ok(folders) = std::fs::read_dir(home.join("self-evolve/sessions")) else { return Vec::new() };
    folders
        .flatten()
        .filter(|f| f.path().is_dir())
        .flat_map(|f| std::fs::read_dir(f.path()).unwrap().flatten())
        .map(|f| f.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The server holds its session in memory, one journal append per call; when its input ends it
/// hands the session back (a generation, no journal), so the next process reads a file.
#[test]
fn when_its_input_ends_the_server_hands_its_sessions_back() {
    let (_tmp, home, project) = dirs();
    skill(&home.join("skills"), "notes", "Notes. Use when testing.");
    let mut server = Server::start(&home, &project);
    server.initialize();
    server.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{
        "name":"skill_manage","arguments":{"action":"view","name":"notes"}}}));
    let answer = server.answer(2, Duration::from_secs(30)).expect("view answered");
    assert!(answer["result"]["isError"] != json!(true), "{answer}");
    assert!(session_files(&home).iter().any(|n| n.starts_with("journal.")), "held: {:?}", session_files(&home));
    let stderr = server.finish();
    let files = session_files(&home);
    assert!(!files.iter().any(|n| n.starts_with("journal.")), "handed back: {files:?}\n{stderr}");
    let generation = std::fs::read_dir(home.join("self-evolve/sessions"))
        .unwrap()
        .flatten()
        .filter(|f| f.path().is_dir() && f.file_name() != "in-flight")
        .flat_map(|f| std::fs::read_dir(f.path()).unwrap().flatten())
        .find(|f| f.file_name().to_string_lossy().ends_with(".json"))
        .expect("a generation");
    let state: Value = serde_json::from_slice(&std::fs::read(generation.path()).unwrap()).unwrap();
    assert!(state["reads"]["main"].as_array().is_some_and(|r| r.contains(&json!("notes"))), "{state}");
}
