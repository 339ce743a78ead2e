//! `self-evolve setup HARNESS`, a service of the CLI: puts this binary into an agent harness in one
//! step — its MCP server entry and, where the harness has hooks, the hook handlers (`harness`),
//! each merged into the file the harness already has without losing a key, a comment or the order
//! (`jsonc`, `toml`, `yaml`), plus the home and a `host.json` whose reviewer fits the harness.
//! Every file is planned and parsed before any is written, so a file it cannot read safely stops
//! the whole run with nothing changed; a changed file is backed up first and replaced atomically.
//! `--remove` takes out exactly what setup puts in. Uses only the home.

pub mod harness;
pub mod jsonc;
pub mod toml;
pub mod value;
pub mod write;
pub mod yaml;
pub mod yaml_lists;

use anyhow::{Context, Result, bail};
use harness::{Change, FilePlan, Format, Harness, Launch, Places};
use std::path::{Path, PathBuf};
use value::is_our_hook_command;

pub struct Options {
    pub harness: Harness,
    /// The project folder (project scope), or `None` (user scope).
    pub project: Option<PathBuf>,
    pub home: PathBuf,
    /// The home was named (`--home` or `$SELF_EVOLVE_HOME`): the entries carry it.
    pub home_named: bool,
    pub binary: PathBuf,
    pub places: Places,
    pub dry_run: bool,
    pub remove: bool,
    /// Only the home's files (a plugin brings the entries).
    pub home_only: bool,
}

/// What happened to one file.
#[derive(Debug, Clone)]
pub struct FileOutcome {
    pub path: PathBuf,
    /// `created`, `updated`, `removed` (the file held only what setup wrote), `unchanged`.
    pub action: &'static str,
    pub backup: Option<PathBuf>,
    pub diff: String,
}

/// A file's text before and after.
struct Edit {
    path: PathBuf,
    before: Option<String>,
    after: Option<String>,
}

/// Plans, checks and (unless `dry_run`) writes; the outcomes are in file order.
pub fn run(options: &Options) -> Result<Vec<FileOutcome>> {
    if options.harness == Harness::Hermes && options.project.is_some() {
        bail!(
            "Hermes reads MCP servers only from its own config.yaml (~/.hermes, or $HERMES_HOME): run `self-evolve setup hermes` without --project"
        );
    }
    let launch = Launch { binary: options.binary.clone(), home: options.home_named.then(|| options.home.clone()) };
    let mut plans = if options.home_only {
        Vec::new()
    } else {
        harness::plan(options.harness, options.project.as_deref(), &options.places, &launch)
    };
    if !options.remove {
        plans.extend(home_plans(options, &launch));
    }
    let mut edits = Vec::new();
    for plan in &plans {
        let edit = edit_file(plan, options.remove)
            .with_context(|| format!("{} was left as it was; nothing was changed", plan.path.display()))?;
        edits.push(edit);
    }
    let mut outcomes = Vec::new();
    for edit in &edits {
        let action = match (&edit.before, &edit.after) {
            (before, after) if before == after => "unchanged",
            (None, Some(_)) => "created",
            (Some(_), None) => "removed",
            _ => "updated",
        };
        outcomes.push(FileOutcome {
            path: edit.path.clone(),
            action,
            backup: None,
            diff: write::diff(&edit.path, edit.before.as_deref(), edit.after.as_deref()),
        });
    }
    if !options.dry_run {
        if !options.remove {
            for dir in [options.home.join("skills"), options.home.join("self-evolve")] {
                std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            }
        }
        for (edit, outcome) in edits.iter().zip(outcomes.iter_mut()) {
            if outcome.action != "unchanged" {
                outcome.backup = write::replace(&edit.path, edit.before.as_deref(), edit.after.as_deref())?;
            }
        }
    }
    Ok(outcomes)
}

/// The home's own files: `host.json` with the harness's reviewer (when it has none yet) and, for
/// Claude Code, the MCP config its reviewer loads.
fn home_plans(options: &Options, launch: &Launch) -> Vec<FilePlan> {
    let reviewer_mcp = options.home.join("reviewer-mcp.json");
    let Some(reviewer) = harness::reviewer(options.harness, launch, &reviewer_mcp) else { return Vec::new() };
    let mut plans = vec![FilePlan {
        path: options.home.join("host.json"),
        format: Format::Json,
        changes: vec![Change::Default { key: "reviewer", value: reviewer }],
    }];
    if options.harness == Harness::Claude {
        let server = harness::reviewer_mcp(launch);
        let entry = server.pairs()[0].1.pairs()[0].1.clone();
        plans.push(FilePlan {
            path: reviewer_mcp,
            format: Format::Json,
            changes: vec![Change::Entry { path: vec!["mcpServers"], name: "self-evolve", entry }],
        });
    }
    plans
}

