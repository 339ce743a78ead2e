//! The plugin's policy code run natively on the host's real fs capability: the same `FsCap` the
//! component's imports call, behind the plugin's `Host` trait. Benches use it to compare the
//! component with native code on equal terms (same folders, same syscalls), so a ratio measures
//! the component's cost and not the difference between a real and an in-memory filesystem.

use self_evolve_host::caps::fs::{FsCap, FsConfig, FsErr, Kind, Mode, RootRef};
use self_evolve_plugin::host::{
    EntryKind, FsError, Host, HttpError, HttpRequest, HttpResponse, Level, Root, Stat, SubagentSpec, WriteMode,
};
use std::cell::RefCell;

pub struct NativeFsHost {
    fs: RefCell<FsCap>,
}

impl NativeFsHost {
    pub fn new(config: FsConfig) -> NativeFsHost {
        NativeFsHost { fs: RefCell::new(FsCap::new(config, Default::default())) }
    }
}

fn root_ref(root: &Root) -> RootRef {
    match root {
        Root::UserSkills => RootRef::UserSkills,
        Root::ProjectSkills(session) => RootRef::ProjectSkills(session.clone()),
        Root::State => RootRef::State,
    }
}

/// As `bindings.rs` maps them for the guest.
fn fs_error(err: FsErr) -> FsError {
    match err {
        FsErr::NotFound => FsError::NotFound,
        FsErr::AlreadyExists => FsError::AlreadyExists,
        FsErr::NotPermitted | FsErr::HardLinked(_) => FsError::NotPermitted,
        FsErr::Symlink => FsError::Symlink,
        FsErr::InvalidPath => FsError::InvalidPath,
        FsErr::NoSpace => FsError::NoSpace,
        FsErr::WrongKind => FsError::WrongKind,
        FsErr::TooLarge { path, size, limit } => FsError::Io(FsErr::too_large_message(&path, size, limit)),
        FsErr::Io(msg) => FsError::Io(msg),
    }
}

fn entry_kind(kind: Kind) -> EntryKind {
    match kind {
        Kind::File => EntryKind::File,
        Kind::Dir => EntryKind::Dir,
        Kind::Symlink => EntryKind::Symlink,
    }
}

impl Host for NativeFsHost {
    fn read(&self, root: &Root, path: &str) -> Result<Vec<u8>, FsError> {
        self.fs.borrow_mut().read(&root_ref(root), path).map_err(fs_error)
    }
    fn write(&self, root: &Root, path: &str, data: &[u8], mode: WriteMode) -> Result<(), FsError> {
        let mode = match mode {
            WriteMode::CreateNew => Mode::CreateNew,
            WriteMode::Truncate => Mode::Truncate,
            WriteMode::Append => Mode::Append,
        };
        self.fs.borrow_mut().write(&root_ref(root), path, data, mode).map_err(fs_error)
    }
    fn rename(&self, root: &Root, from: &str, to: &str) -> Result<(), FsError> {
        self.fs.borrow_mut().rename(&root_ref(root), from, to).map_err(fs_error)
    }
    fn remove_file(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.fs.borrow_mut().remove_file(&root_ref(root), path).map_err(fs_error)
    }
    fn remove_dir(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.fs.borrow_mut().remove_dir(&root_ref(root), path).map_err(fs_error)
    }
    fn create_dir_all(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.fs.borrow_mut().create_dir_all(&root_ref(root), path).map_err(fs_error)
    }
    fn list_dir(&self, root: &Root, path: &str) -> Result<Vec<(String, EntryKind)>, FsError> {
        let entries = self.fs.borrow_mut().list_dir(&root_ref(root), path).map_err(fs_error)?;
        Ok(entries.into_iter().map(|(name, kind)| (name, entry_kind(kind))).collect())
    }
    fn stat(&self, root: &Root, path: &str) -> Result<Stat, FsError> {
        let st = self.fs.borrow_mut().stat(&root_ref(root), path).map_err(fs_error)?;
        Ok(Stat { kind: entry_kind(st.kind), size: st.size, modified_ms: st.modified_ms })
    }
    fn stat_many(&self, root: &Root, paths: &[String]) -> Vec<Result<Stat, FsError>> {
        let results = self.fs.borrow_mut().stat_many(&root_ref(root), paths);
        results
            .into_iter()
            .map(|r| {
                r.map(|st| Stat { kind: entry_kind(st.kind), size: st.size, modified_ms: st.modified_ms })
                    .map_err(fs_error)
            })
            .collect()
    }
    fn has_root(&self, root: &Root) -> bool {
        self.fs.borrow_mut().has_root(&root_ref(root))
    }
    fn http_post(&self, _request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        Err(HttpError::Denied)
    }
    fn has_endpoint(&self, _endpoint: &str) -> bool {
        false
    }
    fn has_credential(&self, _endpoint: &str) -> bool {
        false
    }
    fn subagent_start(&self, _spec: &SubagentSpec) -> Result<String, String> {
        Err("no subagents in this bench".into())
    }
    fn subagent_restrict_tools(&self, _id: &str, _tools: &[String]) -> Result<(), String> {
        Ok(())
    }
    fn subagent_abort(&self, _id: &str) {}
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
    fn log(&self, _level: Level, _message: &str) {}
}
