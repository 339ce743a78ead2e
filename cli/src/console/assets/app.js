// self-evolve console: the page. Plain JS, no framework, no build step, nothing from the network.
// Every piece of data is put on the page with createElement + textContent (never as HTML), and
// every action goes to POST /api/act, which runs `/skills ARGS` through the plugin like the CLI.
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

// ---------------------------------------------------------------- routing and rendering

const VIEWS = {
  inbox: { tab: 'inbox', load: loadInbox, draw: drawInbox },
  skills: { tab: 'skills', load: loadSkills, draw: drawSkills },
  skill: { tab: 'skills', load: loadSkill, draw: drawSkill },
  reviews: { tab: 'reviews', load: loadReviews, draw: drawReviews },
  review: { tab: 'reviews', load: (id) => read(['reviews', id]), draw: drawReview },
  gate: { tab: 'gate', load: async () => (await request('/api/gate')).body || {}, draw: drawGate },
  curator: { tab: 'curator', load: loadCurator, draw: drawCurator },
};

/** #view or #view/PARAM; anything unknown is the inbox. */
function route() {
  const raw = location.hash.slice(1);
  const i = raw.indexOf('/');
  const view = i < 0 ? raw : raw.slice(0, i);
  let param = i < 0 ? '' : raw.slice(i + 1);
  try { param = decodeURIComponent(param); } catch (_) { /* keep as is */ }
  return VIEWS[view] ? { view, param } : { view: 'inbox', param: '' };
}

function go(hash) {
  if (location.hash === hash) show(false);
  else location.hash = hash;
}

/** Loads the current view's data and draws it. refreshing: keep focus and scroll, and draw
 *  nothing when the data did not change (a poll after another process touched the home). */
async function show(refreshing) {
  const seq = ++state.seq;
  const r = route();
  const v = VIEWS[r.view];
  markTab(v.tab);
  let data = null, err = null;
  try { data = await v.load(r.param); } catch (e) { err = e; }
  if (seq !== state.seq) return; // a newer navigation or refresh wins
  const key = JSON.stringify(err ? { error: err.message } : data);
  const same = r.view === state.view && r.param === state.param;
  if (refreshing && same && key === state.dataKey) { focusWanted(); return; }
  Object.assign(state, { view: r.view, param: r.param, data, err, dataKey: key });
  redraw(refreshing && same);
}

/** Draws state.data again (after a change of layout or selection that needs no new data). */
function redraw(keepFocus) {
  const v = VIEWS[state.view];
  const node = state.err
    ? h('section', {}, h('h2', { tabindex: -1, text: 'Could not load this view' }), h('p', { class: 'notice err' }, vis(state.err.message)))
    : v.draw(state.data, state.param);
  swap(node, keepFocus);
}

/** Replaces the main region, putting focus back on the element with the same data-key. */
function swap(node, keepFocus) {
  const main = $('main');
  const active = document.activeElement;
  const inMain = active && active !== main && main.contains(active);
  const wanted = state.focus;
  const key = wanted || (keepFocus && inMain ? active.dataset.key : null);
  state.focus = null;
  const x = window.scrollX, y = window.scrollY;
  const scrolls = [...main.querySelectorAll('.scroll[data-key]')].map((s) => [s.dataset.key, s.scrollLeft]);
  main.replaceChildren(node);
  const find = (k) => main.querySelector(`[data-key="${CSS.escape(k)}"]`);
  for (const [k, left] of scrolls) { const s = find(k); if (s) s.scrollLeft = left; }
  if (keepFocus) window.scrollTo(x, y); else window.scrollTo(0, 0);
  const target = key && find(key);
  if (target) target.focus({ preventScroll: keepFocus && !wanted });
  else if (inMain) { const hd = main.querySelector('h2'); if (hd) hd.focus(); }
}

/** Moves focus to the element a click asked for (state.focus) when nothing was redrawn. */
function focusWanted() {
  const k = state.focus;
  state.focus = null;
  const t = k && $('main').querySelector(`[data-key="${CSS.escape(k)}"]`);
  if (t) t.focus();
}

function markTab(tab) {
  for (const b of document.querySelectorAll('[role=tab]')) b.setAttribute('aria-selected', String(b.dataset.view === tab));
  $('main').setAttribute('aria-labelledby', `tab-${tab}`);
}

// ---------------------------------------------------------------- shared pieces

/** Columns of free text, which wrap; every other cell stays on one line. */
const WRAP = new Set(['why', 'answer', 'warnings']);

