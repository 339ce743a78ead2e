//! Redaction at the live host's sinks, through the real binary and real processes: the
//! reviewer's stdin (a child process: tests/fake-agent/claude keeps what it read), the gate's
//! request body (a server on 127.0.0.1), `live.jsonl`, the session state, the review's audit
//! record, `/skills review status`, the hook's stderr and the replay's narration. Each sink is fed
//! a single-line token and a PEM private key (body and END line), placed where a cut falls, and
//! no byte kept, sent or printed holds an 8-character run of either.

mod live_support;

use live_support::*;
use self_evolve_host::testing::{Reply, ScriptedServer};
use serde_json::{Value, json};
use std::path::Path;

#[derive(Clone, Copy, Debug)]
enum Secret {
    Token,
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

    fn pieces(self) -> Vec<String> {
        match self {
            Secret::Token => vec![self.text()],
            Secret::Pem => vec![body_line(1), body_line(2), body_line(3), format!("END RSA {}", "PRIVATE KEY")],
        }
    }

    fn assert_absent(self, haystack: &str, what: &str) {
        for piece in self.pieces() {
            for run in piece.as_bytes().windows(8) {
                let run = std::str::from_utf8(run).unwrap();
                assert!(!haystack.contains(run), "{what} keeps `{run}` of the {self:?}:\n{haystack}");
            }
        }
    }
}

/// Every file under `dir`, as text (what the state root or the reviewers' folder holds).
fn files_under(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.push_str(&files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push_str(&format!("== {}\n{}\n", path.display(), String::from_utf8_lossy(&bytes)));
        }
    }
    out
}

fn state(s: &Session) -> std::path::PathBuf {
    s.home.path().join("self-evolve")
}

fn live_log(s: &Session) -> String {
    std::fs::read_to_string(state(s).join("live.jsonl")).unwrap_or_default()
}

/// A session whose reviewer (the fake agent) answers `say`.
fn saying(say: &str) -> Session {
    let say = say.to_string();
    session_with(move |s| {
        json!({
            "reviewer": {
                "provider": "command",
                "argv": [fake_agent()],
                "env": {"FAKE_AGENT_DIR": s.agent_dir.path(), "FAKE_AGENT_MODE": "say", "FAKE_AGENT_SAY": say},
                "timeoutMs": 30_000
            }
        })
    })
}

/// Two turns: the second is due (turnInterval 2) and starts the reviewer; its end.
fn review(s: &Session) -> Value {
    turn(s, "one");
    turn(s, "two");
    let end = wait_for_end(s);
    kill_reviewers(s);
    end
}

// -- the reviewer's stdin ------------------------------------------------------------------------

/// The transcript's conversation seeds the reviewer, its latest 48 KiB kept: the credential sits
/// where that cut falls (the start of the kept part lies inside it), and once more whole.
fn reviewer_stdin(secret: Secret) {
    let s = saying("no skill update");
    let key = secret.text();
    let head = "User: early ";
    let tail = "\nAssistant: Ran pnpm install.";
    let max = self_evolve::live::transcript::MAX_SEED_BYTES;
    // The kept part starts 20 bytes into the credential.
    let filler = max + head.len() + 20 - head.len() - key.len() - 1 - tail.len();
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": format!("early {key} {}", "y".repeat(filler))}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "Ran pnpm install."}]}}),
    ];
    std::fs::write(&s.transcript, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let end = review(&s);
    let id = end["activation"].as_str().unwrap();
    let stdin = std::fs::read_to_string(s.agent_dir.path().join(format!("prompt-{id}.txt"))).unwrap();
    assert!(stdin.contains("no skill update") && stdin.contains("Ran pnpm install."), "{stdin}");
    secret.assert_absent(&stdin, "the reviewer's stdin");
    secret.assert_absent(&files_under(&s.home.path().join("run")), "the reviewer's run files");

    // The whole credential in a short conversation.
    let s = saying("no skill update");
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": format!("deploy with {key} please")}}),
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": format!("Used {key}.")}]}}),
    ];
    std::fs::write(&s.transcript, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    let end = review(&s);
    let id = end["activation"].as_str().unwrap();
    let stdin = std::fs::read_to_string(s.agent_dir.path().join(format!("prompt-{id}.txt"))).unwrap();
    assert!(stdin.contains("deploy with ") && stdin.contains("please"), "{stdin}");
    secret.assert_absent(&stdin, "the reviewer's stdin");
}

#[test]
fn a_token_in_the_conversation_never_reaches_the_reviewers_stdin() {
    reviewer_stdin(Secret::Token);
}

#[test]
fn a_private_key_in_the_conversation_never_reaches_the_reviewers_stdin() {
    reviewer_stdin(Secret::Pem);
}

// -- the reviewer's answer -----------------------------------------------------------------------

