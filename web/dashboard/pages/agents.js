// Agents: list, create, edit, delete. The model API key is write-only: the form never shows
// a stored key, it only says whether one is set.
import { api, apiAll, seg } from '../api.js';
import { busy, field, h, messages, replace, select, table, time } from '../dom.js';

const NO_ANSWER = [
  { value: 'handoff', label: 'Say the fallback text, then hand over to a human' },
  { value: 'fallback', label: 'Only say the fallback text (the bot stays on)' },
];

const PROVIDERS = [
  { value: 'builtin', label: 'Built-in (answers from the knowledge base, free)' },
  { value: 'openai', label: 'OpenAI-compatible model' },
];

export function render(root, { signal }) {
  const state = { agents: [], knowledgeBases: [], editing: null };
  const listEl = h('div');
  const listMsg = messages();

  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const prompt = h('textarea', { name: 'systemPrompt', rows: 5 });
  const provider = select(PROVIDERS, { name: 'provider' });
  const modelName = h('input', { type: 'text', name: 'modelName', placeholder: 'gpt-4o-mini', spellcheck: 'false' });
  const baseUrl = h('input', { type: 'url', name: 'baseUrl', placeholder: 'https://api.openai.com/v1', spellcheck: 'false' });
  const apiKey = h('input', { type: 'password', name: 'apiKey', autocomplete: 'new-password', spellcheck: 'false' });
  const keyHint = h('span');
  const kb = h('select', { name: 'knowledgeBaseId' });
  const onNoAnswer = select(NO_ANSWER, { name: 'onNoAnswer' });
  const fallbackMessage = h('input', { type: 'text', name: 'fallbackMessage', maxlength: '1000' });
  const greeting = h('input', { type: 'text', name: 'greeting', maxlength: '1000' });
  const threshold = h('input', { type: 'number', name: 'relevanceThreshold', min: '0', max: '1', step: '0.05' });
  const modelFields = h('div', { class: 'grid-2' }, field('Model name', modelName), field('Base URL', baseUrl, 'Any OpenAI-compatible chat completions server.'), field('API key', apiKey, keyHint));
  const title = h('h2', { id: 'agent-form-title' }, 'New agent');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create agent');
  const cancel = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Cancel');
  const formMsg = messages();
  const form = h(
    'form',
    { method: 'post', class: 'panel', 'aria-labelledby': 'agent-form-title' },
    title,
    h('div', { class: 'grid-2' }, field('Name', name), field('Knowledge base', kb)),
    field('System prompt', prompt, 'Instructions the agent follows in every conversation.'),
    h(
      'div',
      { class: 'grid-2' },
      field('When nothing relevant is found', onNoAnswer),
      field('Fallback text', fallbackMessage, 'Told to the customer instead of a guess.'),
      field('Confidence threshold', threshold, '0–1: how sure the agent must be that a passage answers the question before it uses it (default 0.35). Higher: fewer answers, fewer wrong ones.'),
    ),
    field('Greeting', greeting, 'The reply to a greeting such as “hi”. Empty: a default in the customer’s language. A thanks gets “You’re welcome!” in the customer’s language.'),
    field('Model provider', provider),
    modelFields,
    h('div', { class: 'actions' }, submit, cancel),
    formMsg.el,
  );

  const syncProvider = () => {
    modelFields.hidden = provider.value !== 'openai';
  };
  provider.addEventListener('change', syncProvider);

  function fillKnowledgeBases(selected) {
    replace(kb, h('option', { value: '' }, 'None'));
    for (const k of state.knowledgeBases) kb.append(h('option', { value: String(k.id) }, k.name));
    kb.value = selected ? String(selected) : '';
  }

  function edit(agent) {
    state.editing = agent;
    title.textContent = agent ? `Edit agent “${agent.name}”` : 'New agent';
    submit.textContent = agent ? 'Save agent' : 'Create agent';
    cancel.hidden = !agent;
    name.value = agent?.name ?? '';
    prompt.value = agent?.systemPrompt ?? '';
    provider.value = agent?.model?.provider ?? 'builtin';
    modelName.value = agent?.model?.name ?? '';
    baseUrl.value = agent?.model?.baseUrl ?? '';
    apiKey.value = '';
    keyHint.textContent = agent?.model?.hasApiKey ? 'A key is stored (hidden). Leave empty to keep it; type a new one to replace it.' : 'Write-only: stored encrypted and never shown again.';
    fillKnowledgeBases(agent?.knowledgeBaseId);
    onNoAnswer.value = agent?.onNoAnswer ?? 'handoff';
    fallbackMessage.value = agent?.fallbackMessage ?? '';
    greeting.value = agent?.greeting ?? '';
    threshold.value = String(agent?.relevanceThreshold ?? 0.35);
    syncProvider();
    formMsg.clear();
  }

  cancel.addEventListener('click', () => {
    edit(null);
    name.focus();
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!name.value.trim()) {
      formMsg.error(new Error('Please give the agent a name.'));
      name.focus();
      return;
    }
    const model = { provider: provider.value };
    if (provider.value === 'openai') {
      model.name = modelName.value.trim() || null;
      model.baseUrl = baseUrl.value.trim() || null;
    }
    if (apiKey.value) model.apiKey = apiKey.value;
    const body = { name: name.value.trim(), systemPrompt: prompt.value, model, knowledgeBaseId: kb.value ? Number(kb.value) : null, onNoAnswer: onNoAnswer.value };
    const editing = state.editing;
    if (fallbackMessage.value.trim()) body.fallbackMessage = fallbackMessage.value.trim();
    else if (editing) body.fallbackMessage = null;
    if (greeting.value.trim()) body.greeting = greeting.value.trim();
    else if (editing) body.greeting = null;
    if (threshold.value !== '') body.relevanceThreshold = Number(threshold.value);
    try {
      const { agent } = await busy(submit, () =>
        editing ? api('PATCH', `/api/agents/${seg(editing.id)}`, body, { signal }) : api('POST', '/api/agents', body, { signal }),
      );
      const i = state.agents.findIndex((a) => a.id === agent.id);
      if (i >= 0) state.agents[i] = agent;
      else state.agents.push(agent);
      renderList();
      edit(null);
      formMsg.ok(editing ? `Agent “${agent.name}” saved.` : `Agent “${agent.name}” created.`);
    } catch (err) {
      apiKey.value = '';
      if (err.name !== 'AbortError') formMsg.error(err);
    }
  });

  async function remove(agent, button) {
    if (!window.confirm(`Delete the agent “${agent.name}”?`)) return;
    try {
      await busy(button, () => api('DELETE', `/api/agents/${seg(agent.id)}`, undefined, { signal }));
      state.agents = state.agents.filter((a) => a.id !== agent.id);
      if (state.editing?.id === agent.id) edit(null);
      renderList();
      listMsg.ok(`Agent “${agent.name}” deleted.`);
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  function renderList() {
    const kbName = (id) => state.knowledgeBases.find((k) => k.id === id)?.name ?? (id ? `#${id}` : '—');
    replace(
      listEl,
      table(
        '!Agents',
        [
          { label: 'Name', cell: (a) => h('strong', {}, a.name) },
          { label: 'Model', cell: (a) => (a.model?.provider === 'openai' ? `${a.model.name ?? '?'}${a.model.hasApiKey ? ' · key set' : ''}` : 'Built-in') },
          { label: 'Knowledge base', cell: (a) => kbName(a.knowledgeBaseId) },
          { label: 'Created', cell: (a) => time(a.createdAt) },
          {
            label: 'Actions',
            cell: (a) => {
              const editButton = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit ${a.name}` }, 'Edit');
              editButton.addEventListener('click', () => {
                edit(a);
                name.focus();
              });
              const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${a.name}` }, 'Delete');
              del.addEventListener('click', () => remove(a, del));
              return h('div', { class: 'actions tight' }, editButton, del);
            },
          },
        ],
        state.agents,
        { empty: 'No agents yet. Create one above.' },
      ),
    );
  }

  async function load() {
    const kbs = apiAll('/api/knowledge-bases', 'knowledgeBases', { signal }).catch((err) => {
      if (err.name === 'AbortError') throw err;
      return { knowledgeBases: [] }; // knowledge is optional for an agent
    });
    try {
      const [agents, knowledge] = await Promise.all([apiAll('/api/agents', 'agents', { signal }), kbs]);
      state.agents = agents.agents;
      state.knowledgeBases = knowledge.knowledgeBases ?? [];
      if (!state.editing) fillKnowledgeBases(kb.value);
      renderList();
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  root.append(
    h('h1', {}, 'Agents'),
    h('p', { class: 'lead muted' }, 'An agent answers customers with its model and knowledge base.'),
    form,
    h('section', { 'aria-labelledby': 'agents-title' }, h('h2', { id: 'agents-title' }, 'Your agents'), listMsg.el, listEl),
  );
  edit(null);
  load();
}
