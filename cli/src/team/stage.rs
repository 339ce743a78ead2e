//! A teammate changed a file this machine changed too: after the sync the merged version is on
//! disk (git's merge; the remote's lines where both changed the same ones), and this machine's
//! edits it lacks become a staged write against it, through the plugin and its guards
//! (`skill_manage` with `stage: true`), so `/skills pending` shows it with its diff. What the
//! plugin will not stage (a hand-written skill, a credential) is kept under
//! `<home>/run/conflicts/` instead: nothing is lost.

use super::merge::Left;
use crate::component::Source;
use anyhow::{Context, Result, bail};
use self_evolve_host::plugin::{CallContext, Origin};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Component, Path};

/// A file git could not merge: staged for approval, or kept aside for a person to redo.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub file: String,
    /// The staged write's id.
    pub staged: Option<String>,
    /// Where the local version was kept when it could not be staged, and why.
    pub kept: Option<String>,
    pub why: Option<String>,
}

/// A file both sides changed: this machine's version (`None`: removed here), and where a copy
/// of it was kept before the replay.
pub struct Local {
    pub file: String,
    pub content: Option<Vec<u8>>,
    pub kept: Option<String>,
}

/// Every local version written under `<home>/run/conflicts/<ms>/` before the replay that puts
/// the remote's on disk: a refusal, a crash or a plugin that will not start afterwards loses
/// nothing. Failing to keep one stops the sync before anything changed.
pub fn keep_all(home: &Path, local: &mut [Local]) -> Result<()> {
    if local.is_empty() {
        return Ok(());
    }
    let now = self_evolve_host::Clock::now_ms(&self_evolve_host::SystemClock);
    let dir = home.join("run").join("conflicts").join(now.to_string());
    for l in local.iter_mut() {
        let Some(content) = &l.content else { continue };
        // A name from the repository: kept under its own folder, never outside it.
        let relative = Path::new(&l.file);
        if relative.components().any(|c| !matches!(c, Component::Normal(_))) {
            bail!("sync stopped before replaying: {} is not a plain path", self_evolve_host::text::visible(&l.file));
        }
        let path = dir.join(relative);
        let keep = || -> std::io::Result<()> {
            std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
            file.write_all(content)?;
            file.sync_all()
        };
        keep().with_context(|| {
            format!("sync stopped before replaying: keeping your version of {} at {}", l.file, path.display())
        })?;
        l.kept = Some(path.to_string_lossy().into_owned());
    }
    Ok(())
}

