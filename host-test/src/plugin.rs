//! `Plugin`: the component loaded, instantiated and guarded, with one method per export.
//! Build it with `Plugin::load(path, HostConfig)`; every call returns `CallError` on a trap.

use crate::bindings::{self, review_loop, types};
use crate::caps::clock::{Clock, SystemClock};
use crate::caps::fs::{FsCap, FsConfig, FsFaults};
use crate::caps::http::{HttpCap, HttpConfig};
use crate::caps::log::LogSink;
use crate::caps::subagent::{ScriptedProvider, SubagentProvider};
use crate::engine::{self, CacheOutcome};
use crate::sandbox::{CallError, Limits, Sandbox};
use crate::state::{HostState, MemoryLimiter};
use anyhow::{Context, Result, anyhow};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wasmtime::component::Linker;

pub use bindings::catalog::{Page as CatalogPage, ServedFile, ServedSkill};
pub use bindings::checker::{FileInput, Finding, Severity, SkillInput};
pub use bindings::events::{ActivationResult, ActivationStatus, ToolEvent, TurnStatus};
pub use bindings::lifecycle::{ConfigError, InitReport, Part, PartState};
pub use bindings::tools::ToolSpec;
pub use bindings::types::{CallContext, Origin};

/// Everything the host grants one plugin instance, and the guards around it.
pub struct HostConfig {
    pub limits: Limits,
    /// Where compiled code is cached; `None` compiles on every load.
    pub cache_dir: Option<PathBuf>,
    pub fs: FsConfig,
    pub fs_faults: FsFaults,
    pub http: HttpConfig,
    pub subagents: Box<dyn SubagentProvider>,
    pub clock: Arc<dyn Clock>,
    pub log: LogSink,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            limits: Limits::default(),
            cache_dir: engine::default_cache_dir(),
            fs: FsConfig::default(),
            fs_faults: FsFaults::default(),
            http: HttpConfig::default(),
            subagents: Box::new(ScriptedProvider::default()),
            clock: Arc::new(SystemClock),
            log: LogSink::default(),
        }
    }
}

impl HostConfig {
    /// The capabilities as one store payload, the guards, and the cache folder.
    pub fn into_state(self) -> (HostState, Limits, Option<PathBuf>) {
        let state = HostState {
            fs: FsCap::new(self.fs, self.fs_faults),
            http: HttpCap::new(self.http),
            subagents: self.subagents,
            clock: self.clock,
            log: self.log,
            limiter: MemoryLimiter { limit_bytes: self.limits.memory_bytes, max_table_elements: 100_000, hit: false },
            host_wait: std::time::Duration::ZERO,
        };
        (state, self.limits, self.cache_dir)
    }
}

/// How the component got here, for `inspect` and benchmarks.
#[derive(Debug, Clone, Copy)]
pub struct LoadInfo {
    pub wasm_bytes: usize,
    pub cache: CacheOutcome,
}

pub struct Plugin {
    sandbox: Sandbox<bindings::Plugin>,
    /// The last successful init, replayed into a replacement instance.
    last_init: Option<(String, Vec<String>)>,
    pub load_info: LoadInfo,
}

/// A linker holding every import of the world, over `HostState`.
pub fn linker(engine: &wasmtime::Engine) -> Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    bindings::Plugin::add_to_linker::<_, wasmtime::component::HasSelf<_>>(&mut linker, |state| state)
        .map_err(|e| anyhow!("{e:#}"))?;
    Ok(linker)
}

impl Plugin {
    pub fn load(path: impl AsRef<Path>, config: HostConfig) -> Result<Plugin> {
        let path = path.as_ref();
        let wasm = std::fs::read(path)
            .with_context(|| format!("reading {} (run ./build.sh to produce it)", path.display()))?;
        Plugin::from_bytes(&wasm, config)
    }

