// Draws a statechart from GET /api/machines/conversation as SVG (no library): top-level
// states side by side, child states stacked inside their parent, transitions as labelled
// arrows. highlight(stateValue) marks the current state (aria-current="true") and its
// ancestors. States and events are labelled in words (words.js); `data-state` keeps the path.
import { h, svg, uid } from './dom.js';
import { eventShort, humanise, stateKeyText, stateText } from './words.js';

const BOX_W = 150;
const BOX_H = 38;
const HEAD_H = 30;
const PAD = 14;
const GAP = 18;
const MARGIN = 16;
const LINE_H = 13;
const CHAR_W = 6.3; // estimated width of a label character (11px font)
const LANE_GAP = 12;
const SIDE_OFFSET = 26;

/** State value → every active path: { active: 'idle' } → ['active', 'active.idle']. */
export function activePaths(value, prefix = '') {
  if (value === null || value === undefined) return [];
  if (typeof value === 'string') return [prefix + value];
  const out = [];
  for (const [key, child] of Object.entries(value)) {
    out.push(prefix + key);
    out.push(...activePaths(child, `${prefix}${key}.`));
  }
  return out;
}

/** The deepest active path, e.g. 'paused.operator'. */
export function leafPath(value) {
  const paths = activePaths(value);
  return paths.reduce((a, b) => (b.split('.').length > a.split('.').length ? b : a), paths[0] ?? '');
}

/** Builds a tree from the dot paths, keeping their order. */
function treeOf(paths) {
  const root = { path: '', key: '', children: [] };
  const byPath = new Map([['', root]]);
  for (const path of paths) {
    const parts = path.split('.');
    const parentPath = parts.slice(0, -1).join('.');
    const parent = byPath.get(parentPath) ?? root;
    const node = { path, key: parts[parts.length - 1], children: [] };
    parent.children.push(node);
    byPath.set(path, node);
  }
  return { root, byPath };
}

function measure(node) {
  for (const c of node.children) measure(c);
  if (!node.children.length) {
    node.w = BOX_W;
    node.h = BOX_H;
    return;
  }
  node.w = Math.max(BOX_W, ...node.children.map((c) => c.w)) + PAD * 2;
  node.h = HEAD_H + node.children.reduce((s, c) => s + c.h, 0) + GAP * (node.children.length - 1) + PAD;
}

function place(node, x, y) {
  node.x = x;
  node.y = y;
  let cy = y + HEAD_H;
  for (const c of node.children) {
    place(c, x + (node.w - c.w) / 2, cy);
    cy += c.h + GAP;
  }
}

