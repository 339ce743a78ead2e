// The fs capability: named roots mapped to real folders. Absolute paths, `..`, empty
// components, backslashes, control characters and symlinks anywhere on a path are refused;
// the project root is per session. Errors are thrown as the WIT `fs-error` variant.
import * as fs from 'node:fs';
import * as path from 'node:path';

const err = (tag, val) => (val === undefined ? { tag } : { tag, val });

export function validate(p) {
  if (typeof p !== 'string' || p === '' || p.startsWith('/') || p.length > 4096) throw err('invalid-path');
  for (const c of p.split('/')) {
    // eslint-disable-next-line no-control-regex
    if (c === '' || c === '.' || c === '..' || Buffer.byteLength(c) > 255 || /[\\\u0000-\u001f\u007f]/.test(c)) {
      throw err('invalid-path');
    }
  }
}

function ioError(e) {
  switch (e && e.code) {
    case 'ENOENT': return err('not-found');
    case 'EEXIST': return err('already-exists');
    case 'EACCES': case 'EPERM': return err('not-permitted');
    case 'ENOSPC': return err('no-space');
    case 'ENOTDIR': case 'EISDIR': return err('wrong-kind');
    case 'ENOTEMPTY': return err('io', 'folder not empty');
    case 'ELOOP': return err('symlink');
    default: return err('io', String(e && e.message ? e.message : e));
  }
}

function kindOf(st) {
  if (st.isSymbolicLink()) return 'symlink';
  if (st.isDirectory()) return 'dir';
  return 'file';
}

export class FsCap {
  /** @param {{userSkills?: string, state?: string, projects?: Record<string,string>, defaultProject?: string}} config */
  constructor(config = {}, faults = {}) {
    this.config = config;
    this.faults = faults;
    this.writes = 0;
    this.renames = 0;
  }

  rootPath(root) {
    switch (root.tag) {
      case 'user-skills': return this.config.userSkills;
      case 'state': return this.config.state;
      case 'project-skills': return (this.config.projects || {})[root.val] || this.config.defaultProject;
      default: return undefined;
    }
  }

  base(root, create) {
    const dir = this.rootPath(root);
    if (!dir) throw err('not-permitted');
    if (create) fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  // Refuses when any existing component of p (including the last) is a symlink.
  refuseSymlinks(base, p) {
    let prefix = base;
    for (const c of p.split('/')) {
      prefix = path.join(prefix, c);
      let st;
      try { st = fs.lstatSync(prefix); } catch (e) { if (e.code === 'ENOENT') return; throw ioError(e); }
      if (st.isSymbolicLink()) throw err('symlink');
    }
  }

  guarded(root, p, create, fn) {
    validate(p);
    const base = this.base(root, create);
    this.refuseSymlinks(base, p);
    try { return fn(path.join(base, ...p.split('/')), base); } catch (e) { throw e && e.tag ? e : ioError(e); }
  }

  read(root, p) {
    return this.guarded(root, p, false, (full) => new Uint8Array(fs.readFileSync(full)));
  }

  write(root, p, data, mode) {
    validate(p);
    this.writes += 1;
    if (this.faults.failWriteAt === this.writes) throw err('io', 'injected fault');
    return this.guarded(root, p, true, (full) => {
      fs.mkdirSync(path.dirname(full), { recursive: true });
      const flag = mode === 'create-new' ? 'wx' : mode === 'append' ? 'a' : 'w';
      fs.writeFileSync(full, data, { flag });
    });
  }

  rename(root, from, to) {
    validate(from);
    validate(to);
    this.renames += 1;
    if (this.faults.failRenameAt === this.renames) throw err('io', 'injected fault');
    const base = this.base(root, true);
    this.refuseSymlinks(base, from);
    this.refuseSymlinks(base, to);
    try {
      const target = path.join(base, ...to.split('/'));
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.renameSync(path.join(base, ...from.split('/')), target);
    } catch (e) { throw ioError(e); }
  }

  removeFile(root, p) {
    return this.guarded(root, p, false, (full) => {
      if (fs.lstatSync(full).isDirectory()) throw err('wrong-kind');
      fs.unlinkSync(full);
    });
  }

  removeDir(root, p) {
    return this.guarded(root, p, false, (full) => fs.rmdirSync(full));
  }

  createDirAll(root, p) {
    return this.guarded(root, p, true, (full) => { fs.mkdirSync(full, { recursive: true }); });
  }

  // Entries sorted by name (byte order, like the Rust host); non-UTF-8 names are skipped.
  listDir(root, p) {
    let full;
    if (p === '') {
      full = this.base(root, false);
      if (!fs.existsSync(full)) return [];
    } else {
      validate(p);
      const base = this.base(root, false);
      this.refuseSymlinks(base, p);
      full = path.join(base, ...p.split('/'));
    }
    let entries;
    try { entries = fs.readdirSync(full, { withFileTypes: true, encoding: 'buffer' }); } catch (e) { throw ioError(e); }
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
      let st;
      try { st = fs.statSync(this.base(root, false), { bigint: true }); } catch (e) { throw e && e.tag ? e : ioError(e); }
      return { kind: 'dir', size: 0n, modifiedMs: st.mtimeMs };
    }
    validate(p);
    const base = this.base(root, false);
    const parent = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : null;
    if (parent) this.refuseSymlinks(base, parent);
    let st;
    try { st = fs.lstatSync(path.join(base, ...p.split('/')), { bigint: true }); } catch (e) { throw ioError(e); }
    return { kind: kindOf(st), size: st.size, modifiedMs: st.mtimeMs };
  }

  statMany(root, paths) {
    return paths.map((p) => {
      try { return { tag: 'ok', val: this.stat(root, p) }; } catch (e) { return { tag: 'err', val: e && e.tag ? e : ioError(e) }; }
    });
  }

  hasRoot(root) {
    return Boolean(this.rootPath(root));
  }
}
