// Replay (#/agents/<id>/replay[/<replay id>]): try changes to an agent on its past conversations
// before customers get them. The agent answers each customer message of the chosen
// conversations again, with the changes, in the background (POST /api/agents/:id/replays);
// nothing is sent to anyone. The page follows the replay every second while it runs, shows
// how many answers stayed the same, changed, newly hand over or no longer hand over, and the
// two answers side by side; a finished replay's changes can be published as the agent's new
// version. Its past replays are listed under it.
import { api, apiAll, seg } from '../api.js';
import { busy, field, fieldErrors, h, messages, pager, replace, select, table, time, uid } from '../dom.js';
import { agentFieldsText, NO_ANSWER_CHOICES, reasonText, replayStatusText, toolCallText } from '../words.js';

/** contract.md: a replay answers at most 200 conversations. */
const MAX_CONVERSATIONS = 200;
const DEFAULT_CONVERSATIONS = 50;
const POLL_MS = 1000;
const PAST_PAGE = 10;

/** The result filters, in the order they are offered; `count` reads the figure from the summary. */
const FILTERS = [
  { value: 'changed', label: 'Changed', count: (r) => r.summary?.changed },
  { value: 'newHandoffs', label: 'New handoffs', count: (r) => r.summary?.newHandoffs },
  { value: 'resolvedHandoffs', label: 'Resolved handoffs', count: (r) => r.summary?.resolvedHandoffs },
  { value: 'all', label: 'All', count: (r) => r.total },
];
const EMPTY = {
  changed: 'No answer changed yet.',
  newHandoffs: 'No answer that was given now hands over.',
  resolvedHandoffs: 'No handover is answered now.',
  all: 'No message to answer.',
};

const textOrNull = (input) => input.value.trim() || null;
const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** An answer as the customer got it (before) or would get it (after). */
function answerBody(answer) {
  if (!answer) return h('p', { class: 'muted' }, 'Not answered yet.');
  const tools = Array.isArray(answer.toolCalls) && answer.toolCalls.length ? h('ul', { class: 'plain small muted answer-tools' }, answer.toolCalls.map((c) => h('li', {}, toolCallText(c)))) : null;
  if (answer.kind === 'handoff') {
    const reason = reasonText(answer.reason);
    return h(
      'div',
      { class: 'answer-handoff' },
      h('p', { class: 'handoff-line' }, h('strong', {}, 'Handed to a person'), reason ? `: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}` : null),
      answer.text ? h('p', { class: 'answer' }, h('span', { class: 'muted' }, 'Told the customer: '), answer.text) : null,
      tools,
    );
  }
  return h(
    'div',
    { class: 'answer-reply' },
    h('p', { class: 'answer' }, answer.text),
    answer.sources?.length ? h('p', { class: 'msg-sources' }, `Sources: ${answer.sources.map((s) => s.title).join(', ')}`) : null,
    tools,
  );
}

/** What came of an item: a replay that moved it between answering and handing over says so. */
function itemTags(item) {
  if (!item.after) return [h('span', { class: 'badge pending' }, 'Waiting')];
  const tags = [h('span', { class: ['badge', item.changed ? 'changed' : 'off'] }, item.changed ? 'Changed' : 'Same')];
  if (item.before.kind === 'reply' && item.after.kind === 'handoff') tags.push(h('span', { class: 'badge fail' }, 'New handoff'));
  if (item.before.kind === 'handoff' && item.after.kind === 'reply') tags.push(h('span', { class: 'badge pass' }, 'Resolved handoff'));
  return tags;
}

function itemView(item) {
  const questionId = uid('question');
  return h(
    'li',
    { class: ['replay-item', item.changed ? 'is-changed' : ''], dataset: { seq: String(item.seq) } },
    h(
      'article',
      { 'aria-labelledby': questionId },
      h(
        'div',
        { class: 'replay-item-head' },
        h('a', { href: `#/conversations/${seg(item.conversationId)}` }, `Conversation ${item.conversationId}`),
        h('span', { class: 'replay-tags' }, itemTags(item)),
      ),
      h('p', { class: 'replay-question', id: questionId }, h('span', { class: 'muted' }, 'Customer: '), item.question),
      h(
        'div',
        { class: 'replay-pair' },
        h('section', { class: 'replay-answer before', 'aria-label': 'Before' }, h('h3', {}, 'Before'), answerBody(item.before)),
        h('section', { class: 'replay-answer after', 'aria-label': 'After' }, h('h3', {}, 'After, with the changes'), answerBody(item.after)),
      ),
    ),
  );
}

