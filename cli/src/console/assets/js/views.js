// self-evolve console, part 5 of 5: reviews, the gate, the curator, evaluations, then polling and start.
// Classic scripts loaded in order (index.html); they share one global scope.
'use strict';

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

// ---------------------------------------------------------------- evaluations

const pct = (x) => (typeof x === 'number' && isFinite(x) ? `${x >= 0 ? '+' : ''}${Math.round(100 * x)}%` : '—');
// A report is a file another process wrote: a missing or odd field shows as —, never throws.
const pair = (x) => (Array.isArray(x) ? x : []);
const rate = (r) => (r && r.runs ? `${r.successes}/${r.runs} [${Math.round(100 * pair(r.interval)[0])}–${Math.round(100 * pair(r.interval)[1])}%]` : '—');
const paired = (p) => (p ? `${pct(p.difference)} [${pct(pair(p.interval)[0])}, ${pct(pair(p.interval)[1])}] · p ${Number(p.pValue).toFixed(3)} · ${p.verdict}` : '—');

/** Each evaluation `self-evolve eval` left: its facts, its chart (drawn by the server), its tasks. */
function drawEvals(ans) {
  const list = Array.isArray(ans.evaluations) ? ans.evaluations : [];
  if (!list.length) {
    return h('section', {}, heading('Evaluations'),
      h('p', { class: 'muted', text: 'No evaluations yet. `self-evolve eval SUITE --skill NAME` compares the agent with and without a skill (docs/eval.md).' }));
  }
  return h('section', {}, heading('Evaluations'), list.map((e) => {
    const arms = Array.isArray(e.arms) ? e.arms : [];
    const chart = typeof e.chart === 'string' && /^\/api\/eval\/[0-9a-f]{16}\.svg$/.test(e.chart) ? e.chart : null;
    const tokens = (t) => (t && t.runs ? `${t.total} over ${t.runs} runs` : 'none reported');
    return h('article', { class: 'evaluation', 'data-test': 'evaluation', key: `eval-${e.key}` },
      h('h3', {}, vis(`${arms[0] || 'A'} against ${arms[1] || 'B'}`)),
      facts([['at', iso(e.at)], ['suite sha256', e.suiteSha256], ['agent', e.agent],
        ['repetitions', e.repeat], ['complete', e.complete ? 'yes' : 'no: run the same command again to finish'],
        ['A success', rate(e.a)], ['B success', rate(e.b)], ['paired', paired(e.overall)],
        ['pairs to decide', e.overall && e.overall.pairsToDecide], ['not checked', e.notChecked],
        ['tokens A', tokens((e.tokens || [])[0])], ['tokens B', tokens((e.tokens || [])[1])]]),
      chart ? h('div', { class: 'charts' }, h('figure', {}, h('img', { src: `${chart}?v=${encodeURIComponent(state.stamp || '')}`, alt: `Paired difference per task: ${arms[0] || 'A'} against ${arms[1] || 'B'}`, 'data-test': 'eval-chart' }),
        h('figcaption', { text: 'Each task\'s success rate with A minus with B, with its 95% interval; overall last.' }))) : null,
      table(`Tasks of ${e.key}`, [['task', (t) => t.id], ['A success', (t) => rate(t.a)], ['B success', (t) => rate(t.b)], ['A − B paired', (t) => paired(t.paired)]],
        Array.isArray(e.tasks) ? e.tasks : []));
  }));
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

// The views, by the hash route (page.js): defined last, once every view's functions exist.
const VIEWS = {
  inbox: { tab: 'inbox', load: loadInbox, draw: drawInbox },
  skills: { tab: 'skills', load: loadSkills, draw: drawSkills },
  skill: { tab: 'skills', load: loadSkill, draw: drawSkill },
  reviews: { tab: 'reviews', load: loadReviews, draw: drawReviews },
  review: { tab: 'reviews', load: (id) => read(['reviews', id]), draw: drawReview },
  gate: { tab: 'gate', load: async () => (await request('/api/gate')).body || {}, draw: drawGate },
  curator: { tab: 'curator', load: loadCurator, draw: drawCurator },
  evals: { tab: 'evals', load: async () => (await request('/api/evals')).body || {}, draw: drawEvals },
};

init();
