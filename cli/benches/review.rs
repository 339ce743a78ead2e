//! Review and operator benchmarks (own harness; `cargo bench -p self-evolve --bench review`):
//! the turn-end event for a turn that is not due; a due turn with the counters gate up to
//! `subagent.start`; replay throughput on a generated 100,000-event session; gate-stats over
//! 1,000,000 lines (time and peak memory of the CLI).

use self_evolve::cli::replay;
use self_evolve_host::caps::subagent::ScriptedProvider;
use self_evolve_host::plugin::TurnStatus;
use self_evolve_host::{HostConfig, Plugin, user_context};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn wasm() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../dist/self-evolve.wasm"))
}

/// How a host keeps its sessions (the services it offers).
#[derive(Clone, Copy)]
enum Keeping {
    /// `session-owner`: held in memory, one append per event (an MCP server, an embedding).
    Held,
    /// `session-batch` too: held, written every 1,024 events (a replay).
    Batch,
    /// Neither: each event locks, reads and writes its session's state, as a process per event
    /// must (a long-lived host before the journal did the same).
    Disk,
}

impl Keeping {
    fn name(self) -> &'static str {
        match self {
            Keeping::Held => "held in memory",
            Keeping::Batch => "held as a batch",
            Keeping::Disk => "on disk per event",
        }
    }
}

/// The plugin as a replay runs it, keeping its sessions as `keeping` says.
fn plugin(config: &str, home: &std::path::Path, keeping: Keeping) -> anyhow::Result<Plugin> {
    let host = HostConfig {
        fs: self_evolve::home::replay_fs_config(home),
        subagents: Box::new(Arc::new(Mutex::new(ScriptedProvider::default()))),
        ..HostConfig::default()
    };
    let mut plugin = Plugin::load(wasm(), host)?;
    let services: Vec<String> = replay::SERVICES
        .iter()
        .filter(|s| match keeping {
            Keeping::Batch => true,
            Keeping::Held => **s != "session-batch",
            Keeping::Disk => **s != "session-batch" && **s != "session-owner",
        })
        .map(|s| s.to_string())
        .collect();
    plugin.init(config, &services)?.map_err(|e| anyhow::anyhow!(e.message))?;
    Ok(plugin)
}

/// A process per event, as Claude Code runs hooks: `self-evolve hook` from spawn to exit
/// (load the cached compiled component, instantiate, init, the event, the tick, the log), as
/// `self-evolve setup` installs it.
fn live_processes() -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let project = tempfile::tempdir()?;
    std::fs::create_dir(project.path().join(".git"))?;
    let run = |name: &str| -> anyhow::Result<Duration> {
        let event = serde_json::json!({"session_id": "bench", "cwd": project.path(), "hook_event_name": name,
            "prompt": "use pnpm", "tool_name": "Bash", "tool_input": {"command": "make"}, "tool_response": "ok"});
        let t = Instant::now();
        // The component embedded at build time (`./build.sh`'s dist), without `--wasm`: how
        // `self-evolve setup` installs the hook.
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_self-evolve"))
            .args(["hook", "--home"])
            .arg(home.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()?;
        child.stdin.take().map(|mut i| i.write_all(event.to_string().as_bytes())).transpose()?;
        child.wait()?;
        Ok(t.elapsed())
    };
    run("SessionStart")?; // fills the compiled-code cache
    for name in ["UserPromptSubmit", "PostToolUse", "Stop"] {
        let samples: anyhow::Result<Vec<Duration>> = (0..30).map(|_| run(name)).collect();
        println!("{:<58} median {:>10?}", format!("`self-evolve hook` process, {name}"), median(samples?));
    }
    Ok(())
}