/// The reviewer answers with the credential where the host cuts its answer (the last 2,000
/// characters of its output are kept): live.jsonl, the session state, the audit record,
/// `/skills review status` and `/skills reviews` hold no piece of it.
fn reviewers_answer(secret: Secret) {
    let key = secret.text();
    // The kept tail starts 20 characters before the credential's end.
    let say = format!("patched pnpm-usage; the config held {key} {}", "z".repeat(2_000 - 21));
    let s = saying(&say);
    let end = review(&s);
    assert_eq!(end["status"], "completed", "{end}");
    let status =
        event_lines(&s, &[json!({"type": "command", "session": "cc-1", "text": "/skills review status --json"})]);
    let status = status[0]["output"].as_str().unwrap().to_string();
    assert!(status.contains("completed: "), "{status}");
    let reviews = cli(&s).args(["skills", "--home"]).arg(s.home.path()).args(["reviews", "--json"]).output().unwrap();
    let reviews = String::from_utf8_lossy(&reviews.stdout).into_owned();
    assert!(reviews.contains("completed"), "{reviews}");
    secret.assert_absent(&live_log(&s), "live.jsonl");
    secret.assert_absent(&status, "/skills review status");
    secret.assert_absent(&reviews, "/skills reviews");
    secret.assert_absent(&files_under(&state(&s)), "the state root");
    secret.assert_absent(&files_under(&s.home.path().join("run")), "the reviewer's run files");

    // The whole answer is the credential and a few words.
    let s = saying(&format!("done; it printed\n{key}\nand stopped"));
    let end = review(&s);
    assert!(end["reason"].as_str().unwrap().starts_with("done; it printed"), "{end}");
    secret.assert_absent(&live_log(&s), "live.jsonl");
    secret.assert_absent(&files_under(&state(&s)), "the state root");
}

#[test]
fn a_reviewers_answer_quoting_a_token_is_kept_and_logged_redacted() {
    reviewers_answer(Secret::Token);
}

#[test]
fn a_reviewers_answer_quoting_a_private_key_is_kept_and_logged_redacted() {
    reviewers_answer(Secret::Pem);
}

// -- the gate's request body ---------------------------------------------------------------------

