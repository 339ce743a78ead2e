//! The two arms of an evaluation, which differ only in the library the agent sees, and the home
//! each arm's runs get: a temporary home seeded from the user's (its config, host file and
//! skills), never the user's own, so nothing a run does reaches the user's library or state.

use anyhow::{Result, bail};
use std::path::Path;

/// The library an arm's agent sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Library {
    /// The user's library as it is.
    Whole,
    /// The user's library without one skill.
    Without(String),
    /// No skill at all.
    Empty,
    /// The user's library with one skill's SKILL.md as it was before a version landed.
    Replaced { skill: String, text: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arm {
    /// `a` or `b`.
    pub name: &'static str,
    pub label: String,
    pub library: Library,
}

/// Arm A and arm B: with and without `skill`, or (`whole`) the library against none.
pub fn arms(home: &Path, skill: Option<&str>, whole: bool) -> Result<[Arm; 2]> {
    match (skill, whole) {
        (Some(name), false) => {
            let folder = crate::home::user_skills(home).join(name);
            if name.contains('/') || name.starts_with('.') || !folder.join("SKILL.md").is_file() {
                bail!(
                    "no skill `{name}` in {}: name one `self-evolve skills list` shows",
                    crate::home::user_skills(home).display()
                );
            }
            Ok([
                Arm { name: "a", label: format!("with {name}"), library: Library::Whole },
                Arm { name: "b", label: format!("without {name}"), library: Library::Without(name.to_string()) },
            ])
        }
        (None, true) => Ok([
            Arm { name: "a", label: "the whole library".into(), library: Library::Whole },
            Arm { name: "b", label: "no library".into(), library: Library::Empty },
        ]),
        _ => bail!(
            "say what the arms differ in: --skill NAME (with and without it), --library (all or none) or \
             --against NAME@V (now and before version V)"
        ),
    }
}

/// Arm A and arm B: the skill `NAME@V` names as it is now, and as it was before its version V
/// landed (read through the operator's `/skills show NAME@V`, so the history's own checks hold).
pub fn against(home: &Path, at: &str, wasm: &crate::component::Source) -> Result<[Arm; 2]> {
    let Some((name, v)) = at.split_once('@') else {
        bail!("--against takes NAME@VERSION (`self-evolve skills log NAME` lists them)")
    };
    if !crate::home::user_skills(home).join(name).join("SKILL.md").is_file() {
        bail!("no skill `{name}` in {}", crate::home::user_skills(home).display());
    }
    let mut operator = crate::operator::Operator::open(home, None, wasm)?;
    let answer = operator.run(&["show".to_string(), at.to_string(), "--json".to_string()])?;
    if !answer.ok {
        bail!("{}", answer.text.trim_end());
    }
    let value: serde_json::Value = serde_json::from_str(&answer.text)?;
    let Some(text) = value["content"].as_str() else { bail!("`/skills show {at}` gave no text") };
    Ok([
        Arm { name: "a", label: format!("{name} now"), library: Library::Whole },
        Arm {
            name: "b",
            label: format!("{name} before version {v}"),
            library: Library::Replaced { skill: name.to_string(), text: text.to_string() },
        },
    ])
}

/// A staged SKILL.md larger than this is not read (the plugin's own bound on a file it writes is
/// smaller).
const MAX_STAGED_BYTES: u64 = 16 << 20;

/// A staged write's arms: its SKILL.md as staged, against the library as it is.
pub struct Staged {
    pub arms: [Arm; 2],
    pub id: String,
    pub skill: String,
    /// The staged text's sha256, by which `/skills pending` and `diff` find the evaluation.
    pub sha256: String,
    /// The sha256 of the text it would replace (`None` for a create).
    pub base_sha256: Option<String>,
}

/// Arm A: the library with the staged write `id` (or `latest`) applied; arm B: the library as
/// it is (without the skill, for a staged create). The write is found through the operator's
/// `/skills pending`; only a user-scope write of a SKILL.md can be evaluated (a run sees the
/// user's library, not a project's), and never one held on credential findings (its text would
/// go to the agent).
pub fn staged(home: &Path, id: &str, wasm: &crate::component::Source) -> Result<Staged> {
    let mut operator = crate::operator::Operator::open(home, None, wasm)?;
    let answer = operator.run(&["pending".to_string(), "--json".to_string()])?;
    if !answer.ok {
        bail!("{}", answer.text.trim_end());
    }
    let value: serde_json::Value = serde_json::from_str(&answer.text)?;
    let entries = value["pending"].as_array().cloned().unwrap_or_default();
    let entry = if id == "latest" { entries.last() } else { entries.iter().find(|e| e["id"] == id) };
    let Some(entry) = entry else {
        bail!("no staged write `{id}`: `self-evolve skills pending` lists them");
    };
    let field = |key: &str| entry[key].as_str().unwrap_or_default().to_string();
    let (id, skill, operation) = (field("id"), field("skill"), field("operation"));
    if !matches!(operation.as_str(), "create" | "patch" | "edit") || field("path") != format!("{skill}/SKILL.md") {
        bail!("staged write {id} is a {operation} of {}: only a write of a SKILL.md can be evaluated", field("path"));
    }
    if field("scope") != "user" {
        bail!("staged write {id} is to a project's library: an evaluation's runs see the user's library only");
    }
    if entry["held"].as_array().is_some_and(|held| !held.is_empty()) {
        bail!(
            "staged write {id} is held on credential findings: its text would go to the agent; settle them first \
             (`self-evolve skills diff {id}`)"
        );
    }
    if skill.is_empty()
        || skill.contains('/')
        || skill.starts_with('.')
        || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        bail!("staged write `{id}` names no skill of this library");
    }
    // Read as every file others may write is (`read_regular`): a FIFO or link there never blocks
    // or redirects the evaluation.
    let path = crate::home::state(home).join("pending").join(&id).join("new");
    let Some(bytes) = crate::home::files::read_regular(&path, MAX_STAGED_BYTES)? else {
        bail!("staged write {id} has no text on disk: reject it and stage the change again");
    };
    let sha256 = super::suite::sha256_hex(&bytes);
    if entry["newSha256"].as_str() != Some(sha256.as_str()) {
        bail!("staged write {id} changed on disk since it was staged: reject it and stage the change again");
    }
    let Ok(text) = String::from_utf8(bytes) else { bail!("staged write {id} is not UTF-8 text") };
    let baseline = if operation == "create" {
        Arm { name: "b", label: format!("without {skill}"), library: Library::Without(skill.clone()) }
    } else {
        Arm { name: "b", label: format!("{skill} now"), library: Library::Whole }
    };
    let staged = Arm {
        name: "a",
        label: format!("{skill} as staged ({id})"),
        library: Library::Replaced { skill: skill.clone(), text },
    };
    let base_sha256 = entry["baseSha256"].as_str().map(str::to_string);
    Ok(Staged { arms: [staged, baseline], id, skill, sha256, base_sha256 })
}

