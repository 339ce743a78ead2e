// self-evolve console, part 3 of 5: the inbox (pending writes, their diffs, approve and reject).
// Classic scripts loaded in order (index.html); they share one global scope.
'use strict';

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
    ['evaluated', evaluated(diff.evaluation || e.evaluation, id)],
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

/** What `self-evolve eval --pending ID` found about this staged text: the CLI's own line. */
function evaluated(ev, id) {
  return ev && typeof ev.summary === 'string' ? ev.summary : `not yet (self-evolve eval SUITE --pending ${id})`;
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
