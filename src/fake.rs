//! An in-memory `Host` for native tests and benchmarks of the policy: a filesystem with
//! roots, a manual clock, captured logs, scripted HTTP and subagents, and injected faults.

use crate::host::*;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    File { data: Vec<u8>, modified_ms: u64 },
    Dir,
    Symlink,
}

/// Where in a write an interleaved step runs (see `interleave` and `interleave_inside_write`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// Before the write begins, under a path prefix.
    BeforeWrite,
    /// Inside a write under a folder, once it has opened that folder.
    InsideWrite,
    /// Before a stat of the path.
    BeforeStat,
}

/// Another process's step, run by the host in the middle of the call under test.
type Step = Box<dyn FnOnce(&FakeHost)>;

type Interleaved = (String, Moment, Step);

#[derive(Default)]
pub struct FakeHost {
    /// Mapped roots and their entries, keyed by full relative path.
    pub roots: RefCell<BTreeMap<Root, BTreeMap<String, Node>>>,
    pub now: Cell<u64>,
    pub logs: RefCell<Vec<(Level, String)>>,
    pub endpoints: RefCell<BTreeMap<String, bool>>,
    pub http_script: RefCell<VecDeque<Result<HttpResponse, HttpError>>>,
    pub http_requests: RefCell<Vec<HttpRequest>>,
    pub started: RefCell<Vec<SubagentSpec>>,
    pub restricted: RefCell<Vec<(String, Vec<String>)>>,
    pub aborted: RefCell<Vec<String>>,
    pub refuse_starts: Cell<bool>,
    /// How long each HTTP call takes on the manual clock.
    pub http_latency_ms: Cell<u64>,
    /// Another process's step, run once just before the next write under a path prefix (see
    /// `interleave`).
    interleaved: RefCell<Option<Interleaved>>,
    /// Fail the n-th (1-based) write or rename from now on with `Io`.
    pub fail_write_at: Cell<Option<u64>>,
    pub fail_rename_at: Cell<Option<u64>>,
    writes: Cell<u64>,
    renames: Cell<u64>,
    /// Per root, the time (ms) of the last change of a top-level entry: the root's mtime.
    generations: RefCell<BTreeMap<Root, u64>>,
    /// Per folder below a root, the time (ms) of the last change under it: its mtime. Every
    /// folder above a changed path is stamped (a real filesystem stamps only the parent, and
    /// only for an entry added, removed or renamed: stamping more is the cautious side).
    dir_times: RefCell<BTreeMap<(Root, String), u64>>,
    /// How far the filesystem's time (files' mtimes) is from `now`: 0 unless this process's
    /// clock moved on its own (`step_process_clock`).
    file_clock_offset: Cell<i64>,
}

impl FakeHost {
    /// A host with the user-skills and state roots mapped, the clock at `now_ms`.
    pub fn new(now_ms: u64) -> FakeHost {
        let host = FakeHost::default();
        host.now.set(now_ms);
        host.map_root(Root::UserSkills);
        host.map_root(Root::State);
        host
    }

    pub fn map_root(&self, root: Root) {
        self.roots.borrow_mut().entry(root).or_default();
    }

    pub fn add_endpoint(&self, name: &str, with_credential: bool) {
        self.endpoints.borrow_mut().insert(name.to_string(), with_credential);
    }

    /// Writes and renames so far: with `fail_write_at` and `fail_rename_at`, which count from
    /// the first call, a fault lands on a chosen step of the call under test.
    pub fn writes_so_far(&self) -> u64 {
        self.writes.get()
    }

    pub fn renames_so_far(&self) -> u64 {
        self.renames.get()
    }

    pub fn advance(&self, ms: u64) {
        self.now.set(self.now.get() + ms);
    }

    /// Moves this process's clock by `ms` while the filesystem's time stands still: a replay's
    /// manual clock, stepped from event to event, on a machine whose real time barely moved.
    pub fn step_process_clock(&self, ms: i64) {
        self.now.set(self.now.get().saturating_add_signed(ms));
        self.file_clock_offset.set(self.file_clock_offset.get() - ms);
    }

