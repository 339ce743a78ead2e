//! The `self-evolve` CLI, a front door: argument parsing and one function per subcommand over the
//! real component. The binary (`src/main.rs`) only calls `cli::main`; the longer subcommands have
//! files here. May use every floor below (services, the home); the other front doors (`mcp/`,
//! `hook/`) it only starts.

pub mod gate_stats;
mod inspect;
mod narrate;
pub mod replay;
mod tool;

use crate::{check, home, identity};
use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use self_evolve_host::{Clock, HostConfig, Plugin};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "self-evolve", version, about = "Operate the self-evolve skill-library plugin")]
struct Cli {
    /// The component to load (default: the one embedded in this binary at build time, else
    /// dist/self-evolve.wasm in the current folder).
    #[arg(long, global = true, env = "SELF_EVOLVE_WASM")]
    wasm: Option<PathBuf>,
    /// The home holding skills/, self-evolve/, config.json and host.json (default
    /// $SELF_EVOLVE_HOME or ~/.dsh; for `replay`, a fresh temporary folder). Accepted before or
    /// after the subcommand, and anywhere among `skills`' words.
    #[arg(long, global = true)]
    home: Option<PathBuf>,
    /// Answer in JSON (one object per line, or one document) instead of text, for programs.
    /// Accepted before or after the subcommand.
    #[arg(long, global = true)]
    json: bool,
    /// The project whose `.dsh/skills` is the project scope (default: the nearest folder holding
    /// .git or .dsh above the working directory). Accepted before or after the subcommand.
    #[arg(long, global = true)]
    project: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the component's capability manifest (imports), exports and size, and the home's
    /// roots resolved as the host confines to them.
    #[command(after_help = r#"Example:
  self-evolve inspect --init --home ~/.dsh"#)]
    Inspect {
        /// Also initialise it with the default config and print the activation report.
        #[arg(long)]
        init: bool,
    },
    /// Check skill folders with the plugin's parser, validator, scanner and dedupe.
    /// Exits 1 on errors (format violations, credentials); warnings and advice leave it 0.
    #[command(after_help = r#"Examples:
  self-evolve check ~/.dsh/skills
  self-evolve check ./my-skill --json"#)]
    Check {
        /// One skill (a folder holding SKILL.md) or a folder of skills.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
    /// The /skills command against a home folder: list, show, pending, diff, approve, reject,
    /// review, approval, … (`self-evolve skills help` lists them).
    #[command(after_help = r#"Examples:
  self-evolve skills list --home ~/.dsh
  self-evolve skills pending --json
  self-evolve skills approve latest
  self-evolve skills help"#)]
    Skills {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Summarise a gates.jsonl log: decision split, fallback reasons, `no`-confidence and
    /// latency percentiles, and what each confidentNo from 0.50 to 1.00 would have skipped.
    #[command(after_help = r#"Example:
  self-evolve gate-stats ~/.dsh/self-evolve/gates.jsonl --json"#)]
    GateStats { file: PathBuf },
    /// Drive a recorded session (JSONL, see DESIGN.md) through the plugin with a manual clock
    /// and a scripted reviewer; print a narrated timeline, or every decision as JSON (--json).
    /// It replays into --home, by default a fresh temporary folder (printed at the end).
    #[command(after_help = r#"Example:
  self-evolve replay examples/session.jsonl --home ./demo --gate-replies examples/gate-replies.json"#)]
    Replay {
        file: PathBuf,
        /// URL of the `gate` endpoint (for review.gate = jev).
        #[arg(long)]
        gate: Option<String>,
        /// Environment variable holding the gate's credential.
        #[arg(long, requires = "gate")]
        gate_key_env: Option<String>,
        /// Serve the `gate` endpoint on 127.0.0.1 from a JSON list of replies, one per request:
        /// {"status": 200, "body": {...}}, {"status": 429}, {"reset": true}, {"delayMs": N, …}.
        #[arg(long, conflicts_with = "gate")]
        gate_replies: Option<PathBuf>,
        /// Wall-clock time of t = 0: `now`, or milliseconds since the Unix epoch
        /// (default 1767225600000, 2026-01-01T00:00:00Z, for reproducible output).
        #[arg(long)]
        start: Option<String>,
        /// Start a fresh plugin instance before every event, as a process per event would
        /// (hooks); the decisions must not change.
        #[arg(long)]
        restart_each_event: bool,
    },
    /// Serve the skill library as an MCP server over stdio: the `skill_manage` tool (every write
    /// guarded) and the skills through the MCP Skills Extension. Add it to an agent as a command.
    #[command(after_help = r#"Example (Claude Code):
  claude mcp add self-evolve -- self-evolve mcp --home ~/.dsh"#)]
    Mcp {
        /// The session id the plugin sees (default: one per server process; inside a live
        /// reviewer, SELF_EVOLVE_ACTIVATION set, the reviewer's whatever this says).
        #[arg(long)]
        session: Option<String>,
        /// Serve a live reviewer: session and identity from SELF_EVOLVE_SESSION and
        /// SELF_EVOLVE_ACTIVATION (set by the `command` reviewer provider); calls are a subagent's.
        #[arg(long, conflicts_with = "session")]
        as_reviewer: bool,
    },
    /// Handle one Claude Code hook event (JSON on stdin): a prompt, a tool result, a turn's end.
    /// Prints nothing unless `hook.systemMessage` is set in host.json; always exits 0.
    #[command(after_help = r#"Examples:
  self-evolve hook --home ~/.dsh            (a Claude Code hook command)
  notify = ["self-evolve", "hook", "--codex"]  (Codex's config.toml)"#)]
    Hook {
        /// Codex's `notify` program: the payload is the last argument, not stdin
        /// (`notify = ["self-evolve", "hook", "--codex"]`).
        #[arg(long)]
        codex: bool,
        /// The Codex notification (with --codex).
        #[arg(requires = "codex")]
        payload: Option<String>,
    },
    /// Handle events in the replay line format (one JSON object per line on stdin), on the system
    /// clock; prints each decision as a JSON line. For harnesses that are not Claude Code.
    #[command(after_help = r#"Example:
  echo '{"type":"user","t":0,"session":"s1","text":"hi"}' | self-evolve event --home ./demo"#)]
    Event {
        /// The session's working folder (its project); default the current folder.
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Perform one tool call (e.g. `skill_manage '{"action":"view","name":"pdf"}'`) in a session,
    /// through every guard; prints the tool's JSON answer (exit 1 when it refused). A reviewer
    /// started by the `command` provider finds its session and identity in SELF_EVOLVE_* variables.
    #[command(after_help = r#"Example:
  self-evolve tool skill_manage '{"action":"view","name":"deploy-staging"}' --session s1"#)]
    Tool {
        name: String,
        /// The arguments object, as JSON.
        args: String,
        #[arg(long, env = "SELF_EVOLVE_SESSION")]
        session: String,
        /// The calling agent (default `main`, or the reviewer's activation id).
        #[arg(long, env = "SELF_EVOLVE_AGENT")]
        agent: Option<String>,
        /// The working folder (default SELF_EVOLVE_CWD, else the current folder).
        #[arg(long, env = "SELF_EVOLVE_CWD")]
        cwd: Option<PathBuf>,
    },
    /// Share the user skills folder with a team over git (host.json `git`): commit what landed,
    /// fetch, replay local commits onto the remote branch, scan every outgoing file for
    /// credentials, push. A skill changed on both sides lands as the remote has it, this
    /// machine's version staged against it. Exit 1 when a credential stops the push.
    #[command(after_help = r#"Example:
  self-evolve sync --home ~/.dsh --json"#)]
    Sync,
    /// Runs one live reviewer to completion (started detached by the reviewer provider).
    #[command(hide = true)]
    ReviewerRun {
        #[arg(long)]
        id: String,
    },
    /// Print configuration.
    #[command(after_help = r#"Example:
  self-evolve config --defaults"#)]
    Config {
        /// Print the full configuration with every default, as the plugin resolves it.
        #[arg(long)]
        defaults: bool,
    },
}

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

/// clap's parse. Its messages quote the command line (an unknown word, a bad value): when an
/// argument holds a character `visible` would escape, the message is rendered without styles and
/// printed through `visible`; otherwise clap prints it as it does (in colour on a terminal).
fn parse(args: Vec<std::ffi::OsString>) -> std::result::Result<Cli, ExitCode> {
    use clap::{CommandFactory, FromArgMatches};
    let hostile = args.iter().any(|a| {
        let a = a.to_string_lossy();
        self_evolve_host::text::visible(&a) != a
    });
    let mut command = Cli::command();
    if hostile {
        command = command.styles(clap::builder::Styles::plain());
    }
    let err = match command.try_get_matches_from(args).and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => return Ok(cli),
        Err(err) if !hostile => err.exit(),
        Err(err) => err,
    };
    let shown = self_evolve_host::text::visible_lines(&err.render().ansi().to_string());
    if err.use_stderr() {
        eprint!("{shown}");
    } else {
        crate::say!("{}", shown.trim_end_matches('\n'));
    }
    Err(ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2)))
}

/// `skills`' words go to the plugin as they are, so clap cannot see a global option among them
/// (`self-evolve skills list --home X`): `--home`, `--wasm` and `--project` (or `--opt=X`) are
/// taken out here, the last one winning, up to a `--`; `--json` stays, the plugin reads it.
fn take_globals(cli: &mut Cli) -> Result<()> {
    let Command::Skills { args } = &mut cli.command else { return Ok(()) };
    let mut i = 0;
    while i < args.len() && args[i] != "--" {
        let (name, value) = match args[i].split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (args[i].clone(), None),
        };
        let slot = match name.as_str() {
            "--home" => &mut cli.home,
            "--wasm" => &mut cli.wasm,
            "--project" => &mut cli.project,
            _ => {
                i += 1;
                continue;
            }
        };
        let value = match value {
            Some(value) => value,
            None => {
                anyhow::ensure!(
                    i + 1 < args.len(),
                    "{name} needs a folder or file: `self-evolve skills list {name} PATH`"
                );
                args.remove(i + 1)
            }
        };
        *slot = Some(PathBuf::from(value));
        args.remove(i);
    }
    Ok(())
}

