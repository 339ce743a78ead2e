//! The home, the ground floor of the product: the folder every front door and service works on —
//! `<home>/skills` (user scope), `<home>/self-evolve` (state), for replays one project at
//! `<home>/project/.dsh/skills` — and the operator's files in it: `config.json` (the plugin's
//! config), `host.json` (`host_file`: reviewers, hooks, endpoints, `git_config`, `openai`), read
//! through `files` so that nothing at their path can hang a process. Uses only the host library;
//! the files here never use this one (it reads them).

pub mod files;
pub mod git_config;
pub mod host_file;
pub mod openai;

use self_evolve_host::caps::fs::{FsConfig, ProjectRoots};
use std::path::{Path, PathBuf};

/// `$SELF_EVOLVE_HOME`, else `~/.dsh` (the layout of seed 002's on-disk contract).
/// An empty variable counts as unset, and the home is always absolute: a relative one would make
/// whatever folder a command runs in (a cloned repository) the home, its `host.json` included.
pub fn default_home() -> PathBuf {
    let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home =
        set("SELF_EVOLVE_HOME").unwrap_or_else(|| set("HOME").unwrap_or_else(|| PathBuf::from("/")).join(".dsh"));
    std::path::absolute(&home).unwrap_or(home)
}

pub fn user_skills(home: &Path) -> PathBuf {
    home.join("skills")
}

pub fn state(home: &Path) -> PathBuf {
    home.join("self-evolve")
}

pub fn replay_project(home: &Path) -> PathBuf {
    home.join("project/.dsh/skills")
}

/// The operator's config: `<home>/config.json`, the JSON object the plugin's `init` takes (see
/// `self-evolve config --defaults`), or `{}` when there is none. It lives beside the roots, not
/// in one: the plugin cannot write it, so an agent cannot loosen its own policy.
pub fn operator_config(home: &Path) -> anyhow::Result<String> {
    use anyhow::Context;
    let path = home.join("config.json");
    // Read without blocking and up to its bound: a FIFO or `/dev/zero` here must not hang or
    // exhaust a hook, which reads it under the plugin-call lock.
    let text = match crate::home::files::read_config(&path, 1 << 20)? {
        Some(bytes) => String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", path.display()))?,
        None => "{}".to_string(),
    };
    let mut value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    anyhow::ensure!(value.is_object(), "{} must hold a JSON object", path.display());
    // A team library: the plugin stamps this machine's library name (host.json's `git.library`)
    // unless the operator set `team.library` themselves.
    let library = crate::home::host_file::HostFile::load(home).ok().and_then(|f| f.git).map(|g| g.library);
    if let Some(library) = library
        && value.pointer("/team/library").is_none()
    {
        let team = value.as_object_mut().map(|o| o.entry("team").or_insert_with(|| serde_json::json!({})));
        if let Some(team) = team.and_then(|t| t.as_object_mut()) {
            team.insert("library".into(), library.into());
            return Ok(value.to_string());
        }
    }
    Ok(text)
}

/// The project of operator commands: `project` (`--project`), else the nearest folder holding
/// `.git` or `.dsh` above the current directory.
pub fn operator_project(project: Option<&Path>) -> Option<PathBuf> {
    let found = || {
        std::env::current_dir().ok().and_then(|cwd| {
            cwd.ancestors().find(|d| d.join(".git").exists() || d.join(".dsh").is_dir()).map(Path::to_path_buf)
        })
    };
    project.map(Path::to_path_buf).or_else(found)
}

/// Roots for operator commands: the skills folder of `operator_project`.
pub fn fs_config(home: &Path, project: Option<&Path>) -> FsConfig {
    let projects = ProjectRoots {
        default_project: operator_project(project).map(|p| p.join(".dsh/skills")),
        ..ProjectRoots::default()
    };
    FsConfig { user_skills: Some(user_skills(home)), state: Some(state(home)), projects, ..FsConfig::default() }
}

/// Roots for a replay: every session works in the one replay project.
pub fn replay_fs_config(home: &Path) -> FsConfig {
    let projects =
        ProjectRoots { discover: false, default_project: Some(replay_project(home)), ..ProjectRoots::default() };
    FsConfig { user_skills: Some(user_skills(home)), state: Some(state(home)), projects, ..FsConfig::default() }
}
