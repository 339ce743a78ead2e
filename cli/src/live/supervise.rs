//! `self-evolve reviewer-run`: one live reviewer from start to completion, in its own detached
//! process. It runs the configured reviewer (an agent CLI in a process group of its own with the
//! prompt on stdin, killed as a group on timeout or abort; or the OpenAI-compatible loop, its tool
//! calls made through the plugin as the reviewer), then delivers `events.activation-end`.

use crate::component::Source;
use crate::home::host_file::{CommandReviewer, Reviewer};
use crate::live::runs::{self, Run};
use crate::live::{Live, openai, transcript};
use anyhow::Result;
use self_evolve_host::caps::subagent::Status;
use self_evolve_host::plugin::{ActivationResult, ActivationStatus, CallContext, Origin};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The reviewer's final answer keeps at most this much of its output (the end of it).
const MAX_ANSWER_CHARS: usize = 2_000;
/// Output kept from a reviewer's stdout and stderr while it runs (the latest bytes).
const KEEP_OUTPUT_BYTES: usize = 64 << 10;
const POLL: Duration = Duration::from_millis(25);

/// Runs reviewer `id` of `home` and delivers its completion.
pub fn run(home: &Path, id: &str, wasm: &Source) -> Result<()> {
    let run = runs::load(home, id)?;
    let mut live = crate::live::open(home, wasm)?;
    let reviewer = live.host_file.reviewer.clone();
    let (status, text) = match &reviewer {
        Reviewer::Command(command) => run_command(home, &run, command),
        Reviewer::OpenAi(config) => run_openai(&mut live, home, &run, config),
        Reviewer::None => (Status::Failed, "no reviewer is configured in host.json".to_string()),
    };
    // The reviewer's words, whatever its kind: redacted before they leave this process (the
    // plugin redacts them again where they arrive).
    let text = self_evolve_scan::redact_secrets(&text).unwrap_or(text);
    let result = ActivationResult {
        id: run.id.clone(),
        status: match status {
            Status::Completed => ActivationStatus::Completed,
            Status::Failed => ActivationStatus::Failed,
            Status::Aborted => ActivationStatus::Aborted,
            Status::TimedOut => ActivationStatus::TimedOut,
        },
        text,
    };
    let mut decisions = deliver(&mut live, &result)?;
    decisions.extend(live.plugin.tick()?);
    live.record(&format!("reviewer {}", run.id), &decisions);
    Ok(())
}

/// How long a completion is offered again while the plugin cannot take it yet.
const DELIVERY_PATIENCE: Duration = Duration::from_secs(20);

