// openat for Node: every path is opened one component at a time relative to an open folder,
// never by its full name, so no symlink swapped in between a check and an open can lead out
// of a root. Node has no openat; on Linux `/proc/self/fd/<fd>/<name>` resolves <name> inside
// the folder <fd> refers to, whatever that folder has been renamed to since. Also owns the
// mapping of Node's errors to the WIT `fs-error` variant.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fs.constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

export const err = (tag, val) => (val === undefined ? { tag } : { tag, val });

export function toFsError(e) {
  if (e && typeof e === 'object' && !(e instanceof Error) && typeof e.tag === 'string') return e;
  switch (e && e.code) {
    case 'ENOENT': return err('not-found');
    case 'EEXIST': return err('already-exists');
    // As the Rust host's `errno` (host-test/src/caps/fs/open.rs), errno for errno.
    case 'EACCES': case 'EPERM': case 'EROFS': return err('not-permitted');
    case 'ENOSPC': case 'EDQUOT': return err('no-space');
    // ENXIO: a FIFO with no reader or a socket opened for writing.
    case 'ENOTDIR': case 'EISDIR': case 'ENXIO': return err('wrong-kind');
    case 'ENOTEMPTY': return err('io', 'folder not empty');
    case 'ELOOP': return err('symlink');
    case 'ENAMETOOLONG': return err('invalid-path');
    default: return err('io', unmapped(e));
  }
}

// The errnos an unmapped `io` error is named by, exactly the Rust host's list (open.rs `unmapped`)
// and Python's (fs.py `_ERRNO_NAMES`). Each name's number is the platform's, as in Rust.
const ERRNO_NAMES = [
  'E2BIG', 'EAGAIN', 'EBADF', 'EBADMSG', 'EBUSY', 'ECANCELED', 'EDEADLK', 'EFAULT', 'EFBIG', 'EILSEQ',
  'EINTR', 'EINVAL', 'EIO', 'EMFILE', 'EMLINK', 'ENFILE', 'ENODEV', 'ENOLCK', 'ENOMEM', 'ENOSYS',
  'ENOTSOCK', 'ENOTTY', 'EOPNOTSUPP', 'EOVERFLOW', 'EPIPE', 'ERANGE', 'ESPIPE', 'ESTALE', 'ETIMEDOUT',
  'ETXTBSY', 'EXDEV',
];
const ERRNO_NAME = new Map();
for (const name of ERRNO_NAMES) {
  const n = os.constants.errno[name];
  if (n !== undefined && !ERRNO_NAME.has(n)) ERRNO_NAME.set(n, name);
}

/** An unmapped errno's text: `EINVAL (os error 22)`, never Node's message (it holds the host's
 * own /proc/self/fd paths). An error with no errno keeps its message. */
function unmapped(e) {
  if (e instanceof Error && typeof e.errno === 'number' && e.errno !== 0) {
    const n = Math.abs(e.errno); // libuv's errno is negative
    const name = ERRNO_NAME.get(n);
    return name ? `${name} (os error ${n})` : `os error ${n}`;
  }
  return String(e && e.message ? e.message : e);
}

export class Dirs {
  /** @param {string | null} procFd the magic-link folder; null: walk by path names (not race-safe) */
  constructor(procFd) {
    this.procFd = procFd;
    this.names = new Map(); // fd → its path, only when walking by names
  }

  /** The name of `name` inside the open folder `fd`, for one syscall that does not follow it. */
  at(fd, name) {
    return this.procFd ? `${this.procFd}/${fd}/${name}` : path.join(this.names.get(fd), name);
  }

  open(fd, name, flags, mode) {
    const opened = fs.openSync(this.at(fd, name), flags, mode);
    if (!this.procFd) this.names.set(opened, this.at(fd, name));
    return opened;
  }

  close(fd) {
    this.names.delete(fd);
    fs.closeSync(fd);
  }

  // Looked at only after an open failed, so the answer picks an error, never grants access:
  // 'symlink', 'dir', 'other', or 'gone'.
  kindAt(fd, name) {
    try {
      const st = fs.lstatSync(this.at(fd, name));
      return st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'other';
    } catch {
      return 'gone';
    }
  }

  isSymlink(fd, name) {
    return this.kindAt(fd, name) === 'symlink';
  }

  /** Opens the folder `name` in `fd`; a symlink or a non-folder fails at open time. */
  openDir(fd, name, create) {
    for (let attempt = 1; ; attempt++) {
      try {
        return this.open(fd, name, DIR_FLAGS);
      } catch (e) {
        const again = attempt < 3;
        if (e.code === 'ENOENT' && create && again) {
          // mkdir does not follow its last component; EEXIST means someone raced us: open it.
          try { fs.mkdirSync(this.at(fd, name)); } catch (m) { if (m.code !== 'EEXIST') throw toFsError(m); }
          continue;
        }
        if (e.code !== 'ENOTDIR' && e.code !== 'ELOOP') throw toFsError(e);
        const kind = this.kindAt(fd, name);
        if (kind === 'symlink') throw err('symlink');
        if (kind === 'other' || !again) throw err('wrong-kind');
        // A folder now, or gone: it changed since the open failed; look again.
      }
    }
  }

  /** Opens the folder `parts` below `fd`. Returns `fd` itself for no parts; else the caller closes it. */
  walk(fd, parts, create) {
    let current = fd;
    for (const part of parts) {
      const previous = current;
      try {
        current = this.openDir(previous, part, create);
      } finally {
        if (previous !== fd) this.close(previous);
      }
    }
    return current;
  }

  /** Opens an absolute real path from `/` the same way: no component may be a symlink. */
  openReal(real, create) {
    const top = fs.openSync('/', O_RDONLY | O_DIRECTORY);
    if (!this.procFd) this.names.set(top, '/');
    try {
      const parts = real.split('/').filter(Boolean);
      return parts.length ? this.walk(top, parts, create) : this.open(top, '.', O_RDONLY | O_DIRECTORY);
    } finally {
      this.close(top);
    }
  }
}
