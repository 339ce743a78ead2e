//! The `skill_manage` tool execution path (seed 002): locate the winning skill, enforce
//! ownership and read-before-write, lint and scan the content, then stage or write atomically.
//! Every refusal is checked before the first write, so a refused call changes nothing.

use crate::config::Config;
use crate::errors::ToolError;
use crate::host::{FsError, Host, Root};
use crate::library::acknowledge;
use crate::library::approval::{self, Change};
use crate::library::archive::archive_location;
use crate::library::coalesce;
use crate::library::frontmatter::Value as Yaml;
use crate::library::guards::ReadRegistry;
use crate::library::history;
use crate::library::ledger::{Ledger, Record};
use crate::library::lint::{self, Finding};
use crate::library::scan;
use crate::library::skillfile::{self, SkillFile, meta};
use crate::library::store::{Layout, ListCache, Location, Scope, Store, check_resource_path, fs_error, skill_lock};
use crate::library::tool_args::{Args, check_sizes};
use crate::state_file;
use crate::time;
use serde::Serialize;
use serde_json::{Value, json};

/// What the tool needs besides the host: policy and the plugin's in-memory state.
pub struct Context<'a> {
    pub config: &'a Config,
    pub session: &'a str,
    pub agent: &'a str,
    /// Who the agent is for the version history: `agent`, `reviewer` (a subagent) or `operator`.
    pub actor: &'a str,
    /// The session's working folder (a project skill's history is keyed by it).
    pub cwd: &'a str,
    pub reads: &'a mut ReadRegistry,
    pub cache: &'a mut ListCache,
    pub ledger: &'a mut Ledger,
    /// `writeApproval` after the runtime override (approval.json).
    pub approval: bool,
}

/// Runs one call; the result is the JSON text the model reads. A refusal that quotes what the
/// caller sent (an unknown action or scope, a field the JSON parser names) never carries a
/// credential on: the message goes through the scanner's redaction, as stored text does.
pub fn run(host: &impl Host, cx: &mut Context, args_json: &str) -> Result<String, ToolError> {
    run_call(host, cx, args_json).map_err(|mut refusal| {
        if let Some(clean) = self_evolve_scan::redact_secrets(&refusal.message) {
            refusal.message = clean;
        }
        refusal
    })
}

fn run_call(host: &impl Host, cx: &mut Context, args_json: &str) -> Result<String, ToolError> {
    check_sizes(args_json, &cx.config.limits)?;
    let args: Args = serde_json::from_str(args_json).map_err(|e| {
        ToolError::new(
            "invalid-args",
            format!("the arguments are not valid for skill_manage: {e}"),
            "pass a JSON object matching the tool's schema",
        )
    })?;
    for (field, value) in [("reason", &args.reason), ("file_path", &args.file_path), ("name", &args.name)] {
        if let Some(value) = value {
            scan_field(field, value)?;
        }
    }
    // Staging is the careful side: a caller may always ask for it, never for the reverse; and
    // with `team.othersSkills: stage`, a change to a skill another library created is staged.
    if args.stage || teammates_skill_to_stage(host, cx, &args) {
        cx.approval = true;
    }
    let value = match args.action.as_str() {
        "list" => return list(host, cx, &args),
        "view" => view(host, cx, &args),
        "create" => create(host, cx, &args),
        "patch" => patch(host, cx, &args),
        "edit" => edit(host, cx, &args),
        "write_file" => write_file(host, cx, &args),
        "remove_file" => remove_file(host, cx, &args),
        "archive" => archive(host, cx, &args),
        other => Err(ToolError::new(
            "invalid-args",
            format!("unknown action `{other}`"),
            format!("use one of {}", crate::library::tool_spec::ACTIONS.join(", ")),
        )),
    }?;
    Ok(value.to_string())
}

/// Whether this change is to a skill another team library created while this machine stages
/// such changes (`team.othersSkills: stage`). A skill without a library stamp is this machine's.
fn teammates_skill_to_stage(host: &impl Host, cx: &Context, args: &Args) -> bool {
    let team = &cx.config.team;
    if !team.stage_others || team.library.is_empty() {
        return false;
    }
    if !matches!(args.action.as_str(), "patch" | "edit" | "write_file" | "remove_file" | "archive") {
        return false;
    }
    let Some(name) = args.name.as_deref().filter(|n| skillfile::check_name(n).is_ok()) else { return false };
    let store = Store::new(host, cx.session);
    let Ok(location) = find(&store, name) else { return false };
    let Ok(bytes) = store.read(&location.root, &location.path()) else { return false };
    SkillFile::parse_bytes(&bytes)
        .ok()
        .and_then(|skill| skill.meta(meta::LIBRARY))
        .is_some_and(|library| library != team.library)
}

