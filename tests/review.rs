//! Review scheduling and the gate through the real component: a manual clock, a scripted
//! subagent provider, and a gate server on 127.0.0.1 answering each failure mode.

mod common;

use common::{TestHost, all_services, host_with};
use self_evolve_host::caps::subagent::{Script, ScriptedProvider};
use self_evolve_host::plugin::{ToolEvent, TurnStatus};
use self_evolve_host::testing::{Reply, ScriptedServer};
use self_evolve_host::{Endpoint, HttpConfig, user_context};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MIN: u64 = 60_000;
const SECRET: &str = "sk-gate-key-only-the-server-sees-3141";

struct Rig {
    h: TestHost,
    provider: Arc<Mutex<ScriptedProvider>>,
}

fn rig(config: &str, gate_url: Option<&str>) -> Rig {
    let provider = Arc::new(Mutex::new(ScriptedProvider::default()));
    let p = provider.clone();
    // SAFETY: one variable, set to the same value by every test that reads it.
    unsafe { std::env::set_var("SE_REVIEW_GATE_KEY", SECRET) };
    let mut h = host_with(|c| {
        c.subagents = Box::new(p);
        if let Some(url) = gate_url {
            c.http = HttpConfig {
                endpoints: BTreeMap::from([(
                    "gate".to_string(),
                    Endpoint::new(url).with_credential_env("SE_REVIEW_GATE_KEY"),
                )]),
            };
        }
    });
    h.plugin.init(config, &all_services()).unwrap().unwrap();
    Rig { h, provider }
}

fn parse(lines: Vec<String>) -> Vec<Value> {
    lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect()
}

impl Rig {
    /// One completed turn with `tools` tool calls; returns its decisions (and the children's).
    fn turn(&mut self, tools: usize) -> Vec<Value> {
        let ctx = user_context("s1");
        self.h.plugin.user_message(&ctx, "please fix the build", true).unwrap();
        for _ in 0..tools {
            let event =
                ToolEvent { tool: "bash".into(), args_json: "{}".into(), ok: true, output: format!("token={SECRET}") };
            self.h.plugin.tool_result(&ctx, &event).unwrap();
        }
        self.h.plugin.assistant_message(&ctx, "fixed").unwrap();
        let mut out = parse(self.h.plugin.turn_end(&ctx, TurnStatus::Completed).unwrap());
        out.extend(parse(self.h.plugin.pump_activations().unwrap()));
        out
    }

    fn review_action(decisions: &[Value]) -> (String, String) {
        let d = decisions.iter().find(|d| d["kind"] == "review" && d["action"] != "end").unwrap();
        (d["action"].as_str().unwrap().to_string(), d["reason"].as_str().unwrap().to_string())
    }

