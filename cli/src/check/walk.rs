//! The folder walk of `self-evolve check`: what is read from the host's folders, and how. Links
//! are never followed (each is a finding), only regular files with one link are opened (checked on
//! the open handle, non-blocking, so a FIFO never hangs), a file is read up to the size limit and
//! a package up to its own; whatever cannot be read is a finding naming its path (`Walk`), and the
//! walk goes on. `mod.rs` hands what it collects to the component.

use anyhow::Result;
use self_evolve_host::plugin::{FileInput, Finding, Severity, SkillInput};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Files larger than this are not parsed; they are a finding, and scanned for credentials in chunks.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// A package's files read at most (the catalog serves skills of at most 16 MiB and 512 files).
const PACKAGE_MAX_BYTES: u64 = 64 << 20;
const PACKAGE_MAX_FILES: usize = 1024;

/// Why a file or folder was not read as a whole.
#[derive(Debug)]
// Where nothing is opened (Windows, `open_regular`), only some are ever made.
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) enum Refusal {
    Symlink,
    NotRegular,
    HardLinked(u64),
    TooLarge(u64),
    /// A name the plugin skips (it never passes a mangled name on), so nothing checks it.
    NotUtf8,
    Io(std::io::Error),
}

/// Where files cannot be opened without following links (Windows), nothing is read.
#[cfg(not(unix))]
pub(super) fn open_regular(_path: &Path) -> std::result::Result<(std::fs::File, u64), Refusal> {
    Err(Refusal::Io(std::io::Error::other(self_evolve_host::caps::fs::REFUSAL)))
}

/// Opens `path` only if it is a regular file with one link, never following a link; the checks
/// run on the open handle. Returns the file and its size.
#[cfg(unix)]
pub(super) fn open_regular(path: &Path) -> std::result::Result<(std::fs::File, u64), Refusal> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path).map_err(|e| {
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        if is_link { Refusal::Symlink } else { Refusal::Io(e) }
    })?;
    let meta = file.metadata().map_err(Refusal::Io)?;
    if !meta.is_file() {
        return Err(Refusal::NotRegular);
    }
    if meta.nlink() > 1 {
        return Err(Refusal::HardLinked(meta.nlink()));
    }
    Ok((file, meta.len()))
}