fn required<'a>(value: &'a Option<String>, field: &str, action: &str) -> Result<&'a str, ToolError> {
    value.as_deref().ok_or_else(|| {
        ToolError::new("invalid-args", format!("`{action}` needs `{field}`"), format!("add `{field}` to the arguments"))
    })
}

fn skill_name(args: &Args) -> Result<&str, ToolError> {
    let name = required(&args.name, "name", &args.action)?;
    skillfile::check_name(name).map_err(|why| {
        ToolError::new(
            "invalid-name",
            why,
            "use 1–64 lowercase letters, digits and single hyphens, e.g. `deploy-with-docker`",
        )
        .with_details(json!({"name": name}))
    })?;
    Ok(name)
}

/// One entry of `list`, serialized straight from the listing (no intermediate tree).
#[derive(Serialize)]
struct ListEntry<'a> {
    name: &'a str,
    scope: &'static str,
    layout: &'static str,
    description: &'a str,
    owned: bool,
    pinned: bool,
    status: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    warnings: &'a [String],
}

#[derive(Serialize)]
struct ListOutput<'a> {
    skills: Vec<ListEntry<'a>>,
    /// Skills in both scopes; `offset` and, when more follow, `next_offset` place the page.
    total: usize,
    offset: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_offset: Option<usize>,
    warnings: &'a [String],
}

/// Skills per `list` page unless the call asks otherwise, and the most it may ask for: a tool
/// result is read by a model, and 100 descriptions are already some 25 KB.
const LIST_PAGE: usize = 100;
const LIST_PAGE_MAX: usize = 1000;

/// Serialized straight to text: with thousands of skills an intermediate tree costs more
/// than the listing itself.
fn list(host: &impl Host, cx: &mut Context, args: &Args) -> Result<String, ToolError> {
    let offset = args.offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
    let limit = args.limit.map_or(LIST_PAGE, |l| usize::try_from(l).unwrap_or(usize::MAX).clamp(1, LIST_PAGE_MAX));
    let (skills, total, warnings) = Store::new(host, cx.session).list_page(cx.cache, offset, limit);
    let shown = offset.saturating_add(skills.len());
    let next_offset = (shown < total).then_some(shown);
    let entries: Vec<ListEntry> = skills
        .iter()
        .map(|s| ListEntry {
            name: &s.location.name,
            scope: s.location.scope.as_str(),
            layout: if s.location.layout == Layout::Package { "package" } else { "flat" },
            description: &s.summary.description,
            owned: s.summary.owned,
            pinned: s.summary.pinned,
            status: &s.summary.status,
            warnings: &s.summary.warnings,
        })
        .collect();
    serde_json::to_string(&ListOutput { skills: entries, total, offset, next_offset, warnings: &warnings })
        .map_err(|e| ToolError::new("io", format!("could not serialize the listing: {e}"), "retry"))
}

fn find(store: &Store<impl Host>, name: &str) -> Result<Location, ToolError> {
    store.locate(name)?.ok_or_else(|| no_such_skill(name))
}

fn no_such_skill(name: &str) -> ToolError {
    ToolError::new(
        "not-found",
        format!("no skill named `{name}` in either scope"),
        "call skill_manage with action `list` to see the skills",
    )
    .with_details(json!({"name": name}))
}

/// With write approval on, `archive-staged` while an archive of the skill waits for the operator
/// (`coalesce::stage_merged` checks again under the skill's lock).
fn refuse_staged_archive(host: &impl Host, cx: &Context, location: &Location) -> Result<(), ToolError> {
    match coalesce::pending_archive(host, &location.root, &location.name) {
        Some(archive) if cx.approval => Err(coalesce::archive_staged(&archive)),
        _ => Ok(()),
    }
}

/// With write approval on, the staged write pending for this file, if any (a change to the
/// file joins it; see `coalesce`).
fn staged_entry(host: &impl Host, cx: &Context, root: &Root, path: &str) -> Option<approval::Manifest> {
    if cx.approval { coalesce::pending_for(host, root, path).pop() } else { None }
}

fn view(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let store = Store::new(host, cx.session);
    let location = find(&store, name)?;
    let files = match location.layout {
        Layout::Package => store.package_files(&location.root, name)?.into_iter().filter(|f| f != "SKILL.md").collect(),
        Layout::Flat => Vec::new(),
    };
    let (path, bytes) = match &args.file_path {
        Some(file) => {
            check_resource_path(file)?;
            let path = format!("{name}/{file}");
            store.refuse_symlinks(&location.root, &path)?;
            (path.clone(), store.read(&location.root, &path)?)
        }
        None => (location.path(), store.read(&location.root, &location.path())?),
    };
    let content = String::from_utf8(bytes)
        .map_err(|_| ToolError::new("invalid-encoding", format!("`{path}` is not UTF-8 text"), "view another file"))?;
    let (owned, warnings) = match SkillFile::parse(&content) {
        Ok(skill) if args.file_path.is_none() => {
            (skill.is_ours(), skill.validate(Some(name)).into_iter().map(|v| v.message).collect::<Vec<_>>())
        }
        Ok(_) => (false, Vec::new()),
        Err(e) if args.file_path.is_none() => (false, vec![format!("cannot parse: {}", e.message)]),
        Err(_) => (false, Vec::new()),
    };
    cx.reads.mark(cx.session, cx.agent, name);
    Ok(json!({
        "name": name,
        "scope": location.scope.as_str(),
        "path": path,
        "content": content,
        "files": files,
        "owned": owned,
        "warnings": warnings,
    }))
}