/// Refuses a global option the subcommand has no use for, instead of ignoring it silently.
fn applies(cli: &Cli) -> Result<()> {
    let name = match &cli.command {
        Command::Inspect { .. } => "inspect",
        Command::Check { .. } => "check",
        Command::Skills { .. } => "skills",
        Command::GateStats { .. } => "gate-stats",
        Command::Replay { .. } => "replay",
        Command::Mcp { .. } => "mcp",
        Command::Hook { .. } => "hook",
        Command::Event { .. } => "event",
        Command::Tool { .. } => "tool",
        Command::Sync => "sync",
        Command::ReviewerRun { .. } => "reviewer-run",
        Command::Config { .. } => "config",
    };
    // `event`, `tool` and `config` answer in JSON already; `--json` changes nothing there.
    let takes_json = !matches!(name, "inspect" | "mcp" | "hook" | "reviewer-run");
    let takes_project = matches!(name, "inspect" | "skills" | "mcp" | "event" | "tool");
    if cli.json && !takes_json {
        bail!("--json does not apply to `self-evolve {name}` (see `self-evolve {name} --help`)");
    }
    if cli.project.is_some() && !takes_project {
        bail!("--project does not apply to `self-evolve {name}` (it applies to inspect, skills, mcp, event and tool)");
    }
    Ok(())
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
        Command::Hook { codex, payload } => {
            let payload = if codex { Some(payload.unwrap_or_default()) } else { None };
            crate::hook::main(&absolute(home.unwrap_or_else(home::default_home)), &wasm, payload);
            Ok(ExitCode::SUCCESS)
        }
        Command::Event { cwd } => {
            let home = absolute(home.unwrap_or_else(home::default_home));
            let cwd = match cwd.or(project) {
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
            let cwd = match cwd.or(project) {
                Some(cwd) => cwd,
                None => std::env::current_dir().context("the working directory")?,
            };
            tool::run(&home, &wasm, tool::Call { name, args, session, agent, cwd })
        }
        Command::Sync => {
            let home = absolute(home.unwrap_or_else(home::default_home));
            let host_file = crate::home::host_file::HostFile::load(&home)?;
            let git = host_file.git.with_context(|| {
                format!(
                    "{} has no `git` block: see the README, \"Share a library with your team\"",
                    home.join("host.json").display()
                )
            })?;
            let report = crate::team::sync::sync(&home, &git, &wasm)?;
            if json {
                crate::say!("{}", self_evolve_host::text::visible_json(&serde_json::to_string(&report)?));
            } else {
                // File and skill names come from a repository teammates write: shown, not obeyed.
                let shown = |text: &str| self_evolve_host::text::visible(text).into_owned();
                for line in &report.committed {
                    crate::say!("committed  {}", shown(line));
                }
                match &report.offline {
                    Some(why) => {
                        crate::say!("offline    {}; local work is kept and goes out on the next sync", shown(why))
                    }
                    None => {
                        crate::say!("pulled     {} commit(s)\npushed     {} commit(s)", report.pulled, report.pushed)
                    }
                }
                for c in &report.conflicts {
                    match (&c.staged, &c.kept) {
                        (Some(id), _) => crate::say!(
                            "conflict   {} (the merged version is on disk; your edits git could not merge are staged as {id}: `self-evolve skills diff {id}`{})",
                            shown(&c.file),
                            c.kept
                                .as_deref()
                                .map(|k| format!("; your whole version is kept at {}", shown(k)))
                                .unwrap_or_default()
                        ),
                        (None, Some(kept)) => crate::say!(
                            "conflict   {} (the merged version is on disk; yours is kept at {}: {})",
                            shown(&c.file),
                            shown(kept),
                            shown(c.why.as_deref().unwrap_or(""))
                        ),
                        // Kept before the replay, so this is only a version that was removed here.
                        (None, None) => crate::say!(
                            "conflict   {} (the merged version is on disk; yours removed it: {})",
                            shown(&c.file),
                            shown(c.why.as_deref().unwrap_or(""))
                        ),
                    }
                }
                for d in &report.duplicates {
                    crate::say!("duplicate  {}", shown(d));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
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
            let config = HostConfig { fs: home::fs_config(&home, project.as_deref()), ..HostConfig::default() };
            let mut plugin = Plugin::from_bytes(&wasm.bytes()?, config)?;
            // The CLI runs no agents: `review now` says so instead of starting a child nobody runs.
            let services: Vec<String> = vec!["commands".to_string()];
            let config_json = home::operator_config(&home)?;
            plugin.init(&config_json, &services)?.map_err(|e| anyhow::anyhow!("{}: {}", e.key, e.message))?;
            // Inside a reviewer the line is the reviewer's, and the plugin refuses it anything
            // that changes the library.
            let ctx = identity::command_context("cli");
            // The plugin already shows hidden characters in text answers; the host does too, in
            // case a plugin does not. A `--json` answer is for programs: the same value, with
            // what a terminal would obey written as JSON escapes.
            let json = args.iter().any(|a| a == "--json");
            let shown = |text: String| {
                if json {
                    self_evolve_host::text::visible_json(&text).into_owned()
                } else {
                    self_evolve_host::text::visible_lines(&text)
                }
            };
            let answer = plugin.command(&ctx, &args.join(" "))?;
            // A team library: an approval, revert or archive becomes a commit.
            if let Some(git) = crate::home::host_file::HostFile::load(&home).ok().and_then(|f| f.git)
                && let Err(err) = crate::git::commit_landed(&home, &git)
            {
                eprintln!("self-evolve: git commit: {}", self_evolve_host::text::shown_error(&format!("{err:#}")));
            }
            match answer {
                Ok(text) => {
                    crate::say!("{}", shown(text));
                    Ok(ExitCode::SUCCESS)
                }
                Err(text) => {
                    eprintln!("{}", shown(text));
                    Ok(ExitCode::from(2))
                }
            }
        }
        Command::GateStats { file } => {
            let reader = std::io::BufReader::with_capacity(
                1 << 20,
                std::fs::File::open(&file).with_context(|| format!("opening {}", file.display()))?,
            );
            let stats = gate_stats::summarize(reader)?;
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
