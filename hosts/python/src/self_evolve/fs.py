"""The fs capability: named roots (fs_roots.py) mapped to real folders, and every operation
confined to them. A port of the Node host's fs.js and fs-at.js, with the Rust host's semantics.

Absolute paths, `..`, empty components, backslashes and control characters are refused before
anything is opened. Every path is then walked from the root's open folder one component at a
time with openat (`dir_fd=`) and `O_NOFOLLOW`, and every decision is made on the open handle
(`fstat`), never on a name checked beforehand: a folder swapped for a symlink mid-call is an
error, never an escape. Only regular files are read or written (non-blocking, so a FIFO never
hangs a call), reads are bounded, and a file with more than one hard link is never written nor
read in a skills root. Every public method raises `FsError` only.
"""
from __future__ import annotations

import errno
import functools
import os
import re
from contextlib import contextmanager
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import Callable, Iterator, List, Mapping, Optional, Tuple, Union

from .fs_roots import PathLike, Roots
from .types import WRITE_MODES, FileStat, FsError, Root

DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024

# getattr: a platform without these cannot confine paths, and FsCap refuses to start there.
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
# O_NONBLOCK: opening a FIFO with no writer (or reader) returns at once instead of waiting.
# O_NOCTTY: a terminal device is never made the process's controlling terminal.
_FILE_FLAGS = _O_NOFOLLOW | _O_CLOEXEC | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_HAS_OPENAT = bool(_O_DIRECTORY and _O_NOFOLLOW) and {
    os.open, os.stat, os.mkdir, os.rename, os.unlink, os.rmdir
} <= os.supports_dir_fd and os.scandir in os.supports_fd

# As the Rust host's `errno` (host-test/src/caps/fs/open.rs), errno for errno.
_ERRNO_TAGS = {
    errno.ENOENT: "not-found",
    errno.EEXIST: "already-exists",
    errno.EACCES: "not-permitted",
    errno.EPERM: "not-permitted",
    errno.EROFS: "not-permitted",
    errno.ENOSPC: "no-space",
    getattr(errno, "EDQUOT", errno.ENOSPC): "no-space",
    # ENXIO: a FIFO with no reader or a socket opened for writing.
    errno.ENOTDIR: "wrong-kind",
    errno.EISDIR: "wrong-kind",
    errno.ENXIO: "wrong-kind",
    errno.ELOOP: "symlink",
    errno.ENAMETOOLONG: "invalid-path",
}
# Control characters as Rust's `char::is_control` (C0, DEL and C1): the Rust host's rule.
_FORBIDDEN = re.compile(r"[\\\x00-\x1f\x7f-\x9f]")


def to_fs_error(e: BaseException) -> FsError:
    if isinstance(e, FsError):
        return e
    if isinstance(e, OSError) and e.errno is not None:
        if e.errno == errno.ENOTEMPTY:
            return FsError("io", "folder not empty")
        tag = _ERRNO_TAGS.get(e.errno)
        if tag:
            return FsError(tag)
        return FsError("io", _unmapped(e.errno))
    return FsError("io", str(e) or type(e).__name__)


# The errnos an unmapped `io` error is named by, exactly the Rust host's list (open.rs `unmapped`)
# and Node's (fs-at.js `ERRNO_NAMES`). Each name's number is the platform's, as in Rust.
_ERRNO_NAMES = (
    "E2BIG", "EAGAIN", "EBADF", "EBADMSG", "EBUSY", "ECANCELED", "EDEADLK", "EFAULT", "EFBIG", "EILSEQ",
    "EINTR", "EINVAL", "EIO", "EMFILE", "EMLINK", "ENFILE", "ENODEV", "ENOLCK", "ENOMEM", "ENOSYS",
    "ENOTSOCK", "ENOTTY", "EOPNOTSUPP", "EOVERFLOW", "EPIPE", "ERANGE", "ESPIPE", "ESTALE", "ETIMEDOUT",
    "ETXTBSY", "EXDEV",
)
_ERRNO_NAME: dict = {}
for _name in _ERRNO_NAMES:
    if hasattr(errno, _name):
        _ERRNO_NAME.setdefault(getattr(errno, _name), _name)
del _name


def _unmapped(code: int) -> str:
    """An unmapped errno's text: `EINVAL (os error 22)`, never Python's message (it holds the
    names the call was given)."""
    name = _ERRNO_NAME.get(code)
    return f"{name} (os error {code})" if name else f"os error {code}"


