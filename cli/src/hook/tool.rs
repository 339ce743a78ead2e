//! What a tool result in a hook event is to the plugin, for every harness: a skill load (a skill
//! tool's use, or a read of a `SKILL.md` in the library, by a read tool or a shell command) or an
//! ordinary tool event, its fields clipped. `claude`, `codex_hooks`, `gemini` and `cursor` name
//! their tools; this file decides what a name and a path mean.

use super::deliver::{Action, HookEvent, Outcome, deliver};
use crate::component::Source;
use crate::home;
use self_evolve_host::plugin::{ToolEvent, TurnStatus};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Tool arguments and output passed on are clipped to this (the plugin keeps no output).
pub const MAX_FIELD_BYTES: usize = 64 << 10;

/// Programs an agent without a read tool (Codex) prints a file with.
const READERS: &[&str] = &["cat", "head", "tail", "sed", "less", "more", "bat", "nl"];

/// A name a library skill can have (the plugin's rule: 1-64 of `a-z 0-9 -`, no leading, trailing
/// or doubled `-`). Anything else is no skill of the library, so its use registers no read.
pub fn is_skill_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// Where the library's skills live for this event: the user's folder and the project's.
pub struct SkillRoots {
    pub folders: Vec<PathBuf>,
}

impl SkillRoots {
    pub fn for_event(home: &Path, cwd: &str) -> SkillRoots {
        let mut folders = vec![home::user_skills(home)];
        let project = Path::new(cwd).ancestors().find(|d| d.join(".git").exists() || d.join(".dsh").is_dir());
        if let Some(project) = project {
            folders.push(project.join(".dsh/skills"));
        }
        SkillRoots { folders: folders.into_iter().map(|f| std::fs::canonicalize(&f).unwrap_or(f)).collect() }
    }

    /// The skill a `SKILL.md` path names, when it is one of the library's (`<root>/<name>/SKILL.md`).
    pub fn skill_of(&self, file: &str) -> Option<String> {
        let path = Path::new(file);
        if path.file_name()? != "SKILL.md" {
            return None;
        }
        let folder = path.parent()?;
        let root = std::fs::canonicalize(folder.parent()?).ok()?;
        self.folders.contains(&root).then(|| folder.file_name()?.to_str().map(str::to_string)).flatten()
    }

    /// `skill_of` for a path that may be relative to the session's folder (Gemini's `read_file`,
    /// a shell command's argument).
    pub fn skill_at(&self, cwd: &str, file: &str) -> Option<String> {
        if Path::new(file).is_absolute() || cwd.is_empty() {
            return self.skill_of(file);
        }
        self.skill_of(Path::new(cwd).join(file).to_str()?)
    }

    /// The library skill a shell command prints (`cat`, `sed -n '1,80p'`, `head` … of a
    /// `SKILL.md`), the way an agent without a read tool loads one. `sed -i` edits, so it is no read.
    pub fn read_by_shell(&self, cwd: &str, command: &str) -> Option<String> {
        command.split(['\n', ';', '|', '&']).find_map(|segment| {
            let words = words(segment);
            let (program, args) = words.split_first()?;
            let program = program.rsplit('/').next().unwrap_or(program);
            let edits = program == "sed" && args.iter().any(|a| a.starts_with("-i") || a == "--in-place");
            if !READERS.contains(&program) || edits {
                return None;
            }
            args.iter().filter(|a| !a.starts_with('-')).find_map(|a| self.skill_at(cwd, a))
        })
    }
}

/// A command line's words, quotes removed (no escapes or expansions: a path in a read command
/// rarely needs them, and one that does is only a read not registered).
fn words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in segment.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

pub fn clip(text: String) -> String {
    if text.len() <= MAX_FIELD_BYTES {
        return text;
    }
    let mut cut = MAX_FIELD_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_string()
}

/// A turn that ended with an answer: the assistant's last message, when the harness gave one,
/// then the completed turn.
pub fn answered(said: Option<String>) -> Vec<Action> {
    said.map(Action::Assistant).into_iter().chain([Action::TurnEnd(TurnStatus::Completed)]).collect()
}

