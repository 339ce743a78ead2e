//! The `Host` port: the five capabilities the harness grants, as plain Rust.
//! Policy code depends only on this trait; `adapter.rs` implements it over the WIT imports.

use std::fmt;

/// A filesystem root the host mapped. Mirrors `fs.root` in the WIT.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Root {
    UserSkills,
    /// The project skills folder of the session with this id.
    ProjectSkills(String),
    State,
}

impl fmt::Display for Root {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Root::UserSkills => f.write_str("user-skills"),
            Root::ProjectSkills(session) => write!(f, "project-skills[{session}]"),
            Root::State => f.write_str("state"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsError {
    NotFound,
    AlreadyExists,
    NotPermitted,
    Symlink,
    InvalidPath,
    NoSpace,
    WrongKind,
    Io(String),
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::NotFound => f.write_str("not found"),
            FsError::AlreadyExists => f.write_str("already exists"),
            FsError::NotPermitted => f.write_str("not permitted by the host"),
            FsError::Symlink => f.write_str("a path component is a symlink"),
            FsError::InvalidPath => f.write_str("invalid path"),
            FsError::NoSpace => f.write_str("no space left"),
            FsError::WrongKind => {
                f.write_str("not a regular file or folder where one was expected (a folder, FIFO, socket or device)")
            }
            FsError::Io(msg) => write!(f, "i/o error: {msg}"),
        }
    }
}

impl FsError {
    /// The host refused a read past its bound. The contract carries it as `io` text starting
    /// `too-large:` (every host writes the same sentence), so the shapes of the WIT stay as released.
    pub fn is_too_large(&self) -> bool {
        matches!(self, FsError::Io(msg) if msg.starts_with("too-large:"))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: EntryKind,
    pub size: u64,
    pub modified_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    CreateNew,
    Truncate,
    Append,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub endpoint: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout_ms: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    Timeout,
    Denied,
    NoCredential,
    Network(String),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Timeout => f.write_str("timeout"),
            HttpError::Denied => f.write_str("denied by the host"),
            HttpError::NoCredential => f.write_str("no credential configured"),
            HttpError::Network(msg) => write!(f, "network error: {msg}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentSpec {
    pub parent_session: String,
    pub provider: String,
    pub delivery: String,
    pub prompt: String,
    pub tools: Vec<String>,
    pub timeout_ms: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

/// The five capabilities. Every method is a host call; none may panic.
pub trait Host {
    // fs
    fn read(&self, root: &Root, path: &str) -> Result<Vec<u8>, FsError>;
    fn write(&self, root: &Root, path: &str, data: &[u8], mode: WriteMode) -> Result<(), FsError>;
    fn rename(&self, root: &Root, from: &str, to: &str) -> Result<(), FsError>;
    fn remove_file(&self, root: &Root, path: &str) -> Result<(), FsError>;
    fn remove_dir(&self, root: &Root, path: &str) -> Result<(), FsError>;
    fn create_dir_all(&self, root: &Root, path: &str) -> Result<(), FsError>;
    fn list_dir(&self, root: &Root, path: &str) -> Result<Vec<(String, EntryKind)>, FsError>;
    fn stat(&self, root: &Root, path: &str) -> Result<Stat, FsError>;
    fn stat_many(&self, root: &Root, paths: &[String]) -> Vec<Result<Stat, FsError>>;
    fn has_root(&self, root: &Root) -> bool;

    // http
    fn http_post(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError>;
    fn has_endpoint(&self, endpoint: &str) -> bool;
    fn has_credential(&self, endpoint: &str) -> bool;

    // subagent
    fn subagent_start(&self, spec: &SubagentSpec) -> Result<String, String>;
    fn subagent_restrict_tools(&self, id: &str, tools: &[String]) -> Result<(), String>;
    fn subagent_abort(&self, id: &str);

    // clock
    fn now_ms(&self) -> u64;

    // log
    fn log(&self, level: Level, message: &str);
}