    pub fn from_bytes(wasm: &[u8], config: HostConfig) -> Result<Plugin> {
        #[cfg(not(unix))]
        if config.fs.names_a_root() {
            return Err(anyhow!(crate::caps::fs::REFUSAL));
        }
        let engine = engine::engine()?;
        let (state, limits, cache_dir) = config.into_state();
        let (component, cache) = engine::load_component(engine, wasm, cache_dir.as_deref())?;
        let pre = linker(engine)?
            .instantiate_pre(&component)
            .map_err(|e| anyhow!("{e:#}"))
            .context("the component's imports do not match what this host provides")?;
        let pre = bindings::PluginPre::new(pre).map_err(|e| anyhow!("{e:#}"))?;
        let sandbox = Sandbox::new(engine, state, limits, move |store| pre.instantiate(store))?;
        Ok(Plugin { sandbox, last_init: None, load_info: LoadInfo { wasm_bytes: wasm.len(), cache } })
    }

    pub fn state(&self) -> Option<&HostState> {
        self.sandbox.state()
    }

    pub fn state_mut(&mut self) -> Option<&mut HostState> {
        self.sandbox.state_mut()
    }

    /// Replaces the instance with a fresh one over the same host (fs, clock, providers) and gives
    /// it the last good configuration: what a new process per event sees. Used by the
    /// restart-between-events conformance mode.
    pub fn restart(&mut self) -> Result<(), CallError> {
        // As a process that ends cleanly: the sessions it held go back to the state root first
        // (a broken instance cannot, and its journals are folded by the next process to need them).
        if self.last_init.is_some() {
            let _ = self.hand_back();
        }
        self.sandbox.restart()?;
        if let Some((config, services)) = self.last_init.clone() {
            self.sandbox
                .call("lifecycle.init", |b, s| b.self_evolve_plugin_lifecycle().call_init(s, &config, &services))?
                .map_err(|e| CallError::Unavailable { message: format!("re-init after restart: {}", e.message) })?;
        }
        Ok(())
    }

    /// How many times a failed instance was replaced.
    pub fn replacements(&self) -> u64 {
        self.sandbox.replacements
    }

