//! The one file that knows the WIT bindings: it implements `Host` over the imports and
//! forwards every export to `Plugin`. Nothing else in the crate names wit-bindgen.

use crate::api;
use crate::host::{self, Host};
use crate::plugin::Plugin;
use std::cell::RefCell;

wit_bindgen::generate!({ world: "plugin", path: "wit" });

use self::self_evolve::plugin::{clock, fs, http, log, subagent, types};
use exports::self_evolve::plugin as ex;

/// The WIT imports as a `Host`.
struct WitHost;

thread_local! {
    static PLUGIN: RefCell<Plugin<WitHost>> = RefCell::new(Plugin::new(WitHost));
}

fn with_plugin<T>(f: impl FnOnce(&mut Plugin<WitHost>) -> T) -> T {
    PLUGIN.with(|cell| f(&mut cell.borrow_mut()))
}

fn root(root: &host::Root) -> fs::Root {
    match root {
        host::Root::UserSkills => fs::Root::UserSkills,
        host::Root::ProjectSkills(session) => fs::Root::ProjectSkills(session.clone()),
        host::Root::State => fs::Root::State,
    }
}

fn fs_error(err: fs::FsError) -> host::FsError {
    match err {
        fs::FsError::NotFound => host::FsError::NotFound,
        fs::FsError::AlreadyExists => host::FsError::AlreadyExists,
        fs::FsError::NotPermitted => host::FsError::NotPermitted,
        fs::FsError::Symlink => host::FsError::Symlink,
        fs::FsError::InvalidPath => host::FsError::InvalidPath,
        fs::FsError::NoSpace => host::FsError::NoSpace,
        fs::FsError::WrongKind => host::FsError::WrongKind,
        fs::FsError::Io(msg) => host::FsError::Io(msg),
    }
}

fn entry_kind(kind: fs::EntryKind) -> host::EntryKind {
    match kind {
        fs::EntryKind::File => host::EntryKind::File,
        fs::EntryKind::Dir => host::EntryKind::Dir,
        fs::EntryKind::Symlink => host::EntryKind::Symlink,
    }
}

impl Host for WitHost {
    fn read(&self, r: &host::Root, path: &str) -> Result<Vec<u8>, host::FsError> {
        fs::read(&root(r), path).map_err(fs_error)
    }
    fn write(&self, r: &host::Root, path: &str, data: &[u8], mode: host::WriteMode) -> Result<(), host::FsError> {
        let mode = match mode {
            host::WriteMode::CreateNew => fs::WriteMode::CreateNew,
            host::WriteMode::Truncate => fs::WriteMode::Truncate,
            host::WriteMode::Append => fs::WriteMode::Append,
        };
        fs::write(&root(r), path, data, mode).map_err(fs_error)
    }
    fn rename(&self, r: &host::Root, from: &str, to: &str) -> Result<(), host::FsError> {
        fs::rename(&root(r), from, to).map_err(fs_error)
    }
    fn remove_file(&self, r: &host::Root, path: &str) -> Result<(), host::FsError> {
        fs::remove_file(&root(r), path).map_err(fs_error)
    }
    fn remove_dir(&self, r: &host::Root, path: &str) -> Result<(), host::FsError> {
        fs::remove_dir(&root(r), path).map_err(fs_error)
    }
    fn create_dir_all(&self, r: &host::Root, path: &str) -> Result<(), host::FsError> {
        fs::create_dir_all(&root(r), path).map_err(fs_error)
    }
    fn list_dir(&self, r: &host::Root, path: &str) -> Result<Vec<(String, host::EntryKind)>, host::FsError> {
        fs::list_dir(&root(r), path)
            .map(|entries| entries.into_iter().map(|(name, kind)| (name, entry_kind(kind))).collect())
            .map_err(fs_error)
    }
    fn stat(&self, r: &host::Root, path: &str) -> Result<host::Stat, host::FsError> {
        fs::stat(&root(r), path)
            .map(|s| host::Stat { kind: entry_kind(s.kind), size: s.size, modified_ms: s.modified_ms })
            .map_err(fs_error)
    }
    fn stat_many(&self, r: &host::Root, paths: &[String]) -> Vec<Result<host::Stat, host::FsError>> {
        fs::stat_many(&root(r), paths)
            .into_iter()
            .map(|s| {
                s.map(|s| host::Stat { kind: entry_kind(s.kind), size: s.size, modified_ms: s.modified_ms })
                    .map_err(fs_error)
            })
            .collect()
    }
    fn has_root(&self, r: &host::Root) -> bool {
        fs::has_root(&root(r))
    }