/// The mutation guards: the winning skill exists, is ours, and this agent has read it.
fn mutable(host: &impl Host, cx: &Context, name: &str) -> Result<(Location, Vec<u8>, SkillFile), ToolError> {
    let store = Store::new(host, cx.session);
    let location = find(&store, name)?;
    let bytes = store.read(&location.root, &location.path())?;
    if let Err(err) = std::str::from_utf8(&bytes) {
        // A skill of ours with a bad byte is an encoding problem, not a question of ownership.
        if SkillFile::parse(&String::from_utf8_lossy(&bytes)).is_ok_and(|s| s.is_ours()) {
            let line = bytes[..err.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            return Err(ToolError::new(
                "invalid-encoding",
                format!("{} is not valid UTF-8 at line {line}", location.describe()),
                "ask the operator to fix or remove the bad byte; the plugin will not rewrite a file it cannot read exactly",
            )
            .with_details(json!({"name": name, "path": location.path(), "line": line})));
        }
    }
    let skill = SkillFile::parse_bytes(&bytes).ok().filter(SkillFile::is_ours).ok_or_else(|| {
        ToolError::new(
            "not-owned",
            format!(
                "the {} was not written by this plugin; bundled, installed and hand-written skills are read-only",
                location.describe()
            ),
            "create a new class-level skill instead, or ask the operator to change this one",
        )
        .with_details(json!({"name": name, "scope": location.scope.as_str(), "path": location.path()}))
    })?;
    if !cx.reads.has_read(cx.session, cx.agent, name) {
        return Err(ToolError::new(
            "not-read",
            format!("read `{name}` before changing it"),
            format!("call skill_manage with {{\"action\":\"view\",\"name\":\"{name}\"}} first, then retry"),
        )
        .with_details(json!({"name": name, "read": cx.reads.read_by(cx.session, cx.agent)})));
    }
    Ok((location, bytes, skill))
}

/// Checks a whole SKILL.md before it is written: format, size, secrets. Returns the warnings and
/// the credential findings to hold the write on (see `content_secrets`).
fn check_skill_text(
    cx: &Context,
    skill: &SkillFile,
    name: &str,
    text: &str,
    acknowledged: &[String],
) -> Result<(Vec<Finding>, Vec<Finding>), ToolError> {
    let violations = skill.validate(Some(name));
    if !violations.is_empty() {
        let details: Vec<Value> = violations.iter().map(|v| json!({"rule": v.rule, "message": v.message})).collect();
        return Err(ToolError::new(
            "invalid-frontmatter",
            format!("the skill breaks the Agent Skills format: {}", violations[0].message),
            "fix the listed rules; unknown settings belong under `metadata`",
        )
        .with_details(json!({"violations": details})));
    }
    check_size(text.len(), cx.config.limits.skill_bytes, "SKILL.md")?;
    let held = content_secrets(cx, text, acknowledged)?;
    let mut warnings = lint::scan_destructive(text);
    warnings.extend(lint::advise(skill.description().unwrap_or_default(), &skill.body));
    Ok((warnings, held))
}

fn check_size(len: usize, limit: usize, what: &str) -> Result<(), ToolError> {
    if len > limit {
        return Err(ToolError::new(
            "too-large",
            format!("{what} would be {len} bytes; the limit is {limit}"),
            "keep SKILL.md short and move detail into references/ files",
        )
        .with_details(json!({"bytes": len, "limit": limit})));
    }
    Ok(())
}

/// Credentials in the content that no operator acknowledgement covers. With write approval on
/// they are returned, and the write is *held* for the operator (who may judge a finding false);
/// otherwise the write is refused.
fn content_secrets(cx: &Context, text: &str, acknowledged: &[String]) -> Result<Vec<Finding>, ToolError> {
    let found = acknowledge::unacknowledged(scan::scan_secrets(text), acknowledged);
    if found.is_empty() || cx.approval {
        return Ok(found);
    }
    Err(secret_found("content", &found))
}

/// Refuses a credential in any field that is stored, shown or sent (a reason kept in a staged
/// write's manifest, a path that becomes a file name), naming the field.
fn scan_field(field: &str, text: &str) -> Result<(), ToolError> {
    let secrets = scan::scan_secrets(text);
    if secrets.is_empty() {
        return Ok(());
    }
    Err(secret_found(field, &secrets))
}

fn secret_found(field: &str, secrets: &[Finding]) -> ToolError {
    let findings: Vec<Value> =
        secrets.iter().map(|f| json!({"rule": f.rule, "line": f.line, "message": f.message})).collect();
    ToolError::new(
        "secret-found",
        format!("the {field} holds {} credential(s) ({}); nothing was written", secrets.len(), secrets[0].rule),
        "remove the secret and refer to it by name instead, e.g. `$GITHUB_TOKEN` from the environment",
    )
    .with_details(json!({"field": field, "findings": findings}))
}

fn warnings_json(findings: &[Finding]) -> Vec<Value> {
    findings
        .iter()
        .map(|f| json!({"rule": f.rule, "severity": f.severity.as_str(), "line": f.line, "message": f.message}))
        .collect()
}

/// One change to land: where, what it was based on, what it becomes (None: remove), and the
/// credential findings that hold it for the operator (empty for an ordinary write).
struct Write<'a> {
    operation: &'a str,
    name: &'a str,
    scope: Scope,
    root: &'a Root,
    path: &'a str,
    old: Option<&'a [u8]>,
    new: Option<&'a [u8]>,
    reason: &'a str,
    held: &'a [Finding],
    /// With approval on: the staged write to this file the new bytes were built on (see
    /// `coalesce::stage_merged`).
    built_on: Option<&'a str>,
}

