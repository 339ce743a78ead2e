// The fs capability: named roots mapped to real folders. Absolute paths, `..`, empty
// components, backslashes, control characters and symlinks anywhere on a path are refused;
// the project root is per session. Every operation walks from the root's open folder one
// component at a time (fs-at.js) and decides on the open handle, never on a name checked
// beforehand. Errors are thrown as the WIT `fs-error` variant.
import * as fs from 'node:fs';
import { Dirs, err, toFsError } from './fs-at.js';
import { Roots } from './fs-roots.js';

const { O_RDONLY, O_WRONLY, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_CREAT, O_EXCL, O_APPEND } = fs.constants;
const PROC_FD = '/proc/self/fd';
// Added to every open of a file. O_NOCTTY: a terminal device is never made the process's
// controlling terminal (as the Rust and Python hosts).
const OPEN_FLAGS = O_NOFOLLOW | O_NONBLOCK | (O_NOCTTY ?? 0);
export const DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024;

// Exactly the Rust host's `validate`: components of at most 255 bytes, the whole path at most
// 4096 bytes of UTF-8, and no control character as Rust's `char::is_control` (C0, DEL, C1).
export function validate(p) {
  if (typeof p !== 'string' || p === '' || p.startsWith('/') || p.length > 4096 || Buffer.byteLength(p) > 4096) throw err('invalid-path');
  for (const c of p.split('/')) {
    // eslint-disable-next-line no-control-regex
    if (c === '' || c === '.' || c === '..' || Buffer.byteLength(c) > 255 || /[\\\u0000-\u001f\u007f-\u009f]/.test(c)) {
      throw err('invalid-path');
    }
  }
}

function kindOf(st) {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'dir';
  return 'file'; // the WIT enum has no other kinds; opening one as a file fails with wrong-kind
}

// The WIT `modified-ms` is a u64: a time before 1970 is 0, as in the Rust and Python hosts
// (a negative BigInt would reach the guest as a huge u64).
const modifiedMs = (st) => (st.mtimeMs < 0n ? 0n : st.mtimeMs);

const label = (root) => (root.tag === 'project-skills' ? `project-skills(${root.val})` : root.tag);

export class FsCap {
  /**
   * @param {{userSkills?: string, state?: string, projects?: Map<string,string> | Record<string,string>,
   *          defaultProject?: string, maxReadBytes?: number, onWarn?: (message: string) => void,
   *          allowUnconfinedFs?: boolean}} config
   */
  constructor(config = {}, faults = {}) {
    // Without /proc/self/fd (macOS, BSD, Windows) a path can only be walked by names, and a
    // folder swapped for a symlink between two steps leads out of the root. Only a caller
    // that accepts that may run there.
    const confined = process.platform === 'linux' && fs.existsSync(FsCap.procFd);
    if (!confined && !config.allowUnconfinedFs) {
      throw new Error(`the fs capability needs ${FsCap.procFd} (Linux) to stay inside its roots; pass {allowUnconfinedFs: true} to run without that guarantee`);
    }
    this.dirs = new Dirs(confined ? FsCap.procFd : null);
    this.warn = (message) => { if (config.onWarn) config.onWarn(message); };
    this.roots = new Roots(config, this.warn);
    this.maxReadBytes = config.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
    this.rootFds = new Map(); // real path → open folder, held for the FsCap's life
    this.faults = faults;
    this.writes = 0;
    this.renames = 0;
  }

  /** The real user and state roots, for a report of where the plugin reads and writes. */
  describeRoots() {
    return this.roots.describe();
  }

  hasRoot(root) {
    return this.roots.mapped(root);
  }

  /** Releases the roots' open folders. */
  close() {
    for (const fd of this.rootFds.values()) this.dirs.close(fd);
    this.rootFds.clear();
  }

  rootFd(root, create) {
    const real = this.roots.real(root, create);
    let fd = this.rootFds.get(real);
    // A root folder deleted since it was opened is opened again at the same real path.
    if (fd !== undefined && fs.fstatSync(fd).nlink === 0) {
      this.dirs.close(fd);
      this.rootFds.delete(real);
      fd = undefined;
    }
    if (fd === undefined) {
      fd = this.dirs.openReal(real, create);
      this.rootFds.set(real, fd);
    }
    return fd;
  }

  /** Runs fn(folder fd, last name) with p's parent folder open; typed errors only. */
  inParent(root, p, create, fn) {
    validate(p);
    try {
      const top = this.rootFd(root, create);
      const parts = p.split('/');
      const name = parts.pop();
      const dir = this.dirs.walk(top, parts, create);
      try {
        return fn(dir, name);
      } finally {
        if (dir !== top) this.dirs.close(dir);
      }
    } catch (e) {
      throw toFsError(e);
    }
  }

  /** Opens a file, then checks what was opened: a regular file with one link, or a refusal. */
  openFile(root, p, dir, name, flags, refuseLinked) {
    let fd;
    try {
      fd = this.dirs.open(dir, name, flags | OPEN_FLAGS, 0o666);
    } catch (e) {
      // O_EXCL reports an existing symlink as EEXIST; answer `symlink` as the other modes do.
      if (e.code === 'EEXIST' && this.dirs.isSymlink(dir, name)) throw err('symlink');
      throw e;
    }
    try {
      const st = fs.fstatSync(fd);
      if (!st.isFile()) throw err('wrong-kind');
      // A hard link shares the file with a name elsewhere, perhaps outside every root.
      if (st.nlink > 1 && refuseLinked) {
        this.warn(`${label(root)}/${p} has ${st.nlink} hard links; refused`);
        throw err('not-permitted');
      }
      return { fd, st };
    } catch (e) {
      this.dirs.close(fd);
      throw e;
    }
  }

