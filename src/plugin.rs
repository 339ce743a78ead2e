//! The plugin as one value: configuration, activation report and the dispatch of every export.
//! It owns no policy of its own; each export hands off to the module that owns the concept. The
//! `events` exports (session events and the tick) are in `plugin/events.rs`.

mod events;

use crate::active::Active;
use crate::api::{CallContext, ConfigError, Decision, InitReport, Part, PartState, ToolSpec};
use crate::config::{Config, GateKind};
use crate::errors::ToolError;
use crate::host::{Host, Level, Root};
use crate::library::guards::reads::ReadRegistry;
use crate::library::skill_manage;
use crate::library::skill_manage::spec as tools;
use crate::library::staging::pending;
use crate::library::storage::catalog;
use crate::library::storage::list_cache::ListCache;
use crate::schedule::scheduler::Scheduler;

/// Host services a part may wait for (seed 002, "Entry and activation").
pub const KNOWN_SERVICES: &[&str] = &[
    "tools",
    "commands",
    "system-prompt",
    "agents",
    "subagents",
    crate::schedule::session_journal::SERVICE,
    crate::schedule::session_journal::BATCH_SERVICE,
];

pub struct Plugin<H: Host> {
    host: H,
    state: Option<Active>,
    /// Feedback runs by id; they need no init.
    feedback: std::collections::BTreeMap<String, crate::feedback::Run>,
    next_feedback: u64,
    /// A check in batches (`check-batch` … `check-duplicates`); needs no init.
    check_run: crate::library::guards::check::Run,
}

impl<H: Host> Plugin<H> {
    pub fn new(host: H) -> Plugin<H> {
        Plugin { host, state: None, feedback: Default::default(), next_feedback: 0, check_run: Default::default() }
    }

    pub fn host(&self) -> &H {
        &self.host
    }

    pub fn config(&self) -> Option<&Config> {
        self.state.as_ref().map(|s| &s.config)
    }

    /// Resolves the config and reports which parts are active. A failed init keeps the
    /// previous state (a live plugin is not torn down by a bad reload).
    pub fn init(&mut self, config_json: &str, services: &[String]) -> Result<InitReport, ConfigError> {
        let config = Config::parse(config_json)?;
        let mut warnings = Vec::new();
        for service in services {
            if !KNOWN_SERVICES.contains(&service.as_str()) {
                warnings
                    .push(format!("unknown host service `{service}` ignored (known: {})", KNOWN_SERVICES.join(", ")));
            }
        }
        let parts = self.parts(&config, services, &mut warnings);
        for warning in &warnings {
            self.host.log(Level::Warn, warning);
        }
        let report = InitReport {
            version: env!("CARGO_PKG_VERSION").to_string(),
            parts,
            warnings,
            config_json: config.to_json().to_string(),
        };
        // What processes that died mid-operation left (hidden; their names say so).
        crate::library::storage::cleanup::cleanup(&self.host, &[Root::UserSkills, Root::State], false);
        let pruned = pending::prune(&self.host, config.pending_ttl_days);
        if !pruned.is_empty() {
            self.host.log(
                Level::Info,
                &format!("pruned {} staged write(s) older than {} days", pruned.len(), config.pending_ttl_days),
            );
        }
        // A re-init keeps what agents have read, the parse cache and the review counters.
        let (reads, cache, mut review, shadow, review_loops) = match self.state.take() {
            Some(old) => (old.reads, old.cache, old.review, old.shadow, old.review_loops),
            None => (
                ReadRegistry::default(),
                ListCache::default(),
                Scheduler::default(),
                Default::default(),
                Default::default(),
            ),
        };
        review.load_override(&self.host);
        let part_active = |name: &str| report.parts.iter().any(|p| p.name == name && p.state == PartState::Active);
        review.gate_active = config.review.gate != GateKind::Counters && part_active("gate");
        let review_ready = report.parts.iter().any(|p| p.name == "review" && p.missing.is_empty());
        let review_loop_ready = report.parts.iter().any(|p| p.name == "review-loop" && p.missing.is_empty());
        let mut curator = crate::library::curation::curator::Schedule::default();
        if self.host.has_root(&Root::UserSkills) {
            curator.start(self.host.now_ms(), &config.curator);
        }
        self.state = Some(Active {
            config,
            services: services.to_vec(),
            reads,
            cache,
            ledger: None,
            review,
            review_ready,
            curator,
            shadow,
            review_loops,
            review_loop_ready,
            evidence: Default::default(),
            holdings: crate::schedule::session_holdings::Holdings::new(
                services.iter().any(|s| s == crate::schedule::session_journal::SERVICE),
                services.iter().any(|s| s == crate::schedule::session_journal::BATCH_SERVICE),
            ),
        });
        self.host.log(Level::Info, &format!("self-evolve {} initialised", report.version));
        Ok(report)
    }

