// Leads: one board per pipeline (a column per stage, a card per lead). A card moves to another
// stage by dragging it onto that column, or with its "Move to" list (keyboard, screen readers).
// One lead: its stage, its conversations (links to the conversation page) and its moves.
import { api, apiAll, seg } from '../api.js';
import { busy, field, h, messages, replace, table, time } from '../dom.js';

const PAGE_SIZE = 50;
const POLL_MS = 10_000;
const CHANNEL_LABEL = { helpdesk: 'Helpdesk', webchat: 'Webchat', whatsapp: 'WhatsApp', telegram: 'Telegram' };
const STATUS_LABEL = { active: 'Active', paused: 'Paused', closed: 'Closed' };
const MOVED_BY = { operator: 'an operator', api_token: 'an API token', agent: 'the agent' };

export function render(root, ctx) {
  return ctx.params[0] ? renderLead(root, ctx, ctx.params[0]) : renderBoards(root, ctx);
}

function channelText(lead) {
  const channel = CHANNEL_LABEL[lead.channel] ?? (lead.channel ? String(lead.channel) : 'Unknown channel');
  return lead.transport ? `${channel} · ${lead.transport}` : channel;
}

function statusBadge(status) {
  return h('span', { class: ['badge', `status-${status}`] }, STATUS_LABEL[status] ?? String(status ?? '—'));
}

/** Every stage of every pipeline by id: { stage, pipeline }. */
function stageIndex(pipelines) {
  const index = new Map();
  for (const pipeline of pipelines) for (const stage of pipeline.stages) index.set(stage.id, { stage, pipeline });
  return index;
}

/** The "Move to" list of a lead: every stage of every pipeline, grouped by pipeline. */
function stagePicker(pipelines, currentStageId, props = {}) {
  const el = h('select', props);
  for (const pipeline of pipelines) {
    const group = h('optgroup', { label: pipeline.name });
    for (const stage of pipeline.stages) group.append(h('option', { value: String(stage.id), selected: stage.id === currentStageId }, stage.name));
    el.append(group);
  }
  return el;
}

/**
 * What a lead is called: the customer's name, else their phone or email, else a short id
 * ("Visitor 1a2b" for a webchat visitor's UUID; a helpdesk's own client id as it is, as the
 * inbox does: words.js customerName).
 */
export function leadLabel(lead) {
  const known = [lead.name, lead.phone, lead.email].find((v) => typeof v === 'string' && v.trim());
  if (known) return known;
  const id = String(lead.clientId ?? '');
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(id)) return `Visitor ${id.slice(0, 4)}`;
  return id.length > 28 ? `${id.slice(0, 24)}…` : id;
}

async function moveLead(leadId, stageId, signal) {
  return (await api('PATCH', `/api/leads/${seg(leadId)}`, { stageId }, { signal })).lead;
}

// ---------------------------------------------------------------- boards