/** A table in a horizontally scrolling region. cols: [label, row → value|Node]. */
function table(caption, cols, rows, rowAttrs) {
  return h('div', { class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption, key: `scroll-${caption}` },
    h('table', {},
      h('caption', { class: 'sr', text: caption }),
      h('thead', {}, h('tr', {}, cols.map(([label]) => h('th', { scope: 'col', text: label })))),
      h('tbody', {}, rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {},
        cols.map(([label, cell]) => h('td', { class: WRAP.has(label) ? 'wrap' : null }, vis(cell(r)))))))));
}

/** A definition list of [label, value] pairs; missing values show as —. */
function facts(pairs) {
  return h('dl', { class: 'facts' },
    pairs.map(([k, v]) => [h('dt', { text: k }), h('dd', { 'data-test': `fact-${k.replace(/\s+/g, '-')}` }, vis(v))]));
}

/** Previous/next buttons over a paged answer ({total, page, per}). */
function pager(ans, count, onPage, name) {
  const total = typeof ans.total === 'number' ? ans.total : count;
  const page = ans.page || 0, per = ans.per || PER;
  const pages = Math.max(1, Math.ceil(total / per));
  const from = total ? page * per + 1 : 0, to = Math.min(total, page * per + count);
  return h('nav', { class: 'pager', 'aria-label': `${name} pages` },
    h('button', { type: 'button', key: `${name}-prev`, 'data-test': 'page-prev', disabled: page <= 0, onclick: () => onPage(page - 1), text: '← Previous' }),
    h('span', {}, vis(`${from}–${to} of ${total} · page ${page + 1} of ${pages}`)),
    h('button', { type: 'button', key: `${name}-next`, 'data-test': 'page-next', disabled: page + 1 >= pages, onclick: () => onPage(page + 1), text: 'Next →' }));
}

/** Back to the last page when the one shown emptied (entries approved elsewhere). */
function clampPage(s, ans, count) {
  if (count === 0 && s.page > 0 && ans.total > 0) { s.page = Math.ceil(ans.total / (ans.per || PER)) - 1; return true; }
  return false;
}

/** A view's heading; its text may come from data (a skill's name from the URL, a review's id),
 *  so it goes through the visible renderer. */
function heading(text, back) {
  return h('div', { class: 'head' },
    back ? h('a', { href: back[0], class: 'back', text: back[1] }) : null,
    h('h2', { tabindex: -1, 'data-test': 'heading' }, vis(text)));
}

// ---------------------------------------------------------------- diffs

/** A unified diff as rows {kind: meta|hunk|add|del|ctx|note, text, old, new}. */
function parseDiff(text) {
  const rows = [];
  let oldNo = 0, newNo = 0, oldLeft = 0, newLeft = 0;
  const lines = String(text || '').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const line of lines) {
    const hunk = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/.exec(line);
    if (hunk) {
      [oldNo, newNo] = [+hunk[1], +hunk[3]];
      [oldLeft, newLeft] = [hunk[2] === undefined ? 1 : +hunk[2], hunk[4] === undefined ? 1 : +hunk[4]];
      rows.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('\\')) {
      rows.push({ kind: 'note', text: line });
    } else if (oldLeft > 0 || newLeft > 0) {
      const sign = line[0], text = line.slice(1);
      if (sign === '+') { rows.push({ kind: 'add', text, new: newNo++ }); newLeft--; }
      else if (sign === '-') { rows.push({ kind: 'del', text, old: oldNo++ }); oldLeft--; }
      else { rows.push({ kind: 'ctx', text, old: oldNo++, new: newNo++ }); oldLeft--; newLeft--; }
    } else {
      rows.push({ kind: 'meta', text: line });
    }
  }
  return rows;
}

const SIGN = { add: '+', del: '−', ctx: ' ' };
const wide = (r, cols) => h('tr', { class: `d-${r.kind}` }, h('td', { class: 'code', colspan: cols }, visibleLine(r.text)));
const isHeld = (r, held) => r.kind !== 'del' && held.has(r.new);

function unifiedTable(rows, held) {
  return h('table', { class: 'diff' }, h('caption', { class: 'sr', text: 'Unified diff' }), h('tbody', {}, rows.map((r) => (
    SIGN[r.kind] === undefined ? wide(r, 4) : h('tr', { class: `d-${r.kind}${isHeld(r, held) ? ' held' : ''}` },
      h('td', { class: 'ln', text: r.old ?? '' }), h('td', { class: 'ln', text: r.new ?? '' }),
      h('td', { class: 'sign', text: SIGN[r.kind] }), h('td', { class: 'code' }, visibleLine(r.text)))))));
}