/// Stages or writes the change; records the read and the use. A change with held findings is
/// staged as a held write and answered with `secret-found` naming it.
/// `exists` when a folder of this name without a SKILL.md holds someone's files: a create there
/// would adopt them (a script included) silently. Run by a direct create and by the approval of
/// a staged one alike.
pub(crate) fn refuse_foreign_folder(
    store: &Store<impl Host>,
    root: &Root,
    scope: Scope,
    name: &str,
) -> Result<(), ToolError> {
    if let Ok(stat) = store.host.stat(root, name)
        && stat.kind == crate::host::EntryKind::Dir
    {
        let files = store.package_files(root, name)?;
        if !files.is_empty() {
            return Err(ToolError::new(
                "exists",
                format!(
                    "the {} folder `{name}/` exists without a SKILL.md and holds {} file(s)",
                    scope.as_str(),
                    files.len()
                ),
                "choose another name, or ask the operator to remove or finish that folder",
            )
            .with_details(json!({"name": name, "files": files})));
        }
    }
    Ok(())
}

/// Under the skill's lock, `conflict` when `path` is a supporting file of a package whose SKILL.md
/// is gone: another process archived the skill (renamed its folder away) after the guards read
/// it. A new file's compare-and-swap cannot see that (it was absent then and is absent now), and
/// writing it would recreate `NAME/` as a folder without a SKILL.md. A change to the SKILL.md
/// itself needs no such check: the file it was based on is gone, so its own swap fails.
fn refuse_orphan(host: &impl Host, root: &Root, name: &str, path: &str) -> Result<(), ToolError> {
    let skill_md = format!("{name}/SKILL.md");
    if path == skill_md || !path.starts_with(&format!("{name}/")) {
        return Ok(());
    }
    match host.stat(root, &skill_md) {
        Ok(stat) if stat.kind == crate::host::EntryKind::File => Ok(()),
        Ok(_) | Err(FsError::NotFound) => Err(state_file::conflict(name).with_details(json!({
            "resource": name,
            "path": path,
            "missing": skill_md,
            "reason": "the skill was archived or removed by another process since it was read",
        }))),
        Err(err) => Err(fs_error(err, &skill_md)),
    }
}

/// `exists` when a skill of this name is in any scope.
fn refuse_existing(store: &Store<impl Host>, name: &str) -> Result<(), ToolError> {
    match store.locate(name)? {
        Some(existing) => Err(ToolError::new(
            "exists",
            format!("the {} already exists", existing.describe()),
            format!("view `{name}` and patch it instead of creating a new one"),
        )
        .with_details(json!({"name": name, "scope": existing.scope.as_str()}))),
        None => Ok(()),
    }
}

