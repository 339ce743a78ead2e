//! Opens the host's small files (`host.json`, `config.json`, `live.jsonl`) so that whatever sits
//! at their path cannot hang a hook or exhaust its memory: opened without blocking (a FIFO opens
//! at once), checked on the open handle (a regular file only, never a FIFO, device or socket),
//! and read up to a bound. A hook runs on every agent event, under the plugin-call lock, so a
//! FIFO or `/dev/zero` there would stall or kill the agent's session. Files the host writes for
//! others to read are replaced whole (`write_atomic`).

use anyhow::{Context, Result, bail};
use std::io::{Read, Write};
use std::path::Path;

/// The bytes of config file `path` (at most `limit`), or `None` when there is none. Symbolic
/// links are followed: the operator may keep a config elsewhere (a dotfiles folder).
pub fn read_config(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    read(path, limit, false, "it is a config file: keep it small")
}

/// The bytes of the regular file at `path` (at most `limit`), never through a link at its last
/// component, or `None` when there is none: a file the host reads from a tree others write.
pub fn read_regular(path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    read(path, limit, true, "past what the host reads")
}

fn read(path: &Path, limit: u64, own: bool, too_large: &str) -> Result<Option<Vec<u8>>> {
    let file = match open(path, std::fs::OpenOptions::new().read(true), own) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!("{} is over {limit} bytes; {too_large}", path.display());
    }
    Ok(Some(bytes))
}

/// Appends `bytes` to the host's own log at `path` (created when missing). A symbolic link, FIFO
/// or device there is refused, never written through.
pub fn append_log(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = open(path, std::fs::OpenOptions::new().create(true).append(true), true)?;
    file.write_all(bytes)
}

/// The permission bits of the file at `path`, when there is one.
#[cfg(unix)]
pub fn mode_of(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777)
}

/// A temporary file beside `path`, synced, then renamed over it: a reader sees the old file or
/// the new one, never half. The new file keeps the old one's permissions (`~/.claude.json` is
/// private).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.self-evolve-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode_of(path).unwrap_or(0o644));
        }
        let mut file = options.open(&temp).with_context(|| format!("creating {}", temp.display()))?;
        file.write_all(bytes).and_then(|()| file.sync_all()).with_context(|| format!("writing {}", temp.display()))?;
        std::fs::rename(&temp, path).with_context(|| format!("replacing {}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// `options` plus O_NONBLOCK (and O_NOFOLLOW when `own`), then the handle must be a regular file.
fn open(path: &Path, options: &mut std::fs::OpenOptions, own: bool) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        let flags = if own { OFlags::NONBLOCK | OFlags::NOFOLLOW } else { OFlags::NONBLOCK };
        options.custom_flags(flags.bits() as i32);
    }
    #[cfg(not(unix))]
    let _ = own;
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is not a regular file (a FIFO, device or socket there is never read or written); \
             replace it with a plain file",
            path.display()
        )));
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::OpenOptionsExt;

    fn fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    }

    #[test]
    fn configs_are_regular_files_read_up_to_their_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        assert!(read_config(&path, 16).unwrap().is_none(), "none is no error");
        std::fs::write(&path, b"{}").unwrap();
        assert_eq!(read_config(&path, 16).unwrap().unwrap(), b"{}");
        std::fs::write(&path, vec![b' '; 17]).unwrap();
        assert!(format!("{:#}", read_config(&path, 16).unwrap_err()).contains("over 16 bytes"));
        // A device that never ends, and a FIFO nobody writes: refused at once, nothing read.
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let err = format!("{:#}", read_config(&path, 1 << 20).unwrap_err());
        assert!(err.contains("not a regular file"), "{err}");
        let pipe = dir.path().join("host.json");
        fifo(&pipe);
        let err = format!("{:#}", read_config(&pipe, 1 << 20).unwrap_err());
        assert!(err.contains("not a regular file"), "{err}");
    }

    #[test]
    fn a_file_of_a_shared_tree_is_read_never_through_a_link_or_a_special_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("SKILL.md");
        assert!(read_regular(&path, 16).unwrap().is_none());
        std::fs::write(dir.path().join("target.md"), b"elsewhere").unwrap();
        std::os::unix::fs::symlink(dir.path().join("target.md"), &path).unwrap();
        assert!(read_regular(&path, 16).is_err(), "a link is not followed");
        let pipe = dir.path().join("pipe.md");
        fifo(&pipe);
        assert!(read_regular(&pipe, 16).is_err(), "a FIFO is refused at once");
        std::fs::write(dir.path().join("plain.md"), b"ok").unwrap();
        assert_eq!(read_regular(&dir.path().join("plain.md"), 16).unwrap().unwrap(), b"ok");
        assert!(read_regular(&dir.path().join("plain.md"), 1).is_err(), "over its bound");
    }

    #[test]
    fn the_log_is_appended_only_to_a_regular_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("live.jsonl");
        append_log(&log, b"one\n").unwrap();
        append_log(&log, b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "one\ntwo\n");
        let pipe = dir.path().join("fifo.jsonl");
        fifo(&pipe);
        assert!(append_log(&pipe, b"x\n").is_err(), "a FIFO with no reader is refused at once");
        let _reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&pipe)
            .unwrap();
        assert!(append_log(&pipe, b"x\n").is_err(), "and with one");
        let target = dir.path().join("elsewhere");
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(append_log(&link, b"x\n").is_err());
        assert!(!target.exists(), "nothing written through a link");
    }
}
