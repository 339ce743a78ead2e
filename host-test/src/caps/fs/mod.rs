//! The fs capability: named roots mapped to real folders, resolved once when mapped
//! (`roots.rs`), and every path opened by handle from its root, one component at a time, links
//! refused at open time (`open.rs`). Only regular files and folders are ever opened; reads are
//! bounded; a file with more than one hard link is never written (nor read in a skills root).
//! Absolute paths, `..`, empty components and control characters are refused before any of that.

mod open;
pub mod roots;
mod types;

pub use types::{FsErr, Kind, Mode, RootRef, StatInfo};

use open::Access;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

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

/// The default read bound: a quarter of the default instance memory limit (64 MiB), and the
/// largest supporting file the plugin may be configured to write (`limits.fileBytes`).
pub const DEFAULT_MAX_READ_BYTES: u64 = 16 << 20;

#[derive(Debug, Clone)]
pub struct FsConfig {
    pub user_skills: Option<PathBuf>,
    pub state: Option<PathBuf>,
    pub projects: ProjectRoots,
    /// Reads of larger files fail with `too-large` instead of growing the plugin's memory.
    pub max_read_bytes: u64,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            user_skills: None,
            state: None,
            projects: ProjectRoots::default(),
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
        }
    }
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
    /// Project roots resolved once per session (`None`: refused, see `warnings`).
    projects: HashMap<String, Option<PathBuf>>,
    /// Root folders opened once, by real path.
    dirs: HashMap<PathBuf, OwnedFd>,
    /// Per resolved project skills folder, its project's real folder: the skills folder is
    /// opened from there, one component at a time.
    project_bases: HashMap<PathBuf, PathBuf>,
    faults: FsFaults,
    writes: u64,
    renames: u64,
    /// Directory entries skipped because their names are not UTF-8.
    pub skipped_non_utf8: u64,
    /// Sentences for the host's log (a refused project root, a hard-linked file); drained by the caller.
    pub warnings: Vec<String>,
}

impl FsCap {
    /// User and state roots are resolved to their real paths here, once.
    pub fn new(mut config: FsConfig, faults: FsFaults) -> FsCap {
        config.user_skills = config.user_skills.as_deref().map(roots::real_path);
        config.state = config.state.as_deref().map(roots::real_path);
        FsCap {
            config,
            cwd_by_session: HashMap::new(),
            projects: HashMap::new(),
            dirs: HashMap::new(),
            project_bases: HashMap::new(),
            faults,
            writes: 0,
            renames: 0,
            skipped_non_utf8: 0,
            warnings: Vec::new(),
        }
    }

    /// Remembers a session's cwd (the host learns it from every call context). A project root
    /// is resolved once; a new cwd resolves it again.
    pub fn note_session(&mut self, session: &str, cwd: &str) {
        if !cwd.is_empty() && self.cwd_by_session.get(session).map(String::as_str) != Some(cwd) {
            self.cwd_by_session.insert(session.to_string(), cwd.to_string());
            self.projects.remove(session);
        }
    }

    /// The cwd last seen for a session.
    pub fn cwd_of(&self, session: &str) -> Option<String> {
        self.cwd_by_session.get(session).cloned()
    }

    /// The real folder behind a root, if mapped.
    pub fn root_path(&mut self, root: &RootRef) -> Option<PathBuf> {
        match root {
            RootRef::UserSkills => self.config.user_skills.clone(),
            RootRef::State => self.config.state.clone(),
            RootRef::ProjectSkills(session) => {
                if let Some(resolved) = self.projects.get(session) {
                    return resolved.clone();
                }
                let resolved = self.resolve_project(session);
                self.projects.insert(session.clone(), resolved.clone());
                resolved
            }
        }
    }