fn commit(host: &impl Host, cx: &mut Context, write: Write) -> Result<Value, ToolError> {
    let Write { operation, name, scope, root, path, old, new, reason, held, built_on } = write;
    if !held.is_empty() {
        let change = write_change(cx, operation, name, scope, path, old, new, reason);
        return Err(hold(host, &change, root, built_on, held));
    }
    let store = Store::new(host, cx.session);
    store.refuse_symlinks(root, path)?;
    let result = if cx.approval {
        let change = write_change(cx, operation, name, scope, path, old, new, reason);
        let manifest = coalesce::stage_merged(host, &change, root, built_on)?;
        let mut staged = json!({
            "status": "staged",
            "id": manifest.id,
            "path": path,
            "scope": scope.as_str(),
            "diff": approval::unified_diff(path, old, new),
            "note": "an operator must approve this write (/skills approve ID) before it takes effect",
        });
        // A change that joined staged writes to the same file names them: they are gone now.
        if !manifest.supersedes.is_empty() {
            staged["supersedes"] = json!(manifest.supersedes);
        }
        staged
    } else {
        // Compare and swap under the skill's lock: every process that changes this skill takes
        // it, and what this change was based on must still be what is on disk (a person's editor
        // takes no lock). The guards before ran without it, so a refusal leaves no trace.
        state_file::with_lock(host, &skill_lock(name), |_| {
            let current = match host.read(root, path) {
                Ok(bytes) => Some(bytes),
                Err(FsError::NotFound) => None,
                Err(err) => return Err(fs_error(err, path)),
            };
            if current.as_deref() != old {
                return Err(state_file::conflict(name).with_details(json!({"resource": name, "path": path})));
            }
            refuse_orphan(host, root, name, path)?;
            // The name in the other scope, created by another process since the guards ran,
            // would shadow this skill or be shadowed by it: taken (both scopes share this lock).
            if operation == "create" {
                refuse_existing(&store, name)?;
            }
            let author = history::Author { actor: cx.actor, by: cx.agent, session: cx.session, cwd: cx.cwd };
            let landing = history::Landing { skill: name, scope, path, operation, reason, before: old, after: new };
            history::around(host, &author, &landing, cx.config.history_versions, || match new {
                Some(bytes) => store.write_atomic(root, path, bytes),
                None => host.remove_file(root, path).map_err(|e| fs_error(e, path)).map(|()| {
                    if let Some((dir, _)) = path.rsplit_once('/') {
                        store.remove_empty_dirs(root, dir);
                    }
                }),
            })
        })?;
        if operation == "create" {
            cx.cache.forget_file(root, path);
        } else {
            cx.cache.forget(root, path);
        }
        json!({"status": "written", "path": path, "scope": scope.as_str()})
    };
    let now = host.now_ms();
    cx.reads.mark(cx.session, cx.agent, name);
    let mut records = vec![Record::Used(name, now)];
    if operation == "create" {
        records.insert(0, Record::Created(name, now));
    }
    if let Err(err) = cx.ledger.record(host, &records) {
        host.log(crate::host::Level::Warn, &format!("could not record the use in the ledger: {err}"));
    }
    Ok(result)
}

#[allow(clippy::too_many_arguments)]
fn write_change<'a>(
    cx: &'a Context,
    operation: &'a str,
    name: &'a str,
    scope: Scope,
    path: &'a str,
    old: Option<&'a [u8]>,
    new: Option<&'a [u8]>,
    reason: &'a str,
) -> Change<'a> {
    Change {
        operation,
        skill: name,
        scope,
        session: cx.session,
        agent: cx.agent,
        path,
        old,
        new,
        reason,
        held: &[],
        supersedes: &[],
        cwd: cx.cwd,
    }
}

/// Stages a write the scanner refused as a held write (write approval is on): nothing lands,
/// and the operator can accept each finding the agent could not have known was false.
fn hold(host: &impl Host, change: &Change, root: &Root, built_on: Option<&str>, findings: &[Finding]) -> ToolError {
    let held: Vec<approval::Held> = findings
        .iter()
        .map(|f| approval::Held {
            rule: f.rule.to_string(),
            line: f.line,
            fingerprint: f.fingerprint.clone().unwrap_or_default(),
        })
        .collect();
    let mut refused = secret_found("content", findings);
    match coalesce::stage_merged(host, &Change { held: &held, ..*change }, root, built_on) {
        Ok(manifest) => {
            refused.details["held"] = json!(manifest.id);
            refused.hint = format!(
                "remove the secret and refer to it by name instead (e.g. `$GITHUB_TOKEN`); the write is held as `{}` \
                 for the operator, who can land it only by accepting the finding if it is not a credential",
                manifest.id
            );
            refused
        }
        Err(err) => err,
    }
}

fn with_warnings(mut result: Value, warnings: &[Finding]) -> Value {
    result["warnings"] = Value::Array(warnings_json(warnings));
    result
}