/** Old on the left, new on the right; a run of deletions is paired with the additions after it. */
function splitTable(rows, held) {
  const body = h('tbody');
  const side = (r) => (r
    ? [h('td', { class: 'ln', text: r.old ?? r.new }), h('td', { class: `sign s-${r.kind}`, text: SIGN[r.kind] }),
      h('td', { class: `code s-${r.kind}${isHeld(r, held) ? ' held' : ''}` }, visibleLine(r.text))]
    : [h('td', { class: 'ln' }), h('td', { class: 'sign' }), h('td', { class: 'code empty' })]);
  let dels = [], adds = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) body.append(h('tr', {}, side(dels[i]), side(adds[i])));
    dels = []; adds = [];
  };
  for (const r of rows) {
    if (r.kind === 'del') { if (adds.length) flush(); dels.push(r); }
    else if (r.kind === 'add') adds.push(r);
    else {
      flush();
      if (r.kind === 'ctx') body.append(h('tr', {}, side({ ...r, new: undefined }), side({ ...r, old: undefined })));
      else body.append(wide(r, 6));
    }
  }
  flush();
  return h('table', { class: 'diff split' }, h('caption', { class: 'sr', text: 'Side-by-side diff: old left, new right' }), body);
}

/** The layout toggle and the diff (data-test=diff); held: new-side line numbers to mark. */
function diffBlock(text, held) {
  const rows = parseDiff(text);
  const mode = state.diffMode;
  const pick = (m) => { state.diffMode = m; redraw(true); };
  return h('div', { class: 'diff-block' },
    h('div', { class: 'seg', role: 'group', 'aria-label': 'Diff layout' },
      [['unified', 'Unified'], ['split', 'Side by side']].map(([m, label]) => h('button', {
        type: 'button', key: `mode-${m}`, 'data-test': `diff-${m}`, 'aria-pressed': String(mode === m), onclick: () => pick(m), text: label,
      }))),
    h('div', { class: 'scroll diffwrap', tabindex: 0, role: 'region', 'aria-label': 'Diff', 'data-test': 'diff', key: 'scroll-diff' },
      rows.length ? (mode === 'split' ? splitTable(rows, held || new Set()) : unifiedTable(rows, held || new Set()))
        : h('p', { class: 'muted', text: 'No changes.' })),
    h('p', { class: 'legend muted' }, h('span', { class: 'hid', text: '⟨U+XXXX⟩' }), ' an invisible or control character · ',
      h('span', { class: 'tab', text: '→' }), ' a tab · ', h('span', { class: 'trail', text: '··' }), ' trailing whitespace'));
}

// ---------------------------------------------------------------- inbox

async function updateBadge(total) {
  if (total === undefined) {
    try { total = (await read(['pending'], 0, 1)).total; } catch (_) { return; }
  }
  $('inbox-count').textContent = total ? String(total) : '';
}

async function loadInbox() {
  const s = state.inbox;
  const list = await read(['pending'], s.page, PER);
  const items = list.pending || [];
  if (clampPage(s, list, items.length)) return loadInbox();
  updateBadge(typeof list.total === 'number' ? list.total : items.length);
  let detail = null;
  if (s.selected) {
    s.entry = items.find((p) => p.id === s.selected) || s.entry;
    try { detail = { entry: s.entry, diff: await read(['diff', s.selected]) }; }
    catch (e) { detail = { entry: s.entry, gone: e.message }; }
  }
  return { list, detail };
}

const who = (p) => [p.by || p.agent, p.actor, p.session ? `session ${p.session}` : null].filter(Boolean).join(' · ');
const findings = (p) => p.held || p.findings || [];

function select(p) {
  const s = state.inbox;
  if (s.selected !== p.id) s.accepted = new Set();
  Object.assign(s, { selected: p.id, entry: p });
  state.focus = 'detail-h';
  show(true);
}