/// After the replay: what each local version left unmerged (`merge::unmerged`) becomes a staged
/// write against the merged file. A kept copy goes once everything in it is merged or staged,
/// and stays (named in the report) where the plugin refused or an edit could not be placed.
pub fn stage_local(home: &Path, wasm: &Source, local: Vec<(Local, Left)>) -> Result<Vec<Conflict>> {
    // A local version, what to stage, whether that is all of it, what it cannot carry.
    type Differs = (Local, Option<Vec<u8>>, bool, Option<String>);
    let mut differs: Vec<Differs> = Vec::new();
    let mut out = Vec::new();
    for (l, left) in local {
        match left {
            Left::Nothing => {
                if let Some(kept) = &l.kept {
                    discard(home, kept);
                }
            }
            Left::Keep(why) => out.push(kept_only(l, &why)),
            Left::Stage { content, whole, note } => differs.push((l, content, whole, note)),
        }
    }
    if differs.is_empty() {
        return Ok(out);
    }
    let ctx = CallContext {
        session: "sync".into(),
        agent: "sync".into(),
        origin: Origin::User,
        depth: 0,
        cwd: home.to_string_lossy().into_owned(),
    };
    let mut live = match crate::live::open(home, wasm) {
        Ok(live) => Some(live),
        Err(err) => {
            // Nothing can be staged; every local version is already kept.
            let why = format!("the plugin could not start to stage it: {err:#}");
            out.extend(differs.into_iter().map(|(l, _, _, note)| kept_only(l, &with_note(&why, &note))));
            return Ok(out);
        }
    };
    for (l, content, whole, note) in differs {
        let (skill, rest) = l.file.split_once('/').unwrap_or((l.file.as_str(), ""));
        let reason = format!(
            "sync: {} changed on the remote too and git could not merge all of this machine's edits; this \
             is the merged file with them",
            l.file
        );
        let text = content.as_deref().map(|c| std::str::from_utf8(c).map(str::to_string));
        let args = match (rest, &text) {
            ("SKILL.md", Some(Ok(text))) => {
                json!({"action": "edit", "name": skill, "content": text, "stage": true, "reason": reason})
            }
            (path, Some(Ok(text))) if !path.is_empty() => {
                json!({"action": "write_file", "name": skill, "file_path": path, "content": text, "stage": true, "reason": reason})
            }
            (path, None) if !path.is_empty() && path != "SKILL.md" => {
                json!({"action": "remove_file", "name": skill, "file_path": path, "stage": true, "reason": reason})
            }
            _ => Value::Null,
        };
        let staged = match (&args, &text, live.as_mut()) {
            (_, Some(Err(_)), _) => Err("not UTF-8 text, which the plugin does not stage".to_string()),
            (Value::Null, _, _) => {
                Err("not a change the plugin can stage (a flat skill file or a removed skill)".to_string())
            }
            (_, _, None) => Err("the plugin is not running".to_string()),
            (args, _, Some(live)) => {
                let _ =
                    live.plugin.tools_call(&ctx, "skill_manage", &json!({"action": "view", "name": skill}).to_string());
                match live.plugin.tools_call(&ctx, "skill_manage", &args.to_string()) {
                    Ok(Ok(answer)) => serde_json::from_str::<Value>(&answer)
                        .ok()
                        .and_then(|a| a["id"].as_str().map(str::to_string))
                        .ok_or_else(|| format!("the plugin did not stage it: {answer}")),
                    Ok(Err(refusal)) => Err(refusal),
                    Err(err) => Err(err.to_string()),
                }
            }
        };
        out.push(match staged {
            Ok(id) if whole && note.is_none() => {
                if let Some(kept) = &l.kept {
                    discard(home, kept);
                }
                Conflict { file: l.file, staged: Some(id), kept: None, why: None }
            }
            Ok(id) => {
                let overlap = "part of this machine's change overlaps a teammate's where it cannot be placed line by \
                               line: it is added after the teammate's lines in the staged write, and your whole \
                               version is kept";
                let why = match (&note, whole) {
                    (Some(note), true) => note.clone(),
                    (_, _) => with_note(overlap, &note),
                };
                Conflict {
                    file: l.file,
                    staged: Some(id),
                    kept: l.kept,
                    why: Some(self_evolve_host::text::visible(&why).into_owned()),
                }
            }
            Err(why) => kept_only(l, &with_note(&why, &note)),
        });
    }
    if let Some(live) = live.as_mut() {
        live.record("sync", &[]);
    }
    Ok(out)
}

/// A kept copy no longer needed (everything in it is merged or staged), and the folders it
/// leaves empty under `<home>/run/conflicts/`.
fn discard(home: &Path, kept: &str) {
    let _ = std::fs::remove_file(kept);
    let top = home.join("run").join("conflicts");
    for dir in Path::new(kept).ancestors().skip(1) {
        if !dir.starts_with(&top) || dir == top || std::fs::remove_dir(dir).is_err() {
            break;
        }
    }
}

/// `why`, and what else of this machine's the staged write could not carry.
fn with_note(why: &str, note: &Option<String>) -> String {
    match note {
        Some(note) => format!("{why}; {note}"),
        None => why.to_string(),
    }
}

fn kept_only(l: Local, why: &str) -> Conflict {
    let why = match (&l.content, &l.kept) {
        (None, _) => format!("{why} (this machine removed it)"),
        _ => why.to_string(),
    };
    Conflict { file: l.file, staged: None, kept: l.kept, why: Some(self_evolve_host::text::visible(&why).into_owned()) }
}