    /// The configured or discovered project skills folder of a session, checked against its project.
    fn resolve_project(&mut self, session: &str) -> Option<PathBuf> {
        let projects = &self.config.projects;
        let (skills, project) = if let Some(path) = projects.sessions.get(session) {
            (path.clone(), roots::project_of(path, &projects.markers))
        } else if let Some(project) = projects
            .discover
            .then(|| self.cwd_by_session.get(session).map(Path::new))
            .flatten()
            .filter(|cwd| cwd.is_absolute())
            .and_then(|cwd| {
                // The home's own `.dsh` marks no project: its skills folder is the user library.
                cwd.ancestors().find(|dir| {
                    projects.markers.iter().any(|m| dir.join(m).exists())
                        && !self.is_user_library(&dir.join(&projects.skills_subdir))
                })
            })
        {
            (project.join(&projects.skills_subdir), project.to_path_buf())
        } else {
            let path = projects.default_project.clone()?;
            let project = roots::project_of(&path, &projects.markers);
            (path, project)
        };
        match roots::resolve_project(&skills, &project) {
            Ok(real) if self.is_user_library(&real) => {
                self.warnings.push(format!(
                    "project skills folder {} is the user skills folder (or holds it, or lies inside it); running \
                     without a project root",
                    skills.display()
                ));
                None
            }
            Ok(real) => {
                self.project_bases.insert(real.clone(), roots::real_path(&project));
                Some(real)
            }
            Err(warning) => {
                self.warnings.push(warning);
                None
            }
        }
    }

    /// Whether `folder` is the user skills folder, inside it or around it: a project root there
    /// would make the user's library a project's (and a team library's notes project-only).
    fn is_user_library(&self, folder: &Path) -> bool {
        let Some(user) = &self.config.user_skills else { return false };
        let real = roots::real_path(folder);
        real.starts_with(user) || user.starts_with(&real)
    }

    pub fn has_root(&mut self, root: &RootRef) -> bool {
        self.root_path(root).is_some()
    }

    /// The user and state roots as resolved at start-up (for `inspect`).
    pub fn describe_roots(&self) -> Vec<(&'static str, Option<PathBuf>)> {
        vec![("user-skills", self.config.user_skills.clone()), ("state", self.config.state.clone())]
    }

    /// Opens (and caches) the root folder by its real path; `create` makes it when missing.
    fn dir(&mut self, root: &RootRef, create: bool) -> Result<&OwnedFd, FsErr> {
        let path = self.root_path(root).ok_or(FsErr::NotPermitted)?;
        // A root folder deleted since it was opened (the operator removed the state folder while
        // the server ran) is opened again at the same real path, as Node and Python do: its old
        // handle would fail every later call.
        if let Some(fd) = self.dirs.get(&path)
            && rustix::fs::fstat(fd).is_ok_and(|st| st.st_nlink == 0)
        {
            self.dirs.remove(&path);
        }
        if !self.dirs.contains_key(&path) {
            let fd = match self.project_bases.get(&path) {
                // From the project's real folder down, one component at a time and never through a
                // link: a `.dsh` planted as a link after the root was resolved (a checkout, a
                // hostile repository) is refused, not followed out of the project.
                Some(project) => {
                    let base = open::open_real(project, false)?;
                    let below = path.strip_prefix(project).ok().and_then(Path::to_str).ok_or(FsErr::NotPermitted)?;
                    open::open_dir(&base, below, create)?
                }
                // Walked from `/` without following links, never opened by name: a user or state
                // root (or a folder above it) swapped for a link after start-up is `symlink`, not
                // a way out of the root (Node's `Dirs.openReal`, Python's `open_real`).
                None => open::open_real(&path, create)?,
            };
            self.dirs.insert(path.clone(), fd);
        }
        self.dirs.get(&path).ok_or(FsErr::NotPermitted)
    }

    fn is_skills_root(root: &RootRef) -> bool {
        !matches!(root, RootRef::State)
    }