/** Transitions of the definition: [{ from: path, to: path, events: [..], titles: [..] }], merged per pair. */
function edgesOf(definition, machineId) {
  const edges = new Map();
  const strip = (target) => {
    const t = String(target).replace(/^#/, '');
    return t.startsWith(`${machineId}.`) ? t.slice(machineId.length + 1) : t;
  };
  const walk = (node, path) => {
    for (const [event, transitions] of Object.entries(node?.on ?? {})) {
      for (const tr of Array.isArray(transitions) ? transitions : [transitions]) {
        for (const target of tr?.target ?? []) {
          const to = strip(target);
          const from = path || '*';
          const key = `${from}→${to}`;
          const e = edges.get(key) ?? { from, to, events: [], titles: [] };
          const label = eventShort(event);
          const guard = tr.guard ? ` (when ${humanise(typeof tr.guard === 'string' ? tr.guard : (tr.guard.type ?? 'allowed')).toLowerCase()})` : '';
          if (!e.events.includes(label)) e.events.push(label);
          if (!e.titles.includes(label + guard)) e.titles.push(label + guard);
          edges.set(key, e);
        }
      }
    }
    for (const [key, child] of Object.entries(node?.states ?? {})) walk(child, path ? `${path}.${key}` : key);
  };
  walk(definition, '');
  return [...edges.values()];
}

const labelWidth = (events) => Math.max(...events.map((e) => e.length)) * CHAR_W;
const labelHeight = (events) => events.length * LINE_H;
const isWithin = (path, ancestor) => path === ancestor || path.startsWith(`${ancestor}.`);

/**
 * Layout: top-level states in columns, left to right in definition order; children stacked
 * inside. Edges between neighbouring columns cross the gap between them, their labels
 * stacked so they never overlap and each edge drawn through its own label; edges that skip
 * a column arc over the top; edges going back arc under the bottom; edges inside one column
 * arc along its side (whichever side is less busy).
 */
export function renderDiagram(machine) {
  const { root, byPath } = treeOf(machine.states ?? []);
  const columns = root.children;
  columns.forEach(measure);
  const colOf = new Map();
  columns.forEach((c, i) => {
    for (const p of byPath.keys()) if (p && isWithin(p, c.path)) colOf.set(p, i);
  });
  // Transitions of the root (`*`) apply in every state but a final one: drawn from each
  // top-level state.
  const definition = machine.definition ?? {};
  const isFinal = (key) => definition.states?.[key]?.type === 'final';
  const raw = edgesOf(definition, machine.id ?? 'conversation');
  const edges = raw
    .flatMap((e) => (e.from === '*' ? columns.filter((c) => !isWithin(e.to, c.path) && !isFinal(c.key)).map((c) => ({ ...e, from: c.path })) : [e]))
    .filter((e) => byPath.has(e.from) && byPath.has(e.to) && e.from !== e.to);

  // ---- classify ----
  const gapLabels = new Map(); // gap index → its labels; gap i lies right of column i, gap -1 is the left margin
  const addGapLabel = (g, item) => (gapLabels.get(g) ?? gapLabels.set(g, []).get(g)).push(item);
  const top = [];
  const bottom = [];
  const side = [];
  for (const e of edges) {
    const cs = colOf.get(e.from);
    const ct = colOf.get(e.to);
    if (ct === cs + 1) e.kind = 'gap';
    else if (ct > cs) e.kind = 'top';
    else if (ct < cs) e.kind = 'bottom';
    else e.kind = 'side';
    if (e.kind === 'top') top.push(e);
    if (e.kind === 'bottom') bottom.push(e);
    if (e.kind === 'side') side.push(e);
    if (e.kind === 'gap') addGapLabel(cs, e);
  }
  for (const e of side) {
    const c = colOf.get(e.from);
    const leftLoad = (gapLabels.get(c - 1) ?? []).length;
    const rightLoad = (gapLabels.get(c) ?? []).length;
    e.side = c === 0 || leftLoad <= rightLoad ? 'left' : 'right';
    addGapLabel(e.side === 'left' ? c - 1 : c, e);
  }

  // ---- horizontal placement: gap widths from their labels ----
  const gapWidth = (g) => {
    const items = gapLabels.get(g) ?? [];
    const widest = Math.max(0, ...items.map((e) => labelWidth(e.events) + (e.kind === 'side' ? SIDE_OFFSET + 10 : 0)));
    return Math.max(g < 0 || g >= columns.length - 1 ? MARGIN : 110, widest + 30);
  };
  // ---- vertical placement: lanes above and below ----
  const laneSpace = (list) => list.reduce((sum, e) => sum + labelHeight(e.events) + LANE_GAP + 8, 0);
  const topSpace = MARGIN + laneSpace(top);
  const height = Math.max(BOX_H, ...columns.map((c) => c.h));
  let x = gapWidth(-1);
  columns.forEach((c, i) => {
    place(c, x, topSpace + (height - c.h) / 2);
    x += c.w + gapWidth(i);
  });
  const width = x;
  const bottomBase = topSpace + height;
  const fullHeight = bottomBase + laneSpace(bottom) + MARGIN;

  // ---- ports: where edges meet a box side, spread along that side ----
  const ports = new Map(); // `${path}|${side}` → [{ edge, end }]
  const addPort = (path, sideName, edge, end) => {
    const k = `${path}|${sideName}`;
    (ports.get(k) ?? ports.set(k, []).get(k)).push({ edge, end });
  };
  for (const e of edges) {
    if (e.kind === 'gap') {
      addPort(e.from, 'right', e, 'from');
      addPort(e.to, 'left', e, 'to');
    } else if (e.kind === 'top') {
      addPort(e.from, 'top', e, 'from');
      addPort(e.to, 'top', e, 'to');
    } else if (e.kind === 'bottom') {
      addPort(e.from, 'bottom', e, 'from');
      addPort(e.to, 'bottom', e, 'to');
    } else {
      addPort(e.from, e.side, e, 'from');
      addPort(e.to, e.side, e, 'to');
    }
  }
  for (const [k, list] of ports) {
    const [path, sideName] = k.split('|');
    const n = byPath.get(path);
    const compound = n.children.length > 0;
    const other = (p) => byPath.get(p.end === 'from' ? p.edge.to : p.edge.from);
    if (sideName === 'left' || sideName === 'right') {
      const span = compound ? HEAD_H : n.h;
      list.sort((a, b) => other(a).y + other(a).h / 2 - (other(b).y + other(b).h / 2));
      list.forEach((p, i) => {
        p.edge[`${p.end}Port`] = { x: sideName === 'left' ? n.x : n.x + n.w, y: n.y + ((i + 1) * span) / (list.length + 1) };
      });
    } else {
      list.sort((a, b) => other(a).x - other(b).x);
      const x0 = n.x + n.w * 0.25;
      const span = n.w * 0.5;
      list.forEach((p, i) => {
        p.edge[`${p.end}Port`] = { x: list.length === 1 ? n.x + n.w / 2 : x0 + (i * span) / (list.length - 1), y: sideName === 'top' ? n.y : n.y + n.h };
      });
    }
  }

  // ---- labels in gaps: stacked without overlap ----
  const gapCenter = (g) => {
    if (g < 0) return columns[0].x - gapWidth(-1) / 2;
    if (g >= columns.length - 1) return columns[g].x + columns[g].w + gapWidth(g) / 2;
    return (columns[g].x + columns[g].w + columns[g + 1].x) / 2;
  };
  for (const [g, items] of gapLabels) {
    for (const e of items) e.wantY = (e.fromPort.y + e.toPort.y) / 2;
    items.sort((a, b) => a.wantY - b.wantY);
    let floor = -Infinity;
    for (const e of items) {
      const hgt = labelHeight(e.events);
      let y = Math.max(e.wantY - hgt / 2, floor + 6);
      e.labelTop = y;
      floor = y + hgt;
    }
    // Shift the stack up if it ran past the boxes' bottom.
    const overflow = floor - (bottomBase + 4);
    if (overflow > 0) for (const e of items) e.labelTop -= overflow;
    for (const e of items) {
      e.labelY = e.labelTop + labelHeight(e.events) / 2;
      if (e.kind === 'gap') {
        e.labelX = gapCenter(g);
        e.anchor = 'middle';
      } else {
        const sideX = e.side === 'left' ? Math.min(byPath.get(e.from).x, byPath.get(e.to).x) : Math.max(byPath.get(e.from).x + byPath.get(e.from).w, byPath.get(e.to).x + byPath.get(e.to).w);
        e.sideX = sideX + (e.side === 'left' ? -SIDE_OFFSET : SIDE_OFFSET);
        e.labelX = e.sideX + (e.side === 'left' ? -6 : 6);
        e.anchor = e.side === 'left' ? 'end' : 'start';
      }
    }
  }

  // ---- draw ----
  const markerId = uid('arrow');
  const titleId = uid('diagram-title');
  const title = svg('title', { id: titleId }, 'Conversation state machine');
  const defs = svg('defs', {}, svg('marker', { id: markerId, viewBox: '0 0 10 10', refX: '9', refY: '5', markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' })));
  const stateLayer = svg('g', { class: 'states' });
  const edgeLayer = svg('g', { class: 'edges' });
  const labelLayer = svg('g', { class: 'edge-labels' });

  const nodes = new Map();
  const drawNode = (node) => {
    const compound = node.children.length > 0;
    const g = svg(
      'g',
      { class: ['state', compound ? 'compound' : 'atomic'], 'data-state': node.path },
      svg('title', {}, stateText(node.path)),
      svg('rect', { x: node.x, y: node.y, width: node.w, height: node.h, rx: compound ? 12 : 8 }),
      svg('text', { x: node.x + node.w / 2, y: compound ? node.y + 20 : node.y + node.h / 2 + 5, 'text-anchor': 'middle' }, stateKeyText(node.key)),
    );
    stateLayer.append(g);
    nodes.set(node.path, g);
    node.children.forEach(drawNode);
  };
  columns.forEach(drawNode);

  const drawLabel = (lx, ly, events, anchor) => {
    const t = svg('text', { x: lx, y: ly - ((events.length - 1) * LINE_H) / 2 + 4, 'text-anchor': anchor, class: 'edge-label' });
    events.forEach((ev, i) => t.append(svg('tspan', { x: lx, dy: i === 0 ? 0 : LINE_H }, ev)));
    labelLayer.append(t);
  };
  const drawPath = (d, e) =>
    edgeLayer.append(svg('path', { d, 'marker-end': `url(#${markerId})`, class: 'edge' }, svg('title', {}, `${stateText(e.from)} → ${stateText(e.to)}: ${e.titles.join(', ')}`)));

  let topLane = topSpace - 8;
  let bottomLane = bottomBase + 8;
  const f = (n) => Math.round(n * 10) / 10;
  for (const e of edges) {
    const s = e.fromPort;
    const t = e.toPort;
    if (e.kind === 'gap') {
      const k = Math.max(20, (e.labelX - s.x) * 0.6);
      drawPath(`M${f(s.x)},${f(s.y)} C${f(s.x + k)},${f(s.y)} ${f(e.labelX - k)},${f(e.labelY)} ${f(e.labelX)},${f(e.labelY)} S${f(t.x - Math.max(20, (t.x - e.labelX) * 0.6))},${f(t.y)} ${f(t.x)},${f(t.y)}`, e);
      drawLabel(e.labelX, e.labelY, e.events, 'middle');
    } else if (e.kind === 'top') {
      const h = labelHeight(e.events);
      const lane = topLane - LANE_GAP;
      topLane -= h + LANE_GAP + 8;
      const ctrl = lane - (Math.min(s.y, t.y) - lane) / 3;
      drawPath(`M${f(s.x)},${f(s.y)} C${f(s.x)},${f(ctrl)} ${f(t.x)},${f(ctrl)} ${f(t.x)},${f(t.y)}`, e);
      drawLabel((s.x + t.x) / 2, lane - h / 2 - 2, e.events, 'middle');
    } else if (e.kind === 'bottom') {
      const h = labelHeight(e.events);
      const lane = bottomLane + LANE_GAP;
      bottomLane += h + LANE_GAP + 8;
      const ctrl = lane + (lane - Math.max(s.y, t.y)) / 3;
      drawPath(`M${f(s.x)},${f(s.y)} C${f(s.x)},${f(ctrl)} ${f(t.x)},${f(ctrl)} ${f(t.x)},${f(t.y)}`, e);
      drawLabel((s.x + t.x) / 2, lane + h / 2 + 2, e.events, 'middle');
    } else {
      const out = e.side === 'left' ? -1 : 1;
      drawPath(`M${f(s.x)},${f(s.y)} C${f(e.sideX + out * 6)},${f(s.y)} ${f(e.sideX)},${f(e.labelY)} ${f(e.sideX)},${f(e.labelY)} S${f(e.sideX + out * 6)},${f(t.y)} ${f(t.x)},${f(t.y)}`, e);
      drawLabel(e.labelX, e.labelY, e.events, e.anchor);
    }
  }

  const el = svg(
    'svg',
    { class: 'diagram', viewBox: `0 0 ${f(width)} ${f(fullHeight)}`, width: f(width), height: f(fullHeight), role: 'img', 'aria-labelledby': titleId },
    title,
    defs,
    edgeLayer,
    stateLayer,
    labelLayer,
  );
  const caption = h('p', { class: 'current-state', role: 'status' });

  return {
    el: h('figure', { class: 'diagram-wrap' }, h('div', { class: 'diagram-scroll' }, el), h('figcaption', {}, caption)),
    /** Marks the current state; returns its path. */
    highlight(stateValue) {
      const paths = new Set(activePaths(stateValue));
      const leaf = leafPath(stateValue);
      for (const [p, g] of nodes) {
        g.classList.toggle('on-path', paths.has(p));
        g.classList.toggle('current', p === leaf);
        if (p === leaf) g.setAttribute('aria-current', 'true');
        else g.removeAttribute('aria-current');
      }
      const readable = leaf ? stateText(leaf) : 'unknown';
      title.textContent = `Conversation state machine. Current state: ${readable}`;
      caption.textContent = `Current state: ${readable}`;
      el.dataset.current = leaf;
      return leaf;
    },
  };
}
