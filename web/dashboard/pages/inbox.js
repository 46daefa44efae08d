// The Inbox: the company's conversations as a team works them. Views (Mine, Unassigned, Needs
// a person, All), a search over the messages, a label and a status filter. Each row shows who
// the customer is, the last message, when, where from, who has it, its labels and what this
// user has not read. The list lives on GET /api/conversations/events: a change moves and
// updates its row in place; one not on the page brings a fresh read of the current view.
// Beside an open conversation (conversations.js) the same list is compact: the open one
// highlighted, a click on another row opens it in place, the address left to the conversation.
import { api, seg } from '../api.js';
import { field, h, messages, pager, replace, select } from '../dom.js';
import { followSse, liveStatus } from '../sse.js';
import { channelText, customerName, needsHuman, roleText, shortTime, statusText, userName } from '../words.js';
import { loadPeople } from './people.js';

/** Conversations per page (the API's default page). */
const PAGE = 50;
const SEARCH_DEBOUNCE_MS = 300;
const VIEW_KEY = 'mas.inbox.view';
/** The search and filters, kept in the tab: the list beside a conversation opens as the Inbox was left. */
const FILTERS_KEY = 'mas.inbox.filters';

const VIEWS = [
  { key: 'mine', label: 'Mine', params: { assignee: 'me' }, matches: (c, me) => !!me && c.assigneeId === me.id, empty: 'Nothing is assigned to you. Conversations you reply to or take become yours.' },
  { key: 'unassigned', label: 'Unassigned', params: { assignee: 'none' }, matches: (c) => !c.assigneeId, empty: 'Every conversation has someone on it.' },
  { key: 'needs-human', label: 'Needs a person', params: { needsHuman: 'true' }, matches: (c) => needsHuman(c), empty: 'No customer is waiting for a person.' },
  { key: 'all', label: 'All', params: {}, matches: () => true, empty: 'No conversations yet. They appear here when customers write in.' },
];

/** The view the address names (#/conversations?view=mine), else the one last used in this tab. */
function initialView(query) {
  let key = query?.get('view');
  try {
    key ||= sessionStorage.getItem(VIEW_KEY);
  } catch {
    /* storage unavailable */
  }
  return VIEWS.find((v) => v.key === key) ?? VIEWS[3];
}

/**
 * `beside`: { current: id of the open conversation, open(id) } when the list is shown beside
 * a conversation.
 */
