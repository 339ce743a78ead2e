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
