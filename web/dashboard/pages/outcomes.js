// Outcomes: what the agents achieved over a period (GET /api/analytics): the figures, and
// per UTC day a chart of sessions (started, auto-resolved, handed off) and one of model cost,
// each with its data as a table. Charts are SVG built with DOM calls: no library, no CDN.
import { api, apiAll, seg } from '../api.js';
import { busy, field, h, messages, replace, select, svg, table, uid } from '../dom.js';

const DAY_MS = 86_400_000;
const DEFAULT_DAYS = 30;

const FIGURES = [
  { key: 'conversations', label: 'Conversations', hint: 'sessions started' },
  { key: 'autoResolved', label: 'Auto-resolved', hint: 'closed without a person: mostly the customer stayed silent after the agent answered (the agent’s auto-resolve time)' },
  { key: 'handedOff', label: 'Handed off', hint: 'agent handoffs and helpdesk transfers' },
  { key: 'reopened', label: 'Reopened', hint: 'customers back within 7 days of a closed session' },
  { key: 'replies', label: 'Replies', hint: 'agent replies delivered' },
  { key: 'modelCostUsd', label: 'Model cost', hint: 'model usage debited', money: true },
  { key: 'costPerResolutionUsd', label: 'Cost per resolution', hint: 'model cost ÷ auto-resolved', money: true, none: 'nothing resolved in the period yet' },
];

const SESSION_SERIES = [
  { key: 'conversations', label: 'Conversations', cls: 's-conversations' },
  { key: 'autoResolved', label: 'Auto-resolved', cls: 's-resolved' },
  { key: 'handedOff', label: 'Handed off', cls: 's-handed-off' },
];
const COST_SERIES = [{ key: 'modelCostUsd', label: 'Model cost (USD)', cls: 's-cost' }];

const dateOf = (ms) => new Date(ms).toISOString().slice(0, 10);
const usd = (v) => (v === null || v === undefined ? '—' : `$${v}`);

export function render(root, { signal }) {
  const today = Date.now();
  const from = h('input', { type: 'date', name: 'from', value: dateOf(today - (DEFAULT_DAYS - 1) * DAY_MS), required: true });
  const to = h('input', { type: 'date', name: 'to', value: dateOf(today), required: true });
  const agent = select([{ value: '', label: 'All agents' }], { name: 'agentId' });
  const show = h('button', { type: 'submit', class: 'primary' }, 'Show');
  const form = h('form', { method: 'get', class: 'row filter' }, field('From', from), field('To', to), field('Agent', agent), show);
  const msg = messages();
  const figuresEl = h('dl', { class: 'figures', 'aria-label': 'Figures' });
  const chartsEl = h('div');
  const note = h('p', { class: 'muted small' });

  async function loadAgents() {
    try {
      const { agents } = await apiAll('/api/agents', 'agents', { signal });
      for (const a of agents) agent.append(h('option', { value: String(a.id) }, a.name));
    } catch (err) {
      // An operator may not list agents (403): the figures of all agents are theirs to see.
      if (err.name !== 'AbortError' && err.status !== 403) msg.error(err);
    }
  }

  async function load() {
    const q = `?from=${seg(from.value)}&to=${seg(to.value)}${agent.value ? `&agentId=${seg(agent.value)}` : ''}`;
    try {
      const { analytics } = await busy(show, () => api('GET', `/api/analytics${q}`, undefined, { signal }));
      msg.clear();
      replace(
        figuresEl,
        FIGURES.map((f) =>
          h('div', { class: 'figure', dataset: { figure: f.key } }, h('dt', {}, f.label), h('dd', {}, f.money ? usd(analytics[f.key]) : String(analytics[f.key])), h('p', { class: 'hint' }, analytics[f.key] == null && f.none ? `${f.hint}; ${f.none}` : f.hint)),
        ),
      );
      replace(
        chartsEl,
        chartPanel('Sessions by day', analytics.byDay, SESSION_SERIES, (v) => String(v)),
        chartPanel('Model cost by day', analytics.byDay, COST_SERIES, (v) => `$${v}`),
      );
      note.textContent = `UTC days from ${analytics.from.slice(0, 10)} to ${new Date(Date.parse(analytics.to) - 1).toISOString().slice(0, 10)}${agent.value ? `, ${agent.selectedOptions[0]?.textContent ?? 'one agent'} only` : ''}.`;
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });

  root.append(
    h('h1', {}, 'Outcomes'),
    form,
    msg.el,
    note,
    h('section', { class: 'panel', 'aria-labelledby': 'figures-title' }, h('h2', { id: 'figures-title' }, 'Figures'), figuresEl),
    chartsEl,
  );
  loadAgents();
  load();
}

