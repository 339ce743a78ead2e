//! The fs capability: named roots mapped to real folders, confined with cap-std.
//! Absolute paths, `..`, empty components and symlinks anywhere on the path are refused;
//! the project root is resolved per session, never globally.

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Which root an operation is confined to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RootRef {
    UserSkills,
    /// The project skills folder of this session id.
    ProjectSkills(String),
    State,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsErr {
    NotFound,
    AlreadyExists,
    NotPermitted,
    Symlink,
    InvalidPath,
    NoSpace,
    WrongKind,
    Io(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatInfo {
    pub kind: Kind,
    pub size: u64,
    pub modified_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    CreateNew,
    Truncate,
    Append,
}

/// How a session's project skills folder is found.
#[derive(Debug, Clone)]
pub struct ProjectRoots {
    /// Explicit session id → project skills folder; wins over discovery.
    pub sessions: BTreeMap<String, PathBuf>,
    /// Discover from the session's cwd: the nearest ancestor holding one of `markers`.
    pub discover: bool,
    pub markers: Vec<String>,
    /// The skills folder inside a discovered project.
    pub skills_subdir: PathBuf,
    /// Where sessions with neither an explicit mapping nor a discovered project go (replays).
    pub default_project: Option<PathBuf>,
}

impl Default for ProjectRoots {
    fn default() -> Self {
        ProjectRoots {
            sessions: BTreeMap::new(),
            discover: true,
            markers: vec![".git".into(), ".dsh".into()],
            skills_subdir: PathBuf::from(".dsh/skills"),
            default_project: None,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct FsConfig {
    pub user_skills: Option<PathBuf>,
    pub state: Option<PathBuf>,
    pub projects: ProjectRoots,
}

/// Injected failures for tests: the n-th (1-based) write or rename fails.
#[derive(Debug, Clone, Default)]
pub struct FsFaults {
    pub fail_write_at: Option<u64>,
    pub fail_rename_at: Option<u64>,
    pub error: Option<FsErr>,
}

pub struct FsCap {
    config: FsConfig,
    cwd_by_session: HashMap<String, String>,
    dirs: HashMap<PathBuf, Dir>,
    faults: FsFaults,
    writes: u64,
    renames: u64,
    /// Directory entries skipped because their names are not UTF-8.
    pub skipped_non_utf8: u64,
}

impl FsCap {
    pub fn new(config: FsConfig, faults: FsFaults) -> FsCap {
        FsCap {
            config,
            cwd_by_session: HashMap::new(),
            dirs: HashMap::new(),
            faults,
            writes: 0,
            renames: 0,
            skipped_non_utf8: 0,
        }
    }

    /// Remembers a session's cwd (the host learns it from every call context).
    pub fn note_session(&mut self, session: &str, cwd: &str) {
        if !cwd.is_empty() && self.cwd_by_session.get(session).map(String::as_str) != Some(cwd) {
            self.cwd_by_session.insert(session.to_string(), cwd.to_string());
        }
    }

    /// The cwd last seen for a session.
    pub fn cwd_of(&self, session: &str) -> Option<String> {
        self.cwd_by_session.get(session).cloned()
    }

    /// The real folder behind a root, if mapped.
    pub fn root_path(&self, root: &RootRef) -> Option<PathBuf> {
        match root {
            RootRef::UserSkills => self.config.user_skills.clone(),
            RootRef::State => self.config.state.clone(),
            RootRef::ProjectSkills(session) => {
                let projects = &self.config.projects;
                if let Some(path) = projects.sessions.get(session) {
                    return Some(path.clone());
                }
                let discovered = projects
                    .discover
                    .then(|| self.cwd_by_session.get(session).map(Path::new))
                    .flatten()
                    .filter(|cwd| cwd.is_absolute())
                    .and_then(|cwd| cwd.ancestors().find(|dir| projects.markers.iter().any(|m| dir.join(m).exists())))
                    .map(|project| project.join(&projects.skills_subdir));
                discovered.or_else(|| projects.default_project.clone())
            }
        }
    }

    pub fn has_root(&self, root: &RootRef) -> bool {
        self.root_path(root).is_some()
    }

    /// Opens (and caches) the root folder; `create` makes it when missing.
    fn dir(&mut self, root: &RootRef, create: bool) -> Result<&Dir, FsErr> {
        let path = self.root_path(root).ok_or(FsErr::NotPermitted)?;
        if !self.dirs.contains_key(&path) {
            if create {
                std::fs::create_dir_all(&path).map_err(io_err)?;
            }
            let dir = Dir::open_ambient_dir(&path, ambient_authority()).map_err(io_err)?;
            self.dirs.insert(path.clone(), dir);
        }
        self.dirs.get(&path).ok_or(FsErr::NotPermitted)
    }

    pub fn read(&mut self, root: &RootRef, path: &str) -> Result<Vec<u8>, FsErr> {
        validate(path)?;
        let dir = self.dir(root, false)?;
        refuse_symlinks(dir, path)?;
        dir.read(path).map_err(io_err)
    }

    pub fn write(&mut self, root: &RootRef, path: &str, data: &[u8], mode: Mode) -> Result<(), FsErr> {
        validate(path)?;
        self.writes += 1;
        if self.faults.fail_write_at == Some(self.writes) {
            return Err(self.injected());
        }
        let dir = self.dir(root, true)?;
        refuse_symlinks(dir, path)?;
        make_parent(dir, path)?;
        let mut options = OpenOptions::new();
        match mode {
            Mode::CreateNew => options.write(true).create_new(true),
            Mode::Truncate => options.write(true).create(true).truncate(true),
            Mode::Append => options.append(true).create(true),
        };
        let mut file = dir.open_with(path, &options).map_err(io_err)?;
        file.write_all(data).map_err(io_err)?;
        file.flush().map_err(io_err)
    }

    pub fn rename(&mut self, root: &RootRef, from: &str, to: &str) -> Result<(), FsErr> {
        validate(from)?;
        validate(to)?;
        self.renames += 1;
        if self.faults.fail_rename_at == Some(self.renames) {
            return Err(self.injected());
        }
        let dir = self.dir(root, true)?;
        refuse_symlinks(dir, from)?;
        refuse_symlinks(dir, to)?;
        make_parent(dir, to)?;
        dir.rename(from, dir, to).map_err(io_err)
    }

    pub fn remove_file(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        validate(path)?;
        let dir = self.dir(root, false)?;
        refuse_symlinks(dir, path)?;
        dir.remove_file(path).map_err(io_err)
    }

    pub fn remove_dir(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        validate(path)?;
        let dir = self.dir(root, false)?;
        refuse_symlinks(dir, path)?;
        dir.remove_dir(path).map_err(io_err)
    }

    pub fn create_dir_all(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        validate(path)?;
        let dir = self.dir(root, true)?;
        refuse_symlinks(dir, path)?;
        dir.create_dir_all(path).map_err(io_err)
    }

    /// Entries sorted by name. "" lists the root; a root folder not created yet is empty.
    /// Names that are not UTF-8 are skipped (and counted), never passed on mangled.
    pub fn list_dir(&mut self, root: &RootRef, path: &str) -> Result<Vec<(String, Kind)>, FsErr> {
        let entries = if path.is_empty() {
            match self.dir(root, false) {
                Ok(dir) => dir.entries().map_err(io_err)?,
                Err(FsErr::NotFound) => return Ok(Vec::new()),
                Err(err) => return Err(err),
            }
        } else {
            validate(path)?;
            let dir = self.dir(root, false)?;
            refuse_symlinks(dir, path)?;
            dir.read_dir(path).map_err(io_err)?
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err)?;
            let Ok(name) = entry.file_name().into_string() else {
                self.skipped_non_utf8 += 1;
                continue;
            };
            let file_type = entry.file_type().map_err(io_err)?;
            let kind = if file_type.is_symlink() {
                Kind::Symlink
            } else if file_type.is_dir() {
                Kind::Dir
            } else {
                Kind::File
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Never follows symlinks: a symlink at the end is reported as one; before the end it is refused.
    pub fn stat(&mut self, root: &RootRef, path: &str) -> Result<StatInfo, FsErr> {
        if path.is_empty() {
            // The root folder itself: its mtime tells a caller whether entries came or went.
            let meta = self.dir(root, false)?.dir_metadata().map_err(io_err)?;
            return Ok(StatInfo { kind: Kind::Dir, size: 0, modified_ms: modified_ms(&meta) });
        }
        validate(path)?;
        let dir = self.dir(root, false)?;
        if let Some((parent, _)) = path.rsplit_once('/') {
            refuse_symlinks(dir, parent)?;
        }
        let meta = dir.symlink_metadata(path).map_err(io_err)?;
        let kind = if meta.file_type().is_symlink() {
            Kind::Symlink
        } else if meta.is_dir() {
            Kind::Dir
        } else {
            Kind::File
        };
        Ok(StatInfo { kind, size: meta.len(), modified_ms: modified_ms(&meta) })
    }

    /// `stat` for many paths. On Linux each path costs one `openat2` that refuses any symlink
    /// and cannot leave the root, plus an `fstat`; anything unusual falls back to `stat`.
    pub fn stat_many(&mut self, root: &RootRef, paths: &[String]) -> Vec<Result<StatInfo, FsErr>> {
        #[cfg(target_os = "linux")]
        if let Ok(dir) = self.dir(root, false) {
            use std::os::fd::AsFd;
            let fd = dir.as_fd().try_clone_to_owned();
            if let Ok(fd) = fd {
                return paths.iter().map(|p| fast_stat(&fd, p).unwrap_or_else(|| self.stat(root, p))).collect();
            }
        }
        paths.iter().map(|p| self.stat(root, p)).collect()
    }

    fn injected(&self) -> FsErr {
        self.faults.error.clone().unwrap_or_else(|| FsErr::Io("injected fault".into()))
    }
}

/// One path under `root` without following any symlink; `None` when the slow path must decide
/// (a symlink somewhere, an old kernel without openat2, an odd error).
#[cfg(target_os = "linux")]
fn fast_stat(root: &std::os::fd::OwnedFd, path: &str) -> Option<Result<StatInfo, FsErr>> {
    use rustix::fs::{FileType, Mode as RMode, OFlags, ResolveFlags, fstat, openat2};
    if validate(path).is_err() {
        return Some(Err(FsErr::InvalidPath));
    }
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match openat2(root, path, flags, RMode::empty(), ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Some(Err(FsErr::NotFound)),
        Err(rustix::io::Errno::NOTDIR) => return Some(Err(FsErr::WrongKind)),
        Err(_) => return None,
    };
    let st = fstat(&fd).ok()?;
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Kind::Dir,
        FileType::Symlink => return None,
        _ => Kind::File,
    };
    let modified_ms = (st.st_mtime as u64).saturating_mul(1000) + (st.st_mtime_nsec as u64) / 1_000_000;
    Some(Ok(StatInfo { kind, size: st.st_size as u64, modified_ms }))
}

fn modified_ms(meta: &cap_std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.into_std().duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Relative, '/'-separated, no empty, '.' or '..' component, no backslash, NUL or control
/// characters, each component at most 255 bytes.
pub fn validate(path: &str) -> Result<(), FsErr> {
    if path.is_empty() || path.starts_with('/') || path.len() > 4096 {
        return Err(FsErr::InvalidPath);
    }
    for component in path.split('/') {
        if component.is_empty()
            || component == "."
            || component == ".."
            || component.len() > 255
            || component.chars().any(|c| c == '\\' || c.is_control())
        {
            return Err(FsErr::InvalidPath);
        }
    }
    Ok(())
}

/// Refuses when any existing component of `path` (including the last) is a symlink.
fn refuse_symlinks(dir: &Dir, path: &str) -> Result<(), FsErr> {
    let mut end = 0;
    for component in path.split('/') {
        end += component.len();
        let prefix = &path[..end];
        match dir.symlink_metadata(prefix) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(FsErr::Symlink),
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(io_err(err)),
        }
        end += 1; // the '/'
    }
    Ok(())
}

fn make_parent(dir: &Dir, path: &str) -> Result<(), FsErr> {
    match path.rsplit_once('/') {
        Some((parent, _)) => dir.create_dir_all(parent).map_err(io_err),
        None => Ok(()),
    }
}

fn io_err(err: io::Error) -> FsErr {
    match err.kind() {
        io::ErrorKind::NotFound => FsErr::NotFound,
        io::ErrorKind::AlreadyExists => FsErr::AlreadyExists,
        io::ErrorKind::PermissionDenied => FsErr::NotPermitted,
        io::ErrorKind::StorageFull => FsErr::NoSpace,
        io::ErrorKind::NotADirectory | io::ErrorKind::IsADirectory => FsErr::WrongKind,
        io::ErrorKind::DirectoryNotEmpty => FsErr::Io("folder not empty".into()),
        _ => FsErr::Io(err.to_string()),
    }
}