/// The plugin's tool event for one result: a load of `loaded` (when it is a name a library skill
/// can have) through the plugin's `skill` tool event, which registers the read; else `tool` with
/// its input and output clipped.
pub fn action(tool: &str, input: &Value, ok: bool, output: String, loaded: Option<String>) -> Action {
    Action::Tool(match loaded.filter(|name| is_skill_name(name)) {
        Some(name) => ToolEvent {
            tool: "skill".into(),
            args_json: serde_json::json!({"name": name}).to_string(),
            ok,
            output: String::new(),
        },
        None => ToolEvent { tool: tool.to_string(), args_json: clip(input.to_string()), ok, output: clip(output) },
    })
}

/// One event end to end, for every harness: read by `parse`, mapped by `actions` against the
/// event's skill roots, delivered to the plugin.
pub fn handle(
    home: &Path,
    wasm: &Source,
    bytes: &[u8],
    busy: &std::sync::Mutex<()>,
    parse: fn(&[u8]) -> anyhow::Result<HookEvent>,
    actions: fn(&HookEvent, &SkillRoots) -> Vec<Action>,
) -> anyhow::Result<Outcome> {
    let mut event = parse(bytes)?;
    // None of these harnesses writes its transcript in Claude Code's shape: the host keeps one.
    event.transcript = None;
    event.keep_transcript = true;
    let actions = actions(&event, &SkillRoots::for_event(home, &event.cwd));
    deliver(home, wasm, &event, actions, busy)
}

/// The recorded payloads of `cli/tests/fixtures/harness/<harness>/payloads`, for each mapping's
/// unit tests.
#[cfg(test)]
pub fn fixture(harness: &str, name: &str) -> Value {
    let path = format!("{}/tests/fixtures/harness/{harness}/payloads/{name}.json", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tool_fields_are_clipped_on_a_character_boundary() {
        let text = "é".repeat(MAX_FIELD_BYTES);
        let clipped = clip(text);
        assert!(clipped.len() <= MAX_FIELD_BYTES && clipped.chars().all(|c| c == 'é'));
    }

    #[test]
    fn a_shell_command_that_prints_a_library_skill_reads_it() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("skills/pnpm-usage")).unwrap();
        std::fs::write(home.path().join("skills/pnpm-usage/SKILL.md"), "x").unwrap();
        let roots = SkillRoots::for_event(home.path(), "/nonexistent-cwd");
        let file = home.path().join("skills/pnpm-usage/SKILL.md");
        let file = file.to_str().unwrap();
        let cwd = home.path().to_str().unwrap();
        for (command, cwd, read) in [
            (format!("cat {file}"), "", true),
            (format!("sed -n '1,200p' '{file}'"), "", true),
            (format!("cd /tmp && /usr/bin/head -n 40 \"{file}\" | less"), "", true),
            ("nl -ba skills/pnpm-usage/SKILL.md".into(), cwd, true),
            (format!("sed -i 's/a/b/' {file}"), "", false),
            (format!("rm {file}"), "", false),
            (format!("echo {file}"), "", false),
            ("cat /tmp/x/SKILL.md".into(), "", false),
            ("cat skills/pnpm-usage/SKILL.md".into(), "/nonexistent-cwd", false),
        ] {
            let found = roots.read_by_shell(cwd, &command);
            assert_eq!(found.as_deref(), read.then_some("pnpm-usage"), "{command}");
        }
    }

    #[test]
    fn only_a_skill_name_becomes_a_load() {
        let input = serde_json::json!({"name": "x"});
        assert!(matches!(action("t", &input, true, String::new(), Some("pnpm-usage".into())),
            Action::Tool(t) if t.tool == "skill" && t.args_json == r#"{"name":"pnpm-usage"}"#));
        assert!(matches!(action("t", &input, false, "out".into(), Some("Not A Name".into())),
            Action::Tool(t) if t.tool == "t" && !t.ok && t.output == "out"));
    }

    #[test]
    fn words_keep_quoted_spaces() {
        assert_eq!(words(r#"cat "a b" 'c'd e"#), ["cat", "a b", "cd", "e"]);
        assert_eq!(words(r#"x "" y"#), ["x", "", "y"]);
    }
}