    /// The time the filesystem stamps on what is written now.
    fn file_time(&self) -> u64 {
        self.now.get().saturating_add_signed(self.file_clock_offset.get())
    }

    /// Runs `step` once, just before the next write to a path starting with `prefix`: what
    /// another process does between two steps of the call under test (say, between its reads
    /// and the lock it takes to write).
    pub fn interleave(&self, prefix: &str, step: impl FnOnce(&FakeHost) + 'static) {
        *self.interleaved.borrow_mut() = Some((prefix.to_string(), Moment::BeforeWrite, Box::new(step)));
    }

    /// Runs `step` once, just before the next stat of `path`: another process acting between a
    /// call's failed step and the look it takes to judge why (a holder handing its journal back
    /// between a taker's rename and its stat).
    pub fn interleave_before_stat(&self, path: &str, step: impl FnOnce(&FakeHost) + 'static) {
        *self.interleaved.borrow_mut() = Some((path.to_string(), Moment::BeforeStat, Box::new(step)));
    }

    /// Runs `step` once, inside the next write to a path under `folder/`: after the write has
    /// opened `folder` (making it when missing), before it creates anything in it. A real host
    /// writes so (it opens the parent, then creates the entry at it), and an entry created in a
    /// folder removed meanwhile fails with `NotFound`: so does this write, when `step` removed
    /// `folder`. The window where another process's tidying of an empty shared folder breaks
    /// a write that made or found it.
    pub fn interleave_inside_write(&self, folder: &str, step: impl FnOnce(&FakeHost) + 'static) {
        *self.interleaved.borrow_mut() = Some((folder.to_string(), Moment::InsideWrite, Box::new(step)));
    }

    /// The step due at `moment` of a write to `path`, taken out of its slot: it writes through
    /// this host too.
    fn take_interleaved(&self, path: &str, moment: Moment) -> Option<(String, Step)> {
        let due = self.interleaved.borrow_mut().take_if(|(at, when, _)| {
            *when == moment
                && match moment {
                    Moment::BeforeWrite => path.starts_with(at.as_str()),
                    Moment::BeforeStat => path == at.as_str(),
                    Moment::InsideWrite => path.strip_prefix(at.as_str()).is_some_and(|rest| rest.starts_with('/')),
                }
        });
        due.map(|(at, _, step)| (at, step))
    }

    fn run_interleaved(&self, path: &str) {
        if let Some((_, step)) = self.take_interleaved(path, Moment::BeforeWrite) {
            step(self);
        }
    }

    /// Opens (makes) the folder an `interleave_inside_write` step waits in, runs the step, and
    /// fails as a real host would when the step removed that folder.
    fn run_inside_write(&self, root: &Root, path: &str) -> Result<(), FsError> {
        let Some((folder, step)) = self.take_interleaved(path, Moment::InsideWrite) else { return Ok(()) };
        self.with_root(root, &folder, |entries| match entries.get(&folder) {
            Some(Node::File { .. }) => Err(FsError::WrongKind),
            _ => {
                Self::make_parents(entries, &folder);
                entries.insert(folder.clone(), Node::Dir);
                Ok(())
            }
        })?;
        step(self);
        let open = self.roots.borrow().get(root).is_some_and(|e| matches!(e.get(&folder), Some(Node::Dir)));
        if open { Ok(()) } else { Err(FsError::NotFound) }
    }

    /// Places a symlink entry (the fake never follows it; every operation through it fails).
    pub fn add_symlink(&self, root: &Root, path: &str) {
        self.touch(root, path);
        if let Some(entries) = self.roots.borrow_mut().get_mut(root) {
            entries.insert(path.to_string(), Node::Symlink);
        }
    }

    /// Every file under a root, for "nothing changed" assertions.
    pub fn snapshot(&self) -> BTreeMap<Root, BTreeMap<String, Node>> {
        self.roots.borrow().clone()
    }