def _typed(method: Callable) -> Callable:
    """A public method of FsCap: any failure leaves as an `FsError`."""

    @functools.wraps(method)
    def wrapped(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the plugin gets an fs-error, never a trap
            raise to_fs_error(e) from None

    return wrapped


def validate(path: str) -> None:
    """Relative, '/'-separated, no empty, '.' or '..' component, no backslash or control
    character (C0, DEL, C1), each component at most 255 bytes of UTF-8 and the whole at most
    4096 bytes: exactly the Rust host's `validate`."""
    if not isinstance(path, str) or path == "" or path.startswith("/") or len(path) > 4096:
        raise FsError("invalid-path")
    total = 0
    for c in path.split("/"):
        n = _utf8_len(c) if c else 0
        total += n + 1
        if c in ("", ".", "..") or _FORBIDDEN.search(c) or n > 255 or total > 4097:
            raise FsError("invalid-path")


def _utf8_len(component: str) -> int:
    try:
        return len(component.encode("utf-8"))
    except UnicodeEncodeError:  # a lone surrogate: no name on disk could stand for it
        raise FsError("invalid-path") from None


def _kind(mode: int) -> str:
    if S_ISLNK(mode):
        return "symlink"
    if S_ISDIR(mode):
        return "dir"
    return "file"  # the WIT enum has no other kinds; opening one as a file fails with wrong-kind


def _file_stat(st: os.stat_result, kind: str, size: int) -> FileStat:
    return FileStat(kind=kind, size=size, modified_ms=max(0, st.st_mtime_ns // 1_000_000))


# ---- openat, one component at a time (the Node host's fs-at.js) ---------------------------


def _kind_at(fd: int, name: bytes) -> str:
    """'symlink', 'dir', 'other' or 'gone'. Looked at only after an open failed, so the answer
    picks an error, never grants access."""
    try:
        kind = _kind(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return "gone"
    return "other" if kind == "file" else kind


def open_dir(fd: int, name: bytes, create: bool) -> int:
    """Opens the folder `name` in `fd`; a symlink or a non-folder fails at open time."""
    attempt = 0
    while True:
        attempt += 1
        again = attempt < 3
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ENOENT and create and again:
                try:
                    # mkdir does not follow its last component; EEXIST means someone raced us: open it.
                    os.mkdir(name, dir_fd=fd)
                except FileExistsError:
                    pass
                continue
            if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            kind = _kind_at(fd, name)
            if kind == "symlink":
                raise FsError("symlink") from None
            if kind == "other" or not again:
                raise FsError("wrong-kind") from None
            # A folder now, or gone: it changed since the open failed; look again.


def walk(fd: int, parts: List[bytes], create: bool) -> int:
    """Opens the folder `parts` below `fd`. Returns `fd` itself for no parts; else the caller closes it."""
    current = fd
    for part in parts:
        previous = current
        try:
            current = open_dir(previous, part, create)
        finally:
            if previous != fd:
                os.close(previous)
    return current


def open_real(real: str, create: bool) -> int:
    """Opens an absolute real path from `/` the same way: no component may be a symlink."""
    top = os.open("/", os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        parts = [c for c in os.fsencode(real).split(b"/") if c]
        return walk(top, parts, create) if parts else os.open(".", _DIR_FLAGS, dir_fd=top)
    finally:
        os.close(top)


def read_bounded(fd: int, path: str, size: int, limit: int) -> bytes:
    """Refuses by size before reading, and stops one byte past the bound in case the file grew."""

    def too_large(n: int) -> FsError:
        return FsError("io", f"too-large: {path} is {n} bytes; the host reads at most {limit}")

    if size > limit:
        raise too_large(size)
    chunks, n, want = [], 0, size + 1
    while n <= limit:
        chunk = os.read(fd, min(want, limit + 1 - n))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        n += len(chunk)
        want = 1 << 16  # it grew after fstat: keep going in moderate steps
    raise too_large(max(os.fstat(fd).st_size, n))


def _list(fd: int) -> List[Tuple[str, str]]:
    """Entries sorted by name (UTF-8 bytes, like the Rust host); non-UTF-8 names are skipped,
    never passed on mangled."""
    out = []
    # Kinds are read inside the `with`: a DirEntry without d_type lstats through the listing's fd.
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                name = os.fsencode(entry.name).decode("utf-8")
            except UnicodeDecodeError:
                continue
            kind = "symlink" if entry.is_symlink() else "dir" if entry.is_dir(follow_symlinks=False) else "file"
            out.append((name, kind))
    out.sort(key=lambda e: e[0].encode("utf-8"))
    return out


def _as_bytes(data: Union[bytes, bytearray, memoryview, List[int]]) -> Union[bytes, bytearray]:
    return data if isinstance(data, (bytes, bytearray)) else bytes(data)


# ---- the capability ------------------------------------------------------------------------


class FsCap:
    def __init__(self, *, user_skills: Optional[PathLike] = None, state: Optional[PathLike] = None,
                 projects: Optional[Mapping[str, PathLike]] = None, default_project: Optional[PathLike] = None,
                 max_read_bytes: int = DEFAULT_MAX_READ_BYTES, on_warn: Optional[Callable[[str], None]] = None,
                 faults: Optional[Mapping[str, int]] = None):
        """`projects`: session id -> that session's project skills folder; `default_project`:
        the folder for any other session. `faults`: `{"fail_write_at": n, "fail_rename_at": n}`
        makes the n-th write or rename fail with `io("injected fault")` (for tests)."""
        if not _HAS_OPENAT:
            # Walking by names instead, a folder swapped for a symlink between two steps leads
            # out of the root; there is no unconfined mode.
            raise RuntimeError("the fs capability needs openat (dir_fd, O_NOFOLLOW, O_DIRECTORY) to stay inside its roots")
        self._on_warn = on_warn
        self._roots = Roots(user_skills=user_skills, state=state, projects=projects,
                            default_project=default_project, warn=self._warn)
        self.max_read_bytes = max_read_bytes
        self._root_fds: dict = {}  # real path -> open folder, held for the FsCap's life
        self._faults = dict(faults or {})
        self.writes = 0
        self.renames = 0

    def _warn(self, message: str) -> None:
        if self._on_warn:
            self._on_warn(message)

    @_typed
    def describe_roots(self) -> dict:
        """The real user and state roots, for a report of where the plugin reads and writes."""
        return self._roots.describe()

    @_typed
    def has_root(self, root: Root) -> bool:
        return self._roots.mapped(root)

    @_typed
    def close(self) -> None:
        """Releases the roots' open folders (a later call opens them again)."""
        fds, self._root_fds = list(self._root_fds.values()), {}
        for fd in fds:
            os.close(fd)

    def _root_fd(self, root: Root, create: bool) -> int:
        real = self._roots.real(root, create)
        fd = self._root_fds.get(real)
        # A root folder deleted since it was opened is opened again at the same real path.
        if fd is not None and os.fstat(fd).st_nlink == 0:
            os.close(self._root_fds.pop(real))
            fd = None
        if fd is None:
            fd = open_real(real, create)
            self._root_fds[real] = fd
        return fd

    @contextmanager
    def _parent(self, root: Root, path: str, create: bool) -> Iterator[Tuple[int, bytes]]:
        """`path`'s parent folder open, and its last name (UTF-8, whatever the locale)."""
        validate(path)
        top = self._root_fd(root, create)
        *folders, name = path.encode("utf-8").split(b"/")
        fd = walk(top, folders, create)
        try:
            yield fd, name
        finally:
            if fd != top:
                os.close(fd)

    def _open_file(self, root: Root, path: str, dir_fd: int, name: bytes, flags: int,
                   refuse_linked: bool) -> Tuple[int, os.stat_result]:
        """Opens a file, then checks what was opened: a regular file with one link, or a refusal."""
        try:
            fd = os.open(name, flags | _FILE_FLAGS, 0o666, dir_fd=dir_fd)
        except FileExistsError:
            # O_EXCL reports an existing symlink as EEXIST; answer `symlink` as the other modes do.
            if _kind_at(dir_fd, name) == "symlink":
                raise FsError("symlink") from None
            raise
        try:
            st = os.fstat(fd)
            if not S_ISREG(st.st_mode):
                raise FsError("wrong-kind")
            # A hard link shares the file with a name elsewhere, perhaps outside every root.
            if st.st_nlink > 1 and refuse_linked:
                self._warn(f"{root.label()}/{path} has {st.st_nlink} hard links; refused")
                raise FsError("not-permitted")
            return fd, st
        except BaseException:
            os.close(fd)
            raise

    @_typed
    def read(self, root: Root, path: str) -> bytes:
        # A hard link in a skills folder (which may have come with a repository) can stand for
        # any file on the disk; the state root is the plugin's own, so reading a link there is allowed.
        refuse_linked = root.tag != "state"
        with self._parent(root, path, False) as (dir_fd, name):
            fd, st = self._open_file(root, path, dir_fd, name, os.O_RDONLY, refuse_linked)
            try:
                return read_bounded(fd, path, st.st_size, self.max_read_bytes)
            finally:
                os.close(fd)

    @_typed
    def write(self, root: Root, path: str, data: bytes, mode: str) -> None:
        """Creates missing parent folders. `mode`: create-new, truncate or append."""
        validate(path)
        if mode not in WRITE_MODES:
            raise FsError("io", f"unknown write mode {mode!r}")
        self.writes += 1
        if self._faults.get("fail_write_at") == self.writes:
            raise FsError("io", "injected fault")
        flags = os.O_WRONLY | os.O_CREAT | {"create-new": os.O_EXCL, "append": os.O_APPEND}.get(mode, 0)
        view = memoryview(_as_bytes(data))
        with self._parent(root, path, True) as (dir_fd, name):
            fd, _ = self._open_file(root, path, dir_fd, name, flags, True)
            try:
                # Truncated only after the checks, so a refused file keeps its bytes.
                if mode == "truncate":
                    os.ftruncate(fd, 0)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)

    @_typed
    def rename(self, root: Root, from_: str, to: str) -> None:
        """Atomic within one root; replaces an existing file at `to`."""
        validate(from_)
        validate(to)
        self.renames += 1
        if self._faults.get("fail_rename_at") == self.renames:
            raise FsError("io", "injected fault")
        with self._parent(root, from_, False) as (src, src_name):
            # rename(2) moves links, never what they point at; refused for the same answers as the
            # Rust host. The source is looked at first, so a missing one creates no folder for `to`.
            if _kind(os.stat(src_name, dir_fd=src, follow_symlinks=False).st_mode) == "symlink":
                raise FsError("symlink")
            with self._parent(root, to, True) as (dst, dst_name):
                if _kind_at(dst, dst_name) == "symlink":
                    raise FsError("symlink")
                os.rename(src_name, dst_name, src_dir_fd=src, dst_dir_fd=dst)

    @_typed
    def remove_file(self, root: Root, path: str) -> None:
        with self._parent(root, path, False) as (dir_fd, name):
            kind = _kind(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
            if kind == "symlink":
                raise FsError("symlink")
            if kind == "dir":
                raise FsError("wrong-kind")
            # Swapped for a folder since: unlink fails (EISDIR); for a link: the link goes, never its target.
            os.unlink(name, dir_fd=dir_fd)

    @_typed
    def remove_dir(self, root: Root, path: str) -> None:
        """Removes an empty folder."""
        with self._parent(root, path, False) as (dir_fd, name):
            if _kind_at(dir_fd, name) == "symlink":
                raise FsError("symlink")
            os.rmdir(name, dir_fd=dir_fd)

    @_typed
    def create_dir_all(self, root: Root, path: str) -> None:
        with self._parent(root, path, True) as (dir_fd, name):
            os.close(open_dir(dir_fd, name, True))

    @_typed
    def list_dir(self, root: Root, path: str) -> List[Tuple[str, str]]:
        """Entries of a folder ("" is the root itself; a root not created yet is empty)."""
        if path == "":
            try:
                top = self._root_fd(root, False)
            except Exception as e:  # noqa: BLE001 - typed below
                error = to_fs_error(e)
                if error.tag == "not-found":
                    return []
                raise error from None
            return _list(top)
        with self._parent(root, path, False) as (dir_fd, name):
            fd = open_dir(dir_fd, name, False)
            try:
                return _list(fd)
            finally:
                os.close(fd)

    @_typed
    def stat(self, root: Root, path: str) -> FileStat:
        """Never follows symlinks. "" is the root folder itself (its mtime tells whether entries
        came or went)."""
        if path == "":
            return _file_stat(os.fstat(self._root_fd(root, False)), "dir", 0)
        with self._parent(root, path, False) as (dir_fd, name):
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return _file_stat(st, _kind(st.st_mode), st.st_size)

    def stat_many(self, root: Root, paths: List[str]) -> List[Union[FileStat, FsError]]:
        """`stat` for each path: a FileStat or the FsError it met (never raises)."""
        out: List[Union[FileStat, FsError]] = []
        for path in paths:
            try:
                out.append(self.stat(root, path))
            except FsError as e:
                out.append(e)
        return out
