// Agents: list, create, edit, delete, with a form field for every setting the API has
// (gateway/routes/agent-schemas.ts). The model API key is write-only: the form never shows a
// stored key, it only says whether one is set. Editing sends only what changed, so a default
// text shown in the form is not stored as the agent's own. #/agents/<id> is an agent's own
// tools (agent-tools.js); #/agents/<id>/replay[/<replay id>] tries changes on its past
// conversations (agent-replay.js); #/agents/<id>/versions is its version history (agent-versions.js).
import { api, apiAll, seg } from '../api.js';
import { busy, field, fieldErrors, h, messages, replace, secretInput, select, table, time } from '../dom.js';
import { NO_ANSWER_CHOICES as NO_ANSWER } from '../words.js';
import { hoursEditor } from './agent-hours.js';

const PROVIDERS = [
  { value: 'builtin', label: 'Built-in (answers from the knowledge base, free)' },
  { value: 'openai', label: 'OpenAI-compatible model' },
];

const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
/** A number field's value: '' → `empty`, else the number typed (the API says what is wrong with it). */
const numberOf = (input, empty) => (input.value.trim() === '' ? empty : Number(input.value));
const textOrNull = (input) => input.value.trim() || null;

export function render(root, ctx) {
  const [agentId, sub, replayId] = ctx.params ?? [];
  if (agentId && sub === 'replay') return import('./agent-replay.js').then((page) => page.render(root, ctx, agentId, replayId));
  if (agentId && sub === 'versions') return import('./agent-versions.js').then((page) => page.render(root, ctx, agentId));
  // #/agents/<id>: that agent's actions, MCP servers and tool calls, and the way to its replays and versions.
  if (agentId) return import('./agent-tools.js').then(async (tools) => {
    await tools.render(root, ctx, agentId);
    // Only on the page of an agent that exists (the tools page leads with its explanation then).
    root.querySelector(':scope > h1 + .lead')?.after(agentLinks(agentId));
  });
  return renderAgents(root, ctx);
}

/** Links from an agent's page to trying changes on its past conversations and to its versions. */
function agentLinks(agentId) {
  return h(
    'nav',
    { class: 'agent-links', 'aria-label': 'Agent' },
    h('a', { href: `#/agents/${seg(agentId)}/replay` }, 'Replay changes'),
    h('a', { href: `#/agents/${seg(agentId)}/versions` }, 'Version history'),
  );
}

