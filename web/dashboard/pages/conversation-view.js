// One conversation: its messages in a pane that opens at the newest and follows new ones
// (unless the reader scrolled up: then "New messages ↓"), a composer for replies and private
// notes, who has it and its labels, its state machine with the current state, and what
// happened, in words. The page follows the inspect stream (SSE) and updates in place.
import { api, seg } from '../api.js';
import { confidenceBadge } from '../confidence.js';
import { offeredOptions } from '../decisions.js';
import { leafPath, renderDiagram } from '../diagram.js';
import { busy, field, h, messages, replace, table, time } from '../dom.js';
import { followSse, liveStatus } from '../sse.js';
import { actionText, channelText, customerName, messageTime, needsHuman, reasonText, roleText, stateText, statusText, systemText, userName } from '../words.js';
import { composer, lockIcon } from './composer.js';
import { labelsEditor } from './conversation-labels.js';
import { deliveryFailure, deliveryMark } from './delivery-marks.js';
import { whatHappened } from './conversation-log.js';
import { loadPeople } from './people.js';

/** The newest messages / transitions shown (the API's largest page). */
const TAIL = 200;
/** Within this many pixels of the end, the pane counts as "at the newest message". */
const NEAR_BOTTOM_PX = 32;

export async function render(root, { signal, me }, id) {
  const people = await loadPeople(signal, me);
  const state = { conversation: null, diagram: null };
  const heading = h('h1', {}, `Conversation ${id}`);
  const badges = h('span', { class: 'title-badges' });
  // Each (re)connection catches up on anything missed meanwhile.
  const live = liveStatus(() => refreshSoon());
  const statusLine = h('p', { class: 'status-line' });
  const controlsMsg = messages();
  const pause = h('button', { type: 'button', class: 'secondary' }, 'Pause');
  const resume = h('button', { type: 'button', class: 'secondary' }, 'Resume');
  const close = h('button', { type: 'button', class: 'danger' }, 'Close');
  const facts = h('dl', { class: 'facts' });
  const diagramEl = h('div', {}, h('p', { class: 'muted' }, 'Loading the state machine…'));
  const transitionsEl = h('div');
  const transitionsNote = h('p', { class: 'muted small' });
  const loadMsg = messages();
  /** Totals of the last read, so the next read asks for the newest page straight away. */
  const totals = { messages: 0, transitions: 0 };

  // ---- the messages pane ----
  const chat = h('ol', { class: 'chat', 'aria-label': 'Messages', role: 'log', tabindex: '0' });
  const messagesNote = h('p', { class: 'muted small pane-note' });
  const jump = h('button', { type: 'button', class: 'jump', hidden: true }, 'New messages ↓');
  const pane = h('div', { class: 'chat-pane' }, chat, jump);
  /** Follow the newest message: true until the reader scrolls up. */
  let stick = true;
  /** Where the pane was when it last scrolled (or was sent to the bottom). */
  let seenTop = 0;
  const atBottom = () => chat.scrollHeight - chat.scrollTop - chat.clientHeight <= NEAR_BOTTOM_PX;
  const toBottom = () => {
    chat.scrollTop = chat.scrollHeight;
    seenTop = chat.scrollTop;
    stick = true;
    jump.hidden = true;
  };
  chat.addEventListener('scroll', () => {
    seenTop = chat.scrollTop;
    stick = atBottom();
    if (stick) jump.hidden = true;
  });
  // A scroll event comes with the next frame: a read landing before it must not pull a reader
  // who has just scrolled up back down (a pane that grew keeps its bottom: that is no scroll up).
  const readerLeft = () => chat.scrollTop < seenTop && !atBottom();
  // The pane's height follows the window and the composer (styles.css): a reader at the newest message stays there.
  const resized = new ResizeObserver(() => stick && (chat.scrollTop = chat.scrollHeight));
  resized.observe(chat);
  signal.addEventListener('abort', () => resized.disconnect(), { once: true });
  jump.addEventListener('click', () => {
    toBottom();
    chat.focus({ preventScroll: true });
  });
  const shortAt = (iso) => {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? time(iso) : h('time', { datetime: d.toISOString(), title: d.toLocaleString() }, messageTime(iso));
  };
  /** Each shown message's node and what it was drawn from (redrawn only when that changes). */
  const drawn = new Map();
  let newest = 0;
  let lastMessages = null;

  const author = (m) => m.author?.displayName || (m.authorId && people.users.get(m.authorId) ? userName(people.users.get(m.authorId)) : null);
  function messageNode(m) {
    const role = String(m.role ?? 'system');
    const note = m.kind === 'note';
    const who = note
      ? `Note · ${author(m) ?? 'a teammate'}`
      : role === 'operator'
        ? (author(m) ?? 'Operator')
        : role === 'customer'
          ? state.conversation?.customer?.name
            ? customerName(state.conversation)
            : 'Customer'
          : roleText(role);
    const delivery = note ? null : deliveryMark(m);
    const failure = note ? null : deliveryFailure(m);
    return h(
      'li',
      { class: ['msg', `from-${role.replace(/[^a-z]/gi, '')}`, note && 'note', m.kind === 'handoff_notice' && 'handoff'], dataset: { messageId: String(m.id) } },
      h(
        'div',
        { class: 'msg-meta' },
        note ? lockIcon() : null,
        h('span', { class: 'msg-role' }, who),
        ' · ',
        shortAt(m.at ?? m.createdAt),
        delivery ? [' · ', delivery] : null,
        role === 'agent' && m.confidence != null ? [' · ', confidenceBadge(m.confidence)] : null,
      ),
      h('p', { class: 'msg-text' }, role === 'system' ? systemText(m.text) : (m.text ?? '')),
      role === 'agent' ? offeredOptions(m.options) : null,
      failure ? h('p', { class: 'msg-error' }, failure) : null,
      note ? h('p', { class: 'note-hint' }, 'Only your team sees this') : null,
      Array.isArray(m.sources) && m.sources.length
        ? h(
            'p',
            { class: 'msg-sources' },
            'Sources: ',
            m.sources.map((s, i) => [i ? ', ' : null, h('span', { class: 'source', title: `document ${s.documentId}, passage ${s.chunkId}` }, String(s.title ?? `document ${s.documentId}`))]),
          )
        : null,
    );
  }

  function renderMessages(list, { force = false } = {}) {
    if (readerLeft()) stick = false;
    const follow = stick || force;
    const keep = chat.scrollTop;
    if (!list.length) {
      drawn.clear();
      replace(chat, h('li', { class: 'muted chat-empty' }, 'No messages yet.'));
      return;
    }
    const nodes = list.map((m) => {
      const key = String(m.id);
      const sig = JSON.stringify([m.text, m.delivery, m.deliveryStatus ?? null, m.deliveryError ?? null, m.confidence, m.kind, m.options, author(m), m.role === 'customer' ? state.conversation?.customer?.name : null]);
      const had = drawn.get(key);
      if (had && had.sig === sig) return had.node;
      const node = messageNode(m);
      if (had) had.node.replaceWith(node);
      drawn.set(key, { sig, node });
      return node;
    });
    const shown = new Set(nodes);
    for (const [key, d] of drawn) if (!shown.has(d.node)) drawn.delete(key);
    // New messages are appended, so a screen reader's log announces only them.
    const current = [...chat.children];
    if (current.length <= nodes.length && current.every((n, i) => n === nodes[i])) chat.append(...nodes.slice(current.length));
    else chat.replaceChildren(...nodes);
    const last = Number(list[list.length - 1].seq ?? 0);
    const arrived = last > newest;
    newest = Math.max(newest, last);
    if (follow) toBottom();
    else {
      chat.scrollTop = keep;
      if (arrived) jump.hidden = false;
    }
  }

  // ---- the composer ----
  /** The next render scrolls to the newest message whatever the reader did (the page opened, they sent something). */
  let forceBottom = true;
  const compose = composer({
    id,
    signal,
    onSent: () => {
      forceBottom = true;
      refresh();
    },
  });

  // ---- who has it ----
  const assignee = h('select', { name: 'assignee' });
  const mine = h('button', { type: 'button', class: 'secondary small' }, 'Assign to me');
  const assignMsg = messages();
  // Drawn again only when it changed: every event of the stream applies the conversation, and
  // an open list or a focused control must not be pulled from under the reader.
  let assigneeShown = null;
  function showAssignee(c, { force = false } = {}) {
    const sig = JSON.stringify([c.assigneeId ?? null, c.assignee?.displayName ?? null]);
    if (sig === assigneeShown && !force) return;
    assigneeShown = sig;
    const options = [{ value: '', label: 'Unassigned' }];
    const users = [...people.users.values()].sort((a, b) => userName(a).localeCompare(userName(b)));
    for (const u of users) options.push({ value: u.id, label: u.id === people.me?.id ? `${userName(u)} (you)` : userName(u) });
    if (c.assigneeId && !people.users.has(c.assigneeId)) options.push({ value: c.assigneeId, label: c.assignee?.displayName || 'A former teammate' });
    replace(assignee, options.map((o) => h('option', { value: o.value, selected: o.value === (c.assigneeId ?? '') }, o.label)));
    assignee.value = c.assigneeId ?? '';
    mine.hidden = !people.me || c.assigneeId === people.me.id;
  }
  async function assign(to) {
    try {
      const out = await busy(mine, () => api('PATCH', `/api/conversations/${seg(id)}`, { assigneeId: to || null }, { signal }));
      if (out?.conversation) apply({ ...state.conversation, ...out.conversation });
      const who = to ? (to === people.me?.id ? 'you' : userName(people.users.get(to))) : null;
      assignMsg.ok(who ? `Assigned to ${who}.` : 'Unassigned.');
    } catch (err) {
      if (err.name === 'AbortError') return;
      assignMsg.error(err);
      if (state.conversation) showAssignee(state.conversation, { force: true }); // the list shows the one that failed
    }
  }
  assignee.addEventListener('change', () => assign(assignee.value));
  mine.addEventListener('click', () => people.me && assign(people.me.id));

  // ---- labels ----
  const labels = labelsEditor({ id, signal, current: () => state.conversation, onSaved: (c) => apply({ ...state.conversation, ...c }) });

  // ---- the conversation itself ----
  function apply(conversation, { fromAction = false } = {}) {
    if (!fromAction && state.conversation && state.conversation.status !== conversation.status) controlsMsg.clear();
    const renamed = state.conversation?.customer?.name !== conversation.customer?.name;
    state.conversation = conversation;
    const name = customerName(conversation);
    heading.textContent = `Conversation with ${name}`;
    document.title = `${name} · Messaging automation`;
    replace(
      badges,
      h('span', { class: ['badge', `status-${conversation.status}`] }, statusText(conversation.status)),
      needsHuman(conversation) ? h('span', { class: 'badge needs-human-badge' }, 'Needs a person') : null,
    );
    const leaf = leafPath(conversation.state);
    const reason = conversation.context?.handoffReason;
    // Why it was handed over, unless the state already says so (a teammate paused it).
    const why = conversation.status !== 'active' && reason && reason !== 'operator_pause' ? ` · ${reasonText(reason)}` : '';
    statusLine.textContent = `${stateText(leaf)}${why}`;
    pause.disabled = conversation.status !== 'active';
    resume.disabled = conversation.status !== 'paused';
    close.disabled = conversation.status === 'closed';
    compose.setStatus(conversation.status);
    replace(
      facts,
      h('dt', {}, 'Customer'),
      h('dd', {}, name, name !== conversation.clientId ? h('span', { class: 'mono small muted client-id' }, ` ${conversation.clientId ?? ''}`) : null),
      // What the customer told (the helpdesk, the widget's identify or pre-chat form), when known.
      conversation.customer?.email ? [h('dt', {}, 'Email'), h('dd', {}, String(conversation.customer.email))] : null,
      conversation.customer?.phone ? [h('dt', {}, 'Phone'), h('dd', {}, String(conversation.customer.phone))] : null,
      h('dt', {}, 'Channel'),
      h('dd', {}, channelText(conversation.channel, conversation.transport)),
      h('dt', {}, 'Integration'),
      h('dd', {}, conversation.integrationId != null ? `#${conversation.integrationId}` : '—'),
      h('dt', {}, 'Started'),
      h('dd', {}, time(conversation.createdAt)),
      h('dt', {}, 'Last message'),
      h('dd', {}, time(conversation.lastMessageAt)),
      reason ? [h('dt', {}, 'Handed over'), h('dd', {}, reasonText(reason))] : null,
    );
    showAssignee(conversation);
    labels.show(conversation);
    showState(conversation.state);
    if (renamed && lastMessages) renderMessages(lastMessages);
  }

  /**
   * The current state highlighted. In the side column the diagram keeps a readable size and
   * scrolls sideways (styles.css): the current state is brought to the middle.
   */
  function showState(value) {
    if (!state.diagram) return;
    state.diagram.highlight(value);
    const scroller = diagramEl.querySelector('.diagram-scroll');
    const current = diagramEl.querySelector('[data-state][aria-current="true"]');
    if (!scroller || !current || scroller.scrollWidth <= scroller.clientWidth) return;
    const [box, at] = [scroller.getBoundingClientRect(), current.getBoundingClientRect()];
    scroller.scrollLeft += at.left + at.width / 2 - (box.left + box.width / 2);
  }

  const stateChange = (from, to) => {
    const [a, b] = [from ? leafPath(from) : '', leafPath(to)];
    return a && a !== b ? `${stateText(a)} → ${stateText(b)}` : stateText(b);
  };

  function renderTransitions(list) {
    replace(
      transitionsEl,
      table(
        '!What happened',
        [
          { label: '#', class: 'num', cell: (t) => String(t.seq ?? '') },
          { label: 'Time', class: 'log-time', cell: (t) => shortAt(t.at) },
          { label: 'What happened', cell: (t) => whatHappened(t, people) },
          { label: 'State', cell: (t) => stateChange(t.from, t.to) },
          { label: 'What was done', cell: (t) => (Array.isArray(t.actions) && t.actions.length ? t.actions.map(actionText).join('; ') : '—') },
        ],
        [...list].sort((a, b) => (b.seq ?? 0) - (a.seq ?? 0)),
        { empty: 'Nothing has happened yet.' },
      ),
    );
  }

  /** The newest TAIL items of a paged list (oldest first in the API): asks again when the total moved. */
  async function newestPage(path, key) {
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

  /** The customer messages this user has marked read (-1: not yet). */
  let readCustomerMessages = -1;
  /** Reads started, and the newest one drawn: an older read answering late must not take back what a newer one showed. */
  let readsStarted = 0;
  let readDrawn = 0;
  async function refresh() {
    const read = ++readsStarted;
    try {
      const base = `/api/conversations/${seg(id)}`;
      const [c, m, t] = await Promise.all([api('GET', base, undefined, { signal }), newestPage(`${base}/messages`, 'messages'), newestPage(`${base}/transitions`, 'transitions')]);
      if (read < readDrawn) return;
      readDrawn = read;
      apply(c.conversation);
      lastMessages = m.items;
      renderMessages(m.items, { force: forceBottom });
      forceBottom = false;
      messagesNote.textContent = m.note;
      renderTransitions(t.items);
      transitionsNote.textContent = t.note;
      loadMsg.clear();
      // Read: when the page opens, and when the customer wrote again while it is open.
      const customerMessages = Number(c.conversation.customerMessages ?? 0);
      if (customerMessages !== readCustomerMessages || (c.conversation.unread ?? 0) > 0) markRead(customerMessages);
    } catch (err) {
      if (err.name !== 'AbortError') loadMsg.error(err);
    }
  }

  let pendingRead = null;
  function markRead(count) {
    if (document.visibilityState === 'hidden') {
      pendingRead = count;
      return;
    }
    pendingRead = null;
    readCustomerMessages = count;
    api('POST', `/api/conversations/${seg(id)}/read`, undefined, { signal }).catch(() => {
      readCustomerMessages = -1; // try again with the next change
    });
  }
  const onVisible = () => {
    if (document.visibilityState === 'visible' && pendingRead !== null) markRead(pendingRead);
  };
  document.addEventListener('visibilitychange', onVisible);
  signal.addEventListener('abort', () => document.removeEventListener('visibilitychange', onVisible), { once: true });

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
      if (state.conversation) showState(state.conversation.state);
    } catch (err) {
      if (err.name !== 'AbortError') replace(diagramEl, h('p', { role: 'alert', class: 'error' }, err.message));
    }
  }

  const action = (button, verb, done) =>
    button.addEventListener('click', async () => {
      try {
        const out = await busy(button, () => api('POST', `/api/conversations/${seg(id)}/${verb}`, {}, { signal }));
        if (out?.conversation) apply({ ...state.conversation, ...out.conversation }, { fromAction: true });
        controlsMsg.ok(done);
        refreshSoon();
      } catch (err) {
        if (err.name !== 'AbortError') controlsMsg.error(err);
      } finally {
        if (state.conversation) apply(state.conversation, { fromAction: true }); // busy() re-enabled it; restore the status rules
      }
    });
  action(pause, 'pause', 'Paused: the bot stops answering; you have the conversation.');
  action(resume, 'resume', 'Resumed: the bot answers again.');
  action(close, 'close', 'Conversation closed.');

  // The header, the messages and the composer fill the screen (styles.css: .conversation-view);
  // who has it, its labels, its details, the state machine and the log scroll beside them.
  root.classList.add('conversation-view');
  root.append(
    h(
      'div',
      { class: 'conv-head' },
      h('p', { class: 'crumbs' }, h('a', { href: '#/conversations' }, '← Inbox')),
      h('div', { class: 'title-row' }, heading, badges, live.el),
      h('div', { class: 'actions', role: 'group', 'aria-label': 'Operator actions' }, pause, resume, close),
    ),
    statusLine,
    controlsMsg.el,
    loadMsg.el,
    h(
      'div',
      { class: 'conv-grid' },
      h('section', { class: 'panel conversation-panel', 'aria-labelledby': 'msgs-title' }, h('h2', { id: 'msgs-title', class: 'visually-hidden' }, 'Messages'), messagesNote, pane, compose.el),
      h(
        'div',
        { class: 'side' },
        h('section', { class: 'panel', 'aria-labelledby': 'assign-title' }, h('h2', { id: 'assign-title' }, 'Assignee'), h('div', { class: 'assign-row' }, field('Assigned to', assignee), mine), assignMsg.el),
        h('section', { class: 'panel', 'aria-labelledby': 'labels-title' }, h('h2', { id: 'labels-title' }, 'Labels'), labels.list, labels.form),
        h('section', { class: 'panel', 'aria-labelledby': 'facts-title' }, h('h2', { id: 'facts-title' }, 'Details'), facts),
        h('section', { class: 'panel', 'aria-labelledby': 'machine-title' }, h('h2', { id: 'machine-title' }, 'State machine'), diagramEl),
        h('section', { class: 'panel log-panel', 'aria-labelledby': 'log-title' }, h('h2', { id: 'log-title' }, 'What happened'), transitionsNote, transitionsEl),
      ),
    ),
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
        if (conv && String(conv.id ?? id) === String(id) && state.conversation) apply({ ...state.conversation, ...conv });
      } catch {
        /* not JSON: just refresh */
      }
      refreshSoon();
    },
    onState: live.onState,
  });
}