function renderBoards(root, { signal }) {
  const msg = messages();
  const boardsEl = h('div', {}, h('p', { class: 'muted' }, 'Loading…'));
  const state = { pipelines: [], dragging: false, generation: 0 };

  function card(lead, stages) {
    const current = stages.get(lead.stageId);
    const picker = stagePicker(state.pipelines, lead.stageId, { class: 'small', 'aria-label': `Move ${leadLabel(lead)} to` });
    picker.addEventListener('change', () => move(lead, Number(picker.value), { refocus: true }));
    const el = h(
      'li',
      { class: 'lead-card', draggable: 'true', dataset: { leadId: String(lead.id) }, 'aria-label': `Lead ${leadLabel(lead)}, ${current?.stage.name ?? 'unknown stage'}` },
      h('a', { class: 'lead-name', href: `#/leads/${seg(lead.id)}`, title: lead.clientId }, leadLabel(lead)),
      h('p', { class: 'small muted' }, channelText(lead)),
      h('p', { class: 'small' }, 'Last activity ', time(lead.lastActivityAt)),
      h('p', { class: 'small' }, h('a', { href: `#/leads/${seg(lead.id)}` }, lead.conversationCount === 1 ? '1 conversation' : `${lead.conversationCount} conversations`)),
      h('div', { class: 'field move' }, picker),
    );
    el.addEventListener('dragstart', (e) => {
      e.dataTransfer.setData('text/plain', String(lead.id));
      e.dataTransfer.effectAllowed = 'move';
      el.classList.add('dragging');
      state.dragging = true;
    });
    el.addEventListener('dragend', () => {
      el.classList.remove('dragging');
      state.dragging = false;
    });
    return el;
  }

  /** Moves a lead and redraws the board; a move made with the keyboard keeps the focus on the card's list, in its new column. */
  async function move(lead, stageId, { refocus = false } = {}) {
    if (stageId === lead.stageId) return;
    const target = stageIndex(state.pipelines).get(stageId);
    try {
      await moveLead(lead.id, stageId, signal);
      msg.ok(`Moved ${leadLabel(lead)} to ${target?.stage.name ?? `stage ${stageId}`}.`);
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
    await load();
    if (refocus) boardsEl.querySelector(`.lead-card[data-lead-id="${CSS.escape(String(lead.id))}"] select`)?.focus();
  }

  function column(pipeline, stage, page, stages, leadsById) {
    const list = h('ul', { class: 'lead-cards', 'aria-label': `${stage.name} leads` });
    const count = h('span', { class: 'count muted small' });
    const more = h('button', { type: 'button', class: 'secondary small' }, 'Show more');
    let shown = [];
    const show = (leads, total) => {
      shown = shown.concat(leads);
      for (const lead of leads) {
        leadsById.set(lead.id, lead);
        list.append(card(lead, stages));
      }
      if (!shown.length) replace(list, h('li', { class: 'muted small empty' }, 'No leads'));
      count.textContent = String(total);
      more.hidden = shown.length >= total;
    };
    more.addEventListener('click', async () => {
      try {
        const next = await busy(more, () => api('GET', `/api/leads?pipelineId=${seg(pipeline.id)}&stageId=${seg(stage.id)}&limit=${PAGE_SIZE}&offset=${shown.length}`, undefined, { signal }));
        show(next.leads, next.total);
      } catch (err) {
        if (err.name !== 'AbortError') msg.error(err);
      }
    });
    show(page.leads, page.total);
    const el = h(
      'section',
      { class: ['board-column', stage.isWon ? 'won' : null, stage.isLost ? 'lost' : null], dataset: { stageId: String(stage.id) }, 'aria-label': stage.name },
      h('h3', {}, stage.name, ' ', count),
      list,
      more,
    );
    el.addEventListener('dragover', (e) => {
      if (!e.dataTransfer.types.includes('text/plain')) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'move';
      el.classList.add('over');
    });
    el.addEventListener('dragleave', (e) => {
      if (!el.contains(e.relatedTarget)) el.classList.remove('over');
    });
    el.addEventListener('drop', (e) => {
      e.preventDefault();
      el.classList.remove('over');
      const lead = leadsById.get(Number(e.dataTransfer.getData('text/plain')));
      if (lead) move(lead, stage.id);
    });
    return el;
  }

  async function load() {
    const gen = ++state.generation;
    try {
      const { pipelines } = await apiAll('/api/pipelines', 'pipelines', { signal });
      const sorted = [...pipelines].sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.id - b.id);
      const pages = await Promise.all(
        sorted.map((p) => Promise.all(p.stages.map((s) => api('GET', `/api/leads?pipelineId=${seg(p.id)}&stageId=${seg(s.id)}&limit=${PAGE_SIZE}`, undefined, { signal })))),
      );
      if (gen !== state.generation) return;
      state.pipelines = sorted;
      const stages = stageIndex(sorted);
      const leadsById = new Map();
      replace(
        boardsEl,
        sorted.length
          ? sorted.map((pipeline, i) =>
              h(
                'section',
                { class: 'panel', 'aria-labelledby': `board-${pipeline.id}` },
                h('h2', { id: `board-${pipeline.id}` }, pipeline.name, pipeline.isDefault ? h('span', { class: 'tag' }, 'default') : null),
                h('div', { class: 'board' }, pipeline.stages.map((stage, j) => column(pipeline, stage, pages[i][j], stages, leadsById))),
              ),
            )
          : h('p', { class: 'muted' }, 'No pipelines.'),
      );
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Leads'),
    h('p', { class: 'lead muted' }, 'Every customer is a lead: new ones start in the first stage of the default pipeline. Drag a card to another stage, or choose the stage in its list.'),
    msg.el,
    boardsEl,
  );
  load();
  // New customers appear without a reload.
  let timer = null;
  const tick = async () => {
    if (signal.aborted) return;
    // Not while a card is dragged or a control of the board has the focus (a redraw would take it away).
    if (!state.dragging && !boardsEl.contains(document.activeElement) && document.visibilityState !== 'hidden') await load();
    if (!signal.aborted) timer = setTimeout(tick, POLL_MS);
  };
  timer = setTimeout(tick, POLL_MS);
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
}

// ---------------------------------------------------------------- one lead

function renderLead(root, { signal }, id) {
  const heading = h('h1', {}, `Lead ${id}`);
  const msg = messages();
  const facts = h('dl', { class: 'facts' });
  const moveForm = h('form', { method: 'post', class: 'row' });
  const conversationsEl = h('div');
  const historyEl = h('div');

  async function load() {
    try {
      const [{ lead }, { pipelines }] = await Promise.all([api('GET', `/api/leads/${seg(id)}`, undefined, { signal }), apiAll('/api/pipelines', 'pipelines', { signal })]);
      const stages = stageIndex(pipelines);
      const stageName = (stageId) => (stageId == null ? '—' : (stages.get(stageId)?.stage.name ?? `stage ${stageId}`));
      heading.textContent = `Lead ${leadLabel(lead)}`;
      replace(
        facts,
        h('dt', {}, 'Stage'),
        h('dd', {}, h('strong', {}, stageName(lead.stageId)), ` (${stages.get(lead.stageId)?.pipeline.name ?? 'pipeline'})`),
        h('dt', {}, 'Name'),
        h('dd', {}, lead.name ?? '—', lead.verifiedId ? h('span', { class: 'tag', title: `Identified by your page as ${lead.verifiedId}` }, 'verified') : null),
        h('dt', {}, 'Email'),
        h('dd', {}, lead.email ?? '—'),
        h('dt', {}, 'Phone'),
        h('dd', {}, lead.phone ?? '—'),
        h('dt', {}, 'Customer id'),
        h('dd', { class: 'mono' }, lead.clientId),
        h('dt', {}, 'Channel'),
        h('dd', {}, channelText(lead)),
        h('dt', {}, 'Integration'),
        h('dd', {}, `#${lead.integrationId}`),
        h('dt', {}, 'First contact'),
        h('dd', {}, time(lead.createdAt)),
        h('dt', {}, 'In this stage since'),
        h('dd', {}, time(lead.stageChangedAt)),
        h('dt', {}, 'Last activity'),
        h('dd', {}, time(lead.lastActivityAt)),
      );
      const picker = stagePicker(pipelines, lead.stageId, { name: 'stageId' });
      const button = h('button', { type: 'submit', class: 'primary' }, 'Move');
      replace(moveForm, field('Move to stage', picker), button);
      moveForm.onsubmit = async (e) => {
        e.preventDefault();
        const stageId = Number(picker.value);
        if (stageId === lead.stageId) {
          msg.ok(`Already in ${stageName(stageId)}.`);
          return;
        }
        try {
          await busy(button, () => moveLead(lead.id, stageId, signal));
          msg.ok(`Moved to ${stageName(stageId)}.`);
          await load();
        } catch (err) {
          if (err.name !== 'AbortError') msg.error(err);
        }
      };
      replace(
        conversationsEl,
        table(
          '!Conversations of this lead',
          [
            { label: 'Conversation', cell: (c) => h('a', { href: `#/conversations/${seg(c.id)}` }, `Conversation ${c.id}`) },
            { label: 'Status', cell: (c) => statusBadge(c.status) },
            { label: 'Started', cell: (c) => time(c.createdAt) },
            { label: 'Last message', cell: (c) => time(c.lastMessageAt) },
            { label: 'Closed', cell: (c) => time(c.closedAt) },
          ],
          lead.conversations,
          { empty: 'No conversations.' },
        ),
      );
      replace(
        historyEl,
        table(
          '!Stage history',
          [
            { label: 'When', cell: (m) => time(m.at) },
            { label: 'From', cell: (m) => stageName(m.fromStageId) },
            { label: 'To', cell: (m) => stageName(m.toStageId) },
            { label: 'By', cell: (m) => (m.by === 'agent' && m.conversationId ? ['the agent, in ', h('a', { href: `#/conversations/${seg(m.conversationId)}` }, `conversation ${m.conversationId}`)] : (MOVED_BY[m.by] ?? String(m.by))) },
          ],
          lead.moves,
          { empty: 'Not moved yet: in its first stage since the first contact.' },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }

  root.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/leads' }, '← All leads')),
    heading,
    msg.el,
    h(
      'div',
      { class: 'conv-grid' },
      h('section', { class: 'panel', 'aria-labelledby': 'lead-conversations-title' }, h('h2', { id: 'lead-conversations-title' }, 'Conversations'), conversationsEl),
      h('section', { class: 'panel', 'aria-labelledby': 'lead-facts-title' }, h('h2', { id: 'lead-facts-title' }, 'Details'), facts, moveForm),
    ),
    h('section', { class: 'panel', 'aria-labelledby': 'lead-history-title' }, h('h2', { id: 'lead-history-title' }, 'Stage history'), historyEl),
  );
  load();
}