fn create(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let description = required(&args.description, "description", "create")?;
    let body = args.body.as_deref().unwrap_or_default();
    let scope = match args.scope.as_deref() {
        None | Some("user") => Scope::User,
        Some("project") => Scope::Project,
        Some(other) => {
            return Err(ToolError::new("invalid-args", format!("unknown scope `{other}`"), "use `user` or `project`"));
        }
    };
    let store = Store::new(host, cx.session);
    let root = store.root_of(scope).ok_or_else(|| {
        ToolError::new(
            "no-scope",
            format!("the {} skills folder is not available in this session", scope.as_str()),
            "create the skill in the other scope",
        )
    })?;
    refuse_existing(&store, name)?;
    store.refuse_symlinks(&root, name)?;
    refuse_foreign_folder(&store, &root, scope, name)?;
    let (closest, exists) = store.closest(cx.cache, name, description, 3, cx.config.duplicate_threshold);
    // Another process created this very name between the existence check and this one.
    if exists {
        return Err(ToolError::new(
            "exists",
            format!("`{name}` was created meanwhile (by another session or process)"),
            format!("view `{name}` and patch it instead of creating a new one"),
        )
        .with_details(json!({"name": name})));
    }
    if closest.first().is_some_and(|m| m.score >= cx.config.duplicate_threshold) {
        let list: Vec<Value> = closest.iter().map(|m| json!({"name": m.name, "score": m.score})).collect();
        return Err(ToolError::new(
            "duplicate",
            format!("`{name}` looks like a duplicate of `{}` (similarity {:.2})", closest[0].name, closest[0].score),
            format!("view `{}` and patch it instead; one class-level skill per lesson", closest[0].name),
        )
        .with_details(json!({"closest": list, "threshold": cx.config.duplicate_threshold})));
    }
    if cx.approval {
        coalesce::refuse_staged_duplicate(host, cx.session, name, description, cx.config.duplicate_threshold)?;
    }
    let mut skill = SkillFile {
        fields: vec![("name".into(), Yaml::str(name)), ("description".into(), Yaml::str(description))],
        body: if body.is_empty() || body.ends_with('\n') { body.to_string() } else { format!("{body}\n") },
    };
    skill.stamp(&time::iso(host.now_ms()));
    if !cx.config.team.library.is_empty() {
        skill.set_meta(meta::LIBRARY, &cx.config.team.library);
    }
    let text = skill.to_text();
    let (warnings, held) = check_skill_text(cx, &skill, name, &text, &[])?;
    let path = format!("{name}/SKILL.md");
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "create",
        name,
        scope,
        root: &root,
        path: &path,
        old: None,
        new: Some(text.as_bytes()),
        reason,
        held: &held,
        built_on: None,
    };
    let result = commit(host, cx, write)?;
    if result["status"] == "written" {
        let location = Location { scope, layout: Layout::Package, root: root.clone(), name: name.to_string() };
        store.note_created(cx.cache, &location, description);
    }
    Ok(with_warnings(result, &warnings))
}

fn replace_checked(text: &str, old: &str, new: &str, replace_all: bool, limit: usize) -> Result<String, ToolError> {
    if old.is_empty() {
        return Err(ToolError::new(
            "invalid-args",
            "`old_string` is empty",
            "copy the exact text to replace from `view`",
        ));
    }
    let count = text.matches(old).count();
    // Sized before it is built: `replace_all` of a one-byte string by a long one could otherwise
    // grow the text past the instance's memory before any bound looked at it.
    let grown = text.len().saturating_add(count.saturating_mul(new.len().saturating_sub(old.len())));
    if count > 0 && (count == 1 || replace_all) {
        check_size(grown, limit, "SKILL.md")?;
    }
    match count {
        0 => Err(ToolError::new(
            "no-match",
            "`old_string` does not occur in the skill",
            "view the skill again and copy the exact text, including whitespace",
        )),
        1 => Ok(text.replacen(old, new, 1)),
        _ if replace_all => Ok(text.replace(old, new)),
        n => Err(ToolError::new(
            "ambiguous",
            format!("`old_string` occurs {n} times"),
            "include more surrounding text so it is unique, or set replace_all",
        )
        .with_details(json!({"occurrences": n}))),
    }
}

/// Re-reads changed text as a skill that must keep its name and the fields the operator or the
/// host owns (`meta::OWNED`, as `previous` has them: the disk's, or a staged write's built on the
/// disk's); re-stamps it.
fn restamp(host: &impl Host, text: &str, name: &str, previous: &SkillFile) -> Result<(SkillFile, String), ToolError> {
    let mut skill = SkillFile::parse(text).map_err(|e| {
        ToolError::new(
            "invalid-frontmatter",
            format!("the result is not a valid SKILL.md: {}", e.message),
            "keep the `---` frontmatter intact",
        )
        .with_details(json!({"line": e.line}))
    })?;
    let refused = |message: String, hint: String| Err(ToolError::new("invalid-frontmatter", message, hint));
    match (skill.name(), previous.name()) {
        (Some(now), _) if now == name => {}
        (None, _) => {
            return refused(
                format!("the result has no `name` in its frontmatter; `{name}` needs `name: {name}`"),
                format!("keep `name: {name}` in the frontmatter"),
            );
        }
        (Some(now), Some(before)) if now == before => {
            return refused(
                format!("the skill's `name` is `{now}` but its folder is `{name}`; a skill's name equals its folder"),
                format!("set `name: {name}` in the frontmatter"),
            );
        }
        (Some(now), _) => {
            return refused(
                format!("the change renames `{name}` to `{now}`; a skill keeps its name"),
                "create a new skill for a new name".to_string(),
            );
        }
    }
    // What the operator or the host owns is not the change's to say, whether its text leaves it
    // out, changes it or adds it: the pin and the status keep the curator's hands where the
    // operator put them, the library decides who may patch the skill, only an operator's approval
    // acknowledges a finding, and the stamp counts on from the file's own version and creation.
    skill.keep_owned(previous);
    skill.stamp(&time::iso(host.now_ms()));
    let text = skill.to_text();
    Ok((skill, text))
}