const itemKey = (item) => JSON.stringify([item.seq, item.changed, item.after]);

export async function render(root, { signal }, agentId, openReplayId) {
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/agents' }, '← Agents'), ' · ', h('a', { href: `#/agents/${seg(agentId)}` }, 'Actions and tools'));
  // `reads` counts the reads of the shown replay: an answer to an older one (another replay opened, another filter) is dropped.
  const state = { agent: null, knowledgeBases: [], replay: null, filter: 'changed', polling: null, reads: 0, items: new Map(), announce: null };
  try {
    const [{ agent }, knowledge] = await Promise.all([
      api('GET', `/api/agents/${seg(agentId)}`, undefined, { signal }),
      apiAll('/api/knowledge-bases', 'knowledgeBases', { signal }).catch((err) => {
        if (err.name === 'AbortError') throw err;
        return { knowledgeBases: [] };
      }),
    ]);
    state.agent = agent;
    state.knowledgeBases = knowledge.knowledgeBases ?? [];
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    root.append(crumbs, h('h1', {}, 'Replay changes'), h('p', { role: 'alert', class: 'error' }, err.status === 404 ? 'There is no such agent.' : err.message));
    return;
  }
  const agentPath = `/api/agents/${seg(state.agent.id)}`;
  document.title = `Replay · ${state.agent.name} · Messaging automation`;

  // ---- the changes ----
  const prompt = h('textarea', { name: 'systemPrompt', rows: 6, maxlength: '20000' });
  const modelName = h('input', { type: 'text', name: 'modelName', spellcheck: 'false', maxlength: '200' });
  const threshold = h('input', { type: 'number', name: 'relevanceThreshold', min: '0', max: '1', step: '0.05' });
  const onNoAnswer = select(NO_ANSWER_CHOICES, { name: 'onNoAnswer' });
  const fallbackMessage = h('input', { type: 'text', name: 'fallbackMessage', maxlength: '1000', placeholder: 'Empty: the default text' });
  const greeting = h('input', { type: 'text', name: 'greeting', maxlength: '1000', placeholder: 'Empty: a default in the customer’s language' });
  const kb = h('select', { name: 'knowledgeBaseId' });
  const modelField = field('Model name', modelName, 'The model of the same server that answers instead.');

  // ---- the conversations ----
  const modeName = uid('mode');
  const radio = (value, label, checked) => {
    const input = h('input', { type: 'radio', name: modeName, value, id: uid('mode'), checked });
    return { input, el: h('div', { class: 'field check' }, input, h('label', { for: input.id }, label)) };
  };
  const latest = radio('latest', 'The agent’s latest conversations', true);
  const chosen = radio('ids', 'These conversations', false);
  const from = h('input', { type: 'date', name: 'from' });
  const to = h('input', { type: 'date', name: 'to' });
  const limit = h('input', { type: 'number', name: 'limit', min: '1', max: String(MAX_CONVERSATIONS), step: '1', inputmode: 'numeric', value: String(DEFAULT_CONVERSATIONS) });
  const ids = h('input', { type: 'text', name: 'conversationIds', inputmode: 'numeric', spellcheck: 'false', placeholder: '12, 15, 40', dataset: { expects: 'conversation numbers separated by commas' } });
  const latestFields = h(
    'div',
    { class: 'grid-3' },
    field('Started on or after', from, 'Empty: from the first.'),
    field('Started on or before', to, 'Empty: up to today.'),
    field('Conversations at most', limit, `Newest first; at most ${MAX_CONVERSATIONS}.`),
  );
  const idsFields = h('div', {}, field('Conversation numbers', ids, `As the inbox shows them (#/conversations/12 is 12), separated by commas; at most ${MAX_CONVERSATIONS}.`));
  const syncMode = () => {
    latestFields.hidden = !latest.input.checked;
    idsFields.hidden = !chosen.input.checked;
  };
  latest.input.addEventListener('change', syncMode);
  chosen.input.addEventListener('change', syncMode);

  const start = h('button', { type: 'submit', class: 'primary' }, 'Start replay');
  const reset = h('button', { type: 'button', class: 'secondary' }, 'Reset to the current settings');
  const formMsg = messages();
  const errors = fieldErrors();
  const group = (legend, ...children) => h('fieldset', { class: 'group' }, h('legend', {}, legend), children);
  const form = h(
    'form',
    { method: 'post', class: 'panel replay-form', 'aria-labelledby': 'replay-form-title', novalidate: true },
    h('h2', { id: 'replay-form-title' }, 'Try changes'),
    group(
      'Changes',
      h('p', { class: 'hint muted small' }, 'The current settings are filled in: change what you want to try. Only what differs from them is replayed.'),
      field('System prompt', prompt, 'Instructions the agent follows in every conversation.'),
      h('div', { class: 'grid-2' }, field('Knowledge base', kb, 'Where it looks for answers.'), modelField),
      h(
        'div',
        { class: 'grid-2' },
        field('Confidence threshold', threshold, '0–1: how sure the agent must be that a passage answers the question before it uses it.'),
        field('When nothing relevant is found', onNoAnswer),
      ),
      h('div', { class: 'grid-2' }, field('Fallback text', fallbackMessage, 'Told to the customer instead of a guess.'), field('Greeting', greeting, 'The reply to a greeting such as “hi”.')),
    ),
    group(
      'Conversations',
      h('div', { class: 'field' }, h('div', { class: 'row modes', role: 'radiogroup', 'aria-label': 'Which conversations' }, latest.el, chosen.el)),
      latestFields,
      idsFields,
      h('p', { class: 'hint muted small' }, 'Each customer message the agent answered is answered again. Nothing is sent to anyone; a model agent’s calls are billed as replay usage.'),
    ),
    h('div', { class: 'actions' }, start, reset),
    formMsg.el,
  );

  /** The control of an API error's field (`changes.greeting`, `conversations.ids.3`, …). */
  const controls = (path) =>
    ({
      'changes.systemPrompt': prompt,
      'changes.model': modelName,
      'changes.model.name': modelName,
      'changes.relevanceThreshold': threshold,
      'changes.onNoAnswer': onNoAnswer,
      'changes.fallbackMessage': fallbackMessage,
      'changes.greeting': greeting,
      'changes.knowledgeBaseId': kb,
      changes: prompt,
      'conversations.ids': ids,
      'conversations.from': from,
      'conversations.to': to,
      'conversations.limit': limit,
      conversations: chosen.input.checked ? ids : limit,
    })[path] ?? null;

  function fill(agent) {
    prompt.value = agent.systemPrompt ?? '';
    modelName.value = agent.model?.name ?? '';
    // A built-in agent has no model to change.
    modelField.hidden = agent.model?.provider !== 'openai';
    threshold.value = String(agent.relevanceThreshold ?? 0.35);
    onNoAnswer.value = agent.onNoAnswer ?? 'handoff';
    fallbackMessage.value = agent.fallbackMessage ?? '';
    greeting.value = agent.greeting ?? '';
    replace(kb, h('option', { value: '' }, 'None'));
    for (const k of state.knowledgeBases) kb.append(h('option', { value: String(k.id) }, k.name));
    if (agent.knowledgeBaseId && !state.knowledgeBases.some((k) => k.id === agent.knowledgeBaseId)) kb.append(h('option', { value: String(agent.knowledgeBaseId) }, `Knowledge base ${agent.knowledgeBaseId}`));
    kb.value = agent.knowledgeBaseId ? String(agent.knowledgeBaseId) : '';
  }

  /** The changes: only what differs from the agent now. */
  function changesOf(agent) {
    const changes = {};
    const put = (key, value, current) => {
      if (!same(value, current)) changes[key] = value;
    };
    put('systemPrompt', prompt.value, agent.systemPrompt);
    put('knowledgeBaseId', kb.value ? Number(kb.value) : null, agent.knowledgeBaseId);
    if (threshold.value.trim() !== '') put('relevanceThreshold', Number(threshold.value), agent.relevanceThreshold);
    put('onNoAnswer', onNoAnswer.value, agent.onNoAnswer);
    put('fallbackMessage', textOrNull(fallbackMessage), agent.fallbackMessage);
    put('greeting', textOrNull(greeting), agent.greeting);
    if (!modelField.hidden && !same(textOrNull(modelName), agent.model?.name ?? null)) changes.model = { name: textOrNull(modelName) };
    return changes;
  }

  /** A day from a date field as the start of that local day (`nextDay`: of the day after, so the day itself is in). */
  const dayStart = (value, nextDay = false) => {
    const d = new Date(`${value}T00:00:00`);
    if (nextDay) d.setDate(d.getDate() + 1);
    return d.toISOString();
  };

  /** Which conversations, as the API takes them; a `details` error for a field the form can tell is wrong. */
  function conversationsOf() {
    if (chosen.input.checked) {
      const parts = ids.value.split(/[\s,;]+/).filter(Boolean);
      if (!parts.length || parts.some((p) => !/^#?\d+$/.test(p))) {
        return { error: { details: [{ field: 'conversations.ids', message: parts.length ? 'must be conversation numbers separated by commas' : 'name at least one conversation' }] } };
      }
      return { conversations: { ids: [...new Set(parts.map((p) => Number(p.replace('#', ''))))] } };
    }
    const conversations = {};
    if (from.value) conversations.from = dayStart(from.value);
    if (to.value) conversations.to = dayStart(to.value, true);
    if (limit.value.trim() !== '') conversations.limit = Number(limit.value);
    return { conversations };
  }

  reset.addEventListener('click', () => {
    fill(state.agent);
    errors.clear();
    formMsg.clear();
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    const changes = changesOf(state.agent);
    if (!Object.keys(changes).length) {
      formMsg.error(new Error('Change at least one setting to try: the form holds the agent’s current settings.'));
      prompt.focus();
      return;
    }
    const picked = conversationsOf();
    if (picked.error) {
      errors.report(formMsg, picked.error, controls);
      return;
    }
    try {
      const { replay } = await busy(start, () => api('POST', `${agentPath}/replays`, { changes, conversations: picked.conversations }, { signal }));
      formMsg.ok(`Replay started: ${plural(replay.total, 'message')} to answer again.`);
      await open(replay.id, { focus: false, startedHere: true });
      past.load();
    } catch (err) {
      if (err.name === 'AbortError') return;
      errors.report(formMsg, err, controls);
    }
  });

  // ---- one replay: progress, figures, the answers side by side, publish ----
  const resultTitle = h('h2', { id: 'replay-result-title', tabindex: '-1' }, 'Replay');
  const resultMeta = h('p', { class: 'muted small replay-meta' });
  const progress = h('progress', { max: '1', value: '0', 'aria-labelledby': 'replay-progress-text' });
  const progressText = h('span', { id: 'replay-progress-text', class: 'replay-progress-text' });
  const progressEl = h('div', { class: 'replay-progress' }, progress, progressText);
  const failure = h('p', { class: 'error', role: 'alert', hidden: true });
  const figuresEl = h('dl', { class: 'figures replay-figures', 'aria-label': 'Summary' });
  const filterEl = h('div', { class: 'pill-list replay-filter', role: 'group', 'aria-label': 'Show' });
  const itemsEl = h('ol', { class: 'replay-items', 'aria-label': 'Answers' });
  const itemsEmpty = h('p', { class: 'muted empty', hidden: true });
  const publishEl = h('div', { class: 'replay-publish' });
  const resultMsg = messages();
  const resultBody = h(
    'div',
    { hidden: true },
    resultMeta,
    progressEl,
    failure,
    figuresEl,
    publishEl,
    h('h3', { class: 'replay-answers-title' }, 'Answers'),
    filterEl,
    itemsEl,
    itemsEmpty,
  );
  const result = h(
    'section',
    { class: 'panel replay-result', 'aria-labelledby': 'replay-result-title', hidden: true },
    resultTitle,
    resultMsg.el,
    resultBody,
  );

  function stopPolling() {
    clearTimeout(state.polling);
    state.polling = null;
  }
  signal.addEventListener('abort', stopPolling);

  /** Shows replay `id` and follows it while it runs. */
  async function open(id, { focus = true, startedHere = false } = {}) {
    stopPolling();
    state.replay = null;
    // A replay started here is announced when it ends, even one that ended before it was first read.
    state.announce = startedHere ? id : null;
    state.items = new Map();
    replace(itemsEl);
    resultMsg.clear();
    resultTitle.textContent = `Replay ${id}`;
    resultBody.hidden = true;
    result.hidden = false;
    history.replaceState(null, '', `#/agents/${seg(state.agent.id)}/replay/${seg(id)}`);
    await refresh(id);
    if (focus) resultTitle.focus();
  }

  async function refresh(id) {
    const read = ++state.reads;
    let replay;
    try {
      ({ replay } = await api('GET', `${agentPath}/replays/${seg(id)}?items=${state.filter}`, undefined, { signal }));
    } catch (err) {
      if (err.name === 'AbortError' || read !== state.reads) return;
      resultMsg.error(err.status === 404 ? new Error('There is no such replay.') : err);
      // A failed read while it runs is tried again: the next seconds may answer.
      if (state.replay?.id === id && state.replay.status === 'running') state.polling = setTimeout(() => refresh(id), POLL_MS * 2);
      return;
    }
    if (signal.aborted || read !== state.reads) return;
    const finished = (state.replay?.status === 'running' || state.announce === id) && replay.status !== 'running';
    if (replay.status !== 'running') state.announce = null;
    state.replay = replay;
    showReplay(replay);
    if (replay.status === 'running') state.polling = setTimeout(() => refresh(id), POLL_MS);
    else if (finished) {
      resultMsg.ok(replay.status === 'done' ? `Replay finished: ${plural(replay.summary?.changed ?? 0, 'answer')} of ${replay.total} changed.` : 'The replay stopped before it answered every message.');
      past.load();
    }
  }

  function showReplay(r) {
    resultTitle.textContent = `Replay ${r.id}`;
    resultBody.hidden = false;
    replace(
      resultMeta,
      'Started ',
      time(r.createdAt),
      ' · changes: ',
      h('strong', {}, agentFieldsText(r.changeFields) || '—'),
      typeof r.baseVersion === 'number' ? ` · tried on version ${r.baseVersion}` : null,
    );
    progress.max = Math.max(1, r.total);
    progress.value = r.done;
    progressText.textContent = `${r.done} of ${r.total} answered${r.status === 'running' ? '…' : ''}`;
    progressEl.dataset.status = r.status;
    failure.hidden = r.status !== 'failed';
    failure.textContent = r.status === 'failed' ? `The replay stopped: ${r.error ?? 'an unknown error'}.`.replace(/\.\.$/, '.') : '';
    showFigures(r);
    showPublish(r);
    showFilter(r);
    showItems(r);
  }

  function showFigures(r) {
    const s = r.summary ?? {};
    const figure = (key, label, value, hint) => h('div', { class: 'figure', dataset: { figure: key } }, h('dt', {}, label), h('dd', {}, value), hint ? h('p', { class: 'hint' }, hint) : null);
    replace(
      figuresEl,
      figure('same', 'Same', String(s.same ?? 0), 'Answers as before.'),
      figure('changed', 'Changed', String(s.changed ?? 0), 'A different answer.'),
      figure('newHandoffs', 'New handoffs', String(s.newHandoffs ?? 0), 'Answered before, handed over now.'),
      figure('resolvedHandoffs', 'Resolved handoffs', String(s.resolvedHandoffs ?? 0), 'Handed over before, answered now.'),
      figure('cost', 'Cost', `${s.costUsd ?? '0.00'} USD`, 'The model calls of this replay.'),
    );
  }

  function showFilter(r) {
    replace(
      filterEl,
      FILTERS.map((f) => {
        const b = h('button', { type: 'button', class: 'pill', 'aria-pressed': String(state.filter === f.value), dataset: { filter: f.value } }, `${f.label} (${f.count(r) ?? 0})`);
        b.addEventListener('click', () => {
          if (state.filter === f.value) return;
          state.filter = f.value;
          state.items = new Map();
          replace(itemsEl);
          stopPolling();
          refresh(r.id);
        });
        return b;
      }),
    );
  }

  /** The items, each kept as it was drawn while it did not change (a reader's place stays put while the replay runs). */
  function showItems(r) {
    const items = r.items ?? [];
    const next = new Map();
    for (const item of items) {
      const key = itemKey(item);
      next.set(key, state.items.get(key) ?? itemView(item));
    }
    state.items = next;
    replace(itemsEl, [...next.values()]);
    itemsEmpty.hidden = items.length > 0;
    itemsEmpty.textContent = r.status === 'running' && state.filter !== 'all' ? `${EMPTY[state.filter]} Answers show here as they come.` : EMPTY[state.filter];
  }

  function showPublish(r) {
    if (r.publishedVersion != null) {
      replace(
        publishEl,
        h('p', { class: 'published' }, h('span', { class: 'badge ok' }, `Published as version ${r.publishedVersion}`), ' ', h('a', { href: `#/agents/${seg(state.agent.id)}/versions` }, 'Version history')),
      );
      return;
    }
    if (r.status !== 'done') {
      replace(publishEl);
      return;
    }
    const button = h('button', { type: 'button', class: 'primary' }, 'Publish these changes');
    const moved = typeof state.agent.version === 'number' && typeof r.baseVersion === 'number' && state.agent.version !== r.baseVersion;
    button.addEventListener('click', () => publish(r, button));
    replace(
      publishEl,
      h(
        'div',
        { class: 'actions' },
        button,
        h(
          'span',
          { class: 'muted small' },
          moved
            ? `The agent changed since this replay (version ${r.baseVersion} then, ${state.agent.version} now): publishing applies these changes to the current version.`
            : 'Customers get answers with these changes from then on, as a new version of the agent.',
        ),
      ),
    );
  }

  async function publish(r, button) {
    if (!window.confirm(`Publish the changes of replay ${r.id} (${agentFieldsText(r.changeFields)}) to ${state.agent.name}? Customers get answers with them from now on; the version history can restore the current settings.`)) return;
    try {
      const out = await busy(button, () => api('POST', `${agentPath}/replays/${seg(r.id)}/publish`, undefined, { signal }));
      state.agent = out.agent;
      fill(state.agent);
      state.replay = { ...r, publishedVersion: out.version.version };
      showPublish(state.replay);
      resultMsg.ok(`Published: ${state.agent.name} is now at version ${out.version.version}.`);
      past.load();
    } catch (err) {
      if (err.name !== 'AbortError') resultMsg.error(err);
    }
  }

  // ---- the past replays ----
  const past = pastReplays(state, agentPath, signal, (id) => open(id));

  root.append(
    crumbs,
    h('h1', {}, `Replay changes for ${state.agent.name}`),
    h(
      'p',
      { class: 'lead muted' },
      'Try a change on conversations the agent already had: it answers each customer message again with the change, and you see what would differ before any customer does. ',
      h('a', { href: `#/agents/${seg(state.agent.id)}/versions` }, 'Version history'),
    ),
    form,
    result,
    past.el,
  );
  fill(state.agent);
  syncMode();
  past.load();
  if (openReplayId) await open(openReplayId, { focus: false });
  return stopPolling;
}

/** The agent's replays, newest first, a page at a time; `onOpen(id)` shows one. */
function pastReplays(state, agentPath, signal, onOpen) {
  const msg = messages();
  const listEl = h('div');
  const pages = pager(PAST_PAGE, () => load());
  let generation = 0;

  const summaryText = (r) => {
    const s = r.summary;
    if (!s) return '—';
    return `${s.changed} changed · ${plural(s.newHandoffs, 'new handoff')} · ${plural(s.resolvedHandoffs, 'resolved handoff')} · ${s.costUsd} USD`;
  };
  const statusCell = (r) =>
    h(
      'div',
      {},
      h(
        'span',
        { class: 'nowrap' },
        h('span', { class: ['badge', r.status === 'done' ? 'ok' : r.status === 'failed' ? 'failing' : 'pending'] }, replayStatusText(r.status)),
        h('span', { class: 'muted small' }, ` ${r.done} of ${r.total}`),
      ),
      r.status === 'failed' && r.error ? h('p', { class: 'muted small cell-note' }, r.error) : null,
    );

  async function load() {
    const gen = ++generation;
    try {
      const out = await api('GET', `${agentPath}/replays?limit=${PAST_PAGE}&offset=${pages.offset}`, undefined, { signal });
      if (gen !== generation) return;
      if (!pages.shown(out.total, out.replays.length)) return load();
      msg.clear();
      replace(
        listEl,
        table(
          '!Past replays',
          [
            {
              label: 'Replay',
              class: 'nowrap',
              cell: (r) => {
                const a = h('a', { href: `#/agents/${seg(state.agent.id)}/replay/${seg(r.id)}`, 'aria-label': `Open replay ${r.id}` }, `Replay ${r.id}`);
                a.addEventListener('click', (e) => {
                  e.preventDefault();
                  onOpen(r.id);
                });
                return a;
              },
            },
            { label: 'Started', class: 'log-time', cell: (r) => time(r.createdAt) },
            { label: 'Changes', cell: (r) => agentFieldsText(r.changeFields) || '—' },
            { label: 'Status', cell: statusCell },
            { label: 'Result', cell: summaryText },
            { label: 'Published', cell: (r) => (r.publishedVersion != null ? `Version ${r.publishedVersion}` : h('span', { class: 'muted' }, '—')) },
          ],
          out.replays,
          { empty: 'No replays yet. Try a change above.', rowProps: (r) => ({ dataset: { replay: String(r.id), status: r.status } }) },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError' && gen === generation) msg.error(err);
    }
  }

  return {
    el: h('section', { class: 'panel', 'aria-labelledby': 'past-replays-title' }, h('h2', { id: 'past-replays-title' }, 'Past replays'), msg.el, listEl, pages.el),
    load,
  };
}