function renderAgents(root, { signal }) {
  const state = { agents: [], knowledgeBases: [], editing: null };
  const listEl = h('div');
  const listMsg = messages();

  const name = h('input', { type: 'text', name: 'name', required: true, maxlength: '200' });
  const prompt = h('textarea', { name: 'systemPrompt', rows: 5, maxlength: '20000' });
  const kb = h('select', { name: 'knowledgeBaseId' });
  const greeting = h('input', { type: 'text', name: 'greeting', maxlength: '1000' });
  const outOfScopeText = h('input', { type: 'text', name: 'outOfScopeText', maxlength: '1000', placeholder: 'Empty: a polite default in the customer’s language' });
  const onNoAnswer = select(NO_ANSWER, { name: 'onNoAnswer' });
  const fallbackMessage = h('input', { type: 'text', name: 'fallbackMessage', maxlength: '1000', placeholder: 'Empty: the default text' });
  const threshold = h('input', { type: 'number', name: 'relevanceThreshold', min: '0', max: '1', step: '0.05' });
  const handoffMessage = h('input', { type: 'text', name: 'handoffMessage', maxlength: '1000', placeholder: 'Empty: the default text' });
  const debounce = h('input', { type: 'number', name: 'debounceMs', min: '0', max: '60000', step: '100', inputmode: 'numeric' });
  const autoResolve = h('input', { type: 'number', name: 'autoResolveMinutes', min: '0', max: '43200', step: '1', inputmode: 'numeric' });
  const provider = select(PROVIDERS, { name: 'provider' });
  const modelName = h('input', { type: 'text', name: 'modelName', placeholder: 'gpt-4o-mini', spellcheck: 'false', maxlength: '200' });
  const baseUrl = h('input', { type: 'url', name: 'baseUrl', placeholder: 'https://api.openai.com/v1', spellcheck: 'false', maxlength: '2000' });
  const apiKey = secretInput('apiKey', 'Remove the stored key');
  const keyHint = h('span');
  const price = { expects: 'an amount such as 0.15 (a dot, at most 9 decimals)' };
  const priceIn = h('input', { type: 'text', name: 'inputUsdPerMTok', inputmode: 'decimal', placeholder: '0.15', spellcheck: 'false', dataset: price });
  const priceOut = h('input', { type: 'text', name: 'outputUsdPerMTok', inputmode: 'decimal', placeholder: '0.60', spellcheck: 'false', dataset: price });
  const knowledgePassages = h('input', { type: 'number', name: 'knowledgePassages', min: '0', max: '20', step: '1', inputmode: 'numeric' });
  const maxConcurrency = h('input', { type: 'number', name: 'maxConcurrency', min: '1', max: '100000', step: '1', inputmode: 'numeric', placeholder: 'No cap' });
  const spendCap = h('input', { type: 'text', name: 'spendCapUsdPerDay', inputmode: 'decimal', placeholder: 'No cap', spellcheck: 'false', dataset: { expects: 'an amount in USD such as 12.50 (a dot, at most 6 decimals)' } });
  const hours = hoursEditor();

  const modelFields = h(
    'div',
    {},
    h('div', { class: 'grid-2' }, field('Model name', modelName), field('Base URL', baseUrl, 'Any OpenAI-compatible chat completions server.'), field('API key', apiKey.input, keyHint)),
    apiKey.forget,
    h(
      'div',
      { class: 'grid-3' },
      field('Input price (USD per million tokens)', priceIn, 'What the model costs you, to debit the credit. Both empty: the built-in price list.'),
      field('Output price (USD per million tokens)', priceOut),
      field('Concurrent model calls at most', maxConcurrency, 'Per worker. Empty: no cap of its own.'),
    ),
    field(
      'Passages given to the model',
      knowledgePassages,
      'How many of the best knowledge-base passages the model reads, each with how sure the search is that it answers; the model decides whether they do. 0–20 (default 5).',
    ),
  );
  const title = h('h2', { id: 'agent-form-title' }, 'New agent');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create agent');
  const cancel = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Cancel');
  const formMsg = messages();
  const errors = fieldErrors();
  const group = (legend, ...children) => h('fieldset', { class: 'group' }, h('legend', {}, legend), children);
  const form = h(
    'form',
    { method: 'post', class: 'panel agent-form', 'aria-labelledby': 'agent-form-title', novalidate: true },
    title,
    group(
      'The agent',
      h('div', { class: 'grid-2' }, field('Name', name), field('Knowledge base', kb, 'Where it looks for answers.')),
      field('System prompt', prompt, 'Instructions the agent follows in every conversation.'),
      field('Greeting', greeting, 'The reply to a greeting such as “hi”. Empty: a default in the customer’s language. A thanks gets “You’re welcome!” in the customer’s language.'),
    ),
    group(
      'Answers and handover',
      h('div', { class: 'grid-2' }, field('When nothing relevant is found', onNoAnswer), field('Fallback text', fallbackMessage, 'Told to the customer instead of a guess.')),
      h(
        'div',
        { class: 'grid-2' },
        field('Confidence threshold', threshold, '0–1: how sure the agent must be that a passage answers the question before it uses it (default 0.35). Higher: fewer answers, fewer wrong ones.'),
        field('Debounce (milliseconds)', debounce, 'Messages a customer sends within this time of each other are answered once, together. 0: each at once (at most 60000).'),
      ),
      field('Handoff text', handoffMessage, 'Told to the customer when the conversation goes to a person.'),
      field(
        'Resolve after silence (minutes)',
        autoResolve,
        'A conversation the agent answered last closes as resolved when the customer writes nothing more for this long; Outcomes counts it. 0: never (at most 43200, default 1440: a day). A later message starts a new conversation.',
      ),
      field(
        'Out-of-scope reply',
        outOfScopeText,
        'Said when a message is not about your business (the weather, a poem, another company); the agent stays on, nobody is called. Empty: a polite line in the customer’s language saying what it can help with.',
      ),
    ),
    group(
      'Model and spending',
      h('div', { class: 'grid-2' }, field('Model provider', provider), field('Spend cap per day (USD)', spendCap, 'This agent’s model spend per UTC day; past it, its conversations go to a person. Empty: no cap.')),
      modelFields,
    ),
    group('Business hours', hours.el),
    h('div', { class: 'actions' }, submit, cancel),
    formMsg.el,
  );

  const syncProvider = () => {
    modelFields.hidden = provider.value !== 'openai';
  };
  provider.addEventListener('change', syncProvider);

  /** The control of an API error's field. */
  const controls = (path) =>
    ({
      name,
      systemPrompt: prompt,
      knowledgeBaseId: kb,
      greeting,
      outOfScopeText,
      onNoAnswer,
      fallbackMessage,
      relevanceThreshold: threshold,
      knowledgePassages,
      handoffMessage,
      debounceMs: debounce,
      autoResolveMinutes: autoResolve,
      spendCapUsdPerDay: spendCap,
      model: provider,
      'model.provider': provider,
      'model.name': modelName,
      'model.baseUrl': baseUrl,
      'model.apiKey': apiKey.input,
      'model.pricing': priceIn,
      'model.pricing.inputUsdPerMTok': priceIn,
      'model.pricing.outputUsdPerMTok': priceOut,
      'model.maxConcurrency': maxConcurrency,
    })[path] ?? (path.startsWith('hours') ? hours.control(path) : null);

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
    fillKnowledgeBases(agent?.knowledgeBaseId);
    greeting.value = agent?.greeting ?? '';
    outOfScopeText.value = agent?.outOfScopeText ?? '';
    knowledgePassages.value = String(agent?.knowledgePassages ?? 5);
    onNoAnswer.value = agent?.onNoAnswer ?? 'handoff';
    fallbackMessage.value = agent?.fallbackMessage ?? '';
    threshold.value = String(agent?.relevanceThreshold ?? 0.35);
    handoffMessage.value = agent?.handoffMessage ?? '';
    debounce.value = String(agent?.debounceMs ?? 0);
    autoResolve.value = String(agent?.autoResolveMinutes ?? 1440);
    provider.value = agent?.model?.provider ?? 'builtin';
    modelName.value = agent?.model?.name ?? '';
    baseUrl.value = agent?.model?.baseUrl ?? '';
    apiKey.show(agent?.model?.hasApiKey);
    keyHint.textContent = agent?.model?.hasApiKey ? 'A key is stored (hidden). Leave empty to keep it; type a new one to replace it.' : 'Write-only: stored encrypted and never shown again.';
    priceIn.value = agent?.model?.pricing?.inputUsdPerMTok ?? '';
    priceOut.value = agent?.model?.pricing?.outputUsdPerMTok ?? '';
    maxConcurrency.value = agent?.model?.maxConcurrency == null ? '' : String(agent.model.maxConcurrency);
    spendCap.value = agent?.spendCapUsdPerDay ?? '';
    hours.set(agent?.hours ?? null);
    syncProvider();
    formMsg.clear();
    errors.clear();
  }

  /** What the form says, as the API takes it. */
  function formValues() {
    const model = { provider: provider.value };
    if (provider.value === 'openai') {
      model.name = textOrNull(modelName);
      model.baseUrl = textOrNull(baseUrl);
      model.pricing = priceIn.value.trim() || priceOut.value.trim() ? { inputUsdPerMTok: priceIn.value.trim(), outputUsdPerMTok: priceOut.value.trim() } : null;
      model.maxConcurrency = numberOf(maxConcurrency, null);
    }
    return {
      name: name.value.trim(),
      systemPrompt: prompt.value,
      knowledgeBaseId: kb.value ? Number(kb.value) : null,
      greeting: textOrNull(greeting),
      outOfScopeText: textOrNull(outOfScopeText),
      knowledgePassages: numberOf(knowledgePassages, undefined),
      onNoAnswer: onNoAnswer.value,
      fallbackMessage: textOrNull(fallbackMessage),
      relevanceThreshold: numberOf(threshold, undefined),
      handoffMessage: textOrNull(handoffMessage),
      debounceMs: numberOf(debounce, 0),
      autoResolveMinutes: numberOf(autoResolve, undefined),
      spendCapUsdPerDay: textOrNull(spendCap),
      hours: hours.value(),
      model,
    };
  }

  /** A new agent: what was filled in (empty texts take the defaults). */
  function createBody(v) {
    const body = {};
    for (const [k, value] of Object.entries(v)) if (value !== null && value !== undefined) body[k] = value;
    const model = Object.fromEntries(Object.entries(v.model).filter(([, value]) => value !== null));
    const key = apiKey.change();
    if (key) model.apiKey = key;
    body.model = model;
    return body;
  }

  /** An agent edited: only what differs from it. */
  function patchBody(v, agent) {
    const body = {};
    for (const [k, value] of Object.entries(v)) if (k !== 'model' && value !== undefined && !same(value, agent[k])) body[k] = value;
    const model = {};
    for (const [k, value] of Object.entries(v.model)) if (!same(value, agent.model?.[k])) model[k] = value;
    const key = apiKey.change();
    if (key !== undefined) model.apiKey = key;
    if (Object.keys(model).length) body.model = model;
    return body;
  }

  cancel.addEventListener('click', () => {
    edit(null);
    name.focus();
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    if (!name.value.trim()) {
      formMsg.error(new Error('Please give the agent a name.'));
      name.focus();
      return;
    }
    const editing = state.editing;
    const values = formValues();
    const body = editing ? patchBody(values, editing) : createBody(values);
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
      apiKey.input.value = '';
      if (err.name === 'AbortError') return;
      errors.report(formMsg, err, controls);
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
          { label: 'Hours', cell: (a) => (a.hours ? a.hours.timezone : h('span', { class: 'muted' }, 'Always open')) },
          { label: 'Created', cell: (a) => time(a.createdAt) },
          { label: 'Tools', cell: (a) => h('a', { href: `#/agents/${seg(a.id)}`, 'aria-label': `Actions and tools of ${a.name}` }, 'Actions and tools') },
          {
            label: 'Changes',
            cell: (a) =>
              h(
                'div',
                { class: 'link-stack' },
                h('a', { href: `#/agents/${seg(a.id)}/replay`, 'aria-label': `Replay changes for ${a.name}` }, 'Replay changes'),
                h('a', { href: `#/agents/${seg(a.id)}/versions`, 'aria-label': `Version history of ${a.name}` }, typeof a.version === 'number' ? `Version ${a.version}` : 'Versions'),
              ),
          },
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