fn patch(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let old_string = required(&args.old_string, "old_string", "patch")?;
    let new_string = required(&args.new_string, "new_string", "patch")?;
    let base = base(host, cx, name)?;
    let current = String::from_utf8_lossy(&base.bytes);
    let patched = replace_checked(&current, old_string, new_string, args.replace_all, cx.config.limits.skill_bytes)?;
    rewrite(host, cx, "patch", &base, &patched, args)
}

fn edit(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let content = required(&args.content, "content", "edit")?;
    check_size(content.len(), cx.config.limits.skill_bytes, "SKILL.md")?;
    let base = base(host, cx, name)?;
    rewrite(host, cx, "edit", &base, content, args)
}

/// What a change to a skill builds on: where the skill is, its SKILL.md on disk (`None` for a
/// create still staged), and the SKILL.md the change applies to: with write approval on and a
/// staged write pending for it, that write's bytes (the change joins it), else the disk's.
struct Base {
    location: Location,
    disk: Option<Vec<u8>>,
    built_on: Option<String>,
    bytes: Vec<u8>,
    skill: SkillFile,
}

fn base(host: &impl Host, cx: &Context, name: &str) -> Result<Base, ToolError> {
    let (location, disk, skill) = match mutable(host, cx, name) {
        Ok((location, bytes, skill)) => (location, Some(bytes), Some(skill)),
        // A skill this agent created with approval on exists only as a staged create.
        Err(err) if err.code == "not-found" && cx.approval && cx.reads.has_read(cx.session, cx.agent, name) => {
            let Some(staged) = coalesce::pending_create(host, cx.session, name) else { return Err(err) };
            let scope = Scope::from_stored(&staged.scope);
            (Location { scope, layout: Layout::Package, root: staged.root(), name: name.to_string() }, None, None)
        }
        Err(err) => return Err(err),
    };
    refuse_staged_archive(host, cx, &location)?;
    let pending = staged_entry(host, cx, &location.root, &location.path());
    let staged = match &pending {
        Some(manifest) => coalesce::staged_bytes(host, manifest)?,
        None => None,
    };
    // A staged write made against a file that has changed since is not built on: approving
    // the merge would land over the newer file without the drift check its base gives.
    if let Some(manifest) = &pending
        && manifest.base_sha256 != disk.as_deref().map(approval::sha256_hex)
    {
        return Err(coalesce::stale(manifest));
    }
    let built_on = pending.map(|m| m.id);
    let (bytes, skill) = match (staged, disk.clone(), skill) {
        (Some(bytes), _, _) => {
            let skill = SkillFile::parse_bytes(&bytes).map_err(|e| {
                ToolError::new(
                    "invalid-frontmatter",
                    format!("the staged SKILL.md of `{name}` does not parse: {}", e.message),
                    "ask the operator to reject the staged write, then make the change again",
                )
            })?;
            (bytes, skill)
        }
        (None, Some(bytes), Some(skill)) => (bytes, skill),
        _ => return Err(no_such_skill(name)),
    };
    Ok(Base { location, disk, built_on, bytes, skill })
}

/// The shared end of `patch` and `edit`: re-stamp the new text, check it, stage or write it.
fn rewrite(
    host: &impl Host,
    cx: &mut Context,
    operation: &str,
    base: &Base,
    new_text: &str,
    args: &Args,
) -> Result<Value, ToolError> {
    let location = &base.location;
    let name = location.name.as_str();
    let (skill, text) = restamp(host, new_text, name, &base.skill)?;
    let (warnings, held) = check_skill_text(cx, &skill, name, &text, &acknowledge::of(&base.skill))?;
    let reason = args.reason.as_deref().unwrap_or_default();
    let path = location.path();
    let write = Write {
        operation,
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: base.disk.as_deref(),
        new: Some(text.as_bytes()),
        reason,
        held: &held,
        built_on: base.built_on.as_deref(),
    };
    let result = commit(host, cx, write)?;
    Ok(with_warnings(result, &warnings))
}

fn package(location: &Location) -> Result<(), ToolError> {
    if location.layout == Layout::Flat {
        return Err(ToolError::new(
            "not-a-package",
            format!("`{}` is a flat skill ({}) and cannot hold supporting files", location.name, location.path()),
            "put the material in the skill body instead",
        ));
    }
    Ok(())
}

