//! Opening paths relative to an already-open root folder, one component at a time, refusing
//! symlinks at open time (`O_NOFOLLOW` on every component, `O_DIRECTORY` on every folder). There
//! is no check-then-open anywhere: a folder swapped for a link mid-call is an error, never an
//! escape. Files are opened non-blocking and checked on the open handle (regular, one link), so a
//! FIFO never hangs a call and a device is never read.

use super::types::{FsErr, Kind};
use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
const FILE_FLAGS: OFlags = OFlags::NOFOLLOW.union(OFlags::CLOEXEC).union(OFlags::NONBLOCK).union(OFlags::NOCTTY);

/// How a regular file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    CreateNew,
    /// Created when missing; truncated only after the handle passed its checks.
    Truncate,
    Append,
}

/// `(parent, name)` of a validated, non-empty path.
pub(super) fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// The folder at `path` ("" is the root itself), walked from `root` without following links;
/// with `create`, missing folders are made on the way.
pub(super) fn open_dir(root: impl AsFd, path: &str, create: bool) -> Result<OwnedFd, FsErr> {
    // On Linux, one `openat2` that refuses any symlink on the way and any step out of the root
    // opens what the walk below would (at every event of a held session, three calls each open
    // `sessions/<key>`). Anything it refuses, or a folder still to be made, is left to the walk,
    // which then says exactly what stood in the way.
    #[cfg(target_os = "linux")]
    if path.contains('/') {
        use rustix::fs::ResolveFlags;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rfs::openat2(root.as_fd(), path, DIR_FLAGS, Mode::empty(), how) {
            Ok(fd) => return Ok(fd),
            // A folder missing on the way: every one before it was a real folder, so the walk
            // would stop at the same one with the same answer (a `tick` asks at every event
            // whether `sessions/in-flight` exists).
            Err(Errno::NOENT) if !create => return Err(FsErr::NotFound),
            Err(_) => {}
        }
    }
    let mut names = path.split('/').filter(|c| !c.is_empty());
    // The first component is opened from the root's handle itself (no copy of the root first):
    // one open fewer on every call.
    let Some(first) = names.next() else {
        return rfs::openat(root.as_fd(), ".", DIR_FLAGS, Mode::empty()).map_err(errno);
    };
    let mut fd = open_component(root.as_fd(), OsStr::new(first), create)?;
    for name in names {
        fd = open_component(fd.as_fd(), OsStr::new(name), create)?;
    }
    Ok(fd)
}

/// A root folder at its real path, walked from `/` one component at a time as `open_dir` walks,
/// never through a link; with `create`, missing folders are made on the way. A root is resolved
/// to its real path once, at start-up: a component swapped for a link since (the state folder
/// replaced by a link to elsewhere) is `symlink`, never followed out of the root. As Node's
/// `Dirs.openReal` and Python's `open_real`. A relative path (one that could not be resolved at
/// start-up) is walked from the cwd the same way.
pub(super) fn open_real(real: &Path, create: bool) -> Result<OwnedFd, FsErr> {
    let start = if real.is_absolute() { "/" } else { "." };
    let mut fd =
        rfs::open(start, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
    for component in real.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name) => fd = open_component(fd.as_fd(), name, create)?,
            Component::ParentDir => fd = open_component(fd.as_fd(), OsStr::new(".."), false)?,
            Component::Prefix(_) => return Err(FsErr::InvalidPath),
        }
    }
    Ok(fd)
}

/// One folder of a walk, below `dir`, never through a link; made when missing with `create`.
fn open_component(dir: BorrowedFd<'_>, name: &OsStr, create: bool) -> Result<OwnedFd, FsErr> {
    match rfs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Err(Errno::NOENT) if create => {
            match rfs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(err) => return Err(errno(err)),
            }
            rfs::openat(dir, name, DIR_FLAGS, Mode::empty()).map_err(|e| component_error(&dir, name, e))
        }
        Err(err) => Err(component_error(&dir, name, err)),
        Ok(next) => Ok(next),
    }
}