    pub fn file(&self, root: &Root, path: &str) -> Option<Vec<u8>> {
        match self.roots.borrow().get(root)?.get(path)? {
            Node::File { data, .. } => Some(data.clone()),
            _ => None,
        }
    }

    pub fn logged(&self, needle: &str) -> bool {
        self.logs.borrow().iter().any(|(_, m)| m.contains(needle))
    }

    fn check_path(path: &str) -> Result<(), FsError> {
        if path.starts_with('/')
            || path.contains('\\')
            || path.contains('\0')
            || path.split('/').any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(FsError::InvalidPath);
        }
        Ok(())
    }

    /// Checks the parents of `path`: no symlink, no file where a folder must be.
    fn check_parents(entries: &BTreeMap<String, Node>, path: &str) -> Result<(), FsError> {
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            match entries.get(&prefix) {
                Some(Node::Symlink) => return Err(FsError::Symlink),
                Some(Node::File { .. }) => return Err(FsError::WrongKind),
                _ => {}
            }
        }
        Ok(())
    }

    fn touch(&self, root: &Root, path: &str) {
        // A change inside a folder does not change the root's listing, as on a real filesystem.
        // The root's mtime is the clock's time, in ms: two changes in one ms leave it as it was,
        // as a real filesystem's coarse timestamps do (the listing must cope with that).
        if !path.contains('/') || self.created_top_level(root, path) {
            self.generations.borrow_mut().insert(root.clone(), self.file_time());
        }
        let mut dir = path;
        while let Some((parent, _)) = dir.rsplit_once('/') {
            self.dir_times.borrow_mut().insert((root.clone(), parent.to_string()), self.file_time());
            dir = parent;
        }
    }

    fn created_top_level(&self, root: &Root, path: &str) -> bool {
        let top = path.split('/').next().unwrap_or(path);
        !self.roots.borrow().get(root).is_some_and(|e| e.contains_key(top))
    }

    fn with_root<T>(
        &self,
        root: &Root,
        path: &str,
        f: impl FnOnce(&mut BTreeMap<String, Node>) -> Result<T, FsError>,
    ) -> Result<T, FsError> {
        Self::check_path(path)?;
        let mut roots = self.roots.borrow_mut();
        let entries = roots.get_mut(root).ok_or(FsError::NotPermitted)?;
        Self::check_parents(entries, path)?;
        if matches!(entries.get(path), Some(Node::Symlink)) {
            return Err(FsError::Symlink);
        }
        f(entries)
    }

    fn make_parents(entries: &mut BTreeMap<String, Node>, path: &str) {
        let mut prefix = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            entries.entry(prefix.clone()).or_insert(Node::Dir);
        }
    }

    fn has_children(entries: &BTreeMap<String, Node>, path: &str) -> bool {
        let prefix = format!("{path}/");
        entries.range(prefix.clone()..).next().is_some_and(|(k, _)| k.starts_with(&prefix))
    }

    fn bump(counter: &Cell<u64>, fail_at: &Cell<Option<u64>>) -> Result<(), FsError> {
        counter.set(counter.get() + 1);
        if fail_at.get() == Some(counter.get()) {
            return Err(FsError::Io("injected fault".into()));
        }
        Ok(())
    }
}

impl Host for FakeHost {
    fn read(&self, root: &Root, path: &str) -> Result<Vec<u8>, FsError> {
        self.with_root(root, path, |entries| match entries.get(path) {
            Some(Node::File { data, .. }) => Ok(data.clone()),
            Some(_) => Err(FsError::WrongKind),
            None => Err(FsError::NotFound),
        })
    }