/// The session events through the component, side by side: held in memory (`session-owner`),
/// held as a batch (`session-batch`), and on disk per event.
fn session_events(owner: Keeping) -> anyhow::Result<()> {
    let home = tempfile::tempdir()?;
    let ctx = user_context("s1");
    let mode = owner.name();

    let mut p = plugin(r#"{"review":{"turnInterval":10000,"toolCallThreshold":100000}}"#, home.path(), owner)?;
    let not_due = median(
        (0..5_000)
            .map(|_| {
                let t = Instant::now();
                p.turn_end(&ctx, TurnStatus::Completed).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    println!("{:<58} median {:>10?}", format!("turn-end, not due ({mode})"), not_due);

    let home = tempfile::tempdir()?;
    let mut p =
        plugin(r#"{"review":{"turnInterval":1,"cooldownMinutes":0,"maxPerSession":1000}}"#, home.path(), owner)?;
    let due = median(
        (0..500)
            .map(|_| {
                let t = Instant::now();
                let out = p.turn_end(&ctx, TurnStatus::Completed).unwrap();
                let elapsed = t.elapsed();
                assert!(out[0].contains("\"start\""), "{out:?}");
                p.pump_activations().unwrap();
                elapsed
            })
            .collect(),
    );
    println!("{:<58} median {:>10?}", format!("turn-end, due, counters gate, to subagent.start ({mode})"), due);

    let home = tempfile::tempdir()?;
    let mut p = plugin("{}", home.path(), owner)?;
    let message = median(
        (0..2_000)
            .map(|_| {
                let t = Instant::now();
                p.user_message(&ctx, "please use pnpm, not npm", true).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    println!("{:<58} median {:>10?}", format!("user message ({mode})"), message);
    let event = self_evolve_host::plugin::ToolEvent {
        tool: "bash".into(),
        args_json: r#"{"command":"make"}"#.into(),
        ok: true,
        output: "ok".into(),
    };
    let tool = median(
        (0..2_000)
            .map(|_| {
                let t = Instant::now();
                p.tool_result(&ctx, &event).unwrap();
                t.elapsed()
            })
            .collect(),
    );
    println!("{:<58} median {:>10?}", format!("tool result ({mode})"), tool);
    Ok(())
}

fn main() -> anyhow::Result<()> {
    session_events(Keeping::Held)?;
    session_events(Keeping::Batch)?;
    session_events(Keeping::Disk)?;
    live_processes()?;

    // Replay throughput: 100,000 events over 20 sessions.
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("long.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file)?);
        let mut t = 0u64;
        for i in 0..25_000u64 {
            let s = format!("s{}", i % 20);
            t += 1_000;
            writeln!(
                f,
                r#"{{"t":{t},"type":"user","session":"{s}","text":"step {i}: run the tests again","human":true}}"#
            )?;
            writeln!(
                f,
                r#"{{"t":{t},"type":"tool","session":"{s}","tool":"bash","args":{{"cmd":"pnpm test"}},"ok":true,"output":"212 passed"}}"#
            )?;
            writeln!(f, r#"{{"t":{t},"type":"assistant","session":"{s}","text":"All 212 tests pass."}}"#)?;
            writeln!(
                f,
                r#"{{"t":{t},"type":"turn-end","session":"{s}","status":"completed","origin":"user","depth":0}}"#
            )?;
        }
    }
    let events = self_evolve::events::read_events(&file)?;
    for json in [true, false] {
        let replay_home = tempfile::tempdir()?;
        let options = replay::Options {
            start_ms: replay::EPOCH_MS,
            home: replay_home.path().to_path_buf(),
            json,
            wasm: self_evolve::component::Source::File(wasm()),
            gate: None,
            restart: false,
        };
        let t = Instant::now();
        let summary = replay::replay(&events, &options, &mut std::io::sink())?;
        let elapsed = t.elapsed();
        println!(
            "{:<58} {:>9.0} events/s ({} events, {} decisions, {:.2?})",
            if json { "replay throughput (--json)" } else { "replay throughput (narrated)" },
            summary.events as f64 / elapsed.as_secs_f64(),
            summary.events,
            summary.decisions.len(),
            elapsed
        );
    }

    // gate-stats over 1,000,000 lines, run as the CLI so its peak memory is its own.
    let log = dir.path().join("gates.jsonl");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&log)?);
        for i in 0..1_000_000u64 {
            let (decision, source, reason, choice, conf) = match i % 10 {
                0..=3 => ("review", "jev", "yes (confidence 0.90)", "\"yes\"", "0.9"),
                4..=6 => {
                    ("skip", "jev", "no (confidence 0.85)", "\"no\"", &*format!("{:.2}", 0.5 + (i % 50) as f64 / 100.0))
                }
                7 | 8 => ("review", "jev", "unclear (confidence 0.40)", "\"unclear\"", "0.4"),
                _ => ("review", "counters", "fallback: http 503 after one retry", "null", "null"),
            };
            writeln!(
                f,
                r#"{{"at":"2026-10-28T15:48:45.785Z","session":"s{}","turn":{i},"decision":"{decision}","source":"{source}","reason":"{reason}","choice":{choice},"confidence":{conf},"probability":null,"toolCalls":12,"latencyMs":{},"threshold":0.75}}"#,
                i % 100,
                100 + i % 400
            )?;
        }
    }
    let size = std::fs::metadata(&log)?.len();
    let cli = env!("CARGO_BIN_EXE_self-evolve");
    let time = std::path::Path::new("/usr/bin/time");
    let t = Instant::now();
    let output = if time.exists() {
        std::process::Command::new(time)
            .args(["-f", "%M"])
            .arg(cli)
            .arg("gate-stats")
            .arg(&log)
            .arg("--json")
            .output()?
    } else {
        std::process::Command::new(cli).arg("gate-stats").arg(&log).arg("--json").output()?
    };
    let elapsed = t.elapsed();
    anyhow::ensure!(output.status.success(), "gate-stats failed: {}", String::from_utf8_lossy(&output.stderr));
    let peak = String::from_utf8_lossy(&output.stderr).trim().lines().last().and_then(|l| l.trim().parse::<u64>().ok());
    println!(
        "{:<58} {:>10.2?}  peak {} ({} MB file)",
        "gate-stats, 1,000,000 lines",
        elapsed,
        peak.map_or("unknown (no /usr/bin/time)".to_string(), |kb| format!("{:.1} MiB", kb as f64 / 1024.0)),
        size / 1_000_000
    );
    Ok(())
}