/** A chart and, for screen readers and exact values, the same data as a table. */
function chartPanel(title, days, series, format) {
  const id = uid('chart');
  return h(
    'section',
    { class: 'panel chart-panel', 'aria-labelledby': id },
    h('h2', { id }, title),
    barChart(title, days, series, format),
    h('ul', { class: 'legend' }, series.length > 1 ? series.map((s) => h('li', {}, h('span', { class: ['swatch', s.cls], 'aria-hidden': 'true' }), s.label)) : null),
    h(
      'details',
      {},
      h('summary', {}, 'Data'),
      table(`!${title}`, [{ label: 'Day', cell: (d) => d.date }, ...series.map((s) => ({ label: s.label, class: 'num', cell: (d) => format(d[s.key]) }))], days),
    ),
  );
}

const W = 720;
const H = 240;
const M = { top: 12, right: 12, bottom: 28, left: 52 };

/** Grouped bars per day; values may be decimal strings (money). */
function barChart(title, days, series, format) {
  const values = days.flatMap((d) => series.map((s) => Number(d[s.key]) || 0));
  const integers = values.every(Number.isInteger);
  const { top, step } = scale(Math.max(...values, 0), integers);
  const plotW = W - M.left - M.right;
  const plotH = H - M.top - M.bottom;
  const groupW = plotW / Math.max(days.length, 1);
  const barW = Math.max(1, (groupW * 0.8) / series.length);
  const y = (v) => M.top + plotH - (v / top) * plotH;

  const titleId = uid('chart-title');
  const el = svg('svg', { class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': titleId }, svg('title', { id: titleId }, `${title} (bar chart; the data follows as a table)`));
  for (let i = 0; i * step <= top + step / 1e6; i++) {
    const tick = Number((i * step).toPrecision(12));
    el.append(
      svg('line', { class: 'grid', x1: M.left, x2: W - M.right, y1: y(tick), y2: y(tick) }),
      svg('text', { class: 'axis', x: M.left - 6, y: y(tick) + 4, 'text-anchor': 'end' }, format(String(tick))),
    );
  }
  const labelEvery = Math.max(1, Math.ceil(days.length / 10));
  days.forEach((d, i) => {
    const x0 = M.left + i * groupW + groupW * 0.1;
    series.forEach((s, j) => {
      const v = Number(d[s.key]) || 0;
      el.append(
        svg(
          'rect',
          { class: ['bar', s.cls], x: x0 + j * barW, y: y(v), width: Math.max(barW - 1, 1), height: Math.max(M.top + plotH - y(v), 0), dataset: { date: d.date, series: s.key, value: String(d[s.key]) } },
          svg('title', {}, `${d.date} · ${s.label}: ${format(d[s.key])}`),
        ),
      );
    });
    if (i % labelEvery === 0 || i === days.length - 1) {
      el.append(svg('text', { class: 'axis', x: M.left + i * groupW + groupW / 2, y: H - 8, 'text-anchor': 'middle' }, d.date.slice(5)));
    }
  });
  return el;
}

/** The axis: about four steps of 1, 2 or 5 × 10^n (whole steps for counts) up to the largest value. */
function scale(max, integers) {
  if (max <= 0) return { top: integers ? 1 : 0.01, step: integers ? 1 : 0.01 };
  const rough = max / 4;
  const p = 10 ** Math.floor(Math.log10(rough));
  let step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= rough);
  if (integers) step = Math.max(1, Math.round(step));
  return { top: Math.ceil(max / step - 1e-9) * step, step };
}
