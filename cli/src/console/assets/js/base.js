// self-evolve console: the page. Plain JS, no framework, no build step, nothing from the network.
// Every piece of data is put on the page with createElement + textContent (never as HTML), and
// every action goes to POST /api/act, which runs `/skills ARGS` through the plugin like the CLI.
// self-evolve console, part 1 of 5: the page's state, DOM helpers (createElement and
// textContent only), hidden characters made visible, and the server calls.
// Classic scripts loaded in order (index.html); they share one global scope.
'use strict';


const POLL_MS = 2000;
const PER = 100;

const state = {
  csrf: '', stamp: null, seq: 0, polling: false, busy: false, offline: false,
  view: null, param: null, data: null, err: null, dataKey: null, focus: null,
  inbox: { page: 0, selected: null, entry: null, accepted: new Set() },
  skills: { page: 0, scope: '', status: '' },
  reviews: { page: 0 },
  skill: { name: null, compare: null, revert: null, a: null, b: null },
  diffMode: 'unified',
};

// ---------------------------------------------------------------- DOM helpers

/** An element: attrs are attributes (text → textContent, key → data-key, onX → listener,
 *  checked/disabled/selected/value → properties); children are nodes or strings (as text). */
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  let value;
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') node.textContent = String(v);
    else if (k === 'class') node.className = v;
    else if (k === 'key') node.dataset.key = v;
    else if (k === 'value') value = v;
    else if (k === 'checked' || k === 'disabled' || k === 'selected') node[k] = true;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  add(node, ...children);
  if (value !== undefined) node.value = String(value);
  return node;
}

/** Appends children (nodes, or strings as text), skipping null, undefined and false. */
function add(node, ...children) {
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined && c !== false) node.append(c instanceof Node ? c : String(c));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const isBlank = (v) => v === undefined || v === null || v === '';
/** A value as display text: missing → —, objects as JSON. */
const dash = (v) => (isBlank(v) ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));
const iso = (ms) => (typeof ms === 'number' ? new Date(ms).toISOString() : null);
const took = (a, b) => (typeof a === 'number' && typeof b === 'number' ? `${((b - a) / 1000).toFixed(1)} s` : null);

// ---------------------------------------------------------------- hidden characters

const NAMES = {
  0x00: 'NUL', 0x07: 'BEL', 0x08: 'BS', 0x0b: 'VT', 0x0c: 'FF', 0x0d: 'CR', 0x1b: 'ESC', 0x7f: 'DEL',
  0xa0: 'no-break space', 0xad: 'soft hyphen', 0x61c: 'ALM', 0x115f: 'Hangul choseong filler',
  0x1160: 'Hangul jungseong filler', 0x180e: 'Mongolian vowel separator', 0x200b: 'zero-width space',
  0x200c: 'ZWNJ', 0x200d: 'ZWJ', 0x200e: 'LRM', 0x200f: 'RLM', 0x2028: 'line separator',
  0x2029: 'paragraph separator', 0x202a: 'LRE', 0x202b: 'RLE', 0x202c: 'PDF', 0x202d: 'LRO',
  0x202e: 'RLO', 0x2060: 'word joiner', 0x2061: 'function application', 0x2062: 'invisible times',
  0x2063: 'invisible separator', 0x2064: 'invisible plus', 0x2066: 'LRI', 0x2067: 'RLI', 0x2068: 'FSI',
  0x2069: 'PDI', 0x206a: 'inhibit symmetric swapping', 0x206b: 'activate symmetric swapping',
  0x206c: 'inhibit Arabic form shaping', 0x206d: 'activate Arabic form shaping',
  0x206e: 'national digit shapes', 0x206f: 'nominal digit shapes', 0x3164: 'Hangul filler',
  0xfeff: 'BOM / zero-width no-break space', 0xffa0: 'halfwidth Hangul filler',
  0xfff9: 'interlinear annotation anchor', 0xfffa: 'interlinear annotation separator',
  0xfffb: 'interlinear annotation terminator',
};

/** The host's list, exactly: `hides_text` in crates/scan/src/hidden.rs (zero-width and direction
 *  marks, line and paragraph separators, the soft hyphen, ALM, the Mongolian vowel separator,
 *  U+2060–206F, the BOM, interlinear annotation, tag characters). Keep the two in step; the
 *  browser test compares them code point by code point. */
function hostHides(cp) {
  return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) ||
    cp === 0xfeff || cp === 0xad || cp === 0x61c || cp === 0x180e || (cp >= 0xfff9 && cp <= 0xfffb) ||
    (cp >= 0xe0000 && cp <= 0xe007f);
}

/** What the page marks beyond the host's list. Control characters (C0, DEL, C1) are the caller's
 *  to judge, the host's list says; the page marks them all (a newline splits lines instead). The
 *  host does not mark these, the page does: the no-break space (looks like a space), variation
 *  selectors U+FE00–FE0F and U+E0100–E01EF (invisible, change how the character before them is
 *  drawn) and the Hangul fillers U+115F, U+1160, U+3164, U+FFA0 (drawn as blank space). */
