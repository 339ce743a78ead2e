//! The command line the `self-evolve` binary accepts (clap): the global options, one variant per
//! subcommand with its `--help` and example, and the two rules that make global options work
//! anywhere: taking them out of `skills`' words, and refusing one a subcommand has no use for.

use anyhow::{Result, bail};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "self-evolve", version, about = "Operate the self-evolve skill-library plugin")]
pub struct Cli {
    /// The component to load (default: the one embedded in this binary at build time, else
    /// dist/self-evolve.wasm in the current folder).
    #[arg(long, global = true, env = "SELF_EVOLVE_WASM")]
    pub wasm: Option<PathBuf>,
    /// The home holding skills/, self-evolve/, config.json and host.json (default
    /// $SELF_EVOLVE_HOME or ~/.dsh; for `replay`, a fresh temporary folder). Accepted before or
    /// after the subcommand, and anywhere among `skills`' words.
    #[arg(long, global = true)]
    pub home: Option<PathBuf>,
    /// Answer in JSON (one object per line, or one document) instead of text, for programs.
    /// Accepted before or after the subcommand.
    #[arg(long, global = true)]
    pub json: bool,
    /// The project whose `.dsh/skills` is the project scope (default: the nearest folder holding
    /// .git or .dsh above the working directory). Accepted before or after the subcommand. For
    /// `setup`, the project whose files get the entries (`--project` alone: the current folder).
    #[arg(long, global = true, num_args = 0..=1, default_missing_value = ".")]
    pub project: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
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
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp (2025-11-25 sessions and 2026-07-28
    /// stateless requests), for remote clients and a team sharing one library. Loopback by
    /// default; any other address needs a token per person (`serve token add NAME`).
    #[command(after_help = r#"Examples:
  self-evolve serve                                  (http://127.0.0.1:8765/mcp)
  self-evolve serve token add alice                  (prints alice's token once)
  self-evolve serve --bind 0.0.0.0:8765 --allow-host skills.example.internal"#)]
    Serve {
        #[command(subcommand)]
        token: Option<ServeCommand>,
        /// The address to listen on (port 0: any free port; the URL is printed on stdout).
        #[arg(long, default_value = "127.0.0.1:8765")]
        bind: std::net::SocketAddr,
        /// A name clients reach this server by, besides 127.0.0.1, localhost and [::1] (checked
        /// against each request's Host and Origin). Repeatable.
        #[arg(long = "allow-host")]
        allow_hosts: Vec<String>,
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
        /// Whose hook event is on stdin: claude (the default), codex, gemini, cursor or hermes.
        #[arg(long, conflicts_with = "codex", value_parser = ["claude", "codex", "gemini", "cursor", "hermes"])]
        harness: Option<String>,
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
    /// Put self-evolve into an agent harness: its MCP server entry and hook handlers, merged into
    /// the harness's own config files (keys, comments and order kept; the old file backed up;
    /// the diff printed), plus the home and a host.json whose reviewer fits the harness.
    /// A second run changes nothing; --remove takes out exactly what setup put in.
    #[command(after_help = r#"Harnesses: claude, codex, gemini, cursor, hermes.
Examples:
  self-evolve setup claude                 (~/.claude.json and ~/.claude/settings.json)
  self-evolve setup codex --project        (.codex/ in the current folder)
  self-evolve setup gemini --dry-run       (print the diff, write nothing)
  self-evolve setup cursor --remove"#)]
    Setup {
        harness: String,
        /// The user's own config (the default), for every project.
        #[arg(long, conflicts_with = "project")]
        user: bool,
        /// Print what would change; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Take out what setup put in (the home is kept).
        #[arg(long)]
        remove: bool,
        /// Only the home and its host.json (reviewer), no entry in the harness's files: for a
        /// plugin or extension install, which brings the server and hooks itself.
        #[arg(long, conflicts_with_all = ["remove", "project"])]
        home_only: bool,
    },
    /// Serve the operator console, a local web page over the home: pending writes with their
    /// diffs (approve, reject), skills and their history (revert, pin, archive), reviews, the
    /// gate's charts and the curator. Bound to loopback only; the printed link carries a one-time
    /// token. Serves until Ctrl-C.
    #[command(after_help = r#"Examples:
  self-evolve ui                       (opens the page in a browser)
  self-evolve ui --no-open --port 8765 (prints the link only)"#)]
    Ui {
        /// The port on 127.0.0.1 and [::1] (default 0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Print the link; do not start a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Does a skill help? Runs every task of a suite in two arms that differ only in the library
    /// the agent sees (with and without a skill, or the whole library against none), each run in
    /// a fresh copy of the task's folder, and compares the arms pair by pair. Results are kept as
    /// they come: run the same command again to resume. docs/eval.md has the suite's format.
    #[command(after_help = r#"Examples:
  self-evolve eval suite.yaml --skill pdf-tables --agent 'claude -p {prompt}' --repeat 5
  self-evolve eval suite.jsonl --library --agent 'codex exec {prompt}' --jobs 2 --json
  self-evolve eval suite.yaml --against pdf-tables@3 --agent 'claude -p {prompt}'
  self-evolve eval suite.yaml --pending latest --agent 'claude -p --output-format json {prompt}' --max-tokens 2000000"#)]
    Eval {
        suite: PathBuf,
        /// Arms: with and without this skill of the user's library.
        #[arg(long, conflicts_with = "library")]
        skill: Option<String>,
        /// Arms: the whole library against none.
        #[arg(long, conflicts_with = "against")]
        library: bool,
        /// Arms: a skill now against its text before version V (NAME@V; `skills log NAME`).
        #[arg(long, conflicts_with = "skill")]
        against: Option<String>,
        /// Arms: a staged write of a skill's SKILL.md (its id in `skills pending`, or `latest`)
        /// against the library as it is; the result is shown with the write's diff.
        #[arg(long, conflicts_with_all = ["skill", "library", "against"])]
        pending: Option<String>,
        /// The agent command; `{prompt}` becomes the task's prompt (one argument), `{task}` its
        /// id. No shell. Default: the suite's `agent:`.
        #[arg(long)]
        agent: Option<String>,
        /// Runs per task and arm.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
        repeat: u32,
        /// Runs at once.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=64))]
        jobs: u64,
        /// Seconds a run's agent (and then its check) may take; past it its process group is killed.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
        /// Start at most this many new runs.
        #[arg(long)]
        max_runs: Option<u64>,
        /// Start no new run after this many minutes.
        #[arg(long)]
        max_minutes: Option<u64>,
        /// Start no new run once the runs of this invocation reported this many tokens (input
        /// and output, as the agent prints them: docs/eval.md).
        #[arg(long)]
        max_tokens: Option<u64>,
        /// An environment variable the agent gets (besides PATH, HOME, LANG, TERM and
        /// SELF_EVOLVE_HOME); repeat for more. Nothing else of this environment is passed.
        #[arg(long = "env", value_name = "NAME")]
        pass_env: Vec<String>,
    },
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

/// clap's parse. Its messages quote the command line (an unknown word, a bad value): when an
/// argument holds a character `visible` would escape, the message is rendered without styles and
/// printed through `visible`; otherwise clap prints it as it does (in colour on a terminal).
pub fn parse(args: Vec<std::ffi::OsString>) -> std::result::Result<Cli, ExitCode> {
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
pub fn take_globals(cli: &mut Cli) -> Result<()> {
    let Command::Skills { args } = &mut cli.command else { return Ok(()) };
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--" {
            // The escape: what follows goes to the plugin as it is, and the `--` with it not.
            args.remove(i);
            break;
        }
        let (name, value) = match args[i].split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.to_string())),
            None => (args[i].clone(), None),
        };
        let (slot, what) = match name.as_str() {
            "--home" => (&mut cli.home, "a folder: `self-evolve skills list --home ~/.dsh`"),
            "--wasm" => (&mut cli.wasm, "a component file: `self-evolve skills list --wasm dist/self-evolve.wasm`"),
            "--project" => (&mut cli.project, "a folder: `self-evolve skills list --project .`"),
            _ => {
                i += 1;
                continue;
            }
        };
        let value = match value {
            Some(value) => value,
            None => {
                anyhow::ensure!(i + 1 < args.len(), "{name} needs {what}");
                args.remove(i + 1)
            }
        };
        anyhow::ensure!(!value.is_empty(), "{name} needs {what}");
        *slot = Some(PathBuf::from(value));
        args.remove(i);
    }
    Ok(())
}

/// Refuses a global option the subcommand has no use for, instead of ignoring it silently.
pub fn applies(cli: &Cli) -> Result<()> {
    let name = match &cli.command {
        Command::Inspect { .. } => "inspect",
        Command::Check { .. } => "check",
        Command::Skills { .. } => "skills",
        Command::GateStats { .. } => "gate-stats",
        Command::Replay { .. } => "replay",
        Command::Eval { .. } => "eval",
        Command::Mcp { .. } => "mcp",
        Command::Serve { .. } => "serve",
        Command::Hook { .. } => "hook",
        Command::Event { .. } => "event",
        Command::Tool { .. } => "tool",
        Command::Sync => "sync",
        Command::ReviewerRun { .. } => "reviewer-run",
        Command::Config { .. } => "config",
        Command::Setup { .. } => "setup",
        Command::Ui { .. } => "ui",
    };
    // `event`, `tool` and `config` answer in JSON already; `--json` changes nothing there.
    let takes_json = !matches!(name, "inspect" | "mcp" | "serve" | "hook" | "reviewer-run" | "ui");
    // The project scope is a folder's `.dsh/skills` exactly; `tool` and `event` find theirs from
    // the session's working folder (`--cwd`), as a harness's calls do.
    let takes_project = matches!(name, "inspect" | "skills" | "mcp" | "setup" | "ui");
    // These read only the files named on their command line.
    let takes_home = !matches!(name, "check" | "gate-stats" | "config");
    if cli.json && !takes_json {
        bail!("--json does not apply to `self-evolve {name}` (see `self-evolve {name} --help`)");
    }
    if cli.project.is_some() && !takes_project {
        let instead =
            if matches!(name, "tool" | "event") { "; give the session's working folder with --cwd" } else { "" };
        bail!(
            "--project does not apply to `self-evolve {name}` (it applies to inspect, skills, mcp, setup and ui){instead}"
        );
    }
    if cli.home.is_some() && !takes_home {
        bail!("--home does not apply to `self-evolve {name}`: it reads only the files named on its command line");
    }
    Ok(())
}

/// `self-evolve serve token …`: who may use the HTTP server.
#[derive(Subcommand)]
pub enum ServeCommand {
    /// Tokens: `add NAME` (printed once, kept hashed in host.json), `remove NAME`, `list`.
    Token {
        #[command(subcommand)]
        action: TokenAction,
    },
}

#[derive(Subcommand)]
pub enum TokenAction {
    /// Make a token for NAME and print it (only its SHA-256 is kept).
    Add { name: String },
    /// Revoke NAME's token; a running server refuses it from the next request on.
    Remove { name: String },
    /// The people with a token.
    List,
}