    fn http_post(&self, req: &host::HttpRequest) -> Result<host::HttpResponse, host::HttpError> {
        let request = http::Request {
            endpoint: req.endpoint.clone(),
            path: req.path.clone(),
            headers: req.headers.clone(),
            body: req.body.clone(),
            timeout_ms: req.timeout_ms,
        };
        http::post(&request).map(|r| host::HttpResponse { status: r.status, body: r.body }).map_err(|err| match err {
            http::HttpError::Timeout => host::HttpError::Timeout,
            http::HttpError::Denied => host::HttpError::Denied,
            http::HttpError::NoCredential => host::HttpError::NoCredential,
            http::HttpError::Network(msg) => host::HttpError::Network(msg),
        })
    }
    fn has_endpoint(&self, endpoint: &str) -> bool {
        http::has_endpoint(endpoint)
    }
    fn has_credential(&self, endpoint: &str) -> bool {
        http::has_credential(endpoint)
    }

    fn subagent_start(&self, spec: &host::SubagentSpec) -> Result<String, String> {
        subagent::start(&subagent::Spec {
            parent_session: spec.parent_session.clone(),
            provider: spec.provider.clone(),
            delivery: spec.delivery.clone(),
            prompt: spec.prompt.clone(),
            tools: spec.tools.clone(),
            timeout_ms: spec.timeout_ms,
        })
    }
    fn subagent_restrict_tools(&self, id: &str, tools: &[String]) -> Result<(), String> {
        subagent::restrict_tools(id, tools)
    }
    fn subagent_abort(&self, id: &str) {
        subagent::abort(id)
    }

    fn now_ms(&self) -> u64 {
        clock::now_ms()
    }

    /// Every log line leaves the plugin redacted: messages quote hosts' errors, skills' names
    /// and files, and reviewers; each host prints or keeps them as they come.
    fn log(&self, level: host::Level, message: &str) {
        let level = match level {
            host::Level::Debug => log::Level::Debug,
            host::Level::Info => log::Level::Info,
            host::Level::Warn => log::Level::Warn,
            host::Level::Error => log::Level::Error,
        };
        match crate::library::guards::scan::redact_secrets(message) {
            Some(clean) => log::log(level, &clean),
            None => log::log(level, message),
        }
    }
}

fn ctx(c: types::CallContext) -> api::CallContext {
    api::CallContext {
        session: c.session,
        agent: c.agent,
        origin: match c.origin {
            types::Origin::User => api::Origin::User,
            types::Origin::Subagent => api::Origin::Subagent,
        },
        depth: c.depth,
        cwd: c.cwd,
    }
}

struct Component;

impl ex::lifecycle::Guest for Component {
    fn init(
        config_json: String,
        services: Vec<String>,
    ) -> Result<ex::lifecycle::InitReport, ex::lifecycle::ConfigError> {
        use ex::lifecycle::{ConfigError, InitReport, Part, PartState};
        with_plugin(|p| p.init(&config_json, &services))
            .map(|report| InitReport {
                version: report.version,
                parts: report
                    .parts
                    .into_iter()
                    .map(|part| Part {
                        name: part.name,
                        state: match part.state {
                            api::PartState::Active => PartState::Active,
                            api::PartState::Pending => PartState::Pending,
                            api::PartState::Disabled => PartState::Disabled,
                        },
                        missing: part.missing,
                        detail: part.detail,
                    })
                    .collect(),
                warnings: report.warnings,
                config_json: report.config_json,
            })
            .map_err(|err| ConfigError { key: err.key, message: err.message })
    }
}

impl ex::sessions::Guest for Component {
    fn hand_back() {
        with_plugin(|p| p.hand_back());
    }
}

impl ex::tools::Guest for Component {
    fn list() -> Vec<ex::tools::ToolSpec> {
        with_plugin(|p| p.tool_specs())
            .into_iter()
            .map(|s| ex::tools::ToolSpec {
                name: s.name,
                description: s.description,
                parameters_schema: s.parameters_schema,
            })
            .collect()
    }
    fn call(c: types::CallContext, name: String, args_json: String) -> Result<String, String> {
        with_plugin(|p| p.call_tool(&ctx(c), &name, &args_json))
    }
}