function pageHides(cp) {
  return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0xa0 || (cp >= 0xfe00 && cp <= 0xfe0f) ||
    (cp >= 0xe0100 && cp <= 0xe01ef) || cp === 0x115f || cp === 0x1160 || cp === 0x3164 || cp === 0xffa0;
}

/** Control, bidi, zero-width and other invisible code points: shown as markers. */
const isHidden = (cp) => hostHides(cp) || pageHides(cp);

/** ⟨U+XXXX⟩ in a distinct style, its name in the tooltip. */
function marker(cp) {
  const hex = cp.toString(16).toUpperCase().padStart(4, '0');
  const vs = cp >= 0xfe00 && cp <= 0xfe0f ? cp - 0xfe00 + 1 : cp >= 0xe0100 && cp <= 0xe01ef ? cp - 0xe0100 + 17 : 0;
  const known = NAMES[cp] || (vs ? `variation selector ${vs}` : cp >= 0xe0000 && cp <= 0xe007f ? 'tag character' : '');
  const name = known ? `${known} ` : '';
  return h('span', { class: 'hid', title: `${name}U+${hex}`, text: `⟨U+${hex}⟩` });
}

/** A string with every hidden character (a newline too) as ⟨U+XXXX⟩ text, for where only text
 *  fits (an option of a select, a button's label). */
function visibleString(text) {
  let out = '';
  for (const ch of String(text)) {
    const cp = ch.codePointAt(0);
    out += isHidden(cp) ? `⟨U+${cp.toString(16).toUpperCase().padStart(4, '0')}⟩` : ch;
  }
  return out;
}

/** One line as nodes: hidden characters as markers, tabs as →, trailing whitespace marked. */
function visibleLine(line) {
  const frag = document.createDocumentFragment();
  const trail = /[ \t]+$/.exec(line);
  const body = trail ? line.slice(0, trail.index) : line;
  let run = '';
  const flush = () => { if (run) frag.append(run); run = ''; };
  for (const ch of body) {
    const cp = ch.codePointAt(0);
    if (ch === '\t') { flush(); frag.append(h('span', { class: 'tab', title: 'tab', text: '→' })); }
    else if (isHidden(cp)) { flush(); frag.append(marker(cp)); }
    else run += ch;
  }
  flush();
  if (trail) {
    const shown = trail[0].replace(/ /g, '·').replace(/\t/g, '→');
    frag.append(h('span', { class: 'trail', title: 'trailing whitespace', text: shown }));
  }
  return frag;
}

/** Several lines (\n kept), each through visibleLine. */
function visibleText(text) {
  const frag = document.createDocumentFragment();
  String(text).split('\n').forEach((line, i) => {
    if (i) frag.append('\n');
    frag.append(visibleLine(line));
  });
  return frag;
}

/** A value for a table cell or a fact: dash, then hidden characters made visible. */
const vis = (v) => (v instanceof Node ? v : visibleText(dash(v)));

// ---------------------------------------------------------------- server

class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

/** fetch → {status, body}; throws ApiError on a network failure, 401, or a non-JSON error. */
async function request(url, opts) {
  let res;
  try {
    res = await fetch(url, Object.assign({ credentials: 'same-origin', cache: 'no-store' }, opts));
  } catch (_) {
    throw new ApiError('the console server does not answer (was `self-evolve ui` stopped?)', 0);
  }
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (res.status === 401) throw new ApiError('not signed in: open the link `self-evolve ui` printed', 401);
  if (!res.ok && !(body && body.ok === false)) {
    throw new ApiError((body && body.error) || `${res.status} ${res.statusText}`, res.status);
  }
  return { status: res.status, body };
}

/** GET /api/read: the plugin's `/skills WORDS --json` answer (paged when page is given). */
async function read(words, page, per) {
  let url = '/api/read?args=' + encodeURIComponent(words.join(' '));
  if (page !== undefined) url += `&page=${page}&per=${per || PER}`;
  return (await request(url)).body || {};
}

/** POST /api/act with the CSRF token; shows the CLI's text (ok or refusal) in the status region,
 *  runs onOk after a success, then reloads the view. */
async function act(args, onOk) {
  if (state.busy) return;
  state.busy = true;
  $('status').replaceChildren(); // empty until the answer, so a reader never sees a stale result
  document.body.setAttribute('aria-busy', 'true');
  try {
    const { body } = await request('/api/act', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': state.csrf },
      body: JSON.stringify({ args }),
    });
    if (body && body.ok) { say(body.text || 'done', 'ok'); if (onOk) onOk(); }
    else say((body && (body.error || body.text)) || 'refused', 'err');
  } catch (e) {
    say(e.message, 'err');
  } finally {
    state.busy = false;
    document.body.removeAttribute('aria-busy');
  }
  await show(true);
}

/** The status region: the last action's result as text (the CLI's words name skills and ids:
 *  hidden characters in them are shown as markers). */
function say(text, kind) {
  $('status').replaceChildren(h('p', { class: `msg ${kind}` }, visibleText(String(text).trimEnd())));
}
