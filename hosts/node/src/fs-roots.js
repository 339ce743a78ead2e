// Where each named root lives, decided once. The user and state roots are resolved to their
// real paths when the FsCap is made (a missing one when first created); a project root once
// per session, and only if its real path stays inside its project — a skills folder linked
// elsewhere would let a checked-out repository point the plugin at any folder.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { err, toFsError } from './fs-at.js';

const MARKERS = ['.git', '.dsh'];

const exists = (p) => { try { fs.lstatSync(p); return true; } catch { return false; } };
const inside = (child, parent) => child === parent || child.startsWith(parent.endsWith('/') ? parent : `${parent}/`);

/** realpath of the longest existing prefix, with the missing rest appended. */
function realOfPrefix(p) {
  const missing = [];
  for (let at = path.resolve(p); ; at = path.dirname(at)) {
    try { return path.join(fs.realpathSync(at), ...missing.reverse()); } catch (e) { if (e.code !== 'ENOENT' || at === '/') throw e; }
    missing.push(path.basename(at));
  }
}

// Configuration maps keyed by outside strings are Maps: a session called `__proto__` is a session.
export const toMap = (m) => (m instanceof Map ? new Map(m) : new Map(Object.entries(m ?? {})));

export class Roots {
  constructor(config, warn) {
    this.warn = warn;
    this.fixed = new Map(); // 'user-skills' | 'state' → {configured, real}
    for (const [tag, configured] of [['user-skills', config.userSkills], ['state', config.state]]) {
      if (configured) this.fixed.set(tag, { configured, real: exists(configured) ? fs.realpathSync(configured) : undefined });
    }
    this.projects = toMap(config.projects);
    this.defaultProject = config.defaultProject;
    this.sessions = new Map(); // session → real path, or null when unmapped
    this.warned = new Set();
  }

  /** The real path of a mapped root; `create` makes a missing user or state root first. */
  real(root, create) {
    if (root.tag === 'project-skills') {
      const real = this.project(root.val);
      if (!real) throw err('not-permitted');
      return real;
    }
    const slot = this.fixed.get(root.tag);
    if (!slot) throw err('not-permitted');
    if (!slot.real) {
      try {
        if (create) fs.mkdirSync(slot.configured, { recursive: true });
        if (exists(slot.configured)) slot.real = fs.realpathSync(slot.configured);
      } catch (e) { throw toFsError(e); }
      if (!slot.real) throw err('not-found');
    }
    return slot.real;
  }

  mapped(root) {
    return root.tag === 'project-skills' ? Boolean(this.project(root.val)) : this.fixed.has(root.tag);
  }

  project(session) {
    if (!this.sessions.has(session)) this.sessions.set(session, this.resolveProject(session));
    return this.sessions.get(session);
  }

  resolveProject(session) {
    const configured = this.projects.get(session) ?? this.defaultProject;
    if (!configured) return null;
    const abs = path.resolve(configured);
    let project = path.dirname(abs);
    for (let at = project; ; at = path.dirname(at)) {
      if (MARKERS.some((m) => exists(path.join(at, m)))) { project = at; break; }
      if (at === '/') break;
    }
    let real;
    let projectReal;
    try {
      real = realOfPrefix(abs);
      projectReal = realOfPrefix(project);
    } catch (e) {
      this.warnOnce(`project skills folder ${configured} cannot be resolved (${e.message}); running without a project root`);
      return null;
    }
    if (!inside(real, projectReal)) {
      this.warnOnce(`project skills folder ${configured} resolves to ${real}, outside the project ${projectReal}; running without a project root`);
      return null;
    }
    // The user library is never also a project's (as in the Rust and Python hosts).
    const user = this.fixed.get('user-skills');
    let userReal = null;
    try { userReal = user ? realOfPrefix(path.resolve(user.configured)) : null; } catch { userReal = null; }
    if (userReal && (inside(real, userReal) || inside(userReal, real))) {
      this.warnOnce(`project skills folder ${configured} is the user skills folder (or holds it, or lies inside it); running without a project root`);
      return null;
    }
    return real;
  }

  warnOnce(message) {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.warn(message);
  }

  /** The real paths of the user and state roots (null: not mapped, or not created yet). */
  describe() {
    const one = (tag) => { try { return this.real({ tag }, false); } catch { return null; } };
    return { userSkills: one('user-skills'), state: one('state') };
  }
}