impl ex::events::Guest for Component {
    fn user_message(c: types::CallContext, text: String, human: bool) -> Vec<String> {
        with_plugin(|p| p.user_message(&ctx(c), &text, human))
    }
    fn assistant_message(c: types::CallContext, text: String) -> Vec<String> {
        with_plugin(|p| p.assistant_message(&ctx(c), &text))
    }
    fn tool_result(c: types::CallContext, result: ex::events::ToolEvent) -> Vec<String> {
        let event =
            api::ToolEvent { tool: result.tool, args_json: result.args_json, ok: result.ok, output: result.output };
        with_plugin(|p| p.tool_result(&ctx(c), &event))
    }
    fn turn_end(c: types::CallContext, status: ex::events::TurnStatus) -> Vec<String> {
        let status = match status {
            ex::events::TurnStatus::Completed => api::TurnStatus::Completed,
            ex::events::TurnStatus::Aborted => api::TurnStatus::Aborted,
            ex::events::TurnStatus::Failed => api::TurnStatus::Failed,
        };
        with_plugin(|p| p.turn_end(&ctx(c), status))
    }
    fn activation_end(result: ex::events::ActivationResult) -> Vec<String> {
        use ex::events::ActivationStatus as S;
        let result = api::ActivationResult {
            id: result.id,
            status: match result.status {
                S::Completed => api::ActivationStatus::Completed,
                S::Failed => api::ActivationStatus::Failed,
                S::Aborted => api::ActivationStatus::Aborted,
                S::TimedOut => api::ActivationStatus::TimedOut,
            },
            text: result.text,
        };
        with_plugin(|p| p.activation_end(&result))
    }
    fn tick() -> Vec<String> {
        with_plugin(|p| p.tick())
    }
}

impl ex::command::Guest for Component {
    fn run(c: types::CallContext, args: String) -> Result<String, String> {
        with_plugin(|p| p.run_command(&ctx(c), &args))
    }
}

impl ex::guidance::Guest for Component {
    fn section() -> Option<String> {
        with_plugin(|p| p.guidance())
    }
}

impl ex::checker::Guest for Component {
    fn check(skills: Vec<ex::checker::SkillInput>) -> Vec<ex::checker::Finding> {
        let skills = check_inputs(skills);
        check_findings(with_plugin(|p| p.check(&skills)))
    }
    fn check_batch(skills: Vec<ex::checker::SkillInput>) -> Vec<ex::checker::Finding> {
        let skills = check_inputs(skills);
        check_findings(with_plugin(|p| p.check_batch(&skills)))
    }
    fn check_duplicates() -> Vec<ex::checker::Finding> {
        check_findings(with_plugin(|p| p.check_duplicates()))
    }
}

fn check_inputs(skills: Vec<ex::checker::SkillInput>) -> Vec<crate::library::guards::check::SkillInput> {
    use crate::library::guards::check;
    let file = |f: ex::checker::FileInput| check::FileInput { path: f.path, bytes: f.bytes };
    skills
        .into_iter()
        .map(|s| check::SkillInput {
            folder: s.folder,
            skill_md: file(s.skill_md),
            resources: s.resources.into_iter().map(file).collect(),
        })
        .collect()
}

fn check_findings(findings: Vec<crate::library::guards::check::Finding>) -> Vec<ex::checker::Finding> {
    use crate::library::guards::check;
    findings
        .into_iter()
        .map(|f| ex::checker::Finding {
            path: f.path,
            line: f.line,
            rule: f.rule,
            severity: match f.severity {
                check::Severity::Error => ex::checker::Severity::Error,
                check::Severity::Warning => ex::checker::Severity::Warning,
                check::Severity::Advice => ex::checker::Severity::Advice,
            },
            message: f.message,
        })
        .collect()
}

impl ex::catalog::Guest for Component {
    fn skills(c: types::CallContext, offset: u32, limit: u32) -> Result<ex::catalog::Page, String> {
        let page = with_plugin(|p| p.catalog_page(&ctx(c), offset as usize, limit as usize))?;
        Ok(ex::catalog::Page {
            skills: page.skills.into_iter().map(served_skill).collect(),
            next_offset: page.next_offset.map(|o| u32::try_from(o).unwrap_or(u32::MAX)),
        })
    }
    fn get(c: types::CallContext, name: String) -> Result<ex::catalog::ServedSkill, String> {
        with_plugin(|p| p.catalog_get(&ctx(c), &name)).map(served_skill)
    }
    fn read(c: types::CallContext, name: String, path: String) -> Result<Vec<u8>, String> {
        with_plugin(|p| p.catalog_read(&ctx(c), &name, &path))
    }
}

