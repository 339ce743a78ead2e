//! The fs capability's vocabulary: which root, what went wrong, what kind of file, how to write.
//! `mod.rs` (the capability) and `open.rs` (opening by handle) both speak it.

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
    /// A file larger than the host's read bound; the plugin reports it as `too-large`.
    TooLarge {
        path: String,
        size: u64,
        limit: u64,
    },
    /// A file with this many hard links: written nowhere, read nowhere in a skills root.
    HardLinked(u64),
    Io(String),
}

impl FsErr {
    /// The `io` text a too-large read crosses the contract with; every host writes it the same way.
    pub fn too_large_message(path: &str, size: u64, limit: u64) -> String {
        format!("too-large: {path} is {size} bytes; the host reads at most {limit}")
    }
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

/// Why a host that names a root does not start where the capability cannot confine (Windows:
/// `refused.rs`; `Plugin::load`, and the `self-evolve` binary at start).
pub const REFUSAL: &str = "self-evolve confines the filesystem only on Linux and macOS (each path is opened \
                           relative to its root's folder handle, refusing links); on Windows, run it inside WSL \
                           (https://learn.microsoft.com/windows/wsl/install)";