/// Reads, parses and edits one file in memory.
fn edit_file(plan: &FilePlan, remove: bool) -> Result<Edit> {
    let path = write::target(&plan.path)?;
    let before = match crate::home::files::read_config(&path, write::MAX_CONFIG_BYTES)? {
        Some(bytes) => Some(String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("it is not UTF-8 text"))?),
        None => None,
    };
    let mut after = apply(plan, before.as_deref(), remove)?;
    // Removing what setup wrote where the file is still exactly what setup made of its backup:
    // the backup is the file without us, to the byte (a one-line list setup had to spread over
    // lines comes back on one line).
    if remove
        && let Some(before) = &before
        && let Some(backup) = write::latest_backup(&path)
        && let Ok(Some(setup_made)) = apply(plan, Some(&backup), false)
        && setup_made == *before
    {
        after = Some(backup);
    }
    Ok(Edit { path, before, after })
}

/// The file's text after the plan's changes (`None`: no file).
fn apply(plan: &FilePlan, before: Option<&str>, remove: bool) -> Result<Option<String>> {
    let text = before.unwrap_or_default().to_string();
    let ours = |v: &serde_json::Value| v["command"].as_str().is_some_and(is_our_hook_command);
    let after = match plan.format {
        Format::Json | Format::Jsonc => {
            let doc = jsonc::JsonDoc::parse(&text, plan.format == Format::Jsonc)?;
            for change in &plan.changes {
                match (change, remove) {
                    (Change::Entry { path, name, entry }, false) => doc.set_entry(path, name, entry).map(drop)?,
                    (Change::Entry { path, name, .. }, true) => doc.remove_entry(path, name).map(drop)?,
                    (Change::Hooks { path, shape, hooks }, false) => {
                        doc.set_hooks(path, *shape, hooks, &ours).map(drop)?
                    }
                    (Change::Hooks { path, shape, .. }, true) => doc.remove_hooks(path, *shape, &ours).map(drop)?,
                    (Change::Default { key, value }, false) => doc.set_default(key, value)?,
                    (Change::Default { .. } | Change::DropOurProgram { .. }, _) => {}
                }
            }
            let left = doc.value();
            let only_defaults = left.as_object().is_some_and(|o| {
                o.iter().all(|(k, _)| plan.changes.iter().any(|c| matches!(c, Change::Default { key, .. } if key == k)))
            });
            // What holds nothing but what setup wrote goes with it (the file was not there before).
            if remove && only_defaults { None } else { Some(doc.text()) }
        }
        Format::Toml => {
            let mut doc = toml::TomlDoc::parse(&text)?;
            for change in &plan.changes {
                match (change, remove) {
                    (Change::Entry { path, name, entry }, false) => doc.set_entry(path[0], name, entry).map(drop)?,
                    (Change::Entry { path, name, .. }, true) => doc.remove_entry(path[0], name).map(drop)?,
                    (Change::DropOurProgram { key }, _) => drop(doc.remove_our_program(key)),
                    _ => {}
                }
            }
            let after = doc.text();
            if remove && after.trim().is_empty() { None } else { Some(after) }
        }
        Format::Yaml => {
            let mut doc = yaml::YamlDoc::parse(&text)?;
            for change in &plan.changes {
                match (change, remove) {
                    (Change::Entry { path, name, entry }, false) => doc.set_entry(path[0], name, entry).map(drop)?,
                    (Change::Entry { path, name, .. }, true) => doc.remove_entry(path[0], name).map(drop)?,
                    (Change::Hooks { path, hooks, .. }, false) => {
                        for hook in hooks {
                            doc.set_list_item(path[0], &hook.event, &hook.handler, &ours)?;
                        }
                    }
                    (Change::Hooks { path, .. }, true) => drop(doc.remove_list_items(path[0], &ours)?),
                    _ => {}
                }
            }
            let after = doc.text();
            if remove && after.trim().is_empty() { None } else { Some(after) }
        }
    };
    // Nothing there and nothing to write: still nothing.
    Ok(if before.is_none() && (remove || plan.changes.is_empty()) { None } else { after })
}

/// The default for `--home`'s mention in entries: named when it is not `~/.dsh`.
pub fn home_is_named(home: &Path) -> bool {
    let default = crate::home::default_home();
    std::env::var_os("SELF_EVOLVE_HOME").is_some_and(|v| !v.is_empty()) || home != default
}

/// The changes as a JSON report (`--json`).
pub fn report_json(options: &Options, outcomes: &[FileOutcome]) -> serde_json::Value {
    serde_json::json!({
        "harness": options.harness.name(),
        "scope": if options.project.is_some() { "project" } else { "user" },
        "remove": options.remove,
        "dryRun": options.dry_run,
        "binary": options.binary.display().to_string(),
        "home": options.home.display().to_string(),
        "files": outcomes.iter().map(|o| serde_json::json!({
            "path": o.path.display().to_string(),
            "action": o.action,
            "backup": o.backup.as_ref().map(|b| b.display().to_string()),
        })).collect::<Vec<_>>(),
    })
}

/// Refuses a harness setup cannot name, listing those it can.
pub fn harness_named(name: &str) -> Result<Harness> {
    match Harness::parse(name) {
        Some(harness) => Ok(harness),
        None => bail!(
            "no harness `{}`; setup knows {}",
            self_evolve_host::text::visible(name),
            Harness::ALL.map(Harness::name).join(", ")
        ),
    }
}
