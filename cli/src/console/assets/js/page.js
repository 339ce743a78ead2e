// self-evolve console, part 2 of 5: routing, drawing a view, the pieces views share, diffs.
// Classic scripts loaded in order (index.html); they share one global scope.
'use strict';

// ---------------------------------------------------------------- routing and rendering

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
