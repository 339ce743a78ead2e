//! The fs capability: named roots mapped to real folders, resolved once when mapped
//! (`roots.rs`), and every path opened by handle from its root, one component at a time, links
//! refused at open time (`open.rs`). Only regular files and folders are ever opened; reads are
//! bounded; a file with more than one hard link is never written (nor read in a skills root).
//! Absolute paths, `..`, empty components and control characters are refused before any of that.

#[cfg(unix)]
mod open;
#[cfg(unix)]
mod ops;
#[cfg(not(unix))]
mod refused;
pub mod roots;
mod types;

pub use types::{FsErr, Kind, Mode, REFUSAL, RootRef, StatInfo};

/// A root folder as this platform holds it open: a handle every path is opened from (`ops.rs`),
/// or nothing where the capability refuses (`refused.rs`).
#[cfg(unix)]
type Handle = std::os::fd::OwnedFd;
#[cfg(not(unix))]
type Handle = ();
use std::collections::{BTreeMap, HashMap};
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

impl FsConfig {
    /// Whether any root is named (a user or state folder, a session's project, a default one).
    pub fn names_a_root(&self) -> bool {
        self.user_skills.is_some()
            || self.state.is_some()
            || !self.projects.sessions.is_empty()
            || self.projects.default_project.is_some()
    }
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

// Where it cannot confine (`refused.rs`), the handles, faults and counters go unused.
#[cfg_attr(not(unix), allow(dead_code))]
pub struct FsCap {
    config: FsConfig,
    cwd_by_session: HashMap<String, String>,
    /// Project roots resolved once per session (`None`: refused, see `warnings`).
    projects: HashMap<String, Option<PathBuf>>,
    /// Root folders opened once, by real path.
    dirs: HashMap<PathBuf, Handle>,
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

    /// Whether the root is mapped. Never where the capability cannot confine (`refused.rs`): the
    /// plugin then runs with no filesystem, never half confined.
    pub fn has_root(&mut self, root: &RootRef) -> bool {
        cfg!(unix) && self.root_path(root).is_some()
    }

    /// The user and state roots as resolved at start-up (for `inspect`).
    pub fn describe_roots(&self) -> Vec<(&'static str, Option<PathBuf>)> {
        vec![("user-skills", self.config.user_skills.clone()), ("state", self.config.state.clone())]
    }

    #[cfg_attr(not(unix), allow(dead_code))]
    fn is_skills_root(root: &RootRef) -> bool {
        !matches!(root, RootRef::State)
    }

    #[cfg_attr(not(unix), allow(dead_code))]
    fn injected(&self) -> FsErr {
        self.faults.error.clone().unwrap_or_else(|| FsErr::Io("injected fault".into()))
    }
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

#[cfg(unix)]
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Where the capability cannot confine, `Plugin::load` refuses a config that names a root;
    /// the default names none (discovery alone maps nothing until a session's cwd is seen).
    #[test]
    fn a_config_names_a_root_only_when_it_maps_a_folder() {
        assert!(!FsConfig::default().names_a_root());
        let mut config = FsConfig { state: Some("/tmp/state".into()), ..FsConfig::default() };
        assert!(config.names_a_root());
        config.state = None;
        config.projects.default_project = Some("/tmp/p/.dsh/skills".into());
        assert!(config.names_a_root());
        config.projects.default_project = None;
        config.projects.sessions.insert("s1".into(), "/tmp/p/.dsh/skills".into());
        assert!(config.names_a_root());
    }

    #[test]
    fn an_os_error_is_typed_as_the_handle_calls_type_it() {
        let code = |e: rustix::io::Errno| io_err(std::io::Error::from_raw_os_error(e.raw_os_error()));
        assert_eq!(code(rustix::io::Errno::ROFS), FsErr::NotPermitted);
        assert_eq!(code(rustix::io::Errno::NAMETOOLONG), FsErr::InvalidPath);
        assert_eq!(code(rustix::io::Errno::NOENT), FsErr::NotFound);
        assert!(matches!(io_err(std::io::Error::other("x")), FsErr::Io(_)));
    }
}
