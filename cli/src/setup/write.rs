//! How setup touches the disk: the file a config path really names (a dotfiles link is followed,
//! never replaced), the diff it prints (credentials in a neighbour's entry redacted, hidden
//! characters shown), a backup that never overwrites an older one, and an atomic replace that
//! refuses when someone changed the file since it was read.

use anyhow::{Context, Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A harness config larger than this is refused (`~/.claude.json` grows with history, but not so).
pub const MAX_CONFIG_BYTES: u64 = 32 << 20;

/// The file `path` names: a symbolic link is followed to its target, so a config kept in a
/// dotfiles folder is edited there and the link stays a link.
pub fn target(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            std::fs::canonicalize(path).with_context(|| format!("{} is a link to nothing", path.display()))
        }
        _ => Ok(path.to_path_buf()),
    }
}

/// A unified diff of the change, for a person: credentials redacted, hidden characters visible.
pub fn diff(path: &Path, before: Option<&str>, after: Option<&str>) -> String {
    if before == after {
        return String::new();
    }
    let shown = path.display().to_string();
    let old = if before.is_some() { shown.clone() } else { "/dev/null".to_string() };
    let new = if after.is_some() { shown } else { "/dev/null".to_string() };
    let text = similar::TextDiff::from_lines(before.unwrap_or(""), after.unwrap_or(""))
        .unified_diff()
        .context_radius(3)
        .header(&old, &new)
        .to_string();
    let text = self_evolve_scan::redact_secrets(&text).unwrap_or(text);
    self_evolve_host::text::visible_lines(&text)
}

/// Writes `after` at `path` (or removes the file when `None`), having checked that it still holds
/// `before`, and backs `before` up first. Returns the backup's path.
pub fn replace(path: &Path, before: Option<&str>, after: Option<&str>) -> Result<Option<PathBuf>> {
    let now = crate::home::files::read_config(path, MAX_CONFIG_BYTES)?;
    if now.as_deref() != before.map(str::as_bytes) {
        bail!("{} changed while setup ran; nothing more was written — run setup again", path.display());
    }
    let backup = match before {
        Some(before) => Some(back_up(path, before)?),
        None => None,
    };
    match after {
        None => std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?,
        Some(after) => crate::home::files::write_atomic(path, after.as_bytes())?,
    }
    Ok(backup)
}

/// `<file>.before-self-evolve`, or `.2`, `.3`, … when that exists: an earlier backup (the file
/// before the first setup) is never overwritten. Created exclusively, with the file's permissions.
fn back_up(path: &Path, bytes: &str) -> Result<PathBuf> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for n in 1..1000 {
        let suffix = if n == 1 { String::new() } else { format!(".{n}") };
        let backup = path.with_file_name(format!("{name}.before-self-evolve{suffix}"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(crate::home::files::mode_of(path).unwrap_or(0o600));
        }
        match options.open(&backup) {
            Ok(mut file) => {
                file.write_all(bytes.as_bytes()).with_context(|| format!("writing {}", backup.display()))?;
                return Ok(backup);
            }
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(err).with_context(|| format!("backing up to {}", backup.display())),
        }
    }
    bail!("{} has 999 backups beside it; remove some, then run setup again", path.display())
}

/// The newest backup beside `path` (`.before-self-evolve`, `.2`, …), when there is one.
pub fn latest_backup(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let mut latest = None;
    for n in 1..1000 {
        let suffix = if n == 1 { String::new() } else { format!(".{n}") };
        let backup = path.with_file_name(format!("{name}.before-self-evolve{suffix}"));
        match crate::home::files::read_config(&backup, MAX_CONFIG_BYTES) {
            Ok(Some(bytes)) => latest = String::from_utf8(bytes).ok(),
            _ => break,
        }
    }
    latest
}