    fn gate_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(self.h.state_dir().join("gates.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn command(&mut self, args: &str) -> Result<String, String> {
        self.h.plugin.command(&user_context("s1"), args).unwrap()
    }
}

#[test]
fn every_rule_of_when_a_review_runs() {
    let mut r = rig(r#"{"review":{"maxPerSession":2}}"#, None);
    for _ in 0..9 {
        assert_eq!(Rig::review_action(&r.turn(0)).0, "skip");
    }
    let tenth = r.turn(0);
    assert_eq!(Rig::review_action(&tenth).0, "start", "{tenth:?}");
    assert!(tenth.iter().any(|d| d["action"] == "end" && d["status"] == "completed"), "the scripted child completes");
    let spec = r.provider.lock().unwrap().activations[0].clone();
    assert_eq!((spec.spec.provider.as_str(), spec.spec.delivery.as_str()), ("fork", "caller"));
    assert_eq!(spec.tools, ["skill", "skill_manage"], "narrowed right after activation");

    // Due again by tool calls, but inside the cooldown.
    let (action, reason) = Rig::review_action(&r.turn(15));
    assert_eq!((action.as_str(), reason.as_str()), ("skip", "cooldown (20 min left)"));
    r.h.clock.advance(20 * MIN);
    assert_eq!(Rig::review_action(&r.turn(0)).0, "start");
    r.h.clock.advance(20 * MIN);
    let (_, reason) = Rig::review_action(&r.turn(15));
    assert_eq!(reason, "budget spent (2/2 reviews this session)");

    // Aborted turns and subagent sessions never count.
    let ctx = user_context("s2");
    let out = parse(r.h.plugin.turn_end(&ctx, TurnStatus::Aborted).unwrap());
    assert_eq!(out[0]["reason"], "turn aborted: not counted");
    let mut child = user_context("s3");
    child.origin = self_evolve_host::plugin::Origin::Subagent;
    let out = parse(r.h.plugin.turn_end(&child, TurnStatus::Completed).unwrap());
    assert!(out[0]["reason"].as_str().unwrap().contains("not a top-level agent"));
}

#[test]
fn review_now_on_off_and_status_through_the_command_and_across_a_restart() {
    let mut r = rig("{}", None);
    assert!(r.command("review now").unwrap().starts_with("review started (act-1)"));
    let status: Value = serde_json::from_str(&r.command("review status --json").unwrap()).unwrap();
    assert_eq!(status["reviewsStarted"], 1);
    assert_eq!(status["inFlight"], "act-1");
    assert!(r.command("review now").unwrap().contains("already in flight"));
    r.h.plugin.pump_activations().unwrap();
    r.command("review off").unwrap();
    for _ in 0..10 {
        assert!(Rig::review_action(&r.turn(0)).1.starts_with("disabled"));
    }
    // A new instance over the same state root keeps the switch.
    let home = r.h.home.path().to_path_buf();
    let mut again = self_evolve_host::Plugin::load(
        common::wasm_path(),
        self_evolve_host::HostConfig {
            fs: self_evolve_host::FsConfig {
                user_skills: Some(home.join("skills")),
                state: Some(home.join("self-evolve")),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .unwrap();
    again.init("{}", &all_services()).unwrap().unwrap();
    let status: Value =
        serde_json::from_str(&again.command(&user_context("s1"), "review status --json").unwrap().unwrap()).unwrap();
    assert_eq!(status["enabled"], false);
    assert_eq!(status["override"], false);
}

#[test]
fn a_refused_start_is_logged_and_counters_are_kept() {
    let mut r = rig(r#"{"review":{"turnInterval":1}}"#, None);
    r.provider.lock().unwrap().refuse = Some("no capacity".into());
    let (action, reason) = Rig::review_action(&r.turn(0));
    assert_eq!((action.as_str(), reason.as_str()), ("skip", "subagent start refused: no capacity"));
    assert!(r.h.logged("refused"));
    r.provider.lock().unwrap().refuse = None;
    assert_eq!(Rig::review_action(&r.turn(0)).0, "start");
}

#[test]
fn a_reviewer_that_overruns_is_aborted_on_tick() {
    let mut r = rig(r#"{"review":{"turnInterval":1,"timeoutMinutes":5}}"#, None);
    r.provider.lock().unwrap().push(Script { text: "slow".into(), delay_ms: 60 * MIN, ..Default::default() });
    assert_eq!(Rig::review_action(&r.turn(0)).0, "start");
    r.h.clock.advance(5 * MIN);
    let out = parse(r.h.plugin.tick().unwrap());
    assert_eq!(out[0]["action"], "abort");
    assert!(r.provider.lock().unwrap().activations[0].aborted);
    let ends = parse(r.h.plugin.pump_activations().unwrap());
    assert!(ends.is_empty(), "an aborted review is not reported twice: {ends:?}");
    let audit: Value = serde_json::from_str(&r.command("reviews --json").unwrap()).unwrap();
    assert_eq!(audit["reviews"][0]["status"], "timed-out", "{audit}");
}

#[test]
fn the_reviewer_writes_through_skill_manage_with_every_guard() {
    let mut r = rig(r#"{"review":{"turnInterval":1}}"#, None);
    let create = json!({"action": "create", "name": "build-fixes", "description": "How this team fixes broken builds. Use when a build fails.", "body": "Run the linter first.\n"});
    r.provider.lock().unwrap().push(Script {
        calls: vec![("bash".into(), r#"{"cmd":"rm -rf /"}"#.into()), ("skill_manage".into(), create.to_string())],
        text: "created build-fixes".into(),
        delay_ms: 0,
    });
    let out = r.turn(0);
    let tools: Vec<&Value> = out.iter().filter(|d| d["kind"] == "tool").collect();
    assert_eq!(tools[0]["ok"], false, "bash is not among the child's tools");
    assert_eq!(tools[1]["ok"], true, "{:?}", tools[1]);
    assert_eq!(tools[1]["agent"], "act-1");
    assert!(r.h.user_skills().join("build-fixes/SKILL.md").is_file());
    let end = out.iter().find(|d| d["action"] == "end").unwrap();
    assert_eq!(end["reason"], "created build-fixes");

    // The audit trail: why it ran, what it was given, each call it made through the plugin
    // (a duplicate create refused), how it ended; and a curator pass beside it.
    let again = json!({"action": "create", "name": "build-fixes", "description": "Again.", "body": "x\n"});
    r.provider.lock().unwrap().push(Script {
        calls: vec![("skill_manage".into(), again.to_string())],
        text: "nothing new".into(),
        delay_ms: 0,
    });
    r.h.clock.advance(60 * MIN);
    r.turn(0);
    r.h.plugin.review_loop_spend("act-2", 1500, 250).unwrap();
    r.command("curator run").unwrap();
    let audit: Value = serde_json::from_str(&r.command("reviews --json").unwrap()).unwrap();
    let records = audit["reviews"].as_array().unwrap();
    assert_eq!(records.len(), 3, "{audit}");
    assert_eq!((records[0]["id"].as_str(), records[0]["status"].as_str()), (Some("act-1"), Some("completed")));
    assert!(records[0]["reason"].as_str().unwrap().starts_with("due"), "{audit}");
    assert_eq!(records[0]["promptSha256"].as_str().map(str::len), Some(64));
    assert_eq!(records[2]["kind"], "curator");
    let second: Value = serde_json::from_str(&r.command("reviews act-2 --json").unwrap()).unwrap();
    assert_eq!(second["calls"][0]["ok"], false, "{second}");
    assert_eq!(second["calls"][0]["answer"]["code"], "exists");
    assert_eq!(second["review"]["answer"], "nothing new");
    assert_eq!(
        (second["review"]["inputTokens"].as_u64(), second["review"]["outputTokens"].as_u64()),
        (Some(1500), Some(250))
    );
    let shown = r.command("reviews act-2").unwrap();
    assert!(shown.contains("create build-fixes: refused [exists]"), "{shown}");
    assert!(r.command("reviews nope").unwrap_err().contains("no review or curator pass"));
}

fn gate_rig(replies: Vec<Reply>, extra: &str) -> (Rig, ScriptedServer) {
    let server = ScriptedServer::start(replies).unwrap();
    let config = format!(
        r#"{{"review":{{"turnInterval":1,"cooldownMinutes":0,"maxPerSession":100,"gate":"jev","jev":{{"cooldownMinutes":0{extra}}}}}}}"#
    );
    (rig(&config, Some(&server.url())), server)
}

#[test]
fn gate_429_then_200_is_retried_and_a_confident_no_skips() {
    let (mut r, server) =
        gate_rig(vec![Reply::status(429), Reply::ok(r#"{"choice":"no","confidence":0.9,"probability":0.8}"#)], "");
    let out = r.turn(3);
    assert_eq!(Rig::review_action(&out), ("skip".into(), "gate: no (confidence 0.90)".into()));
    let line = &r.gate_lines()[0];
    assert_eq!(
        (line["source"].as_str(), line["decision"].as_str(), line["choice"].as_str()),
        (Some("jev"), Some("skip"), Some("no"))
    );
    assert_eq!(line["toolCalls"], 3);
    assert_eq!(line["threshold"], 0.75);
    assert!(line["at"].as_str().unwrap().ends_with('Z'));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].path, "/choice");
    assert_eq!(requests[1].header("authorization"), Some(format!("Bearer {SECRET}").as_str()));
    for request in &requests {
        let body = String::from_utf8_lossy(&request.body);
        assert!(!body.contains("token="), "tool output never reaches the gate: {body}");
    }
    assert!(!r.h.log_text().contains(SECRET));
}

#[test]
fn gate_failures_fall_back_to_reviewing_with_a_reason() {
    let cases: Vec<(Vec<Reply>, &str, &str)> = vec![
        (vec![Reply::status(500), Reply::status(500)], "", "fallback: http 500 after one retry"),
        (
            vec![Reply::slow("{}", Duration::from_millis(1_500))],
            r#","timeoutMs":200"#,
            "fallback: timeout after 200 ms",
        ),
        (vec![Reply::ok("{not json")], "", "fallback: malformed answer"),
        (vec![Reply::status(401)], "", "fallback: http 401"),
        (vec![Reply::Reset], "", "fallback: network error"),
    ];
    for (replies, extra, reason) in cases {
        let (mut r, _server) = gate_rig(replies, extra);
        let out = r.turn(1);
        assert_eq!(Rig::review_action(&out).0, "start", "{reason}: {out:?}");
        let line = &r.gate_lines()[0];
        assert_eq!(line["source"], "counters", "{reason}");
        assert_eq!(line["decision"], "review");
        assert!(line["reason"].as_str().unwrap().starts_with(reason), "{reason}: {line}");
        assert_eq!(line["choice"], Value::Null);
    }
}

#[test]
fn three_gate_failures_open_the_breaker_for_the_instance() {
    let (mut r, server) =
        gate_rig(vec![Reply::status(401), Reply::status(401), Reply::status(401), Reply::ok("{}")], "");
    for _ in 0..4 {
        r.turn(1);
    }
    let lines = r.gate_lines();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[3]["reason"], "fallback: circuit open");
    assert_eq!(server.requests().len(), 3, "no call once the circuit is open");
    let status: Value = serde_json::from_str(&r.command("review status --json").unwrap()).unwrap();
    assert!(status["gate"].as_str().unwrap().contains("circuit open"));
}

#[test]
fn one_gate_call_per_session_per_jev_cooldown() {
    let server = ScriptedServer::start(vec![
        Reply::ok(r#"{"choice":"no","confidence":0.99}"#),
        Reply::ok(r#"{"choice":"yes"}"#),
    ])
    .unwrap();
    let config = r#"{"review":{"turnInterval":1,"cooldownMinutes":0,"maxPerSession":100,"gate":"jev","jev":{"cooldownMinutes":5}}}"#;
    let mut r = rig(config, Some(&server.url()));
    assert_eq!(Rig::review_action(&r.turn(0)).0, "skip");
    assert_eq!(Rig::review_action(&r.turn(0)).0, "start", "within the window: no call, reviewing");
    assert_eq!(server.requests().len(), 1);
    assert!(r.gate_lines()[1]["reason"].as_str().unwrap().starts_with("fallback: gate cooldown"));
}

#[test]
fn review_off_from_another_process_stops_the_next_due_review() {
    let mut r = rig(r#"{"review":{"turnInterval":1}}"#, None);
    assert_eq!(Rig::review_action(&r.turn(0)).0, "start");
    // What `self-evolve skills review off` writes, from outside this instance.
    std::fs::create_dir_all(r.h.state_dir()).unwrap();
    std::fs::write(r.h.state_dir().join("review.json"), r#"{"enabled":false}"#).unwrap();
    r.h.clock.advance(30 * MIN);
    let (action, reason) = Rig::review_action(&r.turn(0));
    assert_eq!(action, "skip");
    assert!(reason.starts_with("disabled"), "{reason}");
}