    pub fn read(&mut self, root: &RootRef, path: &str) -> Result<Vec<u8>, FsErr> {
        validate(path)?;
        let limit = self.config.max_read_bytes;
        let dir = self.dir(root, false)?;
        let (fd, st) = open::open_file(dir, path, Access::Read, Self::is_skills_root(root))?;
        let size = open::unsigned(st.st_size);
        if size > limit {
            return Err(FsErr::TooLarge { path: path.to_string(), size, limit });
        }
        let mut data = Vec::with_capacity(size as usize);
        std::fs::File::from(fd).take(limit.saturating_add(1)).read_to_end(&mut data).map_err(io_err)?;
        if data.len() as u64 > limit {
            // It grew while we read it.
            return Err(FsErr::TooLarge { path: path.to_string(), size: data.len() as u64, limit });
        }
        Ok(data)
    }

    pub fn write(&mut self, root: &RootRef, path: &str, data: &[u8], mode: Mode) -> Result<(), FsErr> {
        validate(path)?;
        self.writes += 1;
        if self.faults.fail_write_at == Some(self.writes) {
            return Err(self.injected());
        }
        let dir = self.dir(root, true)?;
        let access = match mode {
            Mode::CreateNew => Access::CreateNew,
            Mode::Truncate => Access::Truncate,
            Mode::Append => Access::Append,
        };
        let (fd, _) = open::open_file(dir, path, access, true)?;
        let mut file = std::fs::File::from(fd);
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
        // The root is not made here: a missing root holds no source, so the answer is `not-found`
        // with nothing created, as in Node and Python (`to`'s folders are made only after the
        // source was found).
        let dir = self.dir(root, false)?;
        let ((from_parent, from_name), (to_parent, to_name)) = (open::split(from), open::split(to));
        let source = open::open_dir(dir, from_parent, false)?;
        let st = open::lstat(&source, from_name)?;
        if open::kind_of(&st) == Kind::Symlink {
            return Err(FsErr::Symlink);
        }
        // A rename within one folder (a session's journal claimed and handed back, at every
        // event of a held session) walks to that folder once.
        let other;
        let target = if to_parent == from_parent {
            &source
        } else {
            other = open::open_dir(dir, to_parent, true)?;
            &other
        };
        if let Ok(existing) = open::lstat(target, to_name)
            && open::kind_of(&existing) == Kind::Symlink
        {
            return Err(FsErr::Symlink);
        }
        rustix::fs::renameat(&source, from_name, target, to_name).map_err(open::errno)
    }

    pub fn remove_file(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        self.remove(root, path, Kind::File)
    }

    pub fn remove_dir(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        self.remove(root, path, Kind::Dir)
    }

    /// Removes the entry at `path` when it is of `kind`, through its parent's handle (never a link).
    fn remove(&mut self, root: &RootRef, path: &str, kind: Kind) -> Result<(), FsErr> {
        validate(path)?;
        let dir = self.dir(root, false)?;
        let (parent, name) = open::split(path);
        let parent = open::open_dir(dir, parent, false)?;
        let found = open::kind_of(&open::lstat(&parent, name)?);
        if found == Kind::Symlink {
            return Err(FsErr::Symlink);
        }
        if found != kind {
            return Err(FsErr::WrongKind);
        }
        let flags = if kind == Kind::Dir { rustix::fs::AtFlags::REMOVEDIR } else { rustix::fs::AtFlags::empty() };
        rustix::fs::unlinkat(&parent, name, flags).map_err(open::errno)
    }

    pub fn create_dir_all(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        validate(path)?;
        let dir = self.dir(root, true)?;
        open::open_dir(dir, path, true).map(drop)
    }

