//! `self-evolve check DIR…`: reads skill folders on the host and checks them through the
//! component's `checker` export. Errors (format, credentials) exit 1; warnings do not.

use crate::plugin::{FileInput, Finding, Plugin, Severity, SkillInput};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// Supporting files larger than this are not scanned (reported as advice).
const MAX_RESOURCE_BYTES: u64 = 4 << 20;

/// One skill folder (holding SKILL.md) or a folder of skills (packages and flat `.md` files).
pub fn collect(dir: &Path) -> Result<(Vec<SkillInput>, Vec<Finding>)> {
    let mut skills = Vec::new();
    let mut notes = Vec::new();
    let meta = std::fs::symlink_metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    if !meta.is_dir() {
        bail!("{} is not a folder: pass a skill folder (with SKILL.md) or a folder of skills", dir.display());
    }
    if dir.join("SKILL.md").is_file() {
        skills.push(package(dir, &mut notes)?);
        return Ok((skills, notes));
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            notes.push(note(&path, "symlink", Severity::Error, "symlinked skill entries are refused by the plugin"));
        } else if meta.is_dir() && path.join("SKILL.md").is_file() {
            skills.push(package(&path, &mut notes)?);
        } else if meta.is_file() && name.ends_with(".md") && !name.eq_ignore_ascii_case("README.md") {
            let folder = name.trim_end_matches(".md").to_string();
            let bytes = std::fs::read(&path)?;
            skills.push(SkillInput { folder, skill_md: FileInput { path: shown(&path), bytes }, resources: vec![] });
        }
    }
    Ok((skills, notes))
}

fn package(dir: &Path, notes: &mut Vec<Finding>) -> Result<SkillInput> {
    let folder = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let skill_md = dir.join("SKILL.md");
    let bytes = std::fs::read(&skill_md).with_context(|| format!("reading {}", skill_md.display()))?;
    let mut resources = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current)?.flatten() {
            let path = entry.path();
            let ty = entry.file_type()?;
            if ty.is_symlink() {
                notes.push(note(
                    &path,
                    "symlink",
                    Severity::Error,
                    "symlinks inside a skill are refused by the plugin",
                ));
            } else if ty.is_dir() {
                stack.push(path);
            } else if path != skill_md {
                if entry.metadata()?.len() > MAX_RESOURCE_BYTES {
                    notes.push(note(&path, "not-scanned", Severity::Advice, "larger than 4 MiB; not scanned"));
                    continue;
                }
                resources.push(FileInput { path: shown(&path), bytes: std::fs::read(&path)? });
            }
        }
    }
    resources.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(SkillInput { folder, skill_md: FileInput { path: shown(&skill_md), bytes }, resources })
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn note(path: &Path, rule: &str, severity: Severity, message: &str) -> Finding {
    Finding { path: shown(path), line: 0, rule: rule.into(), severity, message: message.into() }
}

pub fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Advice => "advice",
    }
}

/// Runs the check and prints it; returns whether any error was found.
pub fn run(plugin: &mut Plugin, dirs: &[PathBuf], json: bool) -> Result<bool> {
    let mut skills = Vec::new();
    let mut findings = Vec::new();
    for dir in dirs {
        let (found, notes) = collect(dir)?;
        skills.extend(found);
        findings.extend(notes);
    }
    findings.extend(plugin.check(&skills)?);
    findings.sort_by(|a, b| (&a.path, a.line, &a.rule).cmp(&(&b.path, b.line, &b.rule)));
    let errors = findings.iter().filter(|f| f.severity == Severity::Error).count();
    let warnings = findings.iter().filter(|f| f.severity == Severity::Warning).count();
    for f in &findings {
        if json {
            let line = serde_json::json!({
                "path": f.path, "line": f.line, "rule": f.rule, "severity": severity_name(f.severity), "message": f.message,
            });
            crate::say!("{line}");
        } else {
            crate::say!("{}:{}: {} [{}] {}", f.path, f.line, severity_name(f.severity), f.rule, f.message);
        }
    }
    if !json {
        crate::say!(
            "{} skill(s) checked: {errors} error(s), {warnings} warning(s), {} advice",
            skills.len(),
            findings.len() - errors - warnings
        );
    }
    Ok(errors > 0)
}
