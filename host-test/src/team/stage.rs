//! A teammate changed a skill this machine changed too: the remote version is on disk after the
//! sync, and each local version becomes a staged write against it, through the plugin and its
//! guards (`skill_manage` with `stage: true`), so `/skills pending` shows it with its diff. What
//! the plugin will not stage (a hand-written skill, a credential) is kept under
//! `<home>/run/conflicts/` instead: nothing is lost.

use super::sync::Conflict;
use crate::component::Source;
use crate::plugin::{CallContext, Origin};
use anyhow::Result;
use serde_json::{Value, json};
use std::path::Path;

pub fn stage_local(home: &Path, wasm: &Source, local: &[(String, Option<String>)]) -> Result<Vec<Conflict>> {
    let mut live = crate::live::open(home, wasm)?;
    let ctx = CallContext {
        session: "sync".into(),
        agent: "sync".into(),
        origin: Origin::User,
        depth: 0,
        cwd: home.to_string_lossy().into_owned(),
    };
    let mut out = Vec::new();
    for (file, content) in local {
        let disk = std::fs::read_to_string(crate::cli::home::user_skills(home).join(file)).ok();
        let mut conflict = Conflict { file: file.clone(), staged: None, kept: None, why: None };
        if disk.as_deref() == content.as_deref() {
            out.push(conflict);
            continue;
        }
        let (skill, rest) = file.split_once('/').unwrap_or((file.as_str(), ""));
        let reason =
            format!("sync: {file} changed on the remote meanwhile; this is this machine's version, against it");
        let args = match (rest, content) {
            ("SKILL.md", Some(text)) => {
                json!({"action": "edit", "name": skill, "content": text, "stage": true, "reason": reason})
            }
            (path, Some(text)) if !path.is_empty() => {
                json!({"action": "write_file", "name": skill, "file_path": path, "content": text, "stage": true, "reason": reason})
            }
            (path, None) if !path.is_empty() && path != "SKILL.md" => {
                json!({"action": "remove_file", "name": skill, "file_path": path, "stage": true, "reason": reason})
            }
            _ => Value::Null,
        };
        let staged = if args.is_null() {
            Err("not a change the plugin can stage (a flat skill file or a removed skill)".to_string())
        } else {
            let _ = live.plugin.tools_call(&ctx, "skill_manage", &json!({"action": "view", "name": skill}).to_string());
            match live.plugin.tools_call(&ctx, "skill_manage", &args.to_string()) {
                Ok(Ok(answer)) => serde_json::from_str::<Value>(&answer)
                    .ok()
                    .and_then(|a| a["id"].as_str().map(str::to_string))
                    .ok_or_else(|| format!("the plugin did not stage it: {answer}")),
                Ok(Err(refusal)) => Err(refusal),
                Err(err) => Err(err.to_string()),
            }
        };
        match staged {
            Ok(id) => conflict.staged = Some(id),
            Err(why) => {
                conflict.kept = keep(home, file, content.as_deref());
                conflict.why = Some(crate::text::visible(&why).into_owned());
            }
        }
        out.push(conflict);
    }
    live.record("sync", &[]);
    Ok(out)
}

/// The local version, kept for a person under `<home>/run/conflicts/<ms>/<file>`.
fn keep(home: &Path, file: &str, content: Option<&str>) -> Option<String> {
    let content = content?;
    let now = crate::Clock::now_ms(&crate::SystemClock);
    let path = home.join("run").join("conflicts").join(now.to_string()).join(file);
    std::fs::create_dir_all(path.parent()?).ok()?;
    std::fs::write(&path, content).ok()?;
    Some(path.to_string_lossy().into_owned())
}