    fn guarded<R>(
        &mut self,
        export: &str,
        f: impl FnOnce(&bindings::Plugin, &mut wasmtime::Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let result = self.sandbox.call(export, f);
        if let Err(err) = &result {
            if let Some(state) = self.sandbox.state() {
                state.log.log(crate::caps::log::Level::Error, &err.to_string());
            }
            // The replacement instance starts blank: give it the last good configuration.
            if let Some((config, services)) = self.last_init.clone() {
                let _ = self
                    .sandbox
                    .call("lifecycle.init", |b, s| b.self_evolve_plugin_lifecycle().call_init(s, &config, &services));
            }
        }
        result
    }

    fn note(&mut self, ctx: &CallContext) {
        if let Some(state) = self.sandbox.state_mut() {
            state.fs.note_session(&ctx.session, &ctx.cwd);
        }
    }

    pub fn init(
        &mut self,
        config_json: &str,
        services: &[String],
    ) -> Result<Result<InitReport, ConfigError>, CallError> {
        let services_vec = services.to_vec();
        let result = self.guarded("lifecycle.init", |b, s| {
            b.self_evolve_plugin_lifecycle().call_init(s, config_json, &services_vec)
        })?;
        if result.is_ok() {
            self.last_init = Some((config_json.to_string(), services.to_vec()));
        }
        Ok(result)
    }

    pub fn tools_list(&mut self) -> Result<Vec<ToolSpec>, CallError> {
        self.guarded("tools.list", |b, s| b.self_evolve_plugin_tools().call_list(s))
    }

    pub fn tools_call(
        &mut self,
        ctx: &CallContext,
        name: &str,
        args_json: &str,
    ) -> Result<Result<String, String>, CallError> {
        // Bounded before it enters the instance: copying it in would cost the instance's memory.
        if args_json.len() > MAX_ARGS_BYTES {
            return Ok(Err(too_large_arguments(args_json.len())));
        }
        self.note(ctx);
        self.guarded("tools.call", |b, s| b.self_evolve_plugin_tools().call_call(s, ctx, name, args_json))
    }

    // Event texts are observations, never refused: longer ones are clipped before they enter the
    // instance (the plugin keeps a few hundred characters of each; copying 40 MB in would cost
    // the instance's memory).
    pub fn user_message(&mut self, ctx: &CallContext, text: &str, human: bool) -> Result<Vec<String>, CallError> {
        self.note(ctx);
        let text = clip_event_text(text);
        self.guarded("events.user-message", |b, s| b.self_evolve_plugin_events().call_user_message(s, ctx, text, human))
    }

    pub fn assistant_message(&mut self, ctx: &CallContext, text: &str) -> Result<Vec<String>, CallError> {
        self.note(ctx);
        let text = clip_event_text(text);
        self.guarded("events.assistant-message", |b, s| {
            b.self_evolve_plugin_events().call_assistant_message(s, ctx, text)
        })
    }

    pub fn tool_result(&mut self, ctx: &CallContext, event: &ToolEvent) -> Result<Vec<String>, CallError> {
        self.note(ctx);
        let clipped;
        let event = if event.args_json.len() > MAX_EVENT_TEXT_BYTES || event.output.len() > MAX_EVENT_TEXT_BYTES {
            clipped = ToolEvent {
                tool: clip_event_text(&event.tool).to_string(),
                args_json: clip_event_text(&event.args_json).to_string(),
                ok: event.ok,
                output: clip_event_text(&event.output).to_string(),
            };
            &clipped
        } else {
            event
        };
        self.guarded("events.tool-result", |b, s| b.self_evolve_plugin_events().call_tool_result(s, ctx, event))
    }

    pub fn turn_end(&mut self, ctx: &CallContext, status: TurnStatus) -> Result<Vec<String>, CallError> {
        self.note(ctx);
        self.guarded("events.turn-end", |b, s| b.self_evolve_plugin_events().call_turn_end(s, ctx, status))
    }

    pub fn activation_end(&mut self, outcome: &ActivationResult) -> Result<Vec<String>, CallError> {
        self.guarded("events.activation-end", |b, s| b.self_evolve_plugin_events().call_activation_end(s, outcome))
    }

    pub fn tick(&mut self) -> Result<Vec<String>, CallError> {
        self.guarded("events.tick", |b, s| b.self_evolve_plugin_events().call_tick(s))
    }

    /// Hands every session the instance holds in memory back to the state root
    /// (`sessions.hand-back`): call it before letting a `session-owner` or `session-batch`
    /// instance go (a replay's end, before `restart`).
    pub fn hand_back(&mut self) -> Result<(), CallError> {
        self.guarded("sessions.hand-back", |b, s| b.self_evolve_plugin_sessions().call_hand_back(s))
    }

    pub fn command(&mut self, ctx: &CallContext, args: &str) -> Result<Result<String, String>, CallError> {
        if args.len() > MAX_COMMAND_BYTES {
            return Ok(Err(too_large_command(args.len())));
        }
        self.note(ctx);
        self.guarded("command.run", |b, s| b.self_evolve_plugin_command().call_run(s, ctx, args))
    }

    /// Drives child agents for hosts whose provider scripts them (tests, replay): performs the
    /// tool calls of newly started children through this plugin, as the child, then delivers
    /// the activations that have finished. Returns the decision lines this caused.
    pub fn pump_activations(&mut self) -> Result<Vec<String>, CallError> {
        let mut decisions = Vec::new();
        let Some(state) = self.sandbox.state_mut() else { return Ok(decisions) };
        let work = state.subagents.take_work();
        for child in work {
            let cwd = self.state().and_then(|s| s.fs.cwd_of(&child.parent_session)).unwrap_or_default();
            let ctx = CallContext {
                session: child.parent_session.clone(),
                agent: child.id.clone(),
                origin: Origin::Subagent,
                depth: 1,
                cwd,
            };
            for (tool, args) in &child.calls {
                let line = if !child.allowed.iter().any(|t| t == tool) {
                    let why = format!("`{tool}` is not among the child's tools {:?}", child.allowed);
                    crate::lines::tool(
                        &ctx.session,
                        &ctx.agent,
                        tool,
                        false,
                        &serde_json::Value::String(why).to_string(),
                    )
                } else if tool == "skill" {
                    let event =
                        ToolEvent { tool: tool.clone(), args_json: args.clone(), ok: true, output: String::new() };
                    decisions.extend(self.tool_result(&ctx, &event)?);
                    let name = serde_json::from_str::<serde_json::Value>(args)
                        .ok()
                        .and_then(|v| v["name"].as_str().map(str::to_string))
                        .unwrap_or_default();
                    crate::lines::tool(&ctx.session, &ctx.agent, tool, true, &format!("loaded {name}"))
                } else {
                    let (ok, text) = match self.tools_call(&ctx, tool, args)? {
                        Ok(text) => (true, text),
                        Err(text) => (false, text),
                    };
                    crate::lines::tool(&ctx.session, &ctx.agent, tool, ok, &text)
                };
                decisions.push(line);
            }
        }
        let now = self.state().map_or(0, |s| s.clock.now_ms());
        let finished = self.state_mut().map(|s| s.subagents.take_finished(now)).unwrap_or_default();
        for outcome in finished {
            use crate::caps::subagent::Status;
            let result = ActivationResult {
                id: outcome.id,
                status: match outcome.status {
                    Status::Completed => ActivationStatus::Completed,
                    Status::Failed => ActivationStatus::Failed,
                    Status::Aborted => ActivationStatus::Aborted,
                    Status::TimedOut => ActivationStatus::TimedOut,
                },
                text: outcome.text,
            };
            decisions.extend(self.activation_end(&result)?);
        }
        Ok(decisions)
    }

    /// Starts a feedback run (seed 001) from its JSON spec; returns its id.
    pub fn feedback_begin(&mut self, spec_json: &str) -> Result<Result<String, String>, CallError> {
        self.guarded("feedback.begin", |b, s| b.self_evolve_plugin_feedback().call_begin(s, spec_json))
    }

    /// Reports a build, check or judge event; returns the decision JSON.
    pub fn feedback_report(&mut self, run: &str, event_json: &str) -> Result<Result<String, String>, CallError> {
        self.guarded("feedback.report", |b, s| b.self_evolve_plugin_feedback().call_report(s, run, event_json))
    }

    pub fn feedback_record(&mut self, run: &str) -> Result<Result<String, String>, CallError> {
        self.guarded("feedback.record", |b, s| b.self_evolve_plugin_feedback().call_record(s, run))
    }

    /// The shadow reviewer (seed 004): probes, admission, acceptance and status, as JSON.
    pub fn shadow_probes(&mut self) -> Result<String, CallError> {
        self.guarded("shadow.probes", |b, s| b.self_evolve_plugin_shadow().call_probes(s))
    }

    pub fn shadow_admit(
        &mut self,
        root: &str,
        prompt: &str,
        holdout: bool,
    ) -> Result<Result<String, String>, CallError> {
        self.guarded("shadow.admit", |b, s| b.self_evolve_plugin_shadow().call_admit(s, root, prompt, holdout))
    }

    pub fn shadow_accept(
        &mut self,
        root: &str,
        report_json: &str,
        refs: &[u64],
        routes: (Option<&str>, Option<&str>),
        holdout: bool,
    ) -> Result<Result<String, String>, CallError> {
        self.guarded("shadow.accept", |b, s| {
            b.self_evolve_plugin_shadow().call_accept(s, root, report_json, refs, routes.0, routes.1, holdout)
        })
    }

    pub fn shadow_take_relay(&mut self, root: &str) -> Result<String, CallError> {
        self.guarded("shadow.take-relay", |b, s| b.self_evolve_plugin_shadow().call_take_relay(s, root))
    }

    pub fn shadow_status(&mut self, root: &str) -> Result<String, CallError> {
        self.guarded("shadow.status", |b, s| b.self_evolve_plugin_shadow().call_status(s, root))
    }

    /// Starts one review-loop iteration (seed 003); Ok(Ok(decision JSON)) or Ok(Err(refusal JSON)).
    pub fn review_loop_begin(
        &mut self,
        ctx: &CallContext,
        req: &review_loop::Request,
    ) -> Result<Result<String, String>, CallError> {
        self.guarded("review-loop.begin", |b, s| b.self_evolve_plugin_review_loop().call_begin(s, ctx, req))
    }

    pub fn review_loop_commands(
        &mut self,
        run: &str,
        results: &[review_loop::CommandResult],
    ) -> Result<Result<Vec<String>, String>, CallError> {
        self.guarded("review-loop.commands", |b, s| b.self_evolve_plugin_review_loop().call_commands(s, run, results))
    }

    pub fn review_loop_spend(&mut self, activation: &str, input: u64, output: u64) -> Result<Vec<String>, CallError> {
        self.guarded("review-loop.spend", |b, s| {
            b.self_evolve_plugin_review_loop().call_spend(s, activation, input, output)
        })
    }

    pub fn review_loop_status(&mut self, session: &str) -> Result<String, CallError> {
        self.guarded("review-loop.status", |b, s| b.self_evolve_plugin_review_loop().call_status(s, session))
    }

    /// The wasm instructions this instance has run, where the engine counts them
    /// (`SELF_EVOLVE_FUEL=1` with the `profiling` feature): for benchmarks that compare builds.
    pub fn fuel_used(&self) -> Option<u64> {
        self.sandbox.fuel_used()
    }

    pub fn check(&mut self, skills: &[SkillInput]) -> Result<Vec<Finding>, CallError> {
        self.guarded("checker.check", |b, s| b.self_evolve_plugin_checker().call_check(s, skills))
    }

    /// One batch of a check in batches (every finding but near-duplicates).
    pub fn check_batch(&mut self, skills: &[SkillInput]) -> Result<Vec<Finding>, CallError> {
        self.guarded("checker.check-batch", |b, s| b.self_evolve_plugin_checker().call_check_batch(s, skills))
    }

    /// Near-duplicates across every batch since the last call. A trap in between loses the
    /// batches (the instance is replaced): the caller starts over.
    pub fn check_duplicates(&mut self) -> Result<Vec<Finding>, CallError> {
        self.guarded("checker.check-duplicates", |b, s| b.self_evolve_plugin_checker().call_check_duplicates(s))
    }

    /// One page of the skills an agent may be served; `Err` carries the plugin's error JSON.
    pub fn catalog_skills(
        &mut self,
        ctx: &CallContext,
        offset: u32,
        limit: u32,
    ) -> Result<Result<CatalogPage, String>, CallError> {
        self.note(ctx);
        self.guarded("catalog.skills", |b, s| b.self_evolve_plugin_catalog().call_skills(s, ctx, offset, limit))
    }

    pub fn catalog_get(&mut self, ctx: &CallContext, name: &str) -> Result<Result<ServedSkill, String>, CallError> {
        if name.len() > MAX_CATALOG_NAME {
            return Ok(Err(too_large_field("name", name.len(), MAX_CATALOG_NAME)));
        }
        self.note(ctx);
        self.guarded("catalog.get", |b, s| b.self_evolve_plugin_catalog().call_get(s, ctx, name))
    }

    /// A served file's bytes; a SKILL.md read counts as the agent reading the skill.
    pub fn catalog_read(
        &mut self,
        ctx: &CallContext,
        name: &str,
        path: &str,
    ) -> Result<Result<Vec<u8>, String>, CallError> {
        if name.len() > MAX_CATALOG_NAME {
            return Ok(Err(too_large_field("name", name.len(), MAX_CATALOG_NAME)));
        }
        if path.len() > MAX_CATALOG_PATH {
            return Ok(Err(too_large_field("path", path.len(), MAX_CATALOG_PATH)));
        }
        self.note(ctx);
        self.guarded("catalog.read", |b, s| b.self_evolve_plugin_catalog().call_read(s, ctx, name, path))
    }

    pub fn guidance(&mut self) -> Result<Option<String>, CallError> {
        self.guarded("guidance.section", |b, s| b.self_evolve_plugin_guidance().call_section(s))
    }
}

/// A call context for a top-level agent in `session`.
pub fn user_context(session: &str) -> CallContext {
    types::CallContext {
        session: session.to_string(),
        agent: "main".to_string(),
        origin: types::Origin::User,
        depth: 0,
        cwd: String::new(),
    }
}

/// The longest event text (message, tool arguments or output) passed into the instance.
pub const MAX_EVENT_TEXT_BYTES: usize = 1 << 20;

/// `text` cut to at most `MAX_EVENT_TEXT_BYTES`, never inside a character.
pub fn clip_event_text(text: &str) -> &str {
    if text.len() <= MAX_EVENT_TEXT_BYTES {
        return text;
    }
    let mut end = MAX_EVENT_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The plugin's own bound on a `/skills` line (`command::MAX_LINE_BYTES`).
pub const MAX_COMMAND_BYTES: usize = 64 << 10;

/// The plugin's refusal of a longer `/skills` line, answered by the host.
pub fn too_large_command(len: usize) -> String {
    format!(
        "too-large: the /skills line is {len} bytes; the limit is {MAX_COMMAND_BYTES}; no subcommand takes that much"
    )
}

/// The plugin's own bound on tool arguments (`library::tool_args::MAX_ARGS_BYTES`).
pub const MAX_ARGS_BYTES: usize = 24 << 20;

/// The plugin's `too-large` refusal for arguments, byte for byte, answered by the host so that
/// text past the bound never enters the instance.
pub fn too_large_arguments(len: usize) -> String {
    serde_json::json!({
        "code": "too-large",
        "message": format!("`arguments` is {len} bytes; the limit for it is {MAX_ARGS_BYTES}"),
        "hint": "send a shorter value; put long material in references/ files with write_file",
        "details": {"field": "arguments", "bytes": len, "limit": MAX_ARGS_BYTES},
    })
    .to_string()
}

/// Catalog arguments past these bounds never enter the instance (a skill name is at most 64
/// bytes, a path the fs capability accepts at most 4096).
pub const MAX_CATALOG_NAME: usize = 256;
pub const MAX_CATALOG_PATH: usize = 4096;

/// A `too-large` refusal in the plugin's error shape, for a catalog argument.
pub fn too_large_field(field: &str, len: usize, limit: usize) -> String {
    serde_json::json!({
        "code": "too-large",
        "message": format!("`{field}` is {len} bytes; the limit for it is {limit}"),
        "hint": "list the skills for their names and files",
        "details": {"field": field, "bytes": len, "limit": limit},
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::{too_large_arguments, too_large_field};

    /// The same bytes the Node host answers (pinned in hosts/node/test/catalog.test.js too).
    #[test]
    fn the_catalog_bounds_answer_as_the_node_host_does() {
        assert_eq!(
            too_large_field("path", 5000, 4096),
            r#"{"code":"too-large","details":{"bytes":5000,"field":"path","limit":4096},"hint":"list the skills for their names and files","message":"`path` is 5000 bytes; the limit for it is 4096"}"#
        );
    }

    /// The same bytes the plugin answers (pinned in the plugin's `tool_args` tests too).
    #[test]
    fn the_host_answers_oversized_arguments_as_the_plugin_would() {
        assert_eq!(
            too_large_arguments(30_000_000),
            r#"{"code":"too-large","details":{"bytes":30000000,"field":"arguments","limit":25165824},"hint":"send a shorter value; put long material in references/ files with write_file","message":"`arguments` is 30000000 bytes; the limit for it is 25165824"}"#
        );
    }
}
