//! An evaluation suite: tasks an agent runs, each a prompt, a working folder copied fresh for
//! every run, and a check command whose exit status says whether the run succeeded. JSONL (one
//! task per line) or YAML (`tasks:` and an optional `agent:` template); docs/eval.md has both.

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use std::path::{Path, PathBuf};

const MAX_SUITE_BYTES: usize = 4 << 20;
const MAX_TASKS: usize = 1_000;
const MAX_PROMPT_BYTES: usize = 64 << 10;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub prompt: String,
    /// The folder each run works in, copied fresh (relative to the suite file).
    pub folder: PathBuf,
    /// With a ref, `folder` is a git repository, and each run works in a fresh clone of it
    /// checked out at this ref (a branch, tag or commit) instead of a copy.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Run with `sh -c` in the run's copy once the agent is done; exit 0 is success.
    pub check: String,
    /// The skills the task is about (shown in the report).
    #[serde(default)]
    pub skills: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub tasks: Vec<Task>,
    /// The agent command template the suite names, if it names one.
    pub agent: Option<String>,
    /// The suite file's sha256, recorded with every result.
    pub sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlSuite {
    #[serde(default)]
    agent: Option<String>,
    tasks: Vec<Task>,
}

/// Reads and checks the suite at `path`; folders are made absolute from the suite's own folder.
pub fn load(path: &Path) -> Result<Suite> {
    let bytes = std::fs::read(path).with_context(|| format!("reading the suite {}", path.display()))?;
    if bytes.len() > MAX_SUITE_BYTES {
        bail!("{}: {} bytes, past the {MAX_SUITE_BYTES} a suite may have", path.display(), bytes.len());
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| anyhow!("{}: not UTF-8", path.display()))?;
    let (mut tasks, agent) = if path.extension().is_some_and(|e| e == "jsonl") {
        let mut tasks = Vec::new();
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let task: Task =
                serde_json::from_str(line).with_context(|| format!("{} line {}", path.display(), i + 1))?;
            tasks.push(task);
        }
        (tasks, None)
    } else {
        let value = yaml_to_json(text).with_context(|| format!("{}: not a YAML suite", path.display()))?;
        let suite: YamlSuite = serde_json::from_value(value).with_context(|| format!("{}", path.display()))?;
        (suite.tasks, suite.agent)
    };
    let base = path.parent().unwrap_or(Path::new("."));
    check(&mut tasks, base).with_context(|| format!("{}", path.display()))?;
    Ok(Suite { tasks, agent, sha256: sha256_hex(&bytes) })
}

/// The sha256 of `bytes` in hex: a suite's, a skill text's, an evaluation's key.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn check(tasks: &mut [Task], base: &Path) -> Result<()> {
    if tasks.is_empty() {
        bail!("the suite has no task");
    }
    if tasks.len() > MAX_TASKS {
        bail!("{} tasks, past the {MAX_TASKS} a suite may have", tasks.len());
    }
    let mut seen = std::collections::BTreeSet::new();
    for task in tasks.iter_mut() {
        let id_ok = !task.id.is_empty()
            && task.id.len() <= 64
            && task.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !id_ok {
            bail!("task id `{}`: use 1 to 64 letters, digits, `-` or `_`", task.id.escape_debug());
        }
        if !seen.insert(task.id.clone()) {
            bail!("task id `{}` appears twice", task.id);
        }
        if task.prompt.trim().is_empty() || task.prompt.len() > MAX_PROMPT_BYTES {
            bail!("task `{}`: the prompt must be 1 to {MAX_PROMPT_BYTES} bytes", task.id);
        }
        if task.check.trim().is_empty() {
            bail!("task `{}`: `check` is empty (a command whose exit status 0 means success)", task.id);
        }
        let folder = base.join(&task.folder);
        let meta = std::fs::symlink_metadata(&folder)
            .with_context(|| format!("task `{}`: its folder {}", task.id, folder.display()))?;
        if !meta.is_dir() {
            bail!("task `{}`: {} is not a folder (a link is not followed)", task.id, folder.display());
        }
        if let Some(git_ref) = &task.git_ref {
            // Given to git as one argument after `--detach`: never an option, never two words.
            let ref_ok = !git_ref.is_empty()
                && git_ref.len() <= 256
                && !git_ref.starts_with('-')
                && !git_ref.chars().any(|c| c.is_whitespace() || c.is_control());
            if !ref_ok {
                bail!("task `{}`: ref `{}` is not a branch, tag or commit name", task.id, git_ref.escape_debug());
            }
        }
        task.folder = std::path::absolute(&folder)?;
    }
    Ok(())
}