    fn parts(&self, config: &Config, services: &[String], warnings: &mut Vec<String>) -> Vec<Part> {
        let needs = |names: &[&str]| -> Vec<String> {
            names.iter().filter(|n| !services.iter().any(|s| s == *n)).map(|n| n.to_string()).collect()
        };
        let part = |name: &str, missing: Vec<String>, detail: String| Part {
            name: name.to_string(),
            state: if missing.is_empty() { PartState::Active } else { PartState::Pending },
            missing,
            detail,
        };
        let mut parts = vec![
            part("skill-manage", needs(&["tools"]), "the skill_manage tool".into()),
            part("guidance", needs(&["system-prompt"]), "system-prompt section for skill_manage".into()),
            part("command", needs(&["commands"]), "the /skills command".into()),
        ];

        let mut review =
            part("review", needs(&["agents", "subagents"]), "background reviews after completed turns".into());
        if !config.review.enabled && review.state == PartState::Active {
            review.state = PartState::Disabled;
            review.detail = "review.enabled is false; `/skills review on` switches it on".into();
        }
        parts.push(review);

        let gate = match crate::schedule::gate::ModelGate::of(&config.review) {
            None => part("gate", vec![], "counters: due reviews always run".into()),
            Some(model) => {
                let (kind, endpoint) = (model.source(), model.endpoint());
                let problem = if !self.host.has_endpoint(endpoint) {
                    Some(format!("the host has no HTTP endpoint named `{endpoint}`"))
                } else if !self.host.has_credential(endpoint) {
                    Some(format!("the host has no credential for endpoint `{endpoint}`"))
                } else {
                    None
                };
                match problem {
                    Some(why) => {
                        warnings.push(format!("review.gate is {kind} but {why}: the gate stays on counters"));
                        part("gate", vec![format!("http:{endpoint}")], format!("counters ({why})"))
                    }
                    None => part("gate", vec![], format!("{kind} via endpoint `{endpoint}`")),
                }
            }
        };
        parts.push(gate);

        let mut curator = if self.host.has_root(&Root::UserSkills) {
            part("curator", vec![], "stale/archive lifecycle of user-scope skills".into())
        } else {
            part("curator", vec!["fs:user-skills".into()], "needs the user-skills root".into())
        };
        if !config.curator.enabled {
            curator.state = PartState::Disabled;
            curator.missing.clear();
            curator.detail = "curator.enabled is false".into();
        }
        parts.push(curator);

        let mut review_loop =
            part("review-loop", needs(&["subagents"]), "lens reviewers, falsifiers and verdicts on request".into());
        if !self.host.has_root(&Root::State) {
            review_loop.missing.push("fs:state".into());
            review_loop.state = PartState::Pending;
        }
        parts.push(review_loop);
        parts
    }

    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        tools::specs()
    }

    /// Both arms are JSON for the model.
    pub fn call_tool(&mut self, ctx: &CallContext, name: &str, args_json: &str) -> Result<String, String> {
        let answer = self.call_tool_inner(ctx, name, args_json).map_err(|err| err.to_json());
        // A background reviewer's calls are kept in its audit record, refusals included (not a
        // review loop's children, whose ids a host may have used for a review before).
        if ctx.origin == crate::api::Origin::Subagent
            && self.state.as_ref().is_some_and(|a| !a.review_loops.knows(&ctx.agent))
            && crate::schedule::audit::is_running(&self.host, &ctx.agent)
        {
            crate::schedule::audit::review_call(&self.host, &ctx.agent, name, args_json, &answer);
        }
        answer
    }

    fn call_tool_inner(&mut self, ctx: &CallContext, name: &str, args_json: &str) -> Result<String, ToolError> {
        if name != tools::SKILL_MANAGE {
            return Err(ToolError::new(
                "unknown-tool",
                format!("this plugin has no tool named `{name}`"),
                format!("call `{}` instead", tools::SKILL_MANAGE),
            ));
        }
        let actor = if ctx.origin == crate::api::Origin::Subagent { "reviewer" } else { "agent" };
        let host = &self.host;
        let active = self.state.as_mut().ok_or_else(not_initialized)?;
        active.with_reads(host, &ctx.session, |active| {
            active.cache.note_cwd(&ctx.session, &ctx.cwd);
            let mut cx = active.tool_context(host, &ctx.session, &ctx.agent, actor, &ctx.cwd);
            skill_manage::run(host, &mut cx, args_json)
        })
    }

    pub fn review_loop_begin(&mut self, ctx: &CallContext, req: crate::review_loop::Request) -> Result<String, String> {
        let host = &self.host;
        let active = self.state.as_mut().ok_or_else(|| not_initialized().to_json())?;
        if !active.review_loop_ready {
            return Err(ToolError::new(
                "review-loop-pending",
                "the review loop needs the host's subagents service and state root",
                "offer \"subagents\" to lifecycle.init and map the state root; init lists what is missing",
            )
            .to_json());
        }
        active
            .review_loops
            .begin(host, &active.config.review_loop, ctx, req)
            .map(|v| v.to_string())
            .map_err(|err| err.to_json())
    }

    pub fn review_loop_commands(
        &mut self,
        run: &str,
        results: &[crate::review_loop::CommandResult],
    ) -> Result<Vec<Decision>, String> {
        let host = &self.host;
        let active = self.state.as_mut().ok_or_else(|| not_initialized().to_json())?;
        active.review_loops.commands(host, run, results).map_err(|err| err.to_json())
    }

    /// Tokens a child spent: a review-loop child's count against its run's ceiling; a background
    /// review's are kept in its audit record (hosts report both through `review-loop.spend`).
    pub fn review_loop_spend(&mut self, activation: &str, input: u64, output: u64) -> Vec<Decision> {
        let host = &self.host;
        match self.state.as_mut() {
            Some(active) if active.review_loops.knows(activation) => {
                active.review_loops.spend(host, activation, input, output)
            }
            Some(_) => {
                crate::schedule::audit::review_spent(host, activation, input, output);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    pub fn review_loop_status(&self, session: &str) -> String {
        match &self.state {
            Some(active) => active.review_loops.status(&self.host, session).to_string(),
            None => serde_json::json!({"error": "the plugin has not been initialised"}).to_string(),
        }
    }

    pub fn run_command(&mut self, ctx: &CallContext, args: &str) -> Result<String, String> {
        let host = &self.host;
        let Some(active) = self.state.as_mut() else {
            return Err("the plugin has not been initialised; the host must call lifecycle.init first".into());
        };
        crate::command::run(host, active, ctx, args)
    }

    pub fn feedback_begin(&mut self, spec_json: &str) -> Result<String, String> {
        let run = crate::feedback::Run::begin(spec_json)?;
        self.next_feedback += 1;
        let id = format!("fb-{}", self.next_feedback);
        self.feedback.insert(id.clone(), run);
        Ok(id)
    }

    pub fn feedback_report(&mut self, run: &str, event_json: &str) -> Result<String, String> {
        let r = self.feedback.get_mut(run).ok_or_else(|| format!("no feedback run `{run}`"))?;
        r.report(event_json).map(|v| v.to_string())
    }

    pub fn feedback_record(&self, run: &str) -> Result<String, String> {
        self.feedback.get(run).map(|r| r.record().to_string()).ok_or_else(|| format!("no feedback run `{run}`"))
    }

    pub fn shadow_probes(&self) -> String {
        let classes: Vec<serde_json::Value> = crate::shadow::probes::PROBE_CLASSES_V1
            .iter()
            .map(|p| serde_json::json!({"id": p.id, "name": p.name, "trigger": p.trigger, "probe": p.probe}))
            .collect();
        serde_json::json!({"classes": classes, "checklist": crate::shadow::probes::render_checklist()}).to_string()
    }

    pub fn shadow_admit(&mut self, root: &str, prompt: &str, holdout: bool) -> Result<String, String> {
        let host = &self.host;
        let active = self.state.as_mut().ok_or("the plugin has not been initialised")?;
        active.shadow.admit(host, &active.config.shadow, root, prompt, holdout).map(|v| v.to_string())
    }

    #[allow(clippy::too_many_arguments)]
    pub fn shadow_accept(
        &mut self,
        root: &str,
        report_json: &str,
        refs: &[u64],
        author: Option<&str>,
        reviewer: Option<&str>,
        holdout: bool,
    ) -> Result<String, String> {
        let host = &self.host;
        let active = self.state.as_mut().ok_or("the plugin has not been initialised")?;
        active
            .shadow
            .accept(host, &active.config.shadow, root, report_json, refs, author, reviewer, holdout)
            .map(|v| v.to_string())
    }

    pub fn shadow_take_relay(&mut self, root: &str) -> String {
        match self.state.as_mut() {
            Some(active) => active.shadow.take_relay(root).to_string(),
            None => "[]".to_string(),
        }
    }

    pub fn shadow_status(&self, root: &str) -> String {
        match &self.state {
            Some(active) => active.shadow.status(&active.config.shadow, root, self.host.now_ms()).to_string(),
            None => serde_json::json!({"error": "the plugin has not been initialised"}).to_string(),
        }
    }

    /// Offline checks (the `checker` export); uses the configured duplicate threshold.
    pub fn check(
        &self,
        skills: &[crate::library::guards::check::SkillInput],
    ) -> Vec<crate::library::guards::check::Finding> {
        crate::library::guards::check::check(skills, self.duplicate_threshold())
    }

    /// One batch of a check in batches: everything but near-duplicates, which wait for
    /// `check_duplicates`.
    pub fn check_batch(
        &mut self,
        skills: &[crate::library::guards::check::SkillInput],
    ) -> Vec<crate::library::guards::check::Finding> {
        self.check_run.add(skills)
    }

    /// Near-duplicates across every batch since the last call; then starts over.
    pub fn check_duplicates(&mut self) -> Vec<crate::library::guards::check::Finding> {
        let threshold = self.duplicate_threshold();
        self.check_run.duplicates(threshold)
    }

    fn duplicate_threshold(&self) -> f64 {
        self.config().map_or(Config::default().duplicate_threshold, |c| c.duplicate_threshold)
    }

    /// One page of the skills an agent may be served (the `catalog` export).
    pub fn catalog_page(&mut self, ctx: &CallContext, offset: usize, limit: usize) -> Result<catalog::Page, String> {
        let host = &self.host;
        let active = self.state.as_mut().ok_or_else(|| not_initialized().to_json())?;
        active.cache.note_cwd(&ctx.session, &ctx.cwd);
        let (page, skipped) = catalog::page(host, &ctx.session, &mut active.cache, offset, limit);
        for skip in skipped {
            host.log(
                Level::Info,
                &format!("not serving skill `{}`: {}", skip.name, crate::visible::visible(&skip.why)),
            );
        }
        Ok(page)
    }

    pub fn catalog_get(&mut self, ctx: &CallContext, name: &str) -> Result<catalog::ServedSkill, String> {
        self.state.as_ref().ok_or_else(|| not_initialized().to_json())?;
        catalog::get(&self.host, &ctx.session, name).map_err(|e| e.to_json())
    }

    /// A served file's bytes; reading a SKILL.md counts as this agent reading the skill, as a
    /// `view` does (the guard before a patch).
    pub fn catalog_read(&mut self, ctx: &CallContext, name: &str, path: &str) -> Result<Vec<u8>, String> {
        self.state.as_ref().ok_or_else(|| not_initialized().to_json())?;
        let bytes = catalog::read(&self.host, &ctx.session, name, path).map_err(|e| e.to_json())?;
        if path == "SKILL.md" {
            // The bytes are served even when the read cannot be recorded: a later patch then
            // asks for a view, which is the safe side.
            if let Some(active) = self.state.as_mut() {
                active.with_reads(&self.host, &ctx.session, |active| active.reads.mark(&ctx.session, &ctx.agent, name));
            }
        }
        Ok(bytes)
    }

    pub fn guidance(&self) -> Option<String> {
        let active = self.state.as_ref()?;
        active.services.iter().any(|s| s == "system-prompt").then(crate::guidance::section)
    }
}

fn not_initialized() -> ToolError {
    ToolError::new("not-initialized", "the plugin has not been initialised", "the host must call lifecycle.init first")
}
