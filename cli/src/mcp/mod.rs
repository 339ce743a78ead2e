//! `self-evolve mcp`: the governed skill library as an MCP server over stdio, for any agent that
//! loads MCP servers by a command line. One process serves one client: it loads the component,
//! inits it with the operator's config (`<home>/config.json`), and answers from it; the plugin
//! runs on its own thread (`worker`), the protocol on a one-thread tokio runtime (`server`).
//! Many such processes may share one home: the plugin's writes are safe against each other.
//! Stdout carries the protocol only; everything else goes to stderr.

pub mod http;
mod line;
mod message;
pub mod server;
pub mod tokens;
pub mod uris;
pub mod wire;
pub mod worker;

use crate::home;
use anyhow::{Context, Result, anyhow};
use rmcp::ServiceExt;
use rmcp::model::{JsonObject, Tool};
use self_evolve_host::caps::fs::{FsConfig, ProjectRoots};
use self_evolve_host::plugin::{CallContext, Origin};
use self_evolve_host::{HostConfig, Plugin};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub struct Options {
    pub home: PathBuf,
    /// The project whose `.dsh/skills` is the project scope; default: the nearest folder holding
    /// `.git` or `.dsh` above the working directory.
    pub project: Option<PathBuf>,
    /// The plugin's session id for every call; default `mcp-<pid>-<start ms>` (one stdio
    /// connection per process).
    pub session: Option<String>,
    /// Serve a live reviewer (`claude -p` started by the `command` provider): the session and
    /// the reviewer's identity come from SELF_EVOLVE_SESSION and SELF_EVOLVE_ACTIVATION, and
    /// every call is made as that subagent.
    pub as_reviewer: bool,
    pub wasm: crate::component::Source,
}

/// How often the server gives the plugin its tick (debris cleanup, the curator's daily pass).
const TICK: Duration = Duration::from_secs(60);

/// Roots of an MCP session: the home's user and state roots, and the project's skills folder,
/// confined to the project as every host does ("Hardening I").
pub fn fs_config(home: &std::path::Path, project: Option<&std::path::Path>, session: &str) -> FsConfig {
    let projects = match project {
        Some(project) => ProjectRoots {
            sessions: BTreeMap::from([(session.to_string(), project.join(".dsh/skills"))]),
            discover: false,
            ..ProjectRoots::default()
        },
        None => ProjectRoots::default(),
    };
    FsConfig {
        user_skills: Some(home::user_skills(home)),
        state: Some(home::state(home)),
        projects,
        ..FsConfig::default()
    }
}

/// The longest request line read: above the plugin's 24 MiB argument bound even when every byte
/// of the arguments is escaped in JSON, so an oversized call is answered `too-large` by the plugin;
/// a longer line is answered by `wire` (rmcp's default, 16 MiB, dropped such a line without any
/// answer).
const MAX_REQUEST_LINE: usize = 64 << 20;

/// An error of rmcp's, for the log: its text may quote what the client sent (a whole message,
/// a credential in it), so it is redacted, cut short and shown with control characters escaped.
fn rmcp_error(what: &str, err: &dyn std::fmt::Display) -> anyhow::Error {
    // Redacted before the cut (a cut through a credential leaves a piece the scanner no longer
    // knows), on a bounded head of the text.
    let head: String = err.to_string().chars().take(64 << 10).collect();
    let text = self_evolve_scan::redact_secrets(&head).unwrap_or(head);
    let cut: String = text.chars().take(160).collect();
    let more = if cut.len() < text.len() { "…" } else { "" };
    anyhow!("{what}: {}{more}", self_evolve_host::text::visible(&cut))
}

/// A server ready to serve: the plugin on its thread, inited with the operator's config, and
/// the handler over it. Both transports start here, so both have one policy path.
pub struct Started {
    pub server: server::Server,
    worker: worker::Worker,
    team: Option<crate::home::git_config::GitConfig>,
    home: PathBuf,
    wasm: crate::component::Source,
}