    fn write(&self, root: &Root, path: &str, data: &[u8], mode: WriteMode) -> Result<(), FsError> {
        self.run_interleaved(path);
        Self::bump(&self.writes, &self.fail_write_at)?;
        self.touch(root, path);
        self.run_inside_write(root, path)?;
        let now = self.file_time();
        self.with_root(root, path, |entries| {
            let mut bytes = match (entries.get(path), mode) {
                (Some(Node::Dir), _) => return Err(FsError::WrongKind),
                (Some(_), WriteMode::CreateNew) => return Err(FsError::AlreadyExists),
                (Some(Node::File { data, .. }), WriteMode::Append) => data.clone(),
                _ => Vec::new(),
            };
            bytes.extend_from_slice(data);
            Self::make_parents(entries, path);
            entries.insert(path.to_string(), Node::File { data: bytes, modified_ms: now });
            Ok(())
        })
    }

    fn rename(&self, root: &Root, from: &str, to: &str) -> Result<(), FsError> {
        Self::bump(&self.renames, &self.fail_rename_at)?;
        self.touch(root, from);
        self.touch(root, to);
        Self::check_path(to)?;
        self.with_root(root, from, |entries| {
            Self::check_parents(entries, to)?;
            let moving_dir = match entries.get(from) {
                None => return Err(FsError::NotFound),
                Some(node) => matches!(node, Node::Dir),
            };
            // As rename(2) answers on the real hosts (each maps errno alike): a folder replaces
            // only an empty folder (ENOTEMPTY otherwise), a file only a file (EISDIR, ENOTDIR).
            match entries.get(to) {
                Some(Node::Symlink) => return Err(FsError::Symlink),
                _ if from == to => return Ok(()),
                Some(Node::Dir) if !moving_dir => return Err(FsError::WrongKind),
                Some(Node::Dir) if Self::has_children(entries, to) => {
                    return Err(FsError::Io("folder not empty".into()));
                }
                Some(Node::File { .. }) if moving_dir => return Err(FsError::WrongKind),
                _ => {}
            }
            if moving_dir && to.starts_with(&format!("{from}/")) {
                // EINVAL: a folder into itself.
                return Err(FsError::Io("invalid argument".into()));
            }
            let node = entries.remove(from).ok_or(FsError::NotFound)?;
            // Move a folder's children along with it.
            let children: Vec<String> =
                entries.keys().filter(|k| k.starts_with(&format!("{from}/"))).cloned().collect();
            for child in children {
                if let Some(n) = entries.remove(&child) {
                    entries.insert(format!("{to}{}", &child[from.len()..]), n);
                }
            }
            Self::make_parents(entries, to);
            entries.insert(to.to_string(), node);
            Ok(())
        })
    }

    fn remove_file(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.touch(root, path);
        self.with_root(root, path, |entries| match entries.get(path) {
            Some(Node::File { .. }) => {
                entries.remove(path);
                Ok(())
            }
            Some(_) => Err(FsError::WrongKind),
            None => Err(FsError::NotFound),
        })
    }

    fn remove_dir(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.touch(root, path);
        self.with_root(root, path, |entries| {
            match entries.get(path) {
                Some(Node::Dir) => {}
                Some(_) => return Err(FsError::WrongKind),
                None => return Err(FsError::NotFound),
            }
            if Self::has_children(entries, path) {
                return Err(FsError::Io("folder not empty".into()));
            }
            entries.remove(path);
            Ok(())
        })
    }

    fn create_dir_all(&self, root: &Root, path: &str) -> Result<(), FsError> {
        self.touch(root, path);
        self.with_root(root, path, |entries| {
            match entries.get(path) {
                Some(Node::File { .. }) => return Err(FsError::WrongKind),
                _ => {
                    Self::make_parents(entries, path);
                    entries.insert(path.to_string(), Node::Dir);
                }
            }
            Ok(())
        })
    }

