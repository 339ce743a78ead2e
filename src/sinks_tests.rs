//! Redaction at every sink of the plugin, end to end on the fake host: whatever a person, an
//! agent, a reviewer, a gate or a check hands the plugin with a credential in it, no stored,
//! shown, sent or logged byte keeps a piece of it. Each sink is tested with a single-line token
//! and with a PEM private key (body and END line, which the scanner must take whole).

use crate::Plugin;
use crate::api::{ActivationResult, ActivationStatus, CallContext, Origin, ToolEvent, TurnStatus};
use crate::fake::FakeHost;
use crate::host::*;
use serde_json::{Value, json};
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

/// A credential of one kind, built at run time (this file holds no scannable literal).
#[derive(Clone, Copy, Debug)]
enum Secret {
    /// A GitHub token: `ghp_` and 36 letters and digits.
    Token,
    /// An RSA private key in PEM: header, three body lines, END line.
    Pem,
}

fn body_line(seed: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..64).map(|i| A[(i * 37 + seed * 11 + i * i * 7 + seed * i) % 64] as char).collect()
}

impl Secret {
    fn text(self) -> String {
        match self {
            Secret::Token => ["ghp_", "Z7QX3M2K9LPT4WNBZ7QX3M2K9LPT4WNB1234"].concat(),
            Secret::Pem => format!(
                "-----BEGIN RSA {}-----\n{}\n{}\n{}\n-----END RSA {}-----",
                "PRIVATE KEY",
                body_line(1),
                body_line(2),
                body_line(3),
                "PRIVATE KEY"
            ),
        }
    }

    /// What must never be kept: the token; the key's body lines and its END line.
    fn pieces(self) -> Vec<String> {
        match self {
            Secret::Token => vec![self.text()],
            Secret::Pem => {
                vec![body_line(1), body_line(2), body_line(3), format!("END RSA {}", "PRIVATE KEY")]
            }
        }
    }

    /// Panics when `haystack` holds any 8-character run of the secret.
    fn assert_absent(self, haystack: &str, what: &str) {
        for piece in self.pieces() {
            for run in piece.as_bytes().windows(8) {
                let run = std::str::from_utf8(run).unwrap();
                assert!(!haystack.contains(run), "{what} keeps `{run}` of the {self:?}:\n{haystack}");
            }
        }
    }
}

fn ctx(session: &str) -> CallContext {
    CallContext { session: session.into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: String::new() }
}

fn services() -> Vec<String> {
    ["tools", "commands", "agents", "subagents"].iter().map(|s| s.to_string()).collect()
}

fn plugin_on(host: FakeHost, config: &str) -> Plugin<FakeHost> {
    let mut plugin = Plugin::new(host);
    plugin.init(config, &services()).unwrap();
    plugin
}

/// Every file under `folder` of the state root, as text.
fn state_files(host: &FakeHost, folder: &str) -> String {
    let roots = host.snapshot();
    let mut out = String::new();
    for (path, node) in roots.get(&Root::State).into_iter().flatten() {
        if let crate::fake::Node::File { data, .. } = node
            && path.starts_with(folder)
        {
            out.push_str(&format!("== {path}\n{}\n", String::from_utf8_lossy(data)));
        }
    }
    out
}

fn logs(host: &FakeHost) -> String {
    host.logs.borrow().iter().map(|(_, m)| format!("{m}\n")).collect()
}

// -- a background reviewer's final answer ------------------------------------------------------

