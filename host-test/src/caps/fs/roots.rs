//! Where each root really is, decided once, when it is mapped. User and state roots are the
//! operator's configuration: they may be links, and are confined to their real path. A project
//! skills folder came with a repository: if its real path leaves the project, it is not mapped.

use std::path::{Component, Path, PathBuf};

/// The real path of `path`: the longest existing prefix canonicalized, the rest appended (a root
/// that does not exist yet is created later under its real parent, never through a link).
pub fn real_path(path: &Path) -> PathBuf {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return missing.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// The project a skills folder belongs to: the nearest ancestor holding one of `markers`, else
/// the folder's parent.
pub fn project_of(skills: &Path, markers: &[String]) -> PathBuf {
    skills
        .ancestors()
        .skip(1)
        .find(|dir| markers.iter().any(|m| dir.join(m).symlink_metadata().is_ok()))
        .or_else(|| skills.parent())
        .unwrap_or(skills)
        .to_path_buf()
}

/// A project skills folder resolved: its real path when inside its project's real path, else
/// the sentence the host logs when it runs the session without a project root.
pub fn resolve_project(skills: &Path, project: &Path) -> Result<PathBuf, String> {
    let real = real_path(skills);
    let real_project = real_path(project);
    let inside = real.starts_with(&real_project) && !real.components().any(|c| c == Component::ParentDir);
    if inside {
        Ok(real)
    } else {
        Err(format!(
            "project skills folder {} resolves to {}, outside the project {}; running without a project root",
            skills.display(),
            real.display(),
            real_project.display()
        ))
    }
}