/// The YAML subset a suite uses (maps, lists, strings, numbers, booleans) as JSON, through
/// yaml-rust2's loader; anchors and tags are refused.
fn yaml_to_json(text: &str) -> Result<serde_json::Value> {
    use yaml_rust2::{Yaml, YamlLoader};
    fn convert(yaml: &Yaml) -> Result<serde_json::Value> {
        Ok(match yaml {
            Yaml::String(s) => serde_json::Value::String(s.clone()),
            Yaml::Integer(i) => serde_json::Value::from(*i),
            Yaml::Real(r) => serde_json::Value::String(r.clone()),
            Yaml::Boolean(b) => serde_json::Value::Bool(*b),
            Yaml::Null => serde_json::Value::Null,
            Yaml::Array(items) => serde_json::Value::Array(items.iter().map(convert).collect::<Result<_>>()?),
            Yaml::Hash(map) => {
                let mut out = serde_json::Map::new();
                for (k, v) in map {
                    let key = k.as_str().ok_or_else(|| anyhow!("a key that is not a string"))?;
                    out.insert(key.to_string(), convert(v)?);
                }
                serde_json::Value::Object(out)
            }
            Yaml::Alias(_) | Yaml::BadValue => bail!("anchors, aliases and tags are not used in a suite"),
        })
    }
    let docs = YamlLoader::load_from_str(text).map_err(|e| anyhow!("{e}"))?;
    let [doc] = docs.as_slice() else { bail!("one YAML document expected, found {}", docs.len()) };
    convert(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_jsonl_suites_read_alike_and_bad_ones_say_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("repo")).unwrap();
        let yaml = dir.path().join("suite.yaml");
        std::fs::write(
            &yaml,
            "agent: fake {prompt}\ntasks:\n  - id: t1\n    prompt: fix it\n    folder: repo\n    check: test -f done\n    skills: [pdf]\n",
        )
        .unwrap();
        let jsonl = dir.path().join("suite.jsonl");
        std::fs::write(
            &jsonl,
            r#"{"id":"t1","prompt":"fix it","folder":"repo","check":"test -f done","skills":["pdf"]}"#,
        )
        .unwrap();
        let (a, b) = (load(&yaml).unwrap(), load(&jsonl).unwrap());
        assert_eq!(a.tasks, b.tasks);
        assert_eq!(a.agent.as_deref(), Some("fake {prompt}"));
        assert_eq!(a.tasks[0].folder, dir.path().join("repo"));
        for (text, says) in [
            ("tasks: []\n", "no task"),
            ("tasks:\n  - {id: 'a b', prompt: p, folder: repo, check: c}\n", "letters, digits"),
            ("tasks:\n  - {id: a, prompt: p, folder: missing, check: c}\n", "its folder"),
            ("tasks:\n  - {id: a, prompt: p, folder: repo, check: ''}\n", "`check` is empty"),
            ("tasks:\n  - {id: a, prompt: p, folder: repo, check: c, env: x}\n", "unknown field"),
            ("tasks:\n  - {id: a, prompt: p, folder: repo, check: c, ref: --upload-pack=x}\n", "ref `--upload-pack=x`"),
            ("tasks:\n  - {id: a, prompt: p, folder: repo, check: c, ref: 'main x'}\n", "ref `main x`"),
        ] {
            std::fs::write(&yaml, text).unwrap();
            let err = format!("{:#}", load(&yaml).unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
        }
    }
}