/// A regular file at `path`, opened by handle and checked on the handle: anything else is
/// `wrong-kind`; a file with more than one hard link is `not-permitted` (the reason is returned
/// in `links`) for writes always and for reads when `single_link_reads` is set.
pub(super) fn open_file(
    root: impl AsFd,
    path: &str,
    access: Access,
    single_link_reads: bool,
) -> Result<(OwnedFd, Stat), FsErr> {
    let flags = FILE_FLAGS
        | match access {
            Access::Read => OFlags::RDONLY,
            Access::CreateNew => OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
            Access::Truncate => OFlags::WRONLY | OFlags::CREATE,
            Access::Append => OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND,
        };
    let fd = match open_beneath(root.as_fd(), path, flags, access) {
        Some(found) => found?,
        None => {
            let (parent, name) = split(path);
            let open_in = |dir: BorrowedFd<'_>| {
                rfs::openat(dir, name, flags, Mode::from_raw_mode(0o666))
                    .map_err(|e| component_error(&dir, OsStr::new(name), e))
            };
            // A file at the top of the root is opened from the root's handle itself.
            if parent.is_empty() {
                open_in(root.as_fd())?
            } else {
                open_in(open_dir(root, parent, access != Access::Read)?.as_fd())?
            }
        }
    };
    let st = rfs::fstat(&fd).map_err(errno)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(FsErr::WrongKind);
    }
    if st.st_nlink > 1 && (access != Access::Read || single_link_reads) {
        return Err(FsErr::HardLinked(unsigned(st.st_nlink)));
    }
    if access == Access::Truncate {
        rfs::ftruncate(&fd, 0).map_err(errno)?;
    }
    Ok((fd, st))
}