fn served_skill(s: crate::library::storage::catalog::ServedSkill) -> ex::catalog::ServedSkill {
    ex::catalog::ServedSkill {
        name: s.name,
        scope: s.scope.to_string(),
        description: s.description,
        frontmatter_json: s.frontmatter_json,
        files: s
            .files
            .into_iter()
            .map(|f| ex::catalog::ServedFile { path: f.path, size: f.size, sha256: f.sha256 })
            .collect(),
    }
}

impl ex::feedback::Guest for Component {
    fn begin(spec_json: String) -> Result<String, String> {
        with_plugin(|p| p.feedback_begin(&spec_json))
    }
    fn report(run: String, event_json: String) -> Result<String, String> {
        with_plugin(|p| p.feedback_report(&run, &event_json))
    }
    fn record(run: String) -> Result<String, String> {
        with_plugin(|p| p.feedback_record(&run))
    }
}

impl ex::shadow::Guest for Component {
    fn probes() -> String {
        with_plugin(|p| p.shadow_probes())
    }
    fn admit(root: String, prompt: String, holdout: bool) -> Result<String, String> {
        with_plugin(|p| p.shadow_admit(&root, &prompt, holdout))
    }
    fn accept(
        root: String,
        report_json: String,
        projection_refs: Vec<u64>,
        author_route: Option<String>,
        reviewer_route: Option<String>,
        holdout: bool,
    ) -> Result<String, String> {
        with_plugin(|p| {
            p.shadow_accept(
                &root,
                &report_json,
                &projection_refs,
                author_route.as_deref(),
                reviewer_route.as_deref(),
                holdout,
            )
        })
    }
    fn take_relay(root: String) -> String {
        with_plugin(|p| p.shadow_take_relay(&root))
    }
    fn status(root: String) -> String {
        with_plugin(|p| p.shadow_status(&root))
    }
}

impl ex::review_loop::Guest for Component {
    fn begin(c: types::CallContext, req: ex::review_loop::Request) -> Result<String, String> {
        use crate::review_loop as rl;
        use ex::review_loop::{Independence as I, Mode as M};
        let request = rl::Request {
            mode: match req.mode {
                M::Code => rl::Mode::Code,
                M::Plan => rl::Mode::Plan,
                M::Claim => rl::Mode::Claim,
                M::Deliverable => rl::Mode::Deliverable,
            },
            artifact: req.artifact,
            artifact_sha: req.artifact_sha,
            files: req.files,
            documents: req.documents.into_iter().map(|d| (d.path, d.text)).collect(),
            repo: req.repo,
            branch: req.branch,
            commit: req.commit,
            uncommitted: req.uncommitted,
            max_iter: req.max_iter,
            token_ceiling: req.token_ceiling,
            independence: match req.independence {
                I::Independent => rl::Independence::Independent,
                I::SelfAuthored(files) => rl::Independence::SelfAuthored(files),
                I::Unverified(why) => rl::Independence::Unverified(why),
            },
            self_review_ack: req.self_review_ack,
            auto: req.auto,
            commands: req.commands.map(|list| list.into_iter().map(command_result).collect()),
            disabled_lenses: req.disabled_lenses,
        };
        with_plugin(|p| p.review_loop_begin(&ctx(c), request))
    }
    fn commands(run: String, results: Vec<ex::review_loop::CommandResult>) -> Result<Vec<String>, String> {
        let results: Vec<_> = results.into_iter().map(command_result).collect();
        with_plugin(|p| p.review_loop_commands(&run, &results))
    }
    fn spend(activation: String, input_tokens: u64, output_tokens: u64) -> Vec<String> {
        with_plugin(|p| p.review_loop_spend(&activation, input_tokens, output_tokens))
    }
    fn status(session: String) -> String {
        with_plugin(|p| p.review_loop_status(&session))
    }
}

fn command_result(c: ex::review_loop::CommandResult) -> crate::review_loop::CommandResult {
    crate::review_loop::CommandResult { name: c.name, exit_code: c.exit_code, stderr_tail: c.stderr_tail }
}

export!(Component);