function drawInbox({ list, detail }) {
  const s = state.inbox;
  const items = list.pending || [];
  const cols = [
    ['id', (p) => h('button', { type: 'button', class: 'linkish', key: `sel-${p.id}`, 'aria-pressed': String(p.id === s.selected), onclick: () => select(p) }, vis(p.id))],
    ['skill', (p) => p.skill], ['scope', (p) => p.scope], ['action', (p) => p.operation],
    ['staged by', who], ['why', (p) => p.reason], ['when', (p) => p.createdAt || iso(p.createdMs)],
    ['findings', (p) => findings(p).length],
  ];
  const rowAttrs = (p) => ({
    'data-test': 'pending-row', 'data-id': p.id, class: p.id === s.selected ? 'sel' : null,
    onclick: (e) => { if (!e.target.closest('button, a, input, select')) select(p); },
  });
  return h('section', {},
    heading('Inbox: pending writes'),
    items.length
      ? [table('Pending writes', cols, items, rowAttrs), pager(list, items.length, (n) => { s.page = n; show(true); }, 'inbox')]
      : h('p', { class: 'muted', text: 'No pending writes. With write approval on (/skills approval on), every write waits here.' }),
    detail ? drawDetail(detail) : (items.length ? h('p', { class: 'muted', text: 'Choose a pending write (its id) to see its diff.' }) : null));
}

/** One pending write: who and why, its diff, its held findings, Approve and Reject. */
function drawDetail(d) {
  const s = state.inbox, id = s.selected, e = d.entry || {};
  const done = () => { s.selected = null; s.entry = null; s.accepted = new Set(); };
  const box = h('section', { class: 'detail', 'aria-labelledby': 'detail-h' },
    h('h3', { id: 'detail-h', key: 'detail-h', tabindex: -1 }, 'Pending write ', vis(id)));
  if (d.gone) {
    add(box, h('p', { class: 'notice err' }, 'No longer pending: ', vis(d.gone)),
      h('button', { type: 'button', onclick: () => { done(); show(false); }, text: 'Close' }));
    return box;
  }
  const diff = d.diff || {};
  const held = findings(e);
  add(box, facts([
    ['skill', e.skill], ['path', diff.path || e.path], ['action', e.operation], ['scope', e.scope || diff.scope],
    ['staged by', who(e)], ['working folder', e.cwd], ['why', e.reason], ['staged at', e.createdAt || iso(e.createdMs)],
    ['base sha256', e.baseSha256], ['new sha256', e.newSha256],
  ]));
  if (diff.note) add(box, h('p', { class: 'muted' }, vis(diff.note)));
  add(box, diffBlock(diff.diff, new Set(held.map((f) => f.line))));
  const rules = [...new Set(held.map((f) => f.rule).filter(Boolean))];
  if (rules.length) add(box, findingsBox(held, rules));
  const accepted = () => rules.filter((r) => s.accepted.has(r)).flatMap((r) => ['--accept-finding', r]);
  add(box, h('div', { class: 'actions' },
    h('button', { type: 'button', class: 'primary', key: 'approve', 'data-test': 'approve', onclick: () => act(['approve', id, ...accepted()], done), text: 'Approve' }),
    h('button', { type: 'button', class: 'danger', key: 'reject', 'data-test': 'reject', onclick: () => act(['reject', id], done), text: 'Reject' })));
  return box;
}

/** A checkbox per finding rule; a held write lands only with every rule accepted. */
function findingsBox(held, rules) {
  const acc = state.inbox.accepted;
  return h('fieldset', { class: 'findings' },
    h('legend', { text: 'Held: credential findings' }),
    h('p', { class: 'muted', text: 'Reject the write if a value is a credential. Tick a rule only if its values are not credentials; Approve then sends --accept-finding for each ticked rule.' }),
    rules.map((rule) => h('label', { class: 'check' },
      h('input', { type: 'checkbox', 'data-test': 'finding-rule', value: rule, key: `rule-${rule}`, checked: acc.has(rule),
        onchange: (ev) => { if (ev.target.checked) acc.add(rule); else acc.delete(rule); } }),
      h('span', { class: 'rule' }, vis(rule)),
      h('span', { class: 'muted' }, ' ', vis(held.filter((f) => f.rule === rule)
        .map((f) => [f.line ? `line ${f.line}` : null, f.message, f.fingerprint].filter(Boolean).join(', ')).join('; '))))));
}

// ---------------------------------------------------------------- skills

function loadSkills() {
  const s = state.skills;
  const words = ['list'];
  if (s.scope) words.push('--scope', s.scope);
  if (s.status) words.push('--status', s.status);
  return read(words, s.page, PER);
}

function choice(label, key, options, current, onPick, test) {
  return h('label', { class: 'field' }, `${label} `,
    h('select', { key, 'data-test': test, value: current, onchange: (e) => onPick(e.target.value) },
      options.map(([v, t]) => h('option', { value: v, text: visibleString(t) }))));
}

