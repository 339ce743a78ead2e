//! The WIT world as Rust (wasmtime's `bindgen!`) and the import traits implemented over
//! `HostState`'s capabilities. The only host file that knows the generated types.

use crate::caps::{fs as fscap, http as httpcap, log as logcap, subagent as subcap};
use crate::state::HostState;

wasmtime::component::bindgen!({ world: "plugin", path: "wit" });

pub use self::self_evolve::plugin::{clock, fs, http, log, subagent, types};
pub use exports::self_evolve::plugin::{catalog, checker, events, lifecycle, review_loop, tools};

pub fn root(root: &fs::Root) -> fscap::RootRef {
    match root {
        fs::Root::UserSkills => fscap::RootRef::UserSkills,
        fs::Root::ProjectSkills(session) => fscap::RootRef::ProjectSkills(session.clone()),
        fs::Root::State => fscap::RootRef::State,
    }
}

fn fs_err(err: fscap::FsErr) -> fs::FsError {
    match err {
        fscap::FsErr::NotFound => fs::FsError::NotFound,
        fscap::FsErr::AlreadyExists => fs::FsError::AlreadyExists,
        fscap::FsErr::NotPermitted => fs::FsError::NotPermitted,
        fscap::FsErr::Symlink => fs::FsError::Symlink,
        fscap::FsErr::InvalidPath => fs::FsError::InvalidPath,
        fscap::FsErr::NoSpace => fs::FsError::NoSpace,
        fscap::FsErr::WrongKind => fs::FsError::WrongKind,
        fscap::FsErr::TooLarge { path, size, limit } => {
            fs::FsError::Io(fscap::FsErr::too_large_message(&path, size, limit))
        }
        fscap::FsErr::HardLinked(_) => fs::FsError::NotPermitted,
        fscap::FsErr::Io(msg) => fs::FsError::Io(msg),
    }
}

impl HostState {
    /// Maps an fs result for the guest and logs what the guest's error cannot say: why a file was
    /// refused (hard links), and the capability's own warnings (a project root not mapped).
    fn fs_done<T>(&mut self, path: &str, result: Result<T, fscap::FsErr>) -> Result<T, fs::FsError> {
        for warning in std::mem::take(&mut self.fs.warnings) {
            self.log.log(logcap::Level::Warn, &warning);
        }
        if let Err(fscap::FsErr::HardLinked(links)) = &result {
            self.log.log(
                logcap::Level::Warn,
                &format!(
                    "refused `{path}`: the file has {links} hard links and may be shared with a file outside the root"
                ),
            );
        }
        result.map_err(fs_err)
    }
}

fn kind(kind: fscap::Kind) -> fs::EntryKind {
    match kind {
        fscap::Kind::File => fs::EntryKind::File,
        fscap::Kind::Dir => fs::EntryKind::Dir,
        fscap::Kind::Symlink => fs::EntryKind::Symlink,
    }
}

impl types::Host for HostState {}

