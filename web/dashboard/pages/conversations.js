// Conversations: a live list (polled), and one conversation with its messages, its state
// machine with the current state highlighted, the transition log, operator controls and a
// reply box. The conversation page follows the inspect stream (SSE) and updates in place.
import { api, seg } from '../api.js';
import { confidenceBadge } from '../confidence.js';
import { renderDiagram, leafPath } from '../diagram.js';
import { busy, field, h, messages, pager, replace, select, table, time } from '../dom.js';
import { followSse } from '../sse.js';

const LIST_POLL_MS = 3000;
/** Conversations per list page (the API's default page). */
const PAGE = 50;
/** The newest messages / transitions shown on a conversation page (the API's largest page). */
const TAIL = 200;
const STATUS_LABEL = { active: 'Active', paused: 'Paused', closed: 'Closed' };

export function render(root, ctx) {
  return ctx.params[0] ? renderOne(root, ctx, ctx.params[0]) : renderList(root, ctx);
}

/** Runs fn now and every ms while the page lives (skipping ticks while the tab is hidden). */
function every(ms, signal, fn) {
  let timer = null;
  const tick = async () => {
    if (signal.aborted) return;
    if (document.visibilityState !== 'hidden') await fn();
    if (!signal.aborted) timer = setTimeout(tick, ms);
  };
  signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  tick();
}

function statusBadge(status) {
  return h('span', { class: ['badge', `status-${status}`] }, STATUS_LABEL[status] ?? String(status));
}

function stateText(value) {
  const leaf = leafPath(value);
  return leaf ? leaf.split('.').join(' › ') : '—';
}

// ---------------------------------------------------------------- list

function renderList(root, { signal }) {
  const status = select([{ value: '', label: 'All' }, { value: 'active', label: 'Active' }, { value: 'paused', label: 'Paused' }, { value: 'closed', label: 'Closed' }], { name: 'status' });
  const customer = h('input', { type: 'search', name: 'clientId', spellcheck: 'false', maxlength: '200' });
  const listEl = h('div');
  const msg = messages();
  const updated = h('p', { class: 'muted small' });
  const pages = pager(PAGE, () => load(), { rangeRole: 'status' });

  let generation = 0;
  async function load() {
    const gen = ++generation;
    const q = new URLSearchParams({ limit: String(PAGE), offset: String(pages.offset) });
    if (status.value) q.set('status', status.value);
    if (customer.value.trim()) q.set('clientId', customer.value.trim());
    try {
      const { conversations, total } = await api('GET', `/api/conversations?${q}`, undefined, { signal });
      if (gen !== generation) return;
      // The list shrank under this page (closed and filtered away, …): show its last page.
      if (!pages.shown(total, conversations.length)) return load();
      msg.clear();
      replace(
        listEl,
        table(
          '!Conversations',
          [
            { label: 'Customer', cell: (c) => h('a', { href: `#/conversations/${seg(c.id)}` }, c.clientId || `Conversation ${c.id}`) },
            { label: 'Status', cell: (c) => statusBadge(c.status) },
            { label: 'State', cell: (c) => h('span', { class: 'mono small' }, stateText(c.state)) },
            { label: 'Channel', cell: (c) => (c.channel === 'helpdesk' ? 'Helpdesk' : c.channel === 'webchat' ? 'Webchat' : String(c.channel ?? '—')) },
            { label: 'Last message', cell: (c) => time(c.lastMessageAt ?? c.updatedAt) },
          ],
          conversations,
          {
            empty: customer.value.trim()
              ? `No ${status.value ? `${status.value} ` : ''}conversations with customer “${customer.value.trim()}”.`
              : status.value
                ? `No ${status.value} conversations.`
                : 'No conversations yet. They appear here when customers write in.',
            rowProps: (c) => ({ dataset: { conversationId: String(c.id) } }),
          },
        ),
      );
      updated.textContent = `Updated ${new Date().toLocaleTimeString()} · refreshes every ${LIST_POLL_MS / 1000} s`;
    } catch (err) {
      if (err.name !== 'AbortError') msg.error(err);
    }
  }
  const restart = () => {
    pages.offset = 0;
    load();
  };
  status.addEventListener('change', restart);
  customer.addEventListener('change', restart);

  root.append(
    h('h1', {}, 'Conversations'),
    h('div', { class: 'row filter' }, field('Status', status), field('Customer', customer), updated),
    msg.el,
    h('section', { 'aria-label': 'Conversation list' }, listEl, pages.el),
  );
  every(LIST_POLL_MS, signal, load);
}

// ---------------------------------------------------------------- one conversation