  read(root, p) {
    // A hard link in a skills folder (which may have come with a repository) can stand for any
    // file on the disk; the state root is the plugin's own, so reading a link there is allowed.
    const refuseLinked = root.tag !== 'state';
    return this.inParent(root, p, false, (dir, name) => {
      const { fd, st } = this.openFile(root, p, dir, name, O_RDONLY, refuseLinked);
      try {
        return this.readBounded(fd, p, st.size);
      } finally {
        this.dirs.close(fd);
      }
    });
  }

  // Refuses by size before reading, and stops one byte past the bound in case the file grew.
  readBounded(fd, p, size) {
    const limit = this.maxReadBytes;
    const tooLarge = (n) => err('io', `too-large: ${p} is ${n} bytes; the host reads at most ${limit}`);
    if (size > limit) throw tooLarge(size);
    let buf = Buffer.allocUnsafeSlow(size + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        if (n > limit) throw tooLarge(Math.max(fs.fstatSync(fd).size, n));
        const bigger = Buffer.allocUnsafeSlow(Math.min(buf.length * 2, limit + 1));
        buf.copy(bigger, 0, 0, n);
        buf = bigger;
      }
      const got = fs.readSync(fd, buf, n, buf.length - n, null);
      if (got === 0) break;
      n += got;
    }
    return new Uint8Array(buf.buffer, buf.byteOffset, n);
  }

  write(root, p, data, mode) {
    validate(p);
    this.writes += 1;
    if (this.faults.failWriteAt === this.writes) throw err('io', 'injected fault');
    const flags = O_WRONLY | O_CREAT | (mode === 'create-new' ? O_EXCL : mode === 'append' ? O_APPEND : 0);
    return this.inParent(root, p, true, (dir, name) => {
      const { fd } = this.openFile(root, p, dir, name, flags, true);
      try {
        // Truncated only after the checks, so a refused file keeps its bytes.
        if (mode === 'truncate') fs.ftruncateSync(fd, 0);
        for (let off = 0; off < data.length;) off += fs.writeSync(fd, data, off, data.length - off, null);
      } finally {
        this.dirs.close(fd);
      }
    });
  }

  rename(root, from, to) {
    validate(from);
    validate(to);
    this.renames += 1;
    if (this.faults.failRenameAt === this.renames) throw err('io', 'injected fault');
    this.inParent(root, from, false, (fromDir, fromName) => {
      // rename(2) moves links, never what they point at; refused for the same answers as the
      // Rust host. The source is looked at first, so a missing one creates no folder for `to`.
      if (fs.lstatSync(this.dirs.at(fromDir, fromName)).isSymbolicLink()) throw err('symlink');
      this.inParent(root, to, true, (toDir, toName) => {
        if (this.dirs.isSymlink(toDir, toName)) throw err('symlink');
        fs.renameSync(this.dirs.at(fromDir, fromName), this.dirs.at(toDir, toName));
      });
    });
  }

  removeFile(root, p) {
    return this.inParent(root, p, false, (dir, name) => {
      const st = fs.lstatSync(this.dirs.at(dir, name));
      if (st.isSymbolicLink()) throw err('symlink');
      if (st.isDirectory()) throw err('wrong-kind');
      fs.unlinkSync(this.dirs.at(dir, name));
    });
  }

  removeDir(root, p) {
    return this.inParent(root, p, false, (dir, name) => {
      if (this.dirs.isSymlink(dir, name)) throw err('symlink');
      fs.rmdirSync(this.dirs.at(dir, name));
    });
  }

  createDirAll(root, p) {
    return this.inParent(root, p, true, (dir, name) => this.dirs.close(this.dirs.openDir(dir, name, true)));
  }

  // Entries sorted by name (byte order, like the Rust host); non-UTF-8 names are skipped.
  listDir(root, p) {
    const list = (dir) => fs.readdirSync(this.dirs.at(dir, '.'), { withFileTypes: true, encoding: 'buffer' });
    let entries;
    if (p === '') {
      try {
        entries = this.guard(() => list(this.rootFd(root, false)));
      } catch (e) {
        if (e.tag === 'not-found') return []; // a root not created yet is empty
        throw e;
      }
    } else {
      entries = this.inParent(root, p, false, (dir, name) => {
        const fd = this.dirs.openDir(dir, name, false);
        try { return list(fd); } finally { this.dirs.close(fd); }
      });
    }
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const out = [];
    for (const entry of entries) {
      let name;
      try { name = decoder.decode(entry.name); } catch { continue; }
      const kind = entry.isSymbolicLink() ? 'symlink' : entry.isDirectory() ? 'dir' : 'file';
      out.push([name, kind]);
    }
    out.sort((a, b) => Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])));
    return out;
  }

  stat(root, p) {
    if (p === '') {
      const st = this.guard(() => fs.fstatSync(this.rootFd(root, false), { bigint: true }));
      return { kind: 'dir', size: 0n, modifiedMs: modifiedMs(st) };
    }
    const st = this.inParent(root, p, false, (dir, name) => fs.lstatSync(this.dirs.at(dir, name), { bigint: true }));
    return { kind: kindOf(st), size: st.size, modifiedMs: modifiedMs(st) };
  }

  statMany(root, paths) {
    return paths.map((p) => {
      try { return { tag: 'ok', val: this.stat(root, p) }; } catch (e) { return { tag: 'err', val: toFsError(e) }; }
    });
  }

  guard(fn) {
    try { return fn(); } catch (e) { throw toFsError(e); }
  }
}

// Where the magic links live; a test may point it elsewhere to act as a platform without them.
FsCap.procFd = PROC_FD;