impl fs::Host for HostState {
    fn read(&mut self, r: fs::Root, path: String) -> Result<Vec<u8>, fs::FsError> {
        let result = self.fs.read(&root(&r), &path);
        self.fs_done(&path, result)
    }
    fn write(&mut self, r: fs::Root, path: String, data: Vec<u8>, mode: fs::WriteMode) -> Result<(), fs::FsError> {
        let mode = match mode {
            fs::WriteMode::CreateNew => fscap::Mode::CreateNew,
            fs::WriteMode::Truncate => fscap::Mode::Truncate,
            fs::WriteMode::Append => fscap::Mode::Append,
        };
        let result = self.fs.write(&root(&r), &path, &data, mode);
        self.fs_done(&path, result)
    }
    fn rename(&mut self, r: fs::Root, from: String, to: String) -> Result<(), fs::FsError> {
        let result = self.fs.rename(&root(&r), &from, &to);
        self.fs_done(&from, result)
    }
    fn remove_file(&mut self, r: fs::Root, path: String) -> Result<(), fs::FsError> {
        let result = self.fs.remove_file(&root(&r), &path);
        self.fs_done(&path, result)
    }
    fn remove_dir(&mut self, r: fs::Root, path: String) -> Result<(), fs::FsError> {
        let result = self.fs.remove_dir(&root(&r), &path);
        self.fs_done(&path, result)
    }
    fn create_dir_all(&mut self, r: fs::Root, path: String) -> Result<(), fs::FsError> {
        let result = self.fs.create_dir_all(&root(&r), &path);
        self.fs_done(&path, result)
    }
    fn list_dir(&mut self, r: fs::Root, path: String) -> Result<Vec<(String, fs::EntryKind)>, fs::FsError> {
        let skipped = self.fs.skipped_non_utf8;
        let result = self.fs.list_dir(&root(&r), &path);
        let entries = self.fs_done(&path, result)?;
        if self.fs.skipped_non_utf8 > skipped {
            self.log.log(logcap::Level::Warn, &format!("skipped entries with non-UTF-8 names under `{path}`"));
        }
        Ok(entries.into_iter().map(|(name, k)| (name, kind(k))).collect())
    }
    fn stat(&mut self, r: fs::Root, path: String) -> Result<fs::FileStat, fs::FsError> {
        let result = self.fs.stat(&root(&r), &path);
        let s = self.fs_done(&path, result)?;
        Ok(fs::FileStat { kind: kind(s.kind), size: s.size, modified_ms: s.modified_ms })
    }
    fn stat_many(&mut self, r: fs::Root, paths: Vec<String>) -> Vec<Result<fs::FileStat, fs::FsError>> {
        self.fs
            .stat_many(&root(&r), &paths)
            .into_iter()
            .map(|s| {
                let s = s.map_err(fs_err)?;
                Ok(fs::FileStat { kind: kind(s.kind), size: s.size, modified_ms: s.modified_ms })
            })
            .collect()
    }
    fn has_root(&mut self, r: fs::Root) -> bool {
        let mapped = self.fs.has_root(&root(&r));
        let _ = self.fs_done("", Ok(()));
        mapped
    }
}

impl http::Host for HostState {
    fn post(&mut self, req: http::Request) -> Result<http::Response, http::HttpError> {
        let request = httpcap::Request {
            endpoint: req.endpoint,
            path: req.path,
            headers: req.headers,
            body: req.body,
            timeout_ms: req.timeout_ms,
        };
        let started = std::time::Instant::now();
        let outcome = self.http.post(&request);
        self.host_wait += started.elapsed();
        match outcome {
            Ok(r) => Ok(http::Response { status: r.status, body: r.body }),
            Err(httpcap::HttpErr::Timeout) => Err(http::HttpError::Timeout),
            Err(httpcap::HttpErr::NoCredential) => Err(http::HttpError::NoCredential),
            Err(httpcap::HttpErr::Network(msg)) => Err(http::HttpError::Network(msg)),
            Err(httpcap::HttpErr::Denied(why)) => {
                self.log.log(logcap::Level::Warn, &format!("http request denied: {why}"));
                Err(http::HttpError::Denied)
            }
        }
    }
    fn has_endpoint(&mut self, endpoint: String) -> bool {
        self.http.has_endpoint(&endpoint)
    }
    fn has_credential(&mut self, endpoint: String) -> bool {
        self.http.has_credential(&endpoint)
    }
}

impl subagent::Host for HostState {
    fn start(&mut self, spec: subagent::Spec) -> Result<String, String> {
        self.subagents.set_now(self.clock.now_ms());
        let started = std::time::Instant::now();
        let outcome = self.subagents.start(&subcap::Spec {
            parent_session: spec.parent_session,
            provider: spec.provider,
            delivery: spec.delivery,
            prompt: spec.prompt,
            tools: spec.tools,
            timeout_ms: spec.timeout_ms,
        });
        self.host_wait += started.elapsed();
        outcome
    }
    fn restrict_tools(&mut self, id: String, tools: Vec<String>) -> Result<(), String> {
        self.subagents.restrict_tools(&id, &tools)
    }
    fn abort(&mut self, id: String) {
        self.subagents.abort(&id)
    }
}

impl clock::Host for HostState {
    fn now_ms(&mut self) -> u64 {
        self.clock.now_ms()
    }
}

impl log::Host for HostState {
    fn log(&mut self, level: log::Level, message: String) {
        let level = match level {
            log::Level::Debug => logcap::Level::Debug,
            log::Level::Info => logcap::Level::Info,
            log::Level::Warn => logcap::Level::Warn,
            log::Level::Error => logcap::Level::Error,
        };
        self.log.log(level, &message)
    }
}