/// Makes `into` a home for `arm`: the user's config.json and host.json (read as every config is,
/// `home::files::read_config`), the skills the arm sees, and an empty state folder. host.json
/// loses its `git` key: the arm's skills folder is no team library, and a run's hook must never
/// commit or push on the user's behalf.
pub fn seed(home: &Path, arm: &Arm, into: &Path) -> Result<()> {
    std::fs::create_dir_all(into)?;
    if let Some(bytes) = crate::home::files::read_config(&home.join("config.json"), 1 << 20)? {
        std::fs::write(into.join("config.json"), bytes)?;
    }
    if let Some(bytes) = crate::home::files::read_config(&home.join("host.json"), 1 << 20)? {
        let mut value: serde_json::Value = serde_json::from_slice(&bytes)?;
        if let Some(map) = value.as_object_mut() {
            map.remove("git");
        }
        std::fs::write(into.join("host.json"), serde_json::to_vec_pretty(&value)?)?;
    }
    let skills = crate::home::user_skills(into);
    std::fs::create_dir_all(&skills)?;
    std::fs::create_dir_all(crate::home::state(into))?;
    if arm.library == Library::Empty {
        return Ok(());
    }
    let user = crate::home::user_skills(home);
    let Ok(entries) = std::fs::read_dir(&user) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if matches!(&arm.library, Library::Without(skip) if name.to_str() == Some(skip.as_str())) {
            continue;
        }
        // Skills are folders; anything else (a link, a stray file, `.git`) stays behind.
        if entry.file_type().is_ok_and(|k| k.is_dir()) && !name.to_string_lossy().starts_with('.') {
            super::run::copy_tree(&entry.path(), &skills.join(&name))?;
        }
    }
    if let Library::Replaced { skill, text } = &arm.library {
        // A staged create's skill has no folder yet.
        std::fs::create_dir_all(skills.join(skill))?;
        std::fs::write(skills.join(skill).join("SKILL.md"), text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arm_home_keeps_the_users_config_and_reviewer_but_no_team_library() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join("skills/pdf")).unwrap();
        std::fs::write(home.join("skills/pdf/SKILL.md"), "---\nname: pdf\n---\n").unwrap();
        std::fs::write(home.join("config.json"), r#"{"review":{"turnInterval":4}}"#).unwrap();
        let host = serde_json::json!({"reviewer": {"provider": "command", "argv": ["claude", "-p"]},
            "git": {"remote": "origin", "branch": "main"}});
        std::fs::write(home.join("host.json"), host.to_string()).unwrap();
        let arm = Arm { name: "b", label: "without pdf".into(), library: Library::Without("pdf".into()) };
        let into = dir.path().join("arm");
        seed(&home, &arm, &into).unwrap();
        let seeded: serde_json::Value =
            serde_json::from_slice(&std::fs::read(into.join("host.json")).unwrap()).unwrap();
        assert_eq!(seeded, serde_json::json!({"reviewer": host["reviewer"]}), "the git key goes, the rest stays");
        assert_eq!(std::fs::read_to_string(into.join("config.json")).unwrap(), r#"{"review":{"turnInterval":4}}"#);
        assert!(!into.join("skills/pdf").exists(), "the arm without pdf");
        assert!(into.join("self-evolve").is_dir());
    }
}