function drawSkills(ans) {
  const s = state.skills;
  const items = ans.skills || [];
  const ev = (k) => (r) => (r.evidence ? r.evidence[k] ?? 0 : null);
  const cols = [
    ['name', (r) => h('a', { href: `#skill/${encodeURIComponent(r.name)}`, key: `skill-${r.name}` }, vis(r.name))],
    ['scope', (r) => r.scope], ['owner', (r) => r.owner], ['status', (r) => r.status],
    ['pinned', (r) => (r.pinned ? 'yes' : 'no')],
  ];
  if (items.some((r) => r.versions !== undefined)) cols.push(['versions', (r) => r.versions]);
  cols.push(['uses', (r) => r.uses], ['last use', (r) => r.lastUse], ['loads', ev('loads')], ['completed', ev('completed')],
    ['failed', ev('failed')], ['corrected', ev('corrected')], ['warnings', (r) => (r.warnings || []).join('; ')]);
  const filter = (k) => (v) => { s[k] = v; s.page = 0; show(true); };
  return h('section', {},
    heading('Skills'),
    h('div', { class: 'filters' },
      choice('Scope', 'f-scope', [['', 'both'], ['user', 'user'], ['project', 'project']], s.scope, filter('scope'), 'filter-scope'),
      choice('Status', 'f-status', [['', 'any'], ['active', 'active'], ['stale', 'stale'], ['archived', 'archived'], ['invalid', 'invalid']], s.status, filter('status'), 'filter-status')),
    items.length
      ? [table('Skills', cols, items, (r) => ({ 'data-test': 'skill-row', 'data-name': r.name, class: 'link-row',
        // The whole row opens the skill's page (the name is the link a keyboard reaches).
        onclick: (e) => { if (!e.target.closest('a')) go(`#skill/${encodeURIComponent(r.name)}`); } })),
        pager(ans, items.length, (n) => { s.page = n; show(true); }, 'skills')]
      : h('p', { class: 'muted', text: 'No skills match.' }),
    (ans.warnings || []).length ? h('ul', { class: 'warnings' }, ans.warnings.map((w) => h('li', {}, vis(w)))) : null);
}

/** The newest kept versions (the last page when there are more than 200). */
async function readLog(name) {
  const first = await read(['log', name], 0, 200);
  if (!(first.total > 200)) return first;
  return read(['log', name], Math.ceil(first.total / 200) - 1, 200);
}

async function loadSkill(name) {
  if (state.skill.name !== name) state.skill = { name, compare: null, revert: null, a: null, b: null };
  const failed = (e) => ({ error: e.message });
  const [shown, log] = await Promise.all([read(['show', name]).catch(failed), readLog(name).catch(failed)]);
  const c = state.skill.compare;
  const diff = c ? await compare(name, c).catch(failed) : null;
  return { shown, log, diff };
}

/** One version's change, or the text after version a against the text after version b: asks
 *  for `diff NAME@A NAME@B`; if the server or plugin lacks it, the versions' own diffs in turn. */
async function compare(name, c) {
  if (c.one) return read(['diff', `${name}@${c.one}`]);
  try {
    return await read(['diff', `${name}@${c.a}`, `${name}@${c.b}`]);
  } catch (first) {
    if (c.b - c.a > 50) throw first;
    const parts = [];
    for (let v = c.a + 1; v <= c.b; v++) {
      const d = await read(['diff', `${name}@${v}`]);
      parts.push(`# version ${v}`, String(d.diff || '').replace(/\n$/, ''));
    }
    const which = c.b === c.a + 1 ? `the change of version ${c.b}` : `the changes of versions ${c.a + 1} to ${c.b}, one after another`;
    return { diff: parts.join('\n') + '\n', note: `Shown as ${which}.` };
  }
}

const revertLabel = (v) => visibleString(`Revert to before version ${v}`);

