//! Defines the operator's `/skills` line as every front door runs it: `self-evolve skills WORDS`
//! and the console's reads and actions go through this one path, so neither adds a rule of its
//! own and a refusal reads the same, byte for byte, wherever it is shown. A service: it stands on
//! the home (roots, `config.json`, identity), the git tree (a team library's commit) and the host
//! library; the front doors only print or serve what it answers.

use crate::{component, home, identity};
use anyhow::{Result, anyhow};
use self_evolve_host::{HostConfig, Plugin};
use std::path::{Path, PathBuf};

/// The plugin of one operator's home, initialised as the CLI initialises it.
pub struct Operator {
    plugin: Plugin,
    home: PathBuf,
    /// The config the plugin was last given: a console that runs for hours follows edits of
    /// `config.json` as a new `self-evolve skills` process would.
    config: String,
}

/// What the plugin answered, shown as the CLI shows it: `ok` goes to stdout, a refusal to stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub ok: bool,
    pub text: String,
}

/// The CLI runs no agents: `review now` says so instead of starting a child nobody runs.
fn services() -> Vec<String> {
    vec!["commands".to_string()]
}

/// Whether a `/skills` line may land a change in the library (what a team library commits).
fn lands(words: &[String]) -> bool {
    let words: Vec<&str> = words.iter().map(String::as_str).filter(|w| *w != "--json").collect();
    match words.as_slice() {
        ["approve" | "revert" | "pin" | "unpin" | "archive" | "restore", ..] => true,
        ["curator", "run", rest @ ..] => !rest.contains(&"--dry-run"),
        _ => false,
    }
}

impl Operator {
    /// Loads the component over `home` (and `project`'s skills folder, else the one found above
    /// the working directory) and initialises it with the operator's config.
    pub fn open(home: &Path, project: Option<&Path>, wasm: &component::Source) -> Result<Operator> {
        let config = HostConfig { fs: home::fs_config(home, project), ..HostConfig::default() };
        let mut plugin = Plugin::from_bytes(&wasm.bytes()?, config)?;
        let config_json = home::operator_config(home)?;
        plugin.init(&config_json, &services())?.map_err(|e| anyhow!("{}: {}", e.key, e.message))?;
        Ok(Operator { plugin, home: home.to_path_buf(), config: config_json })
    }

    /// Starts the plugin afresh over the same home (what a new `self-evolve skills` process
    /// sees): a long-lived caller does so when another process changed the home, since the
    /// plugin keeps some of the home's state in memory between calls (review on/off, breakers).
    pub fn reload(&mut self) -> Result<()> {
        self.plugin.restart().map_err(|e| anyhow!("restarting the plugin: {e}"))
    }

    /// Runs one `/skills` line (`words`, `--json` among them for a JSON answer) as the operator,
    /// or inside a live reviewer as that reviewer, whom the plugin refuses every change. `Err` is
    /// a failure of the host (the component trapped, `config.json` broke), not a refusal.
    pub fn run(&mut self, words: &[String]) -> Result<Answer> {
        let config_json = home::operator_config(&self.home)?;
        if config_json != self.config {
            self.plugin.init(&config_json, &services())?.map_err(|e| anyhow!("{}: {}", e.key, e.message))?;
            self.config = config_json;
        }
        let ctx = identity::command_context("cli");
        // The plugin already shows hidden characters in text answers; the host does too, in case
        // a plugin does not. A `--json` answer is for programs: the same value, with what a
        // terminal would obey written as JSON escapes.
        let json = words.iter().any(|a| a == "--json");
        let shown = |text: String| {
            if json {
                self_evolve_host::text::visible_json(&text).into_owned()
            } else {
                self_evolve_host::text::visible_lines(&text)
            }
        };
        let answer = self.plugin.command(&ctx, &words.join(" "))?;
        // A team library: an approval, revert or archive becomes a commit. A read commits nothing
        // (a person's half-made edit of a skill is theirs to commit, not the next listing's).
        if lands(words)
            && let Some(git) = home::host_file::HostFile::load(&self.home).ok().and_then(|f| f.git)
            && let Err(err) = crate::git::commit_landed(&self.home, &git)
        {
            eprintln!("self-evolve: git commit: {}", self_evolve_host::text::shown_error(&format!("{err:#}")));
        }
        Ok(match answer {
            Ok(text) => Answer { ok: true, text: shown(text) },
            Err(text) => Answer { ok: false, text: shown(text) },
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_line_that_may_land_a_change_is_committed() {
        let words = |line: &str| line.split(' ').map(str::to_string).collect::<Vec<_>>();
        for line in
            ["approve 1-a", "revert deploy 2", "pin deploy", "unpin deploy", "archive x", "restore x", "curator run"]
        {
            assert!(super::lands(&words(line)), "{line}");
        }
        for line in
            ["list", "show deploy", "pending --json", "diff 1-a", "log deploy", "curator run --dry-run", "reject 1-a"]
        {
            assert!(!super::lands(&words(line)), "{line}");
        }
    }
}