/// A person's message with the credential where the digest cuts it (3,000 characters) and the
/// assistant's last message with it whole: the request the gate server receives holds neither.
fn gate_body(secret: Secret) {
    let server = ScriptedServer::start(vec![Reply::ok(r#"{"choice":"yes","confidence":0.9}"#)]).unwrap();
    let url = server.url();
    let s = session_with(move |s| {
        json!({
            "endpoints": {"gate": {"url": url, "apiKeyEnv": "SE_REDACTION_GATE_KEY"}},
            "reviewer": {"provider": "command", "argv": [fake_agent()],
                "env": {"FAKE_AGENT_DIR": s.agent_dir.path(), "FAKE_AGENT_MODE": "none"}, "timeoutMs": 30_000}
        })
    });
    let config = json!({"review": {"enabled": true, "turnInterval": 1, "cooldownMinutes": 0, "gate": "jev"}});
    std::fs::write(s.home.path().join("config.json"), config.to_string()).unwrap();
    let key = secret.text();
    let prompt = format!("{} {key} and then some", "x".repeat(3_000 - 40));
    let with_key = |name: &str, extra: Value| {
        let mut event = json!({"session_id": "cc-1", "transcript_path": s.transcript, "cwd": s.project.path(),
            "hook_event_name": name});
        event.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let out = hook_raw(&s, event.to_string().as_bytes(), &[("SE_REDACTION_GATE_KEY", "gate-test-key")]);
        assert!(out.status.success());
    };
    with_key("UserPromptSubmit", json!({"prompt": prompt}));
    with_key("Stop", json!({"last_assistant_message": format!("I used {key} to deploy.")}));
    kill_reviewers(&s);
    let received = server.requests();
    assert_eq!(received.len(), 1, "the gate was asked once: {}", live_log(&s));
    let body = String::from_utf8_lossy(&received[0].body).into_owned();
    assert!(body.contains("lastUserMessage") && body.contains("I used "), "{body}");
    secret.assert_absent(&body, "the gate's request body");
    secret.assert_absent(&files_under(&state(&s)), "the state root");
}

#[test]
fn a_token_a_person_pasted_never_reaches_the_gate() {
    gate_body(Secret::Token);
}

#[test]
fn a_private_key_a_person_pasted_never_reaches_the_gate() {
    gate_body(Secret::Pem);
}

// -- what the plugin returns, in live.jsonl ------------------------------------------------------

/// `self-evolve tool … view` of a hand-written skill that holds a credential: the answer goes
/// to the caller; live.jsonl keeps the call's short fields, never the skill.
fn tool_view(secret: Secret) {
    let s = session("none", 30_000);
    let dir = s.home.path().join("skills/deploy-notes");
    std::fs::create_dir_all(&dir).unwrap();
    let body = format!(
        "---\nname: deploy-notes\ndescription: How this team deploys. Use when deploying.\n---\nRun the deploy.\n\n{}\n",
        secret.text()
    );
    std::fs::write(dir.join("SKILL.md"), &body).unwrap();
    let (answer, _) = tool(&s, "cc-1", json!({"action": "view", "name": "deploy-notes"}));
    assert!(answer.contains("Run the deploy"), "{answer}");
    let log = live_log(&s);
    assert!(log.contains(r#""kind":"tool""#), "{log}");
    assert!(!log.contains("Run the deploy"), "the skill is not logged: {log}");
    secret.assert_absent(&log, "live.jsonl");
}

#[test]
fn a_viewed_skill_holding_a_token_is_not_copied_into_the_log() {
    tool_view(Secret::Token);
}

#[test]
fn a_viewed_skill_holding_a_private_key_is_not_copied_into_the_log() {
    tool_view(Secret::Pem);
}

// -- the hook's own errors -----------------------------------------------------------------------

/// A hook event the host refuses quotes what it refused (its session id, at most 256 bytes, so
/// a token and not a PEM key): live.jsonl and the hook's stderr show it redacted.
#[test]
fn a_refused_hook_event_quoting_a_token_is_logged_redacted() {
    let secret = Secret::Token;
    let s = session("none", 30_000);
    let event = json!({"session_id": format!("not an id {}", secret.text()), "hook_event_name": "Stop"});
    let out = hook_raw(&s, event.to_string().as_bytes(), &[]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("not a session id"), "{stderr}");
    let log = live_log(&s);
    assert!(log.contains("not a session id"), "{log}");
    secret.assert_absent(&stderr, "the hook's stderr");
    secret.assert_absent(&log, "live.jsonl");
}

// -- the replay's narration ----------------------------------------------------------------------

/// `self-evolve replay` tells the session as a timeline: a person's message (its first 100
/// characters, with the credential across that cut) and a reviewer's answer quoting it.
fn replay_narration(secret: Secret) {
    let dir = tempfile::tempdir().unwrap();
    let key = secret.text();
    let lines = [
        json!({"t": 0, "type": "config", "config": {"review": {"turnInterval": 1}}}),
        json!({"t": 0, "type": "reviewer", "calls": [], "text": format!("done; it printed {key}")}),
        json!({"t": 1000, "type": "user", "session": "s1", "text": format!("{} {key}", "w".repeat(80)), "human": true}),
        json!({"t": 2000, "type": "assistant", "session": "s1", "text": format!("{key} was used")}),
        json!({"t": 3000, "type": "turn-end", "session": "s1", "status": "completed"}),
        json!({"t": 9000, "type": "turn-end", "session": "s1", "status": "completed"}),
    ];
    let file = dir.path().join("session.jsonl");
    std::fs::write(&file, lines.iter().map(|l| l.to_string() + "\n").collect::<String>()).unwrap();
    for json_mode in [false, true] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_self-evolve"));
        let home = dir.path().join(if json_mode { "home-json" } else { "home-narrated" });
        cmd.arg("--wasm").arg(wasm()).arg("replay").arg(&file).arg("--home").arg(home);
        if json_mode {
            cmd.arg("--json");
        }
        let out = cmd.env("SELF_EVOLVE_CACHE_DIR", env!("CARGO_TARGET_TMPDIR")).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        assert!(stdout.contains("done; it printed"), "{stdout}");
        secret.assert_absent(&stdout, if json_mode { "replay --json" } else { "the replay's narration" });
        secret.assert_absent(&stderr, "the replay's stderr");
    }
}

#[test]
fn a_token_in_a_replayed_session_is_narrated_redacted() {
    replay_narration(Secret::Token);
}

#[test]
fn a_private_key_in_a_replayed_session_is_narrated_redacted() {
    replay_narration(Secret::Pem);
}

// -- the conversation `event` keeps for a reviewer's seed -----------------------------------------

/// `self-evolve event` keeps the session's conversation under `run/sessions/` to seed a reviewer
/// from; a credential a person pasted or the agent echoed is kept redacted there.
fn event_transcript(secret: Secret) {
    let s = session("none", 30_000);
    let text = format!("here is the key:\n{}\nkeep it safe", secret.text());
    event_lines(
        &s,
        &[
            json!({"type": "user", "session": "ev-1", "text": text, "human": true}),
            json!({"type": "assistant", "session": "ev-1", "text": text}),
        ],
    );
    let kept = files_under(&s.home.path().join("run/sessions"));
    assert!(kept.contains("keep it safe"), "the conversation is kept: {kept}");
    secret.assert_absent(&kept, "run/sessions");
}

#[test]
fn a_token_in_an_event_conversation_is_kept_redacted() {
    event_transcript(Secret::Token);
}

#[test]
fn a_private_key_in_an_event_conversation_is_kept_redacted() {
    event_transcript(Secret::Pem);
}