function drawSkill({ shown, log, diff }, name) {
  const sk = state.skill;
  const versions = (log.versions || []).slice().sort((a, b) => b.version - a.version);
  // status and pinned as the plugin parsed them (show --json carries them, as list does per row).
  const pinned = shown.pinned === true;
  const archived = Boolean(shown.error) || shown.status === 'archived';
  const ev = shown.evidence || {};
  // What Revert undoes is fixed when the skill's page is first drawn with versions (the newest
  // then) and moves only when the operator picks another: a version landed meanwhile by another
  // process never changes it. The button names it.
  if (sk.revert === null && versions.length) sk.revert = String(versions[0].version);
  if (sk.b === null && versions.length) { sk.b = versions[0].version; sk.a = (versions[1] || versions[0]).version; }
  const vOpts = (label) => versions.map((v) => [String(v.version), label(v)]);
  const revertBtn = h('button', { type: 'button', key: 'revert', 'data-test': 'revert', onclick: () => act(['revert', name, sk.revert]), text: revertLabel(sk.revert) });
  const revertSel = choice('Restore the text from before version', 'revert-v', vOpts((v) => `${v.version} (${dash(v.operation)}, ${dash(v.at)})`),
    sk.revert, (v) => { sk.revert = v; revertBtn.textContent = revertLabel(v); }, 'revert-version');
  const pick = (k) => (v) => { sk[k] = Number(v); };
  const section = h('section', {},
    heading(name, ['#skills', '← All skills']),
    shown.error ? h('p', { class: 'notice err' }, vis(shown.error), archived ? ' (an archived skill can be restored below)' : null) : null,
    facts([['scope', shown.scope], ['path', shown.path], ['files', (shown.files || []).join(', ')],
      ['status', shown.error ? null : shown.status], ['pinned', shown.error || typeof shown.pinned !== 'boolean' ? null : (pinned ? 'yes' : 'no')],
      ['after its loads', ev.loads ? ['loads', 'completed', 'failed', 'aborted', 'corrected'].map((k) => `${k} ${ev[k] || 0}`).join(' · ') : 'never loaded']]),
    h('div', { class: 'actions' },
      shown.error ? null : h('button', { type: 'button', key: 'pin', 'data-test': 'pin', onclick: () => act([pinned ? 'unpin' : 'pin', name]), text: pinned ? 'Unpin' : 'Pin' }),
      h('button', { type: 'button', key: 'archive', 'data-test': 'archive', onclick: () => act([archived ? 'restore' : 'archive', name]), text: archived ? 'Restore' : 'Archive' })),
    versions.length ? h('div', { class: 'actions' }, revertSel, revertBtn) : null);
  if (!shown.error) {
    add(section, h('h3', { text: 'Current text' }),
      h('pre', { class: 'text scroll', tabindex: 0, 'data-test': 'skill-text', 'aria-label': 'Current text', key: 'scroll-text' }, visibleText(shown.content || '')));
  }
  add(section, h('h3', { text: 'History' }));
  if (log.error) add(section, h('p', { class: 'notice err' }, vis(log.error)));
  else if (!versions.length) add(section, h('p', { class: 'muted', text: 'No kept versions.' }));
  else {
    add(section, table('Versions', [
      ['version', (v) => v.version], ['at', (v) => v.at || iso(v.atMs)], ['action', (v) => v.operation],
      ['by', (v) => v.by], ['approved by', (v) => v.actor], ['session', (v) => v.session], ['why', (v) => v.reason],
      ['size', (v) => `${dash(v.beforeSize)} → ${dash(v.afterSize)}`],
      ['', (v) => h('button', { type: 'button', key: `vdiff-${v.version}`, onclick: () => { sk.compare = { one: v.version }; show(true); }, text: 'Its diff' })],
    ], versions), log.total > versions.length ? h('p', { class: 'muted' }, vis(`The newest ${versions.length} of ${log.total} versions.`)) : null,
    h('div', { class: 'actions' },
      choice('Compare version', 'cmp-a', vOpts((v) => String(v.version)), sk.a, pick('a'), 'diff-a'),
      choice('with version', 'cmp-b', vOpts((v) => String(v.version)), sk.b, pick('b'), 'diff-b'),
      h('button', { type: 'button', key: 'compare', 'data-test': 'compare', onclick: () => {
        if (sk.a === sk.b) { say('choose two different versions', 'err'); return; }
        sk.compare = { a: Math.min(sk.a, sk.b), b: Math.max(sk.a, sk.b) }; show(true);
      }, text: 'Compare' })));
  }
  if (diff) {
    const c = sk.compare;
    add(section, h('h3', {}, vis(c.one ? `What version ${c.one} changed` : `Version ${c.a} → version ${c.b}`)));
    if (diff.error) add(section, h('p', { class: 'notice err' }, vis(diff.error)));
    else add(section, diff.note ? h('p', { class: 'muted' }, vis(diff.note)) : null, diffBlock(diff.diff));
  }
  return section;
}

// ---------------------------------------------------------------- reviews