    fn list_dir(&self, root: &Root, path: &str) -> Result<Vec<(String, EntryKind)>, FsError> {
        let roots = self.roots.borrow();
        let entries = roots.get(root).ok_or(FsError::NotPermitted)?;
        let prefix = if path.is_empty() {
            String::new()
        } else {
            Self::check_path(path)?;
            Self::check_parents(entries, path)?;
            match entries.get(path) {
                Some(Node::Dir) => {}
                Some(Node::Symlink) => return Err(FsError::Symlink),
                Some(Node::File { .. }) => return Err(FsError::WrongKind),
                None => return Err(FsError::NotFound),
            }
            format!("{path}/")
        };
        Ok(entries
            .iter()
            .filter_map(|(k, node)| {
                let rest = k.strip_prefix(&prefix)?;
                (!rest.is_empty() && !rest.contains('/')).then(|| {
                    let kind = match node {
                        Node::File { .. } => EntryKind::File,
                        Node::Dir => EntryKind::Dir,
                        Node::Symlink => EntryKind::Symlink,
                    };
                    (rest.to_string(), kind)
                })
            })
            .collect())
    }

    fn stat(&self, root: &Root, path: &str) -> Result<Stat, FsError> {
        if path.is_empty() {
            let roots = self.roots.borrow();
            roots.get(root).ok_or(FsError::NotPermitted)?;
            let generation = self.generations.borrow().get(root).copied().unwrap_or(0);
            return Ok(Stat { kind: EntryKind::Dir, size: 0, modified_ms: generation });
        }
        Self::check_path(path)?;
        if let Some((_, step)) = self.take_interleaved(path, Moment::BeforeStat) {
            step(self);
        }
        let roots = self.roots.borrow();
        let entries = roots.get(root).ok_or(FsError::NotPermitted)?;
        Self::check_parents(entries, path)?;
        match entries.get(path) {
            Some(Node::File { data, modified_ms }) => {
                Ok(Stat { kind: EntryKind::File, size: data.len() as u64, modified_ms: *modified_ms })
            }
            Some(Node::Dir) => {
                let modified_ms = self.dir_times.borrow().get(&(root.clone(), path.to_string())).copied().unwrap_or(0);
                Ok(Stat { kind: EntryKind::Dir, size: 0, modified_ms })
            }
            Some(Node::Symlink) => Ok(Stat { kind: EntryKind::Symlink, size: 0, modified_ms: 0 }),
            None => Err(FsError::NotFound),
        }
    }

    fn stat_many(&self, root: &Root, paths: &[String]) -> Vec<Result<Stat, FsError>> {
        paths.iter().map(|p| self.stat(root, p)).collect()
    }

    fn has_root(&self, root: &Root) -> bool {
        self.roots.borrow().contains_key(root)
    }

    fn http_post(&self, request: &HttpRequest) -> Result<HttpResponse, HttpError> {
        self.http_requests.borrow_mut().push(request.clone());
        self.advance(self.http_latency_ms.get());
        match self.endpoints.borrow().get(&request.endpoint) {
            None => return Err(HttpError::Denied),
            Some(false) => return Err(HttpError::NoCredential),
            Some(true) => {}
        }
        self.http_script.borrow_mut().pop_front().unwrap_or(Err(HttpError::Network("no scripted response".into())))
    }

    fn has_endpoint(&self, endpoint: &str) -> bool {
        self.endpoints.borrow().contains_key(endpoint)
    }

    fn has_credential(&self, endpoint: &str) -> bool {
        self.endpoints.borrow().get(endpoint).copied().unwrap_or(false)
    }

    fn subagent_start(&self, spec: &SubagentSpec) -> Result<String, String> {
        if self.refuse_starts.get() {
            return Err("the provider refused the activation".into());
        }
        self.started.borrow_mut().push(spec.clone());
        Ok(format!("act-{}", self.started.borrow().len()))
    }

    fn subagent_restrict_tools(&self, id: &str, tools: &[String]) -> Result<(), String> {
        self.restricted.borrow_mut().push((id.to_string(), tools.to_vec()));
        Ok(())
    }

    fn subagent_abort(&self, id: &str) {
        self.aborted.borrow_mut().push(id.to_string());
    }

    fn now_ms(&self) -> u64 {
        self.now.get()
    }

    fn log(&self, level: Level, message: &str) {
        self.logs.borrow_mut().push((level, message.to_string()));
    }
}

#[cfg(test)]
#[path = "fake_tests.rs"]
mod tests;