    /// Entries sorted by name. "" lists the root; a root folder not created yet is empty.
    /// Names that are not UTF-8 are skipped (and counted), never passed on mangled. Special
    /// files are listed as files: opening one is `wrong-kind`, so the plugin reports that entry.
    pub fn list_dir(&mut self, root: &RootRef, path: &str) -> Result<Vec<(String, Kind)>, FsErr> {
        let folder = if path.is_empty() {
            match self.dir(root, false) {
                Ok(dir) => open::open_dir(dir, "", false)?,
                Err(FsErr::NotFound) => return Ok(Vec::new()),
                Err(err) => return Err(err),
            }
        } else {
            validate(path)?;
            let dir = self.dir(root, false)?;
            open::open_dir(dir, path, false)?
        };
        let mut out = Vec::new();
        let mut entries = rustix::fs::Dir::read_from(&folder).map_err(open::errno)?;
        while let Some(entry) = entries.read() {
            let entry = entry.map_err(open::errno)?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let Ok(name) = std::str::from_utf8(bytes) else {
                self.skipped_non_utf8 += 1;
                continue;
            };
            let kind = match entry.file_type() {
                rustix::fs::FileType::Symlink => Kind::Symlink,
                rustix::fs::FileType::Directory => Kind::Dir,
                rustix::fs::FileType::Unknown => open::kind_of(&open::lstat(&folder, name)?),
                _ => Kind::File,
            };
            out.push((name.to_string(), kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Never follows symlinks: a symlink at the end is reported as one; before the end it is refused.
    pub fn stat(&mut self, root: &RootRef, path: &str) -> Result<StatInfo, FsErr> {
        // The path is checked before the root is looked at, as `read` does and as Node and Python
        // do: "../x" is `invalid-path` whether or not the root is mapped.
        if !path.is_empty() {
            validate(path)?;
        }
        let dir = self.dir(root, false)?;
        if path.is_empty() {
            // The root folder itself: its mtime tells a caller whether entries came or went.
            let st = rustix::fs::fstat(dir).map_err(open::errno)?;
            return Ok(StatInfo { kind: Kind::Dir, size: 0, modified_ms: open::modified_ms(&st) });
        }
        let (parent, name) = open::split(path);
        let parent = open::open_dir(dir, parent, false)?;
        let st = open::lstat(&parent, name)?;
        Ok(StatInfo { kind: open::kind_of(&st), size: open::unsigned(st.st_size), modified_ms: open::modified_ms(&st) })
    }

    /// `stat` for many paths. On Linux each path costs one `openat2` that refuses any symlink
    /// and cannot leave the root, plus an `fstat`; anything unusual falls back to `stat`.
    pub fn stat_many(&mut self, root: &RootRef, paths: &[String]) -> Vec<Result<StatInfo, FsErr>> {
        #[cfg(target_os = "linux")]
        if let Ok(dir) = self.dir(root, false) {
            let fd = dir.try_clone();
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
    // "" is the root folder itself, as `stat("")` answers (Node's and Python's `statMany` too).
    if path.is_empty() {
        return None;
    }
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
    if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
        return None;
    }
    Some(Ok(StatInfo {
        kind: open::kind_of(&st),
        size: open::unsigned(st.st_size),
        modified_ms: open::modified_ms(&st),
    }))
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

fn io_err(err: std::io::Error) -> FsErr {
    // An OS error is typed as every other fs call types it (EROFS is `not-permitted`, and so on).
    if let Some(code) = err.raw_os_error() {
        return open::errno(rustix::io::Errno::from_raw_os_error(code));
    }
    match err.kind() {
        std::io::ErrorKind::NotFound => FsErr::NotFound,
        std::io::ErrorKind::AlreadyExists => FsErr::AlreadyExists,
        std::io::ErrorKind::PermissionDenied => FsErr::NotPermitted,
        std::io::ErrorKind::StorageFull => FsErr::NoSpace,
        std::io::ErrorKind::NotADirectory | std::io::ErrorKind::IsADirectory => FsErr::WrongKind,
        std::io::ErrorKind::DirectoryNotEmpty => FsErr::Io("folder not empty".into()),
        _ => FsErr::Io(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_error_is_typed_as_the_handle_calls_type_it() {
        let code = |e: rustix::io::Errno| io_err(std::io::Error::from_raw_os_error(e.raw_os_error()));
        assert_eq!(code(rustix::io::Errno::ROFS), FsErr::NotPermitted);
        assert_eq!(code(rustix::io::Errno::NAMETOOLONG), FsErr::InvalidPath);
        assert_eq!(code(rustix::io::Errno::NOENT), FsErr::NotFound);
        assert!(matches!(io_err(std::io::Error::other("x")), FsErr::Io(_)));
    }
}