async function loadReviews() {
  const failed = (e) => ({ error: e.message });
  const [list, status, loops] = await Promise.all([
    read(['reviews'], state.reviews.page, PER),
    read(['review', 'status']).catch(failed),
    read(['loops'], 0, 50).catch(failed),
  ]);
  if (clampPage(state.reviews, list, (list.reviews || []).length)) return loadReviews();
  return { list, status, loops };
}

const tokens = (r) => (isBlank(r.inputTokens) && isBlank(r.outputTokens) ? null : `${dash(r.inputTokens)} in, ${dash(r.outputTokens)} out`);

function drawReviews({ list, status, loops }) {
  const items = list.reviews || [];
  const statusPairs = status.error ? [['error', status.error]] : Object.entries(status);
  return h('section', {},
    heading('Reviews and curator passes'),
    items.length
      ? [table('Reviews', [
        ['id', (r) => h('a', { href: `#review/${encodeURIComponent(r.id)}`, key: `review-${r.id}` }, vis(r.id))],
        ['kind', (r) => r.kind], ['session', (r) => r.session], ['started', (r) => r.startedAt || iso(r.startedMs)],
        ['took', (r) => took(r.startedMs, r.endedMs)], ['how it ended', (r) => r.status], ['why', (r) => r.reason],
        ['tokens', tokens],
      ], items, (r) => ({ 'data-test': 'review-row', 'data-id': r.id })),
      pager(list, items.length, (n) => { state.reviews.page = n; show(true); }, 'reviews')]
      : h('p', { class: 'muted', text: 'No background review or curator pass is on record.' }),
    h('h3', { text: 'Background reviews now' }), facts(statusPairs),
    h('h3', { text: 'Review loops' }),
    loops.error ? h('p', { class: 'notice err' }, vis(loops.error))
      : (loops.loops || []).length
        ? table('Review loops', ['session', 'mode', 'status', 'iterations', 'tokens', 'independence', 'startedAt']
          .map((k) => [k, (r) => r[k]]), loops.loops)
        : h('p', { class: 'muted', text: 'No review loops yet.' }));
}

/** A call's answer in a line: `written as ID`, or `refused [code] message`. */
function callResult(c) {
  const a = c.answer || {};
  if (c.ok) return [a.status, a.id ? `as ${a.id}` : null].filter(Boolean).join(' ') || 'ok';
  return `refused [${dash(a.code)}] ${dash(a.message)}`;
}

function drawReview(ans, id) {
  const r = ans.review || {};
  const calls = ans.calls || [];
  return h('section', {},
    heading(`${dash(r.kind)} ${dash(r.id || id)}`, ['#reviews', '← All reviews']),
    facts([['why it started', r.reason], ['how it ended', r.status], ['session', r.session], ['turn', r.turn],
      ['started', r.startedAt || iso(r.startedMs)], ['ended', iso(r.endedMs)], ['took', took(r.startedMs, r.endedMs)],
      ['tokens', tokens(r)], ['prompt', isBlank(r.promptSha256) ? null : `${dash(r.promptBytes)} bytes, sha256 ${r.promptSha256}`],
      ['tools', (r.tools || []).join(', ')]]),
    h('h3', { text: `Calls (${calls.length})` }),
    calls.length ? table('Calls', [['at', (c) => c.at], ['tool', (c) => c.tool], ['action', (c) => c.action],
      ['skill', (c) => c.name], ['file', (c) => c.file_path], ['answer', callResult]], calls)
      : h('p', { class: 'muted', text: 'No calls on record.' }),
    isBlank(r.answer) ? null : [h('h3', { text: 'Its answer' }), h('pre', { class: 'text scroll', tabindex: 0, key: 'scroll-answer' }, visibleText(r.answer))],
    r.changes && typeof r.changes === 'object' ? [h('h3', { text: 'Changes' }), report(r.changes)] : null);
}

// ---------------------------------------------------------------- gate

const CHART_ALT = {
  'per-day': 'Gate decisions per day, by source', latency: 'Gate latency distribution',
  confidence: 'Gate confidence against the threshold', breaker: 'Gate breaker openings over time',
};

const spread = (o) => (o && typeof o === 'object' ? Object.entries(o).map(([k, v]) => `${k} ${dash(v)}`).join(', ') : o);