/// Loads the component and builds the handler for `options`.
pub fn start(options: &Options) -> Result<Started> {
    let started = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
    let cwd = match &options.project {
        Some(project) => self_evolve_host::caps::fs::roots::real_path(project),
        None => std::env::current_dir().context("the working directory")?,
    };
    // Started inside a live reviewer (its variables are set) from the user's own MCP config, the
    // server is the reviewer's too, whatever `--session` says (as `self-evolve tool` does): its
    // writes must not pass for the user's agent's, nor escape the review's audit record.
    let inside_reviewer = crate::identity::activation().is_some();
    if inside_reviewer && let Some(session) = &options.session {
        eprintln!(
            "self-evolve: inside a reviewer (SELF_EVOLVE_ACTIVATION), so this server calls as that reviewer, not as \
             session `{}`",
            self_evolve_host::text::visible(session)
        );
    }
    let reviewer = match options.as_reviewer || inside_reviewer {
        false => None,
        true => {
            let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
            let session = var("SELF_EVOLVE_SESSION").context("--as-reviewer needs SELF_EVOLVE_SESSION")?;
            let activation = crate::identity::activation().context("--as-reviewer needs SELF_EVOLVE_ACTIVATION")?;
            Some((session, activation))
        }
    };
    let session = match &reviewer {
        Some((session, _)) => session.clone(),
        None => options.session.clone().unwrap_or_else(|| format!("mcp-{}-{started}", std::process::id())),
    };
    let config_json = home::operator_config(&options.home)?;
    let team = crate::home::host_file::HostFile::load(&options.home)?.git;
    let bytes = options.wasm.bytes()?.into_owned();
    let fs = fs_config(&options.home, options.project.as_deref().map(|_| cwd.as_path()), &session);
    let worker = worker::Worker::start(move || {
        let mut plugin = Plugin::from_bytes(&bytes, HostConfig { fs, ..HostConfig::default() })?;
        plugin
            // One process per agent session for its whole life: it holds its sessions in memory
            // (`session-owner`); a hook process that needs one takes it over (`session_journal`).
            .init(&config_json, &["tools".to_string(), "session-owner".to_string()])?
            .map_err(|e| anyhow!("the operator's config, key `{}`: {}", e.key, e.message))?;
        Ok(plugin)
    })?;
    let specs = worker.call_blocking(|p| p.tools_list())??;
    let spec = specs
        .into_iter()
        .find(|t| t.name == "skill_manage")
        .ok_or_else(|| anyhow!("the component offers no `skill_manage` tool"))?;
    let schema: JsonObject =
        serde_json::from_str(&spec.parameters_schema).context("the plugin's schema for skill_manage")?;
    let tool = Tool::new(spec.name, spec.description, Arc::new(schema));
    let ctx = CallContext {
        session,
        agent: reviewer.as_ref().map_or_else(|| "main".to_string(), |(_, activation)| activation.clone()),
        origin: if reviewer.is_some() { Origin::Subagent } else { Origin::User },
        depth: u32::from(reviewer.is_some()),
        cwd: cwd.to_string_lossy().into_owned(),
    };
    let mut server = server::Server::new(worker.clone(), ctx, tool);
    if let Some(git) = team.clone() {
        let home = options.home.clone();
        server = server.after_landing(move || {
            if let Err(err) = crate::git::commit_landed(&home, &git) {
                eprintln!("self-evolve: git commit: {}", self_evolve_host::text::shown_error(&format!("{err:#}")));
            }
        });
    }
    Ok(Started { server, worker, team, home: options.home.clone(), wasm: options.wasm.clone() })
}

impl Started {
    /// The plugin's tick every minute (a curator pass, a team library's commit and periodic
    /// sync), on the current tokio runtime, for as long as the plugin thread runs.
    fn spawn_ticker(&self) {
        let ticker = self.worker.clone();
        let notifier = self.server.clone();
        let periodic =
            self.team.clone().filter(|g| g.sync_minutes > 0).map(|g| (self.home.clone(), g, self.wasm.clone()));
        let committer = self.team.clone().map(|g| (self.home.clone(), g));
        tokio::spawn(async move {
            // SELF_EVOLVE_TICK_MS shortens the minute for tests (a periodic sync seen in seconds).
            let tick = std::env::var("SELF_EVOLVE_TICK_MS")
                .ok()
                .and_then(|ms| ms.parse().ok())
                .filter(|ms: &u64| *ms >= 10)
                .map_or(TICK, Duration::from_millis);
            let mut interval = tokio::time::interval(tick);
            interval.tick().await; // the first tick is immediate; init already cleaned up
            let mut minutes = 0u64;
            loop {
                interval.tick().await;
                if ticker.call(|p| p.tick()).await.is_err() {
                    return;
                }
                // A curator pass may have moved skills: a team library commits them.
                if let Some((home, git)) = committer.clone() {
                    let _ = tokio::task::spawn_blocking(move || crate::git::commit_landed(&home, &git)).await;
                }
                minutes += 1;
                // A team library syncs on its own every `git.syncMinutes` (off the protocol's thread).
                if let Some((home, git, wasm)) = &periodic
                    && minutes.is_multiple_of(git.sync_minutes)
                {
                    let (home, git, wasm) = (home.clone(), git.clone(), wasm.clone());
                    // Its own plugin instances, on a blocking thread: tool calls go on meanwhile.
                    let outcome =
                        tokio::task::spawn_blocking(move || crate::team::sync::sync(&home, &git, &wasm)).await;
                    match outcome {
                        Ok(Ok(report)) if report.offline.is_some() => {
                            eprintln!("self-evolve: sync: the remote is unreachable")
                        }
                        Ok(Ok(_)) => notifier.changed(),
                        Ok(Err(err)) => {
                            eprintln!("self-evolve: sync: {}", self_evolve_host::text::shown_error(&format!("{err:#}")))
                        }
                        Err(_) => return,
                    }
                }
            }
        });
    }

    /// Hands the sessions held in memory back to the home (each folded into a generation, its
    /// journal removed), so the next process to need one reads a file, not a journal.
    async fn hand_back(&self) {
        let _ = self.worker.call(|p| p.hand_back()).await;
    }
}

/// Serves until the client closes stdin.
pub fn run(options: Options) -> Result<()> {
    let started = start(&options)?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async move {
        started.spawn_ticker();
        let wired = wire::wire(tokio::io::stdin(), tokio::io::stdout(), MAX_REQUEST_LINE);
        let server = wired.watched(started.server.clone());
        let service = match server.serve(wired.transport).await {
            Ok(service) => service,
            // A client on 2026-07-28 may send only `server/discover` (or requests refused for
            // their `_meta`) and close: no lifecycle was chosen, every request was answered.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                started.hand_back().await;
                let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wired.written).await;
                return Ok(());
            }
            Err(e) => return Err(rmcp_error("MCP initialisation failed", &e)),
        };
        let ended = service.waiting().await.map_err(|e| rmcp_error("the MCP session ended with an error", &e));
        started.hand_back().await;
        ended?;
        // The last answers are written before the process ends.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), wired.written).await;
        Ok(())
    })
}
