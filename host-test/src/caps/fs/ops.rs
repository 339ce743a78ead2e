//! The fs capability's operations on Unix (Linux, macOS): every path opened by handle from its
//! root folder, one component at a time, links refused at open time (`open.rs`).

use super::open::{self, Access};
use super::{FsCap, FsErr, Kind, Mode, RootRef, StatInfo, io_err, validate};
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

impl FsCap {
    /// Opens (and caches) the root folder by its real path; `create` makes it when missing.
    fn dir(&mut self, root: &RootRef, create: bool) -> Result<&OwnedFd, FsErr> {
        let path = self.root_path(root).ok_or(FsErr::NotPermitted)?;
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

    /// Whether the root folder was deleted since it was opened (the operator removed the state
    /// folder while the server ran): its handle is then dropped, so the next `dir` opens the
    /// folder again at the same real path, as Node and Python do.
    fn root_removed(&mut self, root: &RootRef) -> bool {
        let Some(path) = self.root_path(root) else { return false };
        let removed = self.dirs.get(&path).is_some_and(|fd| rustix::fs::fstat(fd).is_ok_and(|st| st.st_nlink == 0));
        if removed {
            self.dirs.remove(&path);
        }
        removed
    }

    /// Runs `op` on the root's handle, and once more on a fresh one when it answered `not-found`
    /// because the root folder itself was deleted since it was opened (every call through the
    /// old handle fails so). Checked only then: a `fstat` before every call was one system call
    /// in five of a held session's event.
    fn on_root<T>(&mut self, root: &RootRef, mut op: impl FnMut(&mut Self) -> Result<T, FsErr>) -> Result<T, FsErr> {
        match op(self) {
            Err(FsErr::NotFound) if self.root_removed(root) => op(self),
            done => done,
        }
    }

    pub fn read(&mut self, root: &RootRef, path: &str) -> Result<Vec<u8>, FsErr> {
        validate(path)?;
        let limit = self.config.max_read_bytes;
        let skills = Self::is_skills_root(root);
        let (fd, st) = self.on_root(root, |cap| open::open_file(cap.dir(root, false)?, path, Access::Read, skills))?;
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
        let access = match mode {
            Mode::CreateNew => Access::CreateNew,
            Mode::Truncate => Access::Truncate,
            Mode::Append => Access::Append,
        };
        let (fd, _) = self.on_root(root, |cap| open::open_file(cap.dir(root, true)?, path, access, true))?;
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
        self.on_root(root, |cap| rename_in(cap.dir(root, false)?, from, to))
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
        self.on_root(root, |cap| {
            let dir = cap.dir(root, false)?;
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
        })
    }

    pub fn create_dir_all(&mut self, root: &RootRef, path: &str) -> Result<(), FsErr> {
        validate(path)?;
        self.on_root(root, |cap| open::open_dir(cap.dir(root, true)?, path, true).map(drop))
    }

    /// Entries sorted by name. "" lists the root; a root folder not created yet is empty.
    /// Names that are not UTF-8 are skipped (and counted), never passed on mangled. Special
    /// files are listed as files: opening one is `wrong-kind`, so the plugin reports that entry.
    pub fn list_dir(&mut self, root: &RootRef, path: &str) -> Result<Vec<(String, Kind)>, FsErr> {
        let folder = if path.is_empty() {
            // A deleted root lists as empty through its old handle: asked first, not on failure.
            self.root_removed(root);
            match self.dir(root, false) {
                Ok(dir) => open::open_dir(dir, "", false)?,
                Err(FsErr::NotFound) => return Ok(Vec::new()),
                Err(err) => return Err(err),
            }
        } else {
            validate(path)?;
            self.on_root(root, |cap| open::open_dir(cap.dir(root, false)?, path, false))?
        };
        let mut out = Vec::new();
        // The listing owns the folder's handle (`read_from` would copy it: two calls more).
        let mut entries = rustix::fs::Dir::new(folder).map_err(open::errno)?;
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
                rustix::fs::FileType::Unknown => open::kind_of(&open::lstat(entries.fd().map_err(open::errno)?, name)?),
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
        if path.is_empty() {
            // The root folder itself: its mtime tells a caller whether entries came or went (a
            // deleted root's old handle would answer with its last one).
            self.root_removed(root);
            let st = rustix::fs::fstat(self.dir(root, false)?).map_err(open::errno)?;
            return Ok(StatInfo { kind: Kind::Dir, size: 0, modified_ms: open::modified_ms(&st) });
        }
        validate(path)?;
        let st = self.on_root(root, |cap| {
            let (parent, name) = open::split(path);
            let parent = open::open_dir(cap.dir(root, false)?, parent, false)?;
            open::lstat(&parent, name)
        })?;
        Ok(StatInfo { kind: open::kind_of(&st), size: open::unsigned(st.st_size), modified_ms: open::modified_ms(&st) })
    }

    /// `stat` for many paths. On Linux each path costs one `openat2` that refuses any symlink
    /// and cannot leave the root, plus an `fstat`; anything unusual falls back to `stat`.
    pub fn stat_many(&mut self, root: &RootRef, paths: &[String]) -> Vec<Result<StatInfo, FsErr>> {
        #[cfg(target_os = "linux")]
        if !self.root_removed(root)
            && let Ok(dir) = self.dir(root, false)
        {
            let fd = dir.try_clone();
            if let Ok(fd) = fd {
                return paths.iter().map(|p| fast_stat(&fd, p).unwrap_or_else(|| self.stat(root, p))).collect();
            }
        }
        paths.iter().map(|p| self.stat(root, p)).collect()
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

/// Renames `from` to `to` below `dir`, neither ever through a link: a link at `from` is not moved
/// and one at `to` is not replaced (`symlink`), as Node and Python refuse them.
fn rename_in(dir: &OwnedFd, from: &str, to: &str) -> Result<(), FsErr> {
    let ((from_parent, from_name), (to_parent, to_name)) = (open::split(from), open::split(to));
    let source = open::open_dir(dir, from_parent, false)?;
    let st = open::lstat(&source, from_name)?;
    if open::kind_of(&st) == Kind::Symlink {
        return Err(FsErr::Symlink);
    }
    // A rename within one folder (a session's journal claimed and handed back, at every event of
    // a held session) walks to that folder once.
    let other;
    let target = if to_parent == from_parent {
        &source
    } else {
        other = open::open_dir(dir, to_parent, true)?;
        &other
    };
    // Most renames land on a free name (a journal's claim, a temp file's first publish): one
    // that may not replace anything needs no look at `to` first. Where something is there, or
    // the filesystem has no such rename, `to` is looked at and the plain rename done.
    #[cfg(target_os = "linux")]
    match rustix::fs::renameat_with(&source, from_name, target, to_name, rustix::fs::RenameFlags::NOREPLACE) {
        Ok(()) => return Ok(()),
        Err(rustix::io::Errno::EXIST | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
        Err(err) => return Err(open::errno(err)),
    }
    if let Ok(existing) = open::lstat(target, to_name)
        && open::kind_of(&existing) == Kind::Symlink
    {
        return Err(FsErr::Symlink);
    }
    rustix::fs::renameat(&source, from_name, target, to_name).map_err(open::errno)
}
