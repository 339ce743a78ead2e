//! The `self-evolve` CLI, a front door: argument parsing and one function per subcommand over the
//! real component. The binary (`src/main.rs`) only calls `cli::main`; the longer subcommands have
//! files here. May use every floor below (services, the home); the other front doors (`mcp/`,
//! `hook/`) it only starts.

mod args;
mod inspect;
mod narrate;
pub mod replay;
mod setup;
mod sync;
mod tool;

use crate::{check, home, identity};
use anyhow::{Context, Result, bail};
use args::{Cli, Command, applies, parse, take_globals};
use self_evolve_host::{Clock, HostConfig, Plugin};
use std::path::PathBuf;
use std::process::ExitCode;

/// A home as an absolute path: live processes hand it to reviewers that run in other folders.
fn absolute(home: PathBuf) -> PathBuf {
    std::path::absolute(&home).unwrap_or(home)
}

/// Parses the command line and runs it; the binary is only this call.
pub fn main() -> ExitCode {
    let cli = match parse(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match run(cli) {
        Ok(code) => code,
        // A reader that closed the pipe early (`| head`) is not an error.
        Err(err)
            if err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        // Errors quote paths and arguments: shown through `visible`, never obeyed.
        Err(err) => {
            eprintln!("self-evolve: {}", self_evolve_host::text::shown_error(&format!("{err:#}")));
            ExitCode::FAILURE
        }
    }
}

fn run(mut cli: Cli) -> Result<ExitCode> {
    take_globals(&mut cli)?;
    applies(&cli)?;
    let wasm = crate::component::Source::choose(cli.wasm);
    let home = cli.home;
    let json = cli.json;
    let project = match cli.project {
        Some(project) => {
            Some(std::path::absolute(&project).with_context(|| format!("--project {}", project.display()))?)
        }
        None => None,
    };
    match cli.command {
        Command::Inspect { init } => {
            inspect::run(&wasm, init, &home.unwrap_or_else(home::default_home), project.as_deref())
        }
        Command::Mcp { session, as_reviewer } => {
            let home = home.unwrap_or_else(home::default_home);
            crate::mcp::run(crate::mcp::Options { home, project, session, as_reviewer, wasm })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve { token, bind, allow_hosts } => {
            let home = home.unwrap_or_else(home::default_home);
            let Some(args::ServeCommand::Token { action }) = token else {
                let options = crate::mcp::Options { home, project: None, session: None, as_reviewer: false, wasm };
                crate::mcp::http::serve(options, crate::mcp::http::HttpOptions { bind, allow_hosts })?;
                return Ok(ExitCode::SUCCESS);
            };
            match action {
                args::TokenAction::Add { name } => {
                    let token = crate::mcp::tokens::add(&home, &name)?;
                    eprintln!("self-evolve: a token for `{name}` (shown this once; host.json keeps only its hash):");
                    println!("{token}");
                }
                args::TokenAction::Remove { name } => {
                    crate::mcp::tokens::remove(&home, &name)?;
                    eprintln!("self-evolve: `{name}`'s token is revoked");
                }
                args::TokenAction::List => {
                    for person in crate::mcp::tokens::list(&home)? {
                        println!("{person}");
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Setup { harness, user: _, dry_run, remove, home_only } => {
            let harness = crate::setup::harness_named(&harness)?;
            let home = absolute(home.unwrap_or_else(home::default_home));
            let binary = std::env::current_exe().context("finding this binary")?;
            let binary = std::fs::canonicalize(&binary).unwrap_or(binary);
            let options = crate::setup::Options {
                harness,
                project,
                home_named: crate::setup::home_is_named(&home),
                home,
                binary,
                places: crate::setup::harness::Places::from_env(),
                dry_run,
                remove,
                home_only,
            };
            setup::run(&options, json)
        }
        Command::Hook { codex, payload, harness } => {
            // clap lets a word through beside `--harness` (its `requires = "codex"` is not checked
            // then): refused as it is without `--harness`, before the hook reads anything.
            if !codex && let Some(word) = &payload {
                bail!(
                    "unexpected argument `{}`: `self-evolve hook [--harness NAME]` reads the event on stdin",
                    self_evolve_host::text::visible(word)
                );
            }
            let payload = if codex { Some(payload.unwrap_or_default()) } else { None };
            // Claude Code's hooks name no harness. A hook never fails the agent: `hook::main`
            // answers a name it has no mapping for (exit 0, the log says why).
            let harness = harness.as_deref().unwrap_or("claude");
            crate::hook::main(&absolute(home.unwrap_or_else(home::default_home)), &wasm, payload, harness);
            Ok(ExitCode::SUCCESS)
        }
        Command::Event { cwd } => {
            let home = absolute(home.unwrap_or_else(home::default_home));
            let cwd = match cwd {
                Some(cwd) => cwd,
                None => std::env::current_dir().context("the working directory")?,
            };
            let stdin = std::io::stdin();
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            let ok = crate::hook::event::run(&home, &wasm, &cwd.to_string_lossy(), stdin.lock(), &mut out)?;
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(2) })
        }
        Command::Tool { name, args, session, agent, cwd } => {
            let home = absolute(home.unwrap_or_else(home::default_home));
            let cwd = match cwd {
                Some(cwd) => cwd,
                None => std::env::current_dir().context("the working directory")?,
            };
            tool::run(&home, &wasm, tool::Call { name, args, session, agent, cwd })
        }
        Command::Sync => sync::run(&absolute(home.unwrap_or_else(home::default_home)), &wasm, json),
        Command::ReviewerRun { id } => {
            let home = home.context("reviewer-run needs --home")?;
            crate::live::supervise::run(&home, &id, &wasm)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Config { defaults } => {
            if !defaults {
                bail!("say what to print: `self-evolve config --defaults`");
            }
            let mut plugin = Plugin::from_bytes(&wasm.bytes()?, HostConfig::default())?;
            let report = plugin.init("{}", &[])?.map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.message))?;
            let value: serde_json::Value =
                serde_json::from_str(&report.config_json).context("the plugin's config report")?;
            crate::say!("{}", self_evolve_host::text::visible_json(&serde_json::to_string_pretty(&value)?));
            Ok(ExitCode::SUCCESS)
        }
        Command::Check { dirs } => {
            // An operator's offline command, not an agent's call: the near-duplicate pass over a
            // large library may take longer than the 2 s an agent's call gets, and its memory
            // grows by tens of bytes per skill (the batches themselves stay bounded).
            let limits = self_evolve_host::Limits {
                call_deadline: std::time::Duration::from_secs(120),
                memory_bytes: 256 << 20,
            };
            let mut plugin = Plugin::from_bytes(&wasm.bytes()?, HostConfig { limits, ..HostConfig::default() })?;
            let failed = check::run(&mut plugin, &dirs, json)?;
            Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
        }
        Command::Skills { mut args } => {
            let home = home.unwrap_or_else(home::default_home);
            if json && !args.iter().take_while(|a| *a != "--").any(|a| a == "--json") {
                args.push("--json".into());
            }
            let answer = crate::operator::Operator::open(&home, project.as_deref(), &wasm)?.run(&args)?;
            if answer.ok {
                crate::say!("{}", answer.text);
                Ok(ExitCode::SUCCESS)
            } else {
                eprintln!("{}", answer.text);
                Ok(ExitCode::from(2))
            }
        }
        #[cfg(not(unix))]
        Command::Eval { .. } => bail!(self_evolve_host::caps::fs::REFUSAL),
        #[cfg(unix)]
        Command::Eval {
            suite,
            skill,
            library,
            against,
            pending,
            agent,
            repeat,
            jobs,
            timeout,
            max_runs,
            max_minutes,
            max_tokens,
            pass_env,
        } => {
            let options = crate::eval::Options {
                suite,
                home: absolute(home.unwrap_or_else(home::default_home)),
                agent,
                skill,
                library,
                against,
                pending,
                wasm,
                repeat,
                jobs: usize::try_from(jobs).unwrap_or(1),
                timeout: std::time::Duration::from_secs(timeout),
                max_runs,
                max_time: max_minutes.map(|m| std::time::Duration::from_secs(m.saturating_mul(60))),
                max_tokens,
                pass_env,
            };
            let interrupted = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let children = crate::eval::run::Children::default();
            {
                // An interrupt kills every running agent's process group; runs on record stay.
                let (interrupted, children) = (interrupted.clone(), children.clone());
                let _ = ctrlc::set_handler(move || {
                    interrupted.store(true, std::sync::atomic::Ordering::SeqCst);
                    children.kill_all();
                });
            }
            let report = crate::eval::evaluate(&options, &interrupted, &children)?;
            if json {
                crate::say!("{}", serde_json::to_string(&report)?);
            } else {
                crate::say!("{}", crate::eval::report::table(&report));
            }
            if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                eprintln!("interrupted: every running agent was stopped; the runs on record are kept");
                return Ok(ExitCode::from(130));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Ui { port, no_open } => {
            let home = absolute(home.unwrap_or_else(home::default_home));
            crate::console::run(crate::console::Options { home, project, port, open: !no_open, wasm })?;
            Ok(ExitCode::SUCCESS)
        }
        Command::GateStats { file } => {
            let reader = std::io::BufReader::with_capacity(
                1 << 20,
                std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?,
            );
            let stats = crate::gate_stats::summarize(reader)?;
            if json {
                crate::say!("{}", self_evolve_host::text::visible_json(&stats.to_json().to_string()));
            } else {
                crate::say!("{}", stats.to_text().trim_end());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay { file, gate, gate_key_env, gate_replies, start, restart_each_event } => {
            use replay;
            // A replay acts as the operator on its home, with the file's own config: inside a
            // reviewer it may only replay into a fresh home of its own.
            if let (Some(activation), Some(_)) = (identity::activation(), &home) {
                bail!(
                    "this runs inside reviewer {} (SELF_EVOLVE_ACTIVATION): a replay into an existing home acts as the \
                     operator, so it is refused here; leave out --home to replay into a fresh folder",
                    self_evolve_host::text::visible(&activation)
                );
            }
            let events = crate::events::read_events(&file)?;
            // Kept alive for the whole replay; stops when dropped.
            let server = match &gate_replies {
                Some(path) => Some(replay::serve_gate_replies(path)?),
                None => None,
            };
            let gate = gate.or_else(|| server.as_ref().map(|s| s.url()));
            let home = match home {
                Some(home) => home,
                None => {
                    let nanos =
                        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
                    std::env::temp_dir().join(format!("self-evolve-replay-{}-{nanos}", std::process::id()))
                }
            };
            std::fs::create_dir_all(&home).with_context(|| format!("creating {}", home.display()))?;
            let start_ms = match start.as_deref() {
                None => replay::EPOCH_MS,
                Some("now") => self_evolve_host::SystemClock.now_ms(),
                Some(ms) => {
                    ms.parse().with_context(|| format!("--start: expected `now` or milliseconds, found `{ms}`"))?
                }
            };
            let options = replay::Options {
                start_ms,
                home: home.clone(),
                json,
                wasm: wasm.clone(),
                gate: gate.map(|g| (g, gate_key_env)),
                restart: restart_each_event,
            };
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let summary = replay::replay(&events, &options, &mut out)?;
            drop(out);
            if !json {
                let count = |kind: &str, action: &str| {
                    summary
                        .decisions
                        .iter()
                        .filter(|d| d["kind"] == kind && (action.is_empty() || d["action"] == action))
                        .count()
                };
                let loops = summary.decisions.iter().filter(|d| d["kind"] == "review-loop");
                let verdicts = loops
                    .filter(|d| {
                        d["outcome"].as_str().is_some_and(|o| o.starts_with("review-") || o == "no-blocking-findings")
                    })
                    .count();
                crate::say!(
                    "\n{} events replayed: {} reviews started, {} skipped, {} gate decisions, {} tool calls, {} review-loop verdicts\nhome: {}",
                    summary.events,
                    count("review", "start"),
                    count("review", "skip"),
                    count("gate", ""),
                    count("tool", ""),
                    verdicts,
                    self_evolve_host::text::visible(&home.display().to_string())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