/// Delivers the completion. The plugin may not take it at once: the process that started the
/// review may still hold the session (its marker not yet written), or another process may hold
/// the session past the lock's wait. Offered again until a decision about the review comes back;
/// nothing after `DELIVERY_PATIENCE` means the review already ended (its timeout) and is left.
fn deliver(live: &mut Live, result: &ActivationResult) -> Result<Vec<String>> {
    let started = Instant::now();
    loop {
        let decisions = live.plugin.activation_end(result)?;
        let taken = decisions
            .iter()
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d).ok())
            .any(|d| d["activation"] == result.id.as_str() || d["kind"] == "review-loop");
        if taken || started.elapsed() >= DELIVERY_PATIENCE {
            return Ok(decisions);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The reviewer's calls: in the parent session, as the reviewer, one level down.
fn reviewer_context(run: &Run) -> CallContext {
    CallContext {
        session: run.session.clone(),
        agent: run.id.clone(),
        origin: Origin::Subagent,
        depth: 1,
        cwd: run.cwd.clone(),
    }
}

/// The prompt on stdin: the plugin's instructions, then the parent conversation when known.
fn prompt_with_seed(run: &Run, seed: bool) -> String {
    let conversation = match (&run.transcript, seed) {
        (Some(path), true) => transcript::seed(Path::new(path)),
        _ => String::new(),
    };
    if conversation.is_empty() {
        run.prompt.clone()
    } else {
        format!("{}\n\n## The conversation that just finished\n\n{conversation}\n", run.prompt)
    }
}

/// One argument of the reviewer's command with the run's values in place. An argument that
/// becomes a flag only through a value (`{session}` of `--dangerously-skip-permissions`) is
/// refused: the values come from hook payloads, which the operator does not write.
fn substitute(arg: &str, run: &Run) -> Result<String, String> {
    let value = arg
        .replace("{session}", &run.session)
        .replace("{activation}", &run.id)
        .replace("{cwd}", &run.cwd)
        .replace("{transcript}", run.transcript.as_deref().unwrap_or(""));
    if value.starts_with('-') && !arg.starts_with('-') {
        return Err(format!(
            "not started: the reviewer argument `{arg}` would become `{}`, a flag; \
             the session's id, folder or transcript path starts with `-`",
            self_evolve_host::text::visible(&value)
        ));
    }
    Ok(value)
}

/// Runs the agent CLI; returns how it ended and its answer (the end of its stdout).
pub fn run_command(home: &Path, run: &Run, reviewer: &CommandReviewer) -> (Status, String) {
    let argv = match reviewer.argv.iter().map(|a| substitute(a, run)).collect::<Result<Vec<String>, String>>() {
        Ok(argv) => argv,
        Err(refusal) => return (Status::Failed, refusal),
    };
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if Path::new(&run.cwd).is_dir() {
        command.current_dir(&run.cwd);
    }
    let bin = std::env::current_exe().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
    // An agent CLI that refuses to start inside another session of itself (Claude Code checks
    // CLAUDECODE) must not see the parent's marker: the reviewer is a session of its own.
    command.env_remove("CLAUDECODE");
    for (name, value) in &reviewer.env {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .env("SELF_EVOLVE_HOME", home)
        .env("SELF_EVOLVE_SESSION", &run.session)
        .env("SELF_EVOLVE_AGENT", &run.id)
        .env("SELF_EVOLVE_ACTIVATION", &run.id)
        .env("SELF_EVOLVE_TOOLS", run.tools.join(","))
        .env("SELF_EVOLVE_CWD", &run.cwd)
        .env("SELF_EVOLVE_BIN", bin)
        .env("SELF_EVOLVE_TRANSCRIPT", run.transcript.as_deref().unwrap_or(""));
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => {
            return (Status::Failed, format!("could not start `{}`: {err}", self_evolve_host::text::visible(&argv[0])));
        }
    };
    let pgid = child.id();
    if let Err(err) = runs::set_pgid(home, &run.id, pgid) {
        eprintln!("{err:#}");
    }
    let stdin = child.stdin.take();
    let prompt = prompt_with_seed(run, reviewer.seed_transcript);
    // Written from a thread: a reviewer that reads nothing must not block us.
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(prompt.as_bytes());
        }
    });
    let stdout = child.stdout.take().map(tail_reader);
    let stderr = child.stderr.take().map(tail_reader);
    let started = Instant::now();
    let timeout = Duration::from_millis(run.timeout_ms).min(reviewer.timeout.unwrap_or(Duration::MAX));
    let mut ended_by: Option<Status> = None;
    // Every signal goes out while the leader is unreaped (running, or a zombie): until it is
    // reaped its pid, the group's id, cannot be given to another process.
    let exited = loop {
        if ended_by.is_none() && runs::aborted(home, &run.id) {
            ended_by = Some(Status::Aborted);
            runs::kill_group(pgid);
        } else if ended_by.is_none() && started.elapsed() >= timeout {
            ended_by = Some(Status::TimedOut);
            runs::kill_group(pgid);
        }
        match leader_exited(&mut child) {
            Ok(true) => break true,
            Ok(false) => {}
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
        std::thread::sleep(POLL);
    };
    // Whatever it left running (a server, a shell) goes with it; then the leader is reaped.
    runs::kill_group(pgid);
    let exit = if exited { child.wait().ok() } else { None };
    drop(writer);
    // A descendant that left the group may hold the pipes open: wait a moment, then go on.
    let out = stdout.and_then(|r| r.recv_timeout(PIPE_GRACE).ok()).unwrap_or_default();
    let err = stderr.and_then(|r| r.recv_timeout(PIPE_GRACE).ok()).unwrap_or_default();
    if runs::aborted(home, &run.id) && ended_by.is_none() {
        ended_by = Some(Status::Aborted);
    }
    match (ended_by, exit) {
        (Some(Status::TimedOut), _) => {
            (Status::TimedOut, format!("killed after {} ms without finishing", timeout.as_millis()))
        }
        (Some(status), _) => (status, "aborted by the plugin".to_string()),
        (None, Some(code)) if code.success() => (Status::Completed, answer(&out)),
        (None, Some(code)) => (Status::Failed, format!("exited with {code}: {}", answer(&err))),
        (None, None) => (Status::Failed, "lost track of the reviewer process".to_string()),
    }
}

/// Whether the reviewer's leader exited, leaving it unreaped (a zombie keeps its pid, so the
/// group's id stays the reviewer's until `wait`).
#[cfg(unix)]
fn leader_exited(child: &mut std::process::Child) -> std::io::Result<bool> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw).ok_or(std::io::ErrorKind::InvalidInput)?;
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Ok(waitid(WaitId::Pid(pid), options)?.is_some())
}

#[cfg(not(unix))]
fn leader_exited(child: &mut std::process::Child) -> std::io::Result<bool> {
    child.try_wait().map(|status| status.is_some())
}

/// How long the output of a finished reviewer is waited for.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Reads a pipe to its end on a thread, keeping the latest `KEEP_OUTPUT_BYTES`; the text arrives
/// on the returned channel.
fn tail_reader(mut pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * KEEP_OUTPUT_BYTES {
                kept.drain(..kept.len() - KEEP_OUTPUT_BYTES);
            }
        }
        let _ = send.send(String::from_utf8_lossy(&kept).into_owned());
    });
    receive
}