/// The answer is kept in the session's state (`lastOutcome`), shown by `/skills review status`,
/// returned in the review's end line (which hosts log), and kept in its audit record.
fn reviewers_answer(secret: Secret) {
    let mut plugin = plugin_on(FakeHost::new(1_000), r#"{"review":{"turnInterval":1,"cooldownMinutes":0}}"#);
    let start = plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
    assert!(start.iter().any(|d| d.contains(r#""action":"start""#)), "{start:?}");
    let text = format!("patched pnpm-usage; the config held\n{}\nso I left it out", secret.text());
    let end =
        plugin.activation_end(&ActivationResult { id: "act-1".into(), status: ActivationStatus::Completed, text });
    assert!(end.iter().any(|d| d.contains(r#""action":"end""#)), "{end:?}");
    secret.assert_absent(&end.join("\n"), "the review's end line");
    let status = plugin.run_command(&ctx("s1"), "review status --json").unwrap();
    assert!(status.contains("patched pnpm-usage"), "{status}");
    secret.assert_absent(&status, "/skills review status");
    let reviews = plugin.run_command(&ctx("s1"), "reviews act-1").unwrap();
    secret.assert_absent(&reviews, "/skills reviews ID");
    secret.assert_absent(&state_files(plugin.host(), "sessions/"), "the session state");
    secret.assert_absent(&state_files(plugin.host(), "reviews/"), "the audit record");
    secret.assert_absent(&logs(plugin.host()), "the plugin's log");
}

#[test]
fn a_reviewers_answer_quoting_a_token_is_kept_and_shown_redacted() {
    reviewers_answer(Secret::Token);
}

#[test]
fn a_reviewers_answer_quoting_a_private_key_is_kept_and_shown_redacted() {
    reviewers_answer(Secret::Pem);
}

/// The same without a state root: the scheduler keeps the session in memory.
fn reviewers_answer_in_memory(secret: Secret) {
    let host = FakeHost::default();
    host.map_root(Root::UserSkills);
    let mut plugin = plugin_on(host, r#"{"review":{"turnInterval":1,"cooldownMinutes":0}}"#);
    plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
    let text = format!("done: {}", secret.text());
    let end = plugin.activation_end(&ActivationResult { id: "act-1".into(), status: ActivationStatus::Failed, text });
    assert!(!end.is_empty());
    secret.assert_absent(&end.join("\n"), "the review's end line");
    let status = plugin.run_command(&ctx("s1"), "review status --json").unwrap();
    secret.assert_absent(&status, "/skills review status");
}

#[test]
fn without_a_state_root_a_reviewers_token_is_shown_redacted() {
    reviewers_answer_in_memory(Secret::Token);
}

#[test]
fn without_a_state_root_a_reviewers_private_key_is_shown_redacted() {
    reviewers_answer_in_memory(Secret::Pem);
}

// -- the gate's request and the session's digest -----------------------------------------------

/// A person's message and the assistant's, each with the credential where the digest cuts them
/// (3,000 characters): the gate's request body and the session state hold no piece of it.
fn gate_request(secret: Secret) {
    let host = FakeHost::new(1_000);
    host.add_endpoint("llm", true);
    let answer =
        json!({"choices": [{"message": {"role": "assistant", "content": r#"{"choice":"yes","confidence":0.9}"#}}]});
    host.http_script.borrow_mut().push_back(Ok(HttpResponse { status: 200, body: answer.to_string().into_bytes() }));
    let mut plugin = plugin_on(host, r#"{"review":{"turnInterval":1,"gate":"openai"}}"#);
    let filler = "x".repeat(crate::schedule::digest::MAX_TEXT_CHARS - 40);
    let text = format!("{filler} {} and then some", secret.text());
    plugin.user_message(&ctx("s1"), &text, true);
    plugin.assistant_message(&ctx("s1"), &text);
    let decisions = plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
    let requests = plugin.host().http_requests.borrow().clone();
    assert_eq!(requests.len(), 1, "{decisions:?}");
    let body = String::from_utf8(requests[0].body.clone()).unwrap();
    assert!(body.contains("lastUserMessage") && body.contains("xxxxxxxx"), "{body}");
    secret.assert_absent(&body, "the gate's request body");
    secret.assert_absent(&state_files(plugin.host(), "sessions/"), "the session state");
    secret.assert_absent(&state_files(plugin.host(), "gates.jsonl"), "gates.jsonl");
    secret.assert_absent(&decisions.join("\n"), "the decisions");
}

#[test]
fn a_token_across_the_digests_cut_reaches_neither_the_gate_nor_the_session_state() {
    gate_request(Secret::Token);
}

#[test]
fn a_private_key_across_the_digests_cut_reaches_neither_the_gate_nor_the_session_state() {
    gate_request(Secret::Pem);
}

/// What the gate answers beyond its choice is never kept: a reply quoting a credential leaves
/// only the choice and numbers in gates.jsonl and the decision.
#[test]
fn a_gate_reply_quoting_a_credential_is_kept_as_its_choice_only() {
    for secret in [Secret::Token, Secret::Pem] {
        let host = FakeHost::new(1_000);
        host.add_endpoint("llm", true);
        let content = json!({"choice": "no", "confidence": 0.95, "why": secret.text()}).to_string();
        let answer = json!({"choices": [{"message": {"role": "assistant", "content": content}}]});
        host.http_script
            .borrow_mut()
            .push_back(Ok(HttpResponse { status: 200, body: answer.to_string().into_bytes() }));
        let mut plugin = plugin_on(host, r#"{"review":{"turnInterval":1,"gate":"openai"}}"#);
        let decisions = plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
        assert!(decisions.iter().any(|d| d.contains(r#""kind":"gate""#)), "{decisions:?}");
        secret.assert_absent(&decisions.join("\n"), "the decisions");
        secret.assert_absent(&state_files(plugin.host(), ""), "the state root");
        secret.assert_absent(&logs(plugin.host()), "the log");
    }
}

// -- what a subagent provider answers ------------------------------------------------------------

/// The fake host whose subagent provider refuses with `why` (a provider's error text is the
/// host's words: it may quote its own configuration).
struct Refusing {
    inner: FakeHost,
    why: String,
}

impl Host for Refusing {
    fn read(&self, root: &Root, path: &str) -> Result<Vec<u8>, FsError> {
        self.inner.read(root, path)
    }
    fn write(&self, root: &Root, path: &str, data: &[u8], mode: WriteMode) -> Result<(), FsError> {
        self.inner.write(root, path, data, mode)
    }
    fn rename(&self, root: &Root, from: &str, to: &str) -> Result<(), FsError> {
        self.inner.rename(root, from, to)
    }
    fn remove_file(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.inner.remove_file(root, path)
    }
    fn remove_dir(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.inner.remove_dir(root, path)
    }
    fn create_dir_all(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.inner.create_dir_all(root, path)
    }
    fn list_dir(&self, root: &Root, path: &str) -> Result<Vec<(String, EntryKind)>, FsError> {
        self.inner.list_dir(root, path)
    }
    fn stat(&self, root: &Root, path: &str) -> Result<Stat, FsError> {
        self.inner.stat(root, path)
    }
    fn stat_many(&self, root: &Root, paths: &[String]) -> Vec<Result<Stat, FsError>> {
        self.inner.stat_many(root, paths)
    }
    fn has_root(&self, root: &Root) -> bool {
        self.inner.has_root(root)
    }
    fn http_post(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        self.inner.http_post(request)
    }
    fn has_endpoint(&self, endpoint: &str) -> bool {
        self.inner.has_endpoint(endpoint)
    }
    fn has_credential(&self, endpoint: &str) -> bool {
        self.inner.has_credential(endpoint)
    }
    fn subagent_start(&self, _spec: &SubagentSpec) -> Result<String, String> {
        Err(self.why.clone())
    }
    fn subagent_restrict_tools(&self, _id: &str, _tools: &[String]) -> Result<(), String> {
        Err(self.why.clone())
    }
    fn subagent_abort(&self, id: &str) {
        self.inner.subagent_abort(id)
    }
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
    fn log(&self, level: Level, message: &str) {
        self.inner.log(level, message)
    }
}

fn provider_refusal(secret: Secret) {
    let why = format!("provider config {} rejected", secret.text());
    let mut plugin = Plugin::new(Refusing { inner: FakeHost::new(1_000), why });
    plugin.init(r#"{"review":{"turnInterval":1}}"#, &services()).unwrap();
    let decisions = plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
    assert!(decisions.iter().any(|d| d.contains("subagent start refused")), "{decisions:?}");
    secret.assert_absent(&decisions.join("\n"), "the skip decision");
    secret.assert_absent(&logs(&plugin.host().inner), "the plugin's log");
    secret.assert_absent(&state_files(&plugin.host().inner, ""), "the state root");
    // The review loop's lenses are refused the same way: the failure is kept and shown.
    let begun = plugin.review_loop_begin(&ctx("s2"), review_request("a small diff\n"));
    let shown = format!("{begun:?}\n{}", plugin.review_loop_status("s2"));
    secret.assert_absent(&shown, "the review loop's answer and status");
    secret.assert_absent(&state_files(&plugin.host().inner, ""), "the state root");
    secret.assert_absent(&logs(&plugin.host().inner), "the plugin's log");
}

#[test]
fn a_providers_refusal_quoting_a_token_is_logged_and_shown_redacted() {
    provider_refusal(Secret::Token);
}

#[test]
fn a_providers_refusal_quoting_a_private_key_is_logged_and_shown_redacted() {
    provider_refusal(Secret::Pem);
}

// -- the review loop -----------------------------------------------------------------------------

const DIFF: &str = include_str!("../tests/fixtures/lock.diff");

fn review_request(artifact: &str) -> crate::review_loop::Request {
    crate::review_loop::Request {
        mode: crate::review_loop::Mode::Code,
        artifact: artifact.into(),
        artifact_sha: None,
        files: vec!["src/lock.rs".into()],
        documents: vec![],
        repo: "/work/repo".into(),
        branch: "feat/locks".into(),
        commit: Some("0123456789abcdef0123".into()),
        uncommitted: false,
        max_iter: None,
        token_ceiling: None,
        independence: crate::review_loop::Independence::Independent,
        self_review_ack: None,
        auto: false,
        commands: None,
        disabled_lenses: vec![],
    }
}

/// A code review whose diff, command output and lens reply each hold the credential: no lens or
/// falsifier prompt (reviewer input), decision, status, saved state or log keeps a piece of it.
fn review_loop(secret: Secret) {
    let mut plugin = plugin_on(FakeHost::new(1_000 * 60_000), "{}");
    let artifact = format!("{DIFF}+    let key = \"{}\";\n", secret.text().replace('\n', "\\n"));
    let begun = plugin.review_loop_begin(&ctx("s1"), review_request(&artifact)).unwrap();
    let run = serde_json::from_str::<Value>(&begun).unwrap()["run"].as_str().unwrap().to_string();
    let mut shown = vec![begun];
    let failing = crate::review_loop::CommandResult {
        name: "test".into(),
        exit_code: 1,
        stderr_tail: format!("thread 'main' panicked: bad key\n{}\n", secret.text()),
    };
    shown.extend(plugin.review_loop_commands(&run, &[failing]).unwrap());
    let claim = format!("take_lock logs the key {} when the lock is stale", secret.text());
    let finding = json!([{"file": "src/lock.rs", "line": 6, "claim": claim, "severity": "high",
        "confidence": 90, "load_bearing": true, "category": "bug"}])
    .to_string();
    let mut answered = 0;
    while answered < plugin.host().started.borrow().len() {
        let prompt = plugin.host().started.borrow()[answered].prompt.clone();
        answered += 1;
        let text = if prompt.starts_with("A reviewer flagged") {
            r#"{"falsified": false}"#.to_string()
        } else if prompt.starts_with("You are the ADVERSARIAL") {
            finding.clone()
        } else {
            "[]".to_string()
        };
        let id = format!("act-{answered}");
        shown.extend(plugin.activation_end(&ActivationResult { id, status: ActivationStatus::Completed, text }));
    }
    assert!(answered >= 6, "five lenses and a falsifier at least: {answered}");
    shown.push(plugin.review_loop_status("s1"));
    let prompts: String = plugin.host().started.borrow().iter().map(|s| format!("{}\n", s.prompt)).collect();
    secret.assert_absent(&prompts, "the reviewers' prompts");
    secret.assert_absent(&shown.join("\n"), "the review loop's decisions and status");
    secret.assert_absent(&state_files(plugin.host(), "review-loop"), "the review loop's state and log");
    secret.assert_absent(&logs(plugin.host()), "the plugin's log");
    let requests: String =
        plugin.host().http_requests.borrow().iter().map(|r| String::from_utf8_lossy(&r.body).into_owned()).collect();
    secret.assert_absent(&requests, "the requests sent");
}

#[test]
fn a_token_in_a_review_loops_diff_output_and_replies_is_redacted_everywhere() {
    review_loop(Secret::Token);
}

#[test]
fn a_private_key_in_a_review_loops_diff_output_and_replies_is_redacted_everywhere() {
    review_loop(Secret::Pem);
}

// -- the shadow reviewer -------------------------------------------------------------------------

/// The prompt the host hands the shadow reviewer (through `admit`) and the report it brings back
/// (kept for the relay, returned by `accept` and `take-relay`).
fn shadow(secret: Secret) {
    let mut plugin = plugin_on(FakeHost::new(1_000), "{}");
    let admitted = plugin.shadow_admit("s1", &format!("review the turn; it printed {}", secret.text()), false).unwrap();
    secret.assert_absent(&admitted, "the admitted prompt");
    let report = json!({"verdict": "challenge", "content": format!("src/cart.rs prints {}", secret.text()),
        "severity": 0.7, "refs": [2]});
    let accepted = plugin.shadow_accept("s1", &report.to_string(), &[1, 2, 3], None, None, false).unwrap();
    assert!(accepted.contains("src/cart.rs prints"), "{accepted}");
    secret.assert_absent(&accepted, "the accepted report");
    let relay = plugin.shadow_take_relay("s1");
    assert!(relay.contains("src/cart.rs prints"), "{relay}");
    secret.assert_absent(&relay, "the relay");
    let refused = json!({"verdict": format!("odd {}", secret.text()), "content": "x"});
    let error = plugin.shadow_accept("s1", &refused.to_string(), &[1], None, None, false).unwrap_err();
    secret.assert_absent(&error, "a refused report's error");
    secret.assert_absent(&state_files(plugin.host(), ""), "the state root");
}

#[test]
fn a_token_in_the_shadow_reviewers_prompt_or_report_is_redacted() {
    shadow(Secret::Token);
}

#[test]
fn a_private_key_in_the_shadow_reviewers_prompt_or_report_is_redacted() {
    shadow(Secret::Pem);
}

// -- feedback loops ------------------------------------------------------------------------------

/// A reviewer's findings and a command's output tail (its last 2,000 characters, where a cut
/// can fall inside a credential) are kept in the run's record and returned in decisions.
fn feedback(secret: Secret) {
    let mut plugin = plugin_on(FakeHost::new(1_000), "{}");
    let spec = json!({"stages": [
        {"name": "implement", "refine": 5},
        {"name": "review", "check": {"kind": "reviewer"}, "target": "implement"},
        {"name": "test", "check": {"kind": "command"}, "target": "implement"}
    ]});
    let run = plugin.feedback_begin(&spec.to_string()).unwrap();
    let mut shown = Vec::new();
    let mut say = |plugin: &mut Plugin<FakeHost>, event: Value| {
        shown.push(plugin.feedback_report(&run, &event.to_string()).unwrap_or_else(|e| e));
    };
    say(&mut plugin, json!({"event": "built", "stage": "implement"}));
    say(
        &mut plugin,
        json!({"event": "check", "stage": "review", "pass": false,
            "findings": [{"title": format!("hard-coded {}", secret.text()), "detail": secret.text()}]}),
    );
    say(&mut plugin, json!({"event": "built", "stage": "implement"}));
    say(&mut plugin, json!({"event": "check", "stage": "review", "pass": true}));
    // The key sits across the tail's cut: 2,000 characters from the end fall inside it.
    let output = format!("{}\n{}\n{}", "y".repeat(500), secret.text(), "z".repeat(1_980));
    say(&mut plugin, json!({"event": "check", "stage": "test", "exitCode": 1, "output": output}));
    say(&mut plugin, json!({"event": "check", "stage": format!("no {}", secret.text()), "pass": true}));
    let record = plugin.feedback_record(&run).unwrap();
    assert!(record.contains("hard-coded"), "{record}");
    shown.push(record);
    secret.assert_absent(&shown.join("\n"), "the feedback decisions and record");
}

#[test]
fn a_token_in_a_checks_findings_or_output_is_redacted() {
    feedback(Secret::Token);
}

#[test]
fn a_private_key_in_a_checks_findings_or_output_is_redacted() {
    feedback(Secret::Pem);
}

// -- the curator's audit record ------------------------------------------------------------------

fn curator_record(secret: Secret) {
    let host = FakeHost::new(1_000);
    let report = crate::library::curation::curator::Report {
        at: "2026-01-01T00:00:00Z".into(),
        dry_run: false,
        checked: 1,
        changes: Vec::new(),
        errors: vec![format!("build-fixes: cannot parse `{}`", secret.text())],
        flagged: Vec::new(),
    };
    crate::schedule::audit::curator_pass(&host, &report);
    secret.assert_absent(&state_files(&host, "reviews/"), "the curator's record");
}

#[test]
fn a_token_in_a_curator_passs_errors_is_kept_redacted() {
    curator_record(Secret::Token);
}

#[test]
fn a_private_key_in_a_curator_passs_errors_is_kept_redacted() {
    curator_record(Secret::Pem);
}

// -- tool events ---------------------------------------------------------------------------------

/// A tool's output and arguments (the agent's own tool calls) are never kept: the session state
/// and the log hold no piece of a credential in them.
#[test]
fn a_tool_events_output_and_arguments_are_never_kept() {
    for secret in [Secret::Token, Secret::Pem] {
        let mut plugin = plugin_on(FakeHost::new(1_000), r#"{"review":{"turnInterval":5}}"#);
        let event = ToolEvent {
            tool: "bash".into(),
            args_json: json!({"command": format!("echo {}", secret.text())}).to_string(),
            ok: true,
            output: secret.text(),
        };
        plugin.tool_result(&ctx("s1"), &event);
        plugin.turn_end(&ctx("s1"), TurnStatus::Completed);
        secret.assert_absent(&state_files(plugin.host(), ""), "the state root");
        secret.assert_absent(&logs(plugin.host()), "the log");
    }
}