function renderOne(root, { signal }, id) {
  const state = { conversation: null, diagram: null };
  const heading = h('h1', {}, `Conversation ${id}`);
  const badge = h('span');
  const live = h('span', { class: 'live muted small', role: 'status' }, 'Connecting…');
  const controlsMsg = messages();
  const pause = h('button', { type: 'button', class: 'secondary' }, 'Pause');
  const resume = h('button', { type: 'button', class: 'secondary' }, 'Resume');
  const close = h('button', { type: 'button', class: 'danger' }, 'Close');
  const facts = h('dl', { class: 'facts' });
  const diagramEl = h('div', {}, h('p', { class: 'muted' }, 'Loading the state machine…'));
  const messagesEl = h('ol', { class: 'chat', 'aria-label': 'Messages' });
  const messagesNote = h('p', { class: 'muted small' });
  const transitionsEl = h('div');
  const transitionsNote = h('p', { class: 'muted small' });
  const loadMsg = messages();
  /** Totals of the last read, so the next read asks for the newest page straight away. */
  const totals = { messages: 0, transitions: 0 };

  const reply = h('textarea', { name: 'text', rows: 3, maxlength: '4000' });
  const send = h('button', { type: 'submit', class: 'primary' }, 'Send reply');
  const replyMsg = messages();
  const replyForm = h('form', { method: 'post', class: 'reply' }, field('Reply', reply, 'Sent to the customer as the operator.'), h('div', { class: 'actions' }, send), replyMsg.el);

  function apply(conversation, { fromAction = false } = {}) {
    if (!fromAction && state.conversation && state.conversation.status !== conversation.status) controlsMsg.clear();
    state.conversation = conversation;
    heading.textContent = `Conversation with ${conversation.clientId ?? id}`;
    replace(badge, statusBadge(conversation.status));
    pause.disabled = conversation.status !== 'active';
    resume.disabled = conversation.status !== 'paused';
    close.disabled = conversation.status === 'closed';
    send.disabled = conversation.status === 'closed';
    replace(
      facts,
      h('dt', {}, 'Channel'),
      h('dd', {}, conversation.channel ?? '—'),
      h('dt', {}, 'Customer'),
      h('dd', { class: 'mono' }, conversation.clientId ?? '—'),
      h('dt', {}, 'Integration'),
      h('dd', {}, conversation.integrationId != null ? `#${conversation.integrationId}` : '—'),
      h('dt', {}, 'Started'),
      h('dd', {}, time(conversation.createdAt)),
      h('dt', {}, 'Last message'),
      h('dd', {}, time(conversation.lastMessageAt)),
      conversation.context?.handoffReason ? [h('dt', {}, 'Handed over'), h('dd', {}, conversation.context.handoffReason)] : null,
    );
    state.diagram?.highlight(conversation.state);
  }

  function renderMessages(list) {
    if (!list.length) {
      replace(messagesEl, h('li', { class: 'muted' }, 'No messages yet.'));
      return;
    }
    replace(
      messagesEl,
      list.map((m) => {
        const role = String(m.role ?? 'system');
        return h(
          'li',
          { class: ['msg', `from-${role.replace(/[^a-z]/gi, '')}`] },
          h(
            'div',
            { class: 'msg-meta' },
            h('span', { class: 'msg-role' }, role),
            ' · ',
            time(m.at ?? m.createdAt),
            m.delivery ? ` · ${m.delivery}` : null,
            role === 'agent' && m.confidence != null ? [' · ', confidenceBadge(m.confidence)] : null,
          ),
          h('p', { class: 'msg-text' }, m.text ?? ''),
          Array.isArray(m.sources) && m.sources.length
            ? h(
                'p',
                { class: 'msg-sources' },
                'Sources: ',
                m.sources.map((s, i) => [i ? ', ' : null, h('span', { class: 'source', title: `document ${s.documentId}, chunk ${s.chunkId}` }, String(s.title ?? `document ${s.documentId}`))]),
              )
            : null,
        );
      }),
    );
  }

  function renderTransitions(list) {
    replace(
      transitionsEl,
      table(
        '!Transition log',
        [
          { label: '#', class: 'num', cell: (t) => String(t.seq ?? '') },
          { label: 'Time', cell: (t) => time(t.at) },
          { label: 'Event', cell: (t) => h('code', {}, t.event ?? '') },
          { label: 'From', cell: (t) => stateText(t.from) },
          { label: 'To', cell: (t) => stateText(t.to) },
          { label: 'Actions', cell: (t) => (Array.isArray(t.actions) && t.actions.length ? t.actions.map((a) => (typeof a === 'string' ? a : `${a?.type ?? ''}${a?.effect ? ` (${a.effect})` : ''}`)).join(', ') : '—') },
        ],
        [...list].sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0)),
        { empty: 'No transitions yet.' },
      ),
    );
  }

  /** The newest TAIL items of a paged list (oldest first in the API): asks again when the total moved. */
  async function newest(path, key) {
    let offset = Math.max(0, totals[key] - TAIL);
    let out = await api('GET', `${path}?limit=${TAIL}&offset=${offset}`, undefined, { signal });
    const wanted = Math.max(0, (out.total ?? 0) - TAIL);
    if (wanted !== offset) {
      offset = wanted;
      out = await api('GET', `${path}?limit=${TAIL}&offset=${offset}`, undefined, { signal });
    }
    totals[key] = out.total ?? 0;
    const items = out[key] ?? [];
    return { items, note: totals[key] > items.length ? `Showing the latest ${items.length} of ${totals[key]}.` : '' };
  }

  async function refresh() {
    try {
      const base = `/api/conversations/${seg(id)}`;
      const [c, m, t] = await Promise.all([api('GET', base, undefined, { signal }), newest(`${base}/messages`, 'messages'), newest(`${base}/transitions`, 'transitions')]);
      apply(c.conversation);
      renderMessages(m.items);
      messagesNote.textContent = m.note;
      renderTransitions(t.items);
      transitionsNote.textContent = t.note;
      loadMsg.clear();
    } catch (err) {
      if (err.name !== 'AbortError') loadMsg.error(err);
    }
  }

  // Coalesce bursts of stream events into one refresh.
  let pending = null;
  function refreshSoon() {
    if (pending) return;
    pending = setTimeout(() => {
      pending = null;
      refresh();
    }, 120);
  }
  signal.addEventListener('abort', () => clearTimeout(pending), { once: true });

  async function loadMachine() {
    try {
      const out = await api('GET', '/api/machines/conversation', undefined, { signal });
      state.diagram = renderDiagram(out.machine ?? out);
      replace(diagramEl, state.diagram.el);
      if (state.conversation) state.diagram.highlight(state.conversation.state);
    } catch (err) {
      if (err.name !== 'AbortError') replace(diagramEl, h('p', { role: 'alert', class: 'error' }, err.message));
    }
  }

  const action = (button, verb, done) =>
    button.addEventListener('click', async () => {
      try {
        const out = await busy(button, () => api('POST', `/api/conversations/${seg(id)}/${verb}`, {}, { signal }));
        if (out?.conversation) apply(out.conversation, { fromAction: true });
        controlsMsg.ok(done);
        refreshSoon();
      } catch (err) {
        if (err.name !== 'AbortError') controlsMsg.error(err);
      } finally {
        if (state.conversation) apply(state.conversation, { fromAction: true }); // busy() re-enabled it; restore the status rules
      }
    });
  action(pause, 'pause', 'Paused: the agent stops answering; you have the conversation.');
  action(resume, 'resume', 'Resumed: the agent answers again.');
  action(close, 'close', 'Conversation closed.');

  replyForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = reply.value.trim();
    if (!text) {
      replyMsg.error(new Error('Type a reply first.'));
      reply.focus();
      return;
    }
    try {
      await busy(send, () => api('POST', `/api/conversations/${seg(id)}/messages`, { text }, { signal }));
      reply.value = '';
      replyMsg.ok('Reply sent.');
      refreshSoon();
    } catch (err) {
      if (err.name !== 'AbortError') replyMsg.error(err);
    } finally {
      if (state.conversation) apply(state.conversation, { fromAction: true });
    }
  });

  root.append(
    h('p', { class: 'crumbs' }, h('a', { href: '#/conversations' }, '← All conversations')),
    h('div', { class: 'title-row' }, heading, badge, live),
    h('div', { class: 'actions', role: 'group', 'aria-label': 'Operator actions' }, pause, resume, close),
    controlsMsg.el,
    loadMsg.el,
    h(
      'div',
      { class: 'conv-grid' },
      h('section', { class: 'panel', 'aria-labelledby': 'msgs-title' }, h('h2', { id: 'msgs-title' }, 'Messages'), messagesNote, messagesEl, replyForm),
      h('section', { class: 'panel', 'aria-labelledby': 'facts-title' }, h('h2', { id: 'facts-title' }, 'Details'), facts),
    ),
    h('section', { class: 'panel', 'aria-labelledby': 'machine-title' }, h('h2', { id: 'machine-title' }, 'State machine'), diagramEl),
    h('section', { class: 'panel', 'aria-labelledby': 'log-title' }, h('h2', { id: 'log-title' }, 'Transition log'), transitionsNote, transitionsEl),
  );

  loadMachine();
  refresh();
  followSse(`/api/conversations/${seg(id)}/inspect`, {
    signal,
    onEvent: (ev) => {
      // Apply what the event carries at once when it is a conversation; always re-read the rest.
      try {
        const data = JSON.parse(ev.data);
        const conv = data?.conversation ?? (data?.state !== undefined && data?.status ? data : null);
        if (conv && String(conv.id ?? id) === String(id)) apply({ ...state.conversation, ...conv });
      } catch {
        /* not JSON: just refresh */
      }
      refreshSoon();
    },
    onState: (s, err) => {
      if (s === 'open') {
        live.textContent = 'Live';
        live.classList.add('on');
        refreshSoon(); // catch up on anything missed while (re)connecting
      } else {
        live.classList.remove('on');
        live.textContent = s === 'reconnecting' ? 'Reconnecting…' : `Live updates unavailable${err?.message ? `: ${err.message}` : ''}`;
      }
    },
  });
}