/// The end of a reviewer's output, trimmed, as its answer: redacted first, as a cut through a
/// credential leaves a piece the scanner no longer knows (a key's last lines, a token's end).
fn answer(output: &str) -> String {
    let redacted = self_evolve_scan::redact_secrets(output);
    let trimmed = redacted.as_deref().unwrap_or(output).trim();
    let count = trimmed.chars().count();
    if count <= MAX_ANSWER_CHARS {
        return trimmed.to_string();
    }
    let tail: String = trimmed.chars().skip(count - MAX_ANSWER_CHARS).collect();
    format!("…{tail}")
}

/// The OpenAI-compatible loop, every tool call made through the plugin as the reviewer.
fn run_openai(live: &mut Live, home: &Path, run: &Run, config: &crate::home::openai::Config) -> (Status, String) {
    let ctx = reviewer_context(run);
    let mut tools: Vec<openai::ToolDef> = match live.plugin.tools_list() {
        Ok(specs) => specs
            .into_iter()
            .filter(|t| run.tools.contains(&t.name))
            .map(|t| openai::ToolDef {
                name: t.name,
                description: t.description,
                parameters_schema: t.parameters_schema,
            })
            .collect(),
        Err(err) => return (Status::Failed, format!("the plugin's tools: {err}")),
    };
    if run.tools.iter().any(|t| t == "skill") {
        tools.push(openai::ToolDef {
            name: "skill".into(),
            description: "Load a skill's SKILL.md by name (this counts as reading it).".into(),
            parameters_schema: r#"{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}"#
                .into(),
        });
    }
    let seed = match &run.transcript {
        Some(path) => transcript::seed(Path::new(path)),
        None => String::new(),
    };
    let user = if seed.is_empty() {
        "The conversation is not available; answer `no skill update` unless the library itself shows a lesson.".into()
    } else {
        format!("The conversation that just finished:\n\n{seed}")
    };
    let plugin = &mut live.plugin;
    let mut call = |name: &str, args: &str| -> Result<String, String> {
        if name == "skill" {
            let skill = serde_json::from_str::<serde_json::Value>(args)
                .ok()
                .and_then(|v| v["name"].as_str().map(str::to_string))
                .ok_or("`skill` takes {\"name\": \"…\"}")?;
            return match plugin.catalog_read(&ctx, &skill, "SKILL.md") {
                Ok(Ok(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
                Ok(Err(refusal)) => Err(refusal),
                Err(err) => Err(err.to_string()),
            };
        }
        match plugin.tools_call(&ctx, name, args) {
            Ok(answer) => answer,
            Err(err) => Err(err.to_string()),
        }
    };
    let aborted = || runs::aborted(home, &run.id);
    // The plugin's timeout for the review bounds the loop too.
    let mut config = config.clone();
    config.timeout = config.timeout.min(Duration::from_millis(run.timeout_ms));
    let outcome = openai::run(&config, &run.prompt, &user, &tools, &mut call, &aborted);
    if outcome.input_tokens + outcome.output_tokens > 0
        && let Err(err) = live.plugin.review_loop_spend(&run.id, outcome.input_tokens, outcome.output_tokens)
    {
        eprintln!("recording the reviewer's tokens: {err}");
    }
    (outcome.status, outcome.text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_with(session: &str, cwd: &str) -> Run {
        Run {
            id: "rv-1-2-3".into(),
            session: session.into(),
            cwd: cwd.into(),
            transcript: None,
            prompt: "review".into(),
            tools: Vec::new(),
            timeout_ms: 5_000,
            started_ms: 0,
        }
    }

    /// A value that would turn an argument into a flag fails the start; nothing runs (no group
    /// recorded, the marker file the command would write is absent).
    #[test]
    fn a_value_that_becomes_a_flag_is_refused_before_anything_starts() {
        let home = tempfile::tempdir().unwrap();
        let marker = home.path().join("ran");
        let reviewer = CommandReviewer {
            argv: vec!["sh".into(), "-c".into(), format!("touch {}", marker.display()), "{session}".into()],
            env: Default::default(),
            seed_transcript: false,
            timeout: None,
        };
        for run in [run_with("--dangerously-skip-permissions", "/tmp"), run_with("s1", "-rf")] {
            let reviewer =
                CommandReviewer { argv: [reviewer.argv.clone(), vec!["{cwd}".into()]].concat(), ..reviewer.clone() };
            let (status, text) = run_command(home.path(), &run, &reviewer);
            assert_eq!(status, Status::Failed, "{text}");
            assert!(text.contains("a flag"), "{text}");
            assert!(!marker.exists(), "the reviewer ran");
            assert!(!runs::dir(home.path()).join("rv-1-2-3.pgid").exists());
        }
        // A flag the operator wrote, with a value inside it, is theirs.
        let run = run_with("-x", "/tmp");
        assert_eq!(substitute("--session={session}", &run).as_deref(), Ok("--session=-x"));
        assert_eq!(substitute("{cwd}", &run).as_deref(), Ok("/tmp"));
    }
}