function drawGate(ans) {
  const s = ans.summary;
  const charts = (ans.charts || []).filter((u) => typeof u === 'string' && /^\/api\/gate\/[\w.-]+\.svg$/.test(u));
  if (!s) return h('section', {}, heading('Gate'), h('p', { class: 'muted', text: 'No gate decisions yet (no gates.jsonl in this home).' }));
  return h('section', {},
    heading('Gate'),
    facts([['decisions', s.total], ['by decision', spread(s.decisions)], ['by source', spread(s.sources)],
      ['fallbacks', spread(s.fallbacks)], ['latency (ms)', spread(s.latencyMs)],
      ['confidence of “no”', spread(s.noConfidence)], ['malformed lines', s.malformed]]),
    h('div', { class: 'charts' }, charts.map((u) => {
      const alt = CHART_ALT[u.replace(/^.*\/|\.svg$/g, '')] || 'Gate chart';
      return h('figure', {}, h('img', { src: `${u}?v=${encodeURIComponent(state.stamp || '')}`, alt, 'data-test': 'gate-chart' }),
        h('figcaption', { text: alt }));
    })),
    (s.thresholds || []).length ? [h('h3', { text: 'What each confidentNo threshold would have skipped' }),
      table('Thresholds', [['threshold', (t) => t.threshold], ['skipped', (t) => t.skipped]], s.thresholds)] : null);
}

// ---------------------------------------------------------------- curator

async function loadCurator() {
  const failed = (e) => ({ error: e.message });
  const [last, next] = await Promise.all([read(['curator']).catch(failed), read(['curator', 'run', '--dry-run']).catch(failed)]);
  return { last, next };
}

/** A curator report: when, how many checked, each change, errors. */
function report(r) {
  if (r.error) return h('p', { class: 'notice err' }, vis(r.error));
  const changes = r.changes || [];
  return h('div', {},
    facts([['at', r.at], ['skills checked', r.checked], ['dry run', isBlank(r.dryRun) ? null : (r.dryRun ? 'yes' : 'no')]]),
    changes.length ? table('Changes', [['skill', (c) => c.name], ['from', (c) => c.from], ['to', (c) => c.to], ['why', (c) => c.reason]], changes)
      : h('p', { class: 'muted', text: 'No changes.' }),
    (r.errors || []).length ? h('ul', { class: 'warnings' }, r.errors.map((e) => h('li', {}, vis(e)))) : null);
}

function drawCurator({ last, next }) {
  return h('section', {},
    heading('Curator'),
    h('h3', { text: 'The last pass' }), report(last),
    h('h3', { text: 'What the next pass would do (dry run)' }), report(next));
}

// ---------------------------------------------------------------- polling and start

/** Every 2 s: when the home's stamp changed, reload the current view (and the inbox count). */
async function poll() {
  if (state.polling) return;
  state.polling = true;
  try {
    const stamp = ((await request('/api/stamp')).body || {}).stamp;
    if (state.offline) { state.offline = false; say('connected again', 'ok'); }
    if (state.stamp !== null && stamp !== state.stamp) {
      state.stamp = stamp;
      if (!state.busy) await show(true);
      if (state.view !== 'inbox') updateBadge();
    } else state.stamp = stamp;
  } catch (e) {
    if (!state.offline) { state.offline = true; say(e.message, 'err'); }
  } finally {
    state.polling = false;
  }
}

/** Tabs: click or Enter/Space to open; arrow keys, Home and End move between them. */
function wireTabs() {
  const tabs = [...document.querySelectorAll('[role=tab]')];
  for (const t of tabs) t.addEventListener('click', () => go(`#${t.dataset.view}`));
  document.querySelector('[role=tablist]').addEventListener('keydown', (e) => {
    const i = tabs.indexOf(document.activeElement);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (i < 0 || to === undefined) return;
    e.preventDefault();
    const t = tabs[(to + tabs.length) % tabs.length];
    t.focus();
    go(`#${t.dataset.view}`);
  });
}

async function init() {
  wireTabs();
  try {
    const s = (await request('/api/session')).body || {};
    state.csrf = s.csrf || '';
    // The home and project paths are the operator's folders' names: shown through the visible
    // renderer like any other text the page did not write.
    const parts = [['home ', dash(s.home)], s.project ? ['project ', s.project] : null, s.version ? ['v', s.version] : null]
      .filter(Boolean).map(([label, v]) => [label, vis(v)]);
    $('where').replaceChildren(...parts.flatMap((p, i) => (i ? [' · ', ...p] : p)));
  } catch (e) {
    $('main').replaceChildren(h('p', { class: 'notice err' }, vis(e.message)));
    say(e.message, 'err');
    return;
  }
  window.addEventListener('hashchange', () => show(false));
  await show(false);
  if (state.view !== 'inbox') updateBadge();
  await poll();
  setInterval(poll, POLL_MS);
}

init();
