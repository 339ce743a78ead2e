// self-evolve console, part 4 of 5: the skills and a skill's page.
// Classic scripts loaded in order (index.html); they share one global scope.
'use strict';

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