export async function render(root, { signal, query, me, beside = null }) {
  const people = await loadPeople(signal, me);
  const state = { view: initialView(query), rows: [], current: beside ? String(beside.current) : null };
  const listId = beside ? 'inbox-list-beside' : 'inbox-list';

  // ---- views (tabs) ----
  const needsCount = h('span', { class: 'tab-count', hidden: true });
  const tabs = VIEWS.map((v) =>
    h(
      'button',
      { type: 'button', role: 'tab', id: `inbox-tab-${v.key}`, 'aria-controls': listId, dataset: { view: v.key } },
      v.label,
      v.key === 'needs-human' ? [' ', needsCount] : null,
    ),
  );
  const tablist = h('div', { class: 'inbox-tabs', role: 'tablist', 'aria-label': 'Views' }, tabs);
  const showTabs = () => {
    for (const t of tabs) {
      const on = t.dataset.view === state.view.key;
      t.setAttribute('aria-selected', String(on));
      t.tabIndex = on ? 0 : -1;
      if (on) panel.setAttribute('aria-labelledby', t.id);
    }
  };
  const choose = (key, focus = false) => {
    state.view = VIEWS.find((v) => v.key === key) ?? VIEWS[3];
    try {
      sessionStorage.setItem(VIEW_KEY, state.view.key);
    } catch {
      /* private mode: the view is not remembered */
    }
    // The address names the view (a link to it works), without a navigation; beside a
    // conversation it names the conversation.
    if (!beside) history.replaceState(null, '', `#/conversations?view=${state.view.key}`);
    showTabs();
    if (focus) tabs.find((t) => t.dataset.view === key)?.focus();
    restart();
  };
  tablist.addEventListener('click', (e) => {
    const tab = e.target instanceof Element ? e.target.closest('[role="tab"]') : null;
    if (tab) choose(tab.dataset.view);
  });
  tablist.addEventListener('keydown', (e) => {
    const i = VIEWS.findIndex((v) => v.key === state.view.key);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: VIEWS.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    choose(VIEWS[(to + VIEWS.length) % VIEWS.length].key, true);
  });

  // ---- filters ----
  const search = h('input', { type: 'search', name: 'q', spellcheck: 'false', maxlength: '200', placeholder: 'Words in the messages', autocomplete: 'off' });
  const labelList = h('datalist', { id: 'inbox-labels' });
  const label = h('input', { type: 'search', name: 'label', list: 'inbox-labels', spellcheck: 'false', maxlength: '40', placeholder: 'Any label', autocomplete: 'off' });
  const status = select(
    [
      { value: 'open', label: 'Open' },
      { value: '', label: 'Any status' },
      { value: 'active', label: statusText('active') },
      { value: 'paused', label: statusText('paused') },
      { value: 'closed', label: statusText('closed') },
    ],
    { name: 'status' },
  );
  let typing = null;
  const debounced = () => {
    clearTimeout(typing);
    typing = setTimeout(restart, SEARCH_DEBOUNCE_MS);
  };
  search.addEventListener('input', debounced);
  label.addEventListener('input', debounced);
  for (const input of [search, label])
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        clearTimeout(typing);
        restart();
      }
    });
  status.addEventListener('change', () => restart());
  try {
    const kept = JSON.parse(sessionStorage.getItem(FILTERS_KEY) ?? '{}');
    search.value = String(kept.q ?? '');
    label.value = String(kept.label ?? '');
    if ([...status.options].some((o) => o.value === kept.status)) status.value = kept.status;
  } catch {
    /* storage unavailable or unreadable: the defaults */
  }
  signal.addEventListener('abort', () => clearTimeout(typing), { once: true });

  // ---- list ----
  const listEl = h('ul', { class: 'inbox', 'aria-label': 'Conversations' });
  const emptyEl = h('p', { class: 'muted empty', hidden: true });
  const panel = h('section', { class: 'panel inbox-panel', id: listId, role: 'tabpanel' }, listEl, emptyEl);
  if (beside)
    listEl.addEventListener('click', (e) => {
      const link = e.target instanceof Element ? e.target.closest('.row-link') : null;
      // A new tab or window (a modifier, the middle button) follows the link as usual.
      if (!link || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
      e.preventDefault();
      const id = link.closest('.inbox-row')?.dataset.conversationId;
      if (!id || id === state.current) return;
      state.current = id;
      for (const r of listEl.querySelectorAll('.inbox-row')) markOpen(r);
      beside.open(id);
    });
  /** The open conversation's row stands out, and says so to a screen reader. */
  const markOpen = (row) => {
    const on = row.dataset.conversationId === state.current;
    row.classList.toggle('is-open', on);
    const link = row.querySelector('.row-link');
    if (on) link?.setAttribute('aria-current', 'page');
    else link?.removeAttribute('aria-current');
  };
  const msg = messages();
  // Each (re)connection catches up on anything missed meanwhile.
  const live = liveStatus(() => refetchSoon());
  const pages = pager(PAGE, () => load(), { rangeRole: 'status' });

  const filters = () => ({ q: search.value.trim(), label: label.value.trim(), status: status.value });
  /** Whether a conversation belongs in the current view, as far as the page can tell (the search it cannot). */
  const belongs = (c) => {
    const f = filters();
    if (!state.view.matches(c, people.me)) return false;
    if (f.status === 'open' ? c.status === 'closed' : f.status && c.status !== f.status) return false;
    if (f.label && !(c.labels ?? []).includes(f.label)) return false;
    return true;
  };

  let generation = 0;
  async function load() {
    const gen = ++generation;
    const f = filters();
    // Kept at every read (a live update may read with what is typed before the search's pause).
    try {
      sessionStorage.setItem(FILTERS_KEY, JSON.stringify(f));
    } catch {
      /* private mode: the filters are not kept */
    }
    const q = new URLSearchParams({ ...state.view.params, limit: String(PAGE), offset: String(pages.offset) });
    if (f.q) q.set('q', f.q);
    if (f.label) q.set('label', f.label);
    if (f.status) q.set('status', f.status);
    try {
      const { conversations, total } = await api('GET', `/api/conversations?${q}`, undefined, { signal });
      if (gen !== generation) return;
      // The list shrank under this page (closed and filtered away, …): show its last page.
      if (!pages.shown(total, conversations.length)) return load();
      msg.clear();
      state.rows = conversations;
      draw();
    } catch (err) {
      if (err.name !== 'AbortError' && gen === generation) msg.error(err);
    }
  }
  const restart = () => {
    pages.offset = 0;
    load();
    countNeedy();
  };

  async function countNeedy() {
    try {
      const { total } = await api('GET', '/api/conversations?needsHuman=true&limit=1', undefined, { signal });
      needsCount.textContent = String(total);
      needsCount.hidden = !total;
    } catch {
      needsCount.hidden = true;
    }
  }

  function emptyText() {
    const f = filters();
    if (f.q) return `No conversations mention “${f.q}”${state.view.key === 'all' ? '' : ` in ${state.view.label}`}.`;
    // Open (not closed) is the default, not a filter the user chose.
    if (f.label || (f.status && f.status !== 'open')) return `No conversations match these filters in ${state.view.label}.`;
    return state.view.empty;
  }

  function draw() {
    const labels = new Set([...labelList.options].map((o) => o.value));
    for (const c of state.rows) for (const l of c.labels ?? []) labels.add(l);
    replace(labelList, [...labels].sort().map((l) => h('option', { value: l })));
    // The rows are drawn anew at every event: the one the keyboard is on keeps the focus.
    const focused = listEl.contains(document.activeElement) ? document.activeElement.closest('.inbox-row')?.dataset.conversationId : undefined;
    replace(listEl, state.rows.map(rowOf));
    for (const r of listEl.children) markOpen(r);
    if (focused) listEl.querySelector(`.inbox-row[data-conversation-id="${CSS.escape(focused)}"] .row-link`)?.focus({ preventScroll: true });
    emptyEl.hidden = state.rows.length > 0;
    emptyEl.textContent = emptyText();
  }

  function rowOf(c) {
    const needy = needsHuman(c);
    const unread = Number(c.unread) || 0;
    const assignee = c.assignee ?? (c.assigneeId ? people.users.get(c.assigneeId) : null);
    const last = c.lastMessage;
    const at = last?.at ?? c.lastMessageAt ?? c.updatedAt;
    return h(
      'li',
      { class: ['inbox-row', needy && 'needs-human', unread > 0 && 'has-unread', c.status === 'closed' && 'is-closed', c.fresh && 'fresh'], dataset: { conversationId: String(c.id) } },
      h(
        'div',
        { class: 'row-top' },
        h('a', { class: 'row-link', href: `#/conversations/${seg(c.id)}`, title: c.clientId ? `Customer id ${c.clientId}` : null }, customerName(c)),
        needy ? h('span', { class: 'badge needs-human-badge' }, 'Needs a person') : null,
        h('span', { class: ['badge', `status-${c.status}`] }, statusText(c.status)),
        h('time', { class: 'row-time', datetime: at, title: at ? new Date(at).toLocaleString() : null, dataset: { at: at ?? '' } }, at ? shortTime(at) : ''),
      ),
      h(
        'div',
        { class: 'row-last' },
        h('p', { class: 'row-text' }, last ? [h('span', { class: 'row-role' }, `${lastRole(last.role, c)}: `), last.text] : h('span', { class: 'muted' }, 'No messages yet')),
        unread > 0 ? h('span', { class: 'unread', title: `${unread} unread from the customer` }, h('span', { class: 'visually-hidden' }, 'Unread: '), String(unread)) : null,
      ),
      h(
        'div',
        { class: 'row-meta' },
        h('span', { class: 'row-channel' }, channelText(c.channel, c.transport)),
        h('span', { class: ['row-assignee', !assignee && 'muted'] }, assignee ? `Assigned to ${assignee.id === people.me?.id ? 'you' : userName(assignee)}` : 'Unassigned'),
        (c.labels ?? []).length ? h('span', { class: 'row-labels' }, h('span', { class: 'visually-hidden' }, 'Labels: '), c.labels.map((l) => h('span', { class: 'label-chip' }, l))) : null,
      ),
    );
  }

  const lastRole = (role, c) => (role === 'customer' ? (c.customer?.name ? customerName(c) : 'Customer') : roleText(role));

  // ---- live ----
  let refetch = null;
  const refetchSoon = () => {
    if (refetch) return;
    refetch = setTimeout(() => {
      refetch = null;
      load();
    }, 150);
  };
  let recount = null;
  const countSoon = () => {
    clearTimeout(recount);
    recount = setTimeout(countNeedy, 400);
  };
  signal.addEventListener('abort', () => (clearTimeout(refetch), clearTimeout(recount)), { once: true });

  function onUpdate(data) {
    countSoon();
    const i = state.rows.findIndex((c) => String(c.id) === String(data.id));
    if (i < 0) {
      // A conversation not on the page: it may belong here now (a first message, a change of
      // hands, a word of the search). The server decides.
      if (filters().q || belongs(data)) refetchSoon();
      return;
    }
    const before = state.rows[i];
    const next = {
      ...before,
      ...data,
      lastMessageAt: data.lastMessage?.at ?? before.lastMessageAt,
      assignee: data.assigneeId ? (before.assignee?.id === data.assigneeId ? before.assignee : (people.users.get(data.assigneeId) ?? null)) : null,
      fresh: (data.lastMessage?.at ?? null) !== (before.lastMessage?.at ?? null),
    };
    if (!belongs(next)) {
      state.rows.splice(i, 1);
      draw();
      refetchSoon(); // fill the page again
      return;
    }
    state.rows[i] = next;
    if (pages.offset > 0) {
      refetchSoon(); // it may belong on an earlier page now
      return;
    }
    state.rows.sort((a, b) => Date.parse(b.updatedAt) - Date.parse(a.updatedAt) || b.id - a.id);
    draw();
    next.fresh = false;
  }

  followSse('/api/conversations/events', {
    signal,
    onEvent: (ev) => {
      if (ev.type !== 'conversation.updated') return;
      try {
        onUpdate(JSON.parse(ev.data));
      } catch {
        refetchSoon();
      }
    },
    onState: live.onState,
  });

  // The short times ("5 min") age while the page is open.
  const ticker = setInterval(() => {
    for (const t of listEl.querySelectorAll('time[data-at]')) if (t.dataset.at) t.textContent = shortTime(t.dataset.at);
  }, 30_000);
  signal.addEventListener('abort', () => clearInterval(ticker), { once: true });

  root.append(
    // Beside a conversation, the conversation has the page's heading.
    h('div', { class: 'title-row' }, h(beside ? 'h2' : 'h1', {}, 'Inbox'), live.el),
    tablist,
    h('div', { class: 'row filter inbox-filters' }, field('Search', search), field('Label', label), labelList, field('Status', status)),
    msg.el,
    panel,
    pages.el,
  );
  showTabs();
  restart();
}