fn write_file(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let file = required(&args.file_path, "file_path", "write_file")?;
    let content = required(&args.content, "content", "write_file")?;
    check_resource_path(file)?;
    let Base { location, skill: skill_md, .. } = base(host, cx, name)?;
    package(&location)?;
    check_size(content.len(), cx.config.limits.file_bytes, file)?;
    let held = content_secrets(cx, content, &acknowledge::of(&skill_md))?;
    let warnings = lint::scan_destructive(content);
    let path = format!("{name}/{file}");
    let old = match host.read(&location.root, &path) {
        Ok(bytes) => Some(bytes),
        Err(FsError::NotFound) => None,
        Err(err) => return Err(fs_error(err, &path)),
    };
    // The whole file is replaced: a staged write to it is superseded, not built on.
    let built_on = staged_entry(host, cx, &location.root, &path).map(|m| m.id);
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "write_file",
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: old.as_deref(),
        new: Some(content.as_bytes()),
        reason,
        held: &held,
        built_on: built_on.as_deref(),
    };
    let result = commit(host, cx, write)?;
    Ok(with_warnings(result, &warnings))
}

fn remove_file(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let file = required(&args.file_path, "file_path", "remove_file")?;
    check_resource_path(file)?;
    let (location, _, _) = mutable(host, cx, name)?;
    package(&location)?;
    refuse_staged_archive(host, cx, &location)?;
    let path = format!("{name}/{file}");
    Store::new(host, cx.session).refuse_symlinks(&location.root, &path)?;
    let old = host.read(&location.root, &path).map_err(|e| fs_error(e, &path))?;
    // A staged write to the file is superseded by its removal.
    let built_on = staged_entry(host, cx, &location.root, &path).map(|m| m.id);
    let reason = args.reason.as_deref().unwrap_or_default();
    let write = Write {
        operation: "remove_file",
        name,
        scope: location.scope,
        root: &location.root,
        path: &path,
        old: Some(&old),
        new: None,
        reason,
        held: &[],
        built_on: built_on.as_deref(),
    };
    commit(host, cx, write)
}

/// Moves a skill into `archive/` in the state root (never deletes; `/skills restore` brings it
/// back). Under the approval rule as every change: with write approval on, staged for the
/// operator, who approves it (then it is made as here) or rejects it (the skill stays).
fn archive(host: &impl Host, cx: &mut Context, args: &Args) -> Result<Value, ToolError> {
    let name = skill_name(args)?;
    let (location, bytes, skill) = match mutable(host, cx, name) {
        // A skill created with approval on is not in the library until its create is approved.
        Err(err) if err.code == "not-found" && cx.approval => match coalesce::pending_create(host, cx.session, name) {
            Some(create) => {
                return Err(ToolError::new(
                    "not-found",
                    format!("`{name}` exists only as a staged create (`{}`); there is nothing to archive", create.id),
                    format!("ask the operator to reject `{}` (`/skills reject {}`) instead", create.id, create.id),
                )
                .with_details(json!({"name": name, "staged": create.id})));
            }
            None => return Err(err),
        },
        found => found?,
    };
    if skill.is_pinned() {
        return Err(ToolError::new("pinned", format!("`{name}` is pinned"), "ask the operator to unpin it first"));
    }
    if cx.approval {
        let path = location.path();
        let reason = args.reason.as_deref().unwrap_or_default();
        let change = write_change(cx, approval::ARCHIVE, name, location.scope, &path, Some(&bytes), None, reason);
        let (manifest, files) = coalesce::stage_archive(host, &change, &location)?;
        cx.reads.mark(cx.session, cx.agent, name);
        let mut staged = json!({
            "status": "staged",
            "id": manifest.id,
            "name": name,
            "path": path,
            "scope": location.scope.as_str(),
            "files": files,
            "note": "an operator must approve this archive (/skills approve ID) before the skill leaves the library",
        });
        // Writes staged for the skill's files before it are part of what leaves: gone now.
        if !manifest.supersedes.is_empty() {
            staged["supersedes"] = json!(manifest.supersedes);
        }
        return Ok(staged);
    }
    let reason = args.reason.as_deref().unwrap_or("archived by the agent");
    let archived = state_file::with_lock(host, &skill_lock(name), |lock| {
        // The skill as it was judged, or a conflict: another process may have changed it.
        let store = Store::new(host, cx.session);
        if store.read(&location.root, &location.path()).ok().as_deref() != Some(bytes.as_slice()) {
            return Err(state_file::conflict(name));
        }
        archive_location(host, cx.session, &location, reason, lock)
    })?;
    cx.cache.forget(&location.root, &location.path());
    Ok(json!({"status": "archived", "name": name, "archive": archived}))
}

#[cfg(test)]
#[path = "skill_manage_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "governance_tests.rs"]
mod governance_tests;