/// On Linux, the file at a path of several components opened with one `openat2` that refuses
/// any symlink on the way or at the end and any step out of the root (a held session appends to
/// `sessions/<key>/journal…` at every event: one call where the walk takes three). `None` leaves
/// it to the walk, which says exactly what stood in the way: a link, a folder still to be made,
/// a name already taken (perhaps by a link), an old kernel.
#[cfg(target_os = "linux")]
fn open_beneath(root: BorrowedFd<'_>, path: &str, flags: OFlags, access: Access) -> Option<Result<OwnedFd, FsErr>> {
    use rustix::fs::ResolveFlags;
    if !path.contains('/') {
        return None;
    }
    let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rfs::openat2(root, path, flags, Mode::from_raw_mode(0o666), how) {
        Ok(fd) => Some(Ok(fd)),
        // Nothing is made by a read: a missing file or folder on the way is `not-found` either way.
        Err(Errno::NOENT) if access == Access::Read => Some(Err(FsErr::NotFound)),
        Err(_) => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn open_beneath(_: BorrowedFd<'_>, _: &str, _: OFlags, _: Access) -> Option<Result<OwnedFd, FsErr>> {
    None
}

/// The entry `name` in `dir`, never following it.
pub(super) fn lstat(dir: impl AsFd, name: impl rustix::path::Arg) -> Result<Stat, FsErr> {
    rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(errno)
}

pub(super) fn kind_of(st: &Stat) -> Kind {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => Kind::Symlink,
        FileType::Directory => Kind::Dir,
        _ => Kind::File,
    }
}

/// The mtime in milliseconds since 1970; a time before 1970 is 0. The total is clamped, not the
/// seconds: 1969-12-31T23:59:58.5Z is -2 s + 0.5 s, which is 0 in Node (`mtimeMs < 0n`) and
/// Python (`max(0, st_mtime_ns // 1_000_000)`), never 500 ms.
pub(super) fn modified_ms(st: &Stat) -> u64 {
    // Field types differ by platform (i32, i64, u64); i128 holds any of them.
    let seconds = i128::from(st.st_mtime);
    let nanos = i128::from(st.st_mtime_nsec);
    unsigned(seconds.saturating_mul(1000).saturating_add(nanos / 1_000_000))
}

/// A `stat` field as u64 (its type differs by platform; a negative value is 0).
pub(super) fn unsigned<T: TryInto<u64>>(value: T) -> u64 {
    value.try_into().unwrap_or(0)
}

/// A failed open of one component: a link there is `symlink`, whatever errno the platform chose
/// (ELOOP on Linux, EMLINK on FreeBSD, ENOTDIR for a link opened as a folder, and EEXIST for
/// O_EXCL onto a link, dangling or not: `create-new` answers `symlink` as the other modes do, as
/// in the Node and Python hosts).
fn component_error(dir: &impl AsFd, name: &OsStr, err: Errno) -> FsErr {
    if matches!(err, Errno::LOOP | Errno::MLINK | Errno::NOTDIR | Errno::EXIST)
        && lstat(dir, name).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
    {
        return FsErr::Symlink;
    }
    errno(err)
}

pub(super) fn errno(err: Errno) -> FsErr {
    match err {
        Errno::NOENT => FsErr::NotFound,
        Errno::EXIST => FsErr::AlreadyExists,
        Errno::ACCESS | Errno::PERM | Errno::ROFS => FsErr::NotPermitted,
        Errno::NOSPC | Errno::DQUOT => FsErr::NoSpace,
        // ENXIO: a FIFO or socket opened for writing; never a regular file.
        Errno::NOTDIR | Errno::ISDIR | Errno::NXIO => FsErr::WrongKind,
        Errno::LOOP => FsErr::Symlink,
        Errno::NAMETOOLONG => FsErr::InvalidPath,
        Errno::NOTEMPTY => FsErr::Io("folder not empty".into()),
        other => FsErr::Io(unmapped(other)),
    }
}

/// The `io` text of an errno no case above maps: its symbolic name and number, nothing else (no
/// path, no locale-dependent message), e.g. `EINVAL (os error 22)`. Node's `toFsError`
/// (hosts/node/src/fs-at.js) and Python's `to_fs_error` (fs.py) name the same list; an errno not
/// in it is `os error N` in every host.
fn unmapped(err: Errno) -> String {
    let name = match err {
        Errno::TOOBIG => "E2BIG",
        Errno::AGAIN => "EAGAIN",
        Errno::BADF => "EBADF",
        Errno::BADMSG => "EBADMSG",
        Errno::BUSY => "EBUSY",
        Errno::CANCELED => "ECANCELED",
        Errno::DEADLK => "EDEADLK",
        Errno::FAULT => "EFAULT",
        Errno::FBIG => "EFBIG",
        Errno::ILSEQ => "EILSEQ",
        Errno::INTR => "EINTR",
        Errno::INVAL => "EINVAL",
        Errno::IO => "EIO",
        Errno::MFILE => "EMFILE",
        Errno::MLINK => "EMLINK",
        Errno::NFILE => "ENFILE",
        Errno::NODEV => "ENODEV",
        Errno::NOLCK => "ENOLCK",
        Errno::NOMEM => "ENOMEM",
        Errno::NOSYS => "ENOSYS",
        Errno::NOTSOCK => "ENOTSOCK",
        Errno::NOTTY => "ENOTTY",
        Errno::OPNOTSUPP => "EOPNOTSUPP",
        Errno::OVERFLOW => "EOVERFLOW",
        Errno::PIPE => "EPIPE",
        Errno::RANGE => "ERANGE",
        Errno::SPIPE => "ESPIPE",
        Errno::STALE => "ESTALE",
        Errno::TIMEDOUT => "ETIMEDOUT",
        Errno::TXTBSY => "ETXTBSY",
        Errno::XDEV => "EXDEV",
        _ => return format!("os error {}", err.raw_os_error()),
    };
    format!("{name} (os error {})", err.raw_os_error())
}