/// A file's bytes when it is regular and within the limit.
fn read_regular(path: &Path) -> std::result::Result<Vec<u8>, Refusal> {
    let (file, size) = open_regular(path)?;
    if size > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(Refusal::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Refusal::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// What `check` found on the host side, before the component looked at anything.
#[derive(Default)]
pub(super) struct Walk {
    pub(super) notes: Vec<Finding>,
    /// Files over the size limit: scanned for credentials in chunks.
    pub(super) oversized: Vec<PathBuf>,
}

impl Walk {
    pub(super) fn refused(&mut self, path: &Path, refusal: Refusal) {
        let (rule, message) = match refusal {
            Refusal::Symlink => ("symlink", "a symlink; the plugin never follows links".to_string()),
            Refusal::NotRegular => {
                ("not-a-file", "not a regular file (a FIFO, socket or device); the plugin never opens one".to_string())
            }
            Refusal::HardLinked(n) => {
                ("hard-link", format!("has {n} hard links; the plugin refuses to read or write such a file"))
            }
            Refusal::TooLarge(size) => {
                self.oversized.push(path.to_path_buf());
                (
                    "too-large",
                    format!(
                        "{size} bytes, over the {MAX_FILE_BYTES}-byte limit: not parsed, scanned for credentials in chunks"
                    ),
                )
            }
            Refusal::NotUtf8 => (
                "not-utf8-name",
                "a name that is not UTF-8; the plugin skips it, so it was not checked: rename it".to_string(),
            ),
            #[cfg(unix)]
            Refusal::Io(err) if err.raw_os_error() == Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()) => {
                ("path-too-long", too_long(path, &err))
            }
            Refusal::Io(err) => ("unreadable", format!("cannot read: {err}")),
        };
        // A large file is not wrong in itself; what the chunked scan finds in it may be.
        let severity = if rule == "too-large" { Severity::Warning } else { Severity::Error };
        self.notes.push(note(path, rule, severity, &message));
    }
}

/// Why the OS said a path is too long: one name past what a folder entry may hold, or the whole
/// path past what it opens by path (PATH_MAX, a deeply nested folder).
#[cfg(unix)]
fn too_long(path: &Path, err: &std::io::Error) -> String {
    /// The longest name a folder entry may have on Linux file systems (NAME_MAX).
    const NAME_MAX: usize = 255;
    let longest = path.components().map(|c| c.as_os_str().len()).max().unwrap_or(0);
    if longest > NAME_MAX {
        format!("a name of {longest} bytes, past the {NAME_MAX} a folder entry may have ({err}); not read")
    } else {
        format!(
            "a path of {} bytes, past what the OS opens by path (PATH_MAX) ({err}); not read, and the plugin \
             cannot reach it either: nest it less deeply or shorten its names",
            path.as_os_str().len()
        )
    }
}

/// The entries of a folder, sorted, each with its type as the folder says (links not followed).
/// A folder that cannot be listed, or an entry whose type cannot be read, is a finding; the
/// entries that can be read are still returned.
fn entries(dir: &Path, walk: &mut Walk) -> Vec<(PathBuf, std::fs::FileType)> {
    let mut out = Vec::new();
    let list = match std::fs::read_dir(dir) {
        Ok(list) => list,
        Err(err) => {
            walk.refused(dir, Refusal::Io(err));
            return out;
        }
    };
    for entry in list {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                // The listing itself failed part-way (an I/O error): what it gave is kept.
                walk.refused(dir, Refusal::Io(err));
                break;
            }
        };
        let path = entry.path();
        if entry.file_name().to_str().is_none() {
            walk.refused(&path, Refusal::NotUtf8);
            continue;
        }
        match entry.file_type() {
            Ok(ty) => out.push((path, ty)),
            Err(err) => walk.refused(&path, Refusal::Io(err)),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether `dir` holds a SKILL.md (of any type: a linked or special one is a finding later).
/// `None` when the OS cannot say (that is a finding).
fn holds_skill_md(dir: &Path, walk: &mut Walk) -> Option<bool> {
    let skill_md = dir.join("SKILL.md");
    match std::fs::symlink_metadata(&skill_md) {
        Ok(_) => Some(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Some(false),
        Err(err) => {
            walk.refused(&skill_md, Refusal::Io(err));
            None
        }
    }
}

/// One skill folder (holding SKILL.md) or a folder of skills (packages and flat `.md` files),
/// handed to `each` one skill at a time. Only `each` fails the walk (the component's errors);
/// what cannot be read, `dir` itself included, is a finding.
pub(super) fn collect(dir: &Path, walk: &mut Walk, each: &mut dyn FnMut(SkillInput) -> Result<()>) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(err) => {
            walk.refused(dir, Refusal::Io(err));
            return Ok(());
        }
    };
    if meta.file_type().is_symlink() {
        let message = "a symlink, not followed: pass the folder it points to, if you trust it";
        walk.notes.push(note(dir, "symlink", Severity::Error, message));
        return Ok(());
    }
    if !meta.is_dir() {
        let message = "not a folder: pass a skill folder (with SKILL.md) or a folder of skills";
        walk.notes.push(note(dir, "not-a-folder", Severity::Error, message));
        return Ok(());
    }
    match holds_skill_md(dir, walk) {
        Some(true) => {
            if let Some(skill) = package(dir, walk) {
                each(skill)?;
            }
            return Ok(());
        }
        Some(false) => {}
        None => return Ok(()),
    }
    for (path, ty) in entries(dir, walk) {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        if ty.is_symlink() {
            walk.refused(&path, Refusal::Symlink);
        } else if ty.is_dir() {
            if holds_skill_md(&path, walk) == Some(true)
                && let Some(skill) = package(&path, walk)
            {
                each(skill)?;
            }
        } else if name.ends_with(".md") && !name.eq_ignore_ascii_case("README.md") {
            match read_regular(&path) {
                Ok(bytes) => {
                    let folder = name.trim_end_matches(".md").to_string();
                    each(SkillInput { folder, skill_md: FileInput { path: shown(&path), bytes }, resources: vec![] })?;
                }
                Err(refusal) => walk.refused(&path, refusal),
            }
        }
    }
    Ok(())
}

/// A skill package; `None` when its SKILL.md cannot be read whole (that is a finding, as is
/// every file or folder in it that cannot be read).
fn package(dir: &Path, walk: &mut Walk) -> Option<SkillInput> {
    let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let skill_md = dir.join("SKILL.md");
    let bytes = match read_regular(&skill_md) {
        Ok(bytes) => Some(bytes),
        Err(refusal) => {
            walk.refused(&skill_md, refusal);
            None
        }
    };
    let mut resources = Vec::new();
    let mut held = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    'walk: while let Some(current) = stack.pop() {
        for (path, ty) in entries(&current, walk) {
            if ty.is_symlink() {
                walk.refused(&path, Refusal::Symlink);
            } else if ty.is_dir() {
                stack.push(path);
            } else if path != skill_md {
                // Each file is bounded; so is a package, or a folder of many bounded files (a zip
                // of zeros unpacked) would hold the host's memory whole before the check begins.
                if resources.len() >= PACKAGE_MAX_FILES || held > PACKAGE_MAX_BYTES {
                    let message = format!(
                        "holds more than {PACKAGE_MAX_FILES} files or {PACKAGE_MAX_BYTES} bytes; the rest was not read \
                         (nor scanned): split it, or move what it does not need out"
                    );
                    walk.notes.push(note(dir, "package-too-large", Severity::Error, &message));
                    break 'walk;
                }
                match read_regular(&path) {
                    Ok(bytes) => {
                        held += bytes.len() as u64;
                        resources.push(FileInput { path: shown(&path), bytes });
                    }
                    Err(refusal) => walk.refused(&path, refusal),
                }
            }
        }
    }
    resources.sort_by(|a, b| a.path.cmp(&b.path));
    bytes.map(|bytes| SkillInput { folder, skill_md: FileInput { path: shown(&skill_md), bytes }, resources })
}

pub(super) fn shown(path: &Path) -> String {
    path.display().to_string()
}

fn note(path: &Path, rule: &str, severity: Severity, message: &str) -> Finding {
    Finding { path: shown(path), line: 0, rule: rule.into(), severity, message: message.into() }
}

pub(super) fn size_of(skill: &SkillInput) -> usize {
    skill.skill_md.bytes.len() + skill.resources.iter().map(|r| r.bytes.len()).sum::<usize>()
}

/// How many skills `dir` holds at most, from its entries alone (for the progress bar).
pub(super) fn estimate(dir: &Path) -> usize {
    if std::fs::symlink_metadata(dir.join("SKILL.md")).is_ok() {
        return 1;
    }
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries.filter_map(|e| e.ok()).filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count()
    })
}
