// An agent's actions (/api/agents/:id/actions, contract.md § Agent actions): calls to the
// company's own HTTP API that the model may make, each offered to it as a function tool. The
// list; an editor with every field the API has (header values write-only: a stored one
// stays "********" until replaced); and "Try it", which calls the API once with sample
// arguments and shows what the model would get (nothing is recorded).
import { api, apiAll, seg } from '../api.js';
import { busy, checkbox, field, fieldErrors, h, messages, replace, select, table } from '../dom.js';
import { parseJsonText, prettyJson } from '../json-text.js';
import { httpStatusText, toolStatusText } from '../words.js';
import { headerRows, placeHeaderDetails } from './header-rows.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => ({ value: m, label: m }));
const BODIES = [
  { value: 'json', label: 'JSON: the arguments not in the URL, as a JSON body' },
  { value: 'none', label: 'None: the arguments not in the URL go in the query' },
  { value: 'template', label: 'Template: a JSON body you write, with {placeholders}' },
];
const CALLER = '{customer.id}, {customer.channel}, {customer.email} and {conversation.id}';
const DEFAULT_TIMEOUT_MS = 10_000;
const NEW_SCHEMA = { type: 'object', properties: {}, required: [] };
const TAKEN = 'is taken by another action of this agent';
const STATUS_BADGE = { ok: 'ok', error: 'failing', timeout: 'failing', blocked: 'failing', invalid_arguments: 'failing' };

/** What the API does when the form does not say: a JSON body for POST/PUT/PATCH; GET is safe to repeat. */
const defaultBody = (method) => (['POST', 'PUT', 'PATCH'].includes(method) ? 'json' : 'none');
const defaultIdempotent = (method) => method === 'GET';
const same = (a, b) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** A value of the schema's type to start from (its default, example or first choice when it has one). */
export function sampleOf(schema, depth = 0) {
  if (!schema || typeof schema !== 'object' || depth > 5) return null;
  if ('default' in schema) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type ?? (schema.properties ? 'object' : null)) {
    case 'string':
      return '';
    case 'integer':
    case 'number':
      return typeof schema.minimum === 'number' ? schema.minimum : 0;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, sampleOf(v, depth + 1)]));
    default:
      return null;
  }
}

/** The parameters a schema declares, in words: "orderId (string, required), quantity (integer)". */
function parametersText(schema) {
  const props = Object.entries(schema?.properties ?? {});
  if (!props.length) return 'No parameters: the model calls it without arguments.';
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const one = ([name, p]) => {
    const type = Array.isArray(p?.type) ? p.type.join(' or ') : p?.type;
    const notes = [type, required.has(name) && 'required'].filter(Boolean);
    return notes.length ? `${name} (${notes.join(', ')})` : name;
  };
  return `Parameters: ${props.map(one).join(', ')}.`;
}

/** agentActions({ signal, agentId }) → the Actions section of an agent's page. */
export function agentActions({ signal, agentId }) {
  const base = `/api/agents/${seg(agentId)}/actions`;
  const state = { actions: [], editing: null, trying: null };
  const listMsg = messages();
  const listEl = h('div');
  const tryEl = h('div');

  // ---- the editor ----
  const name = h('input', { type: 'text', name: 'name', maxlength: '64', spellcheck: 'false', autocomplete: 'off', placeholder: 'get_order', dataset: { expects: 'a letter, then letters, digits, _ or - (up to 64 characters)' } });
  const description = h('textarea', { name: 'description', rows: 2, maxlength: '1000', placeholder: 'Looks up an order by its number: its status and delivery date.' });
  const parameters = h('textarea', { name: 'parameters', rows: 6, class: 'mono', spellcheck: 'false', autocomplete: 'off' });
  const parametersNote = h('span', {});
  const method = select(METHODS, { name: 'method' });
  const url = h('input', { type: 'text', name: 'url', class: 'mono', maxlength: '2048', spellcheck: 'false', autocomplete: 'off', placeholder: 'https://api.example.com/orders/{orderId}' });
  const headers = headerRows({ prefix: 'action-header' });
  const body = select(BODIES, { name: 'body' });
  const bodyTemplate = h('textarea', { name: 'bodyTemplate', rows: 5, class: 'mono', spellcheck: 'false', autocomplete: 'off', placeholder: '{"orderId": "{orderId}", "customer": "{customer.id}"}' });
  const templateField = field(
    'Template (JSON)',
    bodyTemplate,
    `A string that is one {placeholder} becomes that argument with its type ("{quantity}" → 3); inside longer text it is filled as text. ${CALLER} are filled by the service, never by the model. Arguments used neither here nor in the URL are not sent.`,
  );
  const idempotent = checkbox('Safe to repeat (idempotent)', { name: 'idempotent' });
  const timeout = h('input', { type: 'number', name: 'timeoutMs', min: '100', max: '15000', step: '100', inputmode: 'numeric', placeholder: String(DEFAULT_TIMEOUT_MS) });
  const title = h('h3', {}, 'New action');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create action');
  const cancel = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Cancel');
  const formMsg = messages();
  const errors = fieldErrors();
  const idempotentHint = h(
    'p',
    { class: 'hint', id: 'action-idempotent-hint' },
    'Default: on for GET, off for the other methods. Leave it off when a call changes something (places an order, opens a ticket): the agent then calls it at most once per customer message, never again after an interrupted call (it tells the customer a colleague will check), and never in a test.',
  );
  idempotent.input.setAttribute('aria-describedby', idempotentHint.id);
  const form = h(
    'form',
    { method: 'post', class: 'action-form', 'aria-label': 'New action', novalidate: true },
    title,
    h('div', { class: 'grid-2' }, field('Name', name, 'The function name the model calls: a letter, then letters, digits, _ or -.'), field('Method', method)),
    field('Description', description, 'Tells the model what the action does and when to use it (up to 1000 characters).'),
    field('URL', url, `http(s), with {parameter} placeholders in the path or query, e.g. /orders/{orderId}: each is filled with that argument, URL-encoded. ${CALLER} say who is asking: the service fills them, so your API can answer that customer only.`),
    field('Parameters (JSON Schema)', parameters, parametersNote),
    headers.el,
    h(
      'div',
      { class: 'grid-2' },
      field('Body', body, 'Default: JSON for POST, PUT and PATCH; none for GET and DELETE.'),
      field('Timeout (milliseconds)', timeout, `How long to wait for the answer: 100–15000. Empty: ${DEFAULT_TIMEOUT_MS}.`),
    ),
    templateField,
    h('div', { class: 'idempotent' }, idempotent.el, idempotentHint),
    h('div', { class: 'actions' }, submit, cancel),
    formMsg.el,
  );

  /** The schema's parameters under its field, or why it is not JSON, as it is typed. */
  function noteParameters() {
    const parsed = parseJsonText(parameters.value);
    parametersNote.className = parsed.ok ? '' : 'parse-error';
    parametersNote.textContent = parsed.ok
      ? parsed.value && typeof parsed.value === 'object' && !Array.isArray(parsed.value)
        ? parametersText(parsed.value)
        : 'Must be a JSON object such as {"type": "object", "properties": {…}}.'
      : `It ${parsed.error}.`;
  }
  parameters.addEventListener('input', noteParameters);

  const showTemplate = () => {
    templateField.hidden = body.value !== 'template';
  };
  body.addEventListener('change', showTemplate);

  // The body and "safe to repeat" follow the method while they are its defaults.
  let methodShown = method.value;
  method.addEventListener('change', () => {
    if (body.value === defaultBody(methodShown)) body.value = defaultBody(method.value);
    if (idempotent.input.checked === defaultIdempotent(methodShown)) idempotent.input.checked = defaultIdempotent(method.value);
    methodShown = method.value;
  });

  const controls = (path) =>
    ({
      name,
      description,
      parameters,
      request: url,
      'request.method': method,
      'request.url': url,
      'request.body': body.value === 'template' ? bodyTemplate : body,
      'request.idempotent': idempotent.input,
      timeoutMs: timeout,
    })[path] ?? headers.control(path);

  function edit(action) {
    state.editing = action;
    const label = action ? `Edit action “${action.name}”` : 'New action';
    title.textContent = label;
    form.setAttribute('aria-label', label);
    submit.textContent = action ? 'Save action' : 'Create action';
    cancel.hidden = !action;
    name.value = action?.name ?? '';
    description.value = action?.description ?? '';
    parameters.value = prettyJson(action?.parameters ?? NEW_SCHEMA);
    // Tall enough for the schema shown, within reason (it grows by hand past that).
    parameters.rows = Math.min(Math.max(parameters.value.split('\n').length + 1, 6), 18);
    method.value = action?.request.method ?? 'GET';
    methodShown = method.value;
    url.value = action?.request.url ?? '';
    headers.set(action?.request.headers ?? {});
    const sent = action?.request.body;
    const template = sent !== null && typeof sent === 'object';
    body.value = template ? 'template' : (sent ?? defaultBody(method.value));
    bodyTemplate.value = template ? prettyJson(sent) : '';
    showTemplate();
    idempotent.input.checked = action?.request.idempotent ?? defaultIdempotent(method.value);
    timeout.value = action ? String(action.timeoutMs) : '';
    noteParameters();
    errors.clear();
    formMsg.clear();
  }

  /** The form as the API takes it, or a complaint about a field the browser can check. */
  function formValues() {
    const parsed = parseJsonText(parameters.value);
    if (!parsed.ok) return { problem: { field: 'parameters', message: parsed.error } };
    if (!parsed.value || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) return { problem: { field: 'parameters', message: 'must be a JSON object with "type": "object"' } };
    const twice = headers.duplicate();
    if (twice) return { problem: { control: twice, message: 'is given twice' } };
    let sent = body.value;
    if (sent === 'template') {
      const template = parseJsonText(bodyTemplate.value);
      if (!template.ok) return { problem: { field: 'request.body', message: template.error } };
      if (!template.value || typeof template.value !== 'object' || Array.isArray(template.value)) return { problem: { field: 'request.body', message: 'must be a JSON object' } };
      sent = template.value;
    }
    const request = { method: method.value, url: url.value.trim(), headers: headers.value(), body: sent, idempotent: idempotent.input.checked };
    const ms = timeout.value.trim() === '' ? DEFAULT_TIMEOUT_MS : Number(timeout.value);
    return { values: { name: name.value.trim(), description: description.value.trim(), parameters: parsed.value, request, timeoutMs: ms } };
  }

  /** An action edited: only what differs from it (a header map left alone is not sent). */
  function patchBody(v, action) {
    const out = {};
    for (const k of ['name', 'description', 'parameters', 'timeoutMs']) if (!same(v[k], action[k])) out[k] = v[k];
    const request = {};
    for (const k of ['method', 'url', 'body', 'idempotent']) if (!same(v.request[k], action.request[k])) request[k] = v.request[k];
    if (headers.changed(action.request.headers)) request.headers = v.request.headers;
    if (Object.keys(request).length) out.request = request;
    return out;
  }

  cancel.addEventListener('click', () => {
    edit(null);
    name.focus();
  });

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    const editing = state.editing;
    const { values, problem } = formValues();
    if (problem) {
      const err = Object.assign(new Error('Please check the form.'), { details: [{ field: problem.field ?? 'headers', message: problem.message }] });
      errors.report(formMsg, err, problem.control ? () => problem.control : controls);
      return;
    }
    try {
      const { action } = await busy(submit, () => (editing ? api('PATCH', `${base}/${seg(editing.id)}`, patchBody(values, editing), { signal }) : api('POST', base, values, { signal })));
      const i = state.actions.findIndex((a) => a.id === action.id);
      if (i >= 0) state.actions[i] = action;
      else state.actions.push(action);
      if (state.trying?.id === action.id) state.trying = action;
      renderList();
      edit(null);
      formMsg.ok(editing ? `Action “${action.name}” saved.` : `Action “${action.name}” created.`);
    } catch (err) {
      if (err.name === 'AbortError') return;
      const placed = err.code === 'CONFLICT' ? Object.assign(err, { details: [{ field: 'name', message: TAKEN }] }) : placeHeaderDetails(err);
      errors.report(formMsg, placed, controls);
    }
  });

  // ---- the list ----
  async function remove(action, button) {
    if (!window.confirm(`Delete the action “${action.name}”? The agent can no longer call it.`)) return;
    try {
      await busy(button, () => api('DELETE', `${base}/${seg(action.id)}`, undefined, { signal }));
      state.actions = state.actions.filter((a) => a.id !== action.id);
      if (state.editing?.id === action.id) edit(null);
      if (state.trying?.id === action.id) closeTry();
      renderList();
      listMsg.ok(`Action “${action.name}” deleted.`);
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  function renderList() {
    replace(
      listEl,
      table(
        '!Actions',
        [
          { label: 'Name', cell: (a) => h('div', {}, h('code', { class: 'tool-name' }, a.name), a.description ? h('p', { class: 'muted small cell-note' }, a.description) : null) },
          { label: 'Request', class: 'request', cell: (a) => h('span', { class: 'mono' }, h('strong', {}, a.request.method), ' ', a.request.url) },
          { label: 'Repeats', class: 'nowrap', cell: (a) => (a.request.idempotent ? h('span', { class: 'muted' }, 'Safe to repeat') : h('span', { class: 'tag changes' }, 'May change data')) },
          { label: 'Timeout', class: 'num nowrap', cell: (a) => `${a.timeoutMs} ms` },
          {
            label: 'Manage',
            class: 'nowrap',
            cell: (a) => {
              const tryButton = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Try it: ${a.name}` }, 'Try it');
              tryButton.addEventListener('click', () => openTry(a));
              const editButton = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit ${a.name}` }, 'Edit');
              editButton.addEventListener('click', () => {
                edit(a);
                form.scrollIntoView({ block: 'start' });
                name.focus({ preventScroll: true });
              });
              const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${a.name}` }, 'Delete');
              del.addEventListener('click', () => remove(a, del));
              return h('div', { class: 'actions tight' }, tryButton, editButton, del);
            },
          },
        ],
        state.actions,
        { empty: 'No actions yet. Add the first one below: the agent can then call your API while it answers.', rowProps: (a) => ({ dataset: { actionId: String(a.id) } }) },
      ),
    );
  }

  // ---- try it ----
  function closeTry() {
    state.trying = null;
    replace(tryEl);
  }

  function openTry(action) {
    state.trying = action;
    const args = h('textarea', { name: 'arguments', rows: 6, class: 'mono', spellcheck: 'false', autocomplete: 'off' });
    args.value = prettyJson(sampleOf(action.parameters) ?? {});
    const who = {
      customerId: h('input', { type: 'text', name: 'customerId', maxlength: '256', autocomplete: 'off', spellcheck: 'false' }),
      channel: h('input', { type: 'text', name: 'channel', maxlength: '64', autocomplete: 'off', placeholder: 'webchat' }),
      email: h('input', { type: 'email', name: 'email', maxlength: '320', autocomplete: 'off' }),
      conversationId: h('input', { type: 'text', name: 'conversationId', maxlength: '64', autocomplete: 'off', inputmode: 'numeric' }),
    };
    const asking = h(
      'details',
      { class: 'try-caller' },
      h('summary', {}, 'Who is asking'),
      h('p', { class: 'muted small' }, `What ${CALLER} are filled with in this test (the agent's calls get the customer's own; empty when left empty).`),
      h('div', { class: 'grid-2' }, field('Customer id', who.customerId), field('Channel', who.channel), field('Customer email', who.email), field('Conversation id', who.conversationId)),
    );
    const run = h('button', { type: 'submit', class: 'primary' }, 'Call the API');
    const close = h('button', { type: 'button', class: 'secondary' }, 'Close');
    const msg = messages();
    const tryErrors = fieldErrors();
    const result = h('div', { class: 'try-result', 'aria-live': 'polite' });
    const label = `Try ${action.name}`;
    const warning = action.request.idempotent ? null : h('p', { class: 'notice small' }, `${action.name} may change data: trying it really calls your API (${action.request.method} ${action.request.url}).`);
    const tryForm = h(
      'form',
      { method: 'post', class: 'try-form', 'aria-label': label, novalidate: true },
      h('h3', {}, 'Try ', h('code', {}, action.name)),
      h('p', { class: 'muted small' }, 'Calls your API once with these arguments, as the agent would, and shows what the model would get. Nothing is recorded.'),
      warning,
      field('Arguments (JSON)', args, parametersText(action.parameters)),
      asking,
      h('div', { class: 'actions' }, run, close),
      msg.el,
      result,
    );
    close.addEventListener('click', () => {
      closeTry();
      listEl.querySelector(`[data-action-id="${CSS.escape(String(action.id))}"] button`)?.focus();
    });
    tryForm.addEventListener('submit', async (e) => {
      e.preventDefault();
      tryErrors.clear();
      msg.clear();
      replace(result);
      const parsed = args.value.trim() === '' ? { ok: true, value: {} } : parseJsonText(args.value);
      if (!parsed.ok) {
        tryErrors.report(msg, Object.assign(new Error(''), { details: [{ field: 'arguments', message: parsed.error }] }), { arguments: args });
        return;
      }
      try {
        const given = (input) => input.value.trim() || undefined;
        const customer = { id: given(who.customerId), channel: given(who.channel), email: given(who.email) };
        const context = { customer, conversation: { id: given(who.conversationId) } };
        const out = await busy(run, () => api('POST', `${base}/${seg(action.id)}/try`, { arguments: parsed.value, context }, { signal }));
        showOutcome(result, out);
      } catch (err) {
        if (err.name === 'AbortError') return;
        // "arguments.orderId" → the arguments box, saying which argument.
        const details = Array.isArray(err.details)
          ? err.details.map((d) => (typeof d?.field === 'string' && d.field.startsWith('arguments.') ? { ...d, field: 'arguments', message: `the argument “${d.field.slice('arguments.'.length)}” ${d.message}` } : d))
          : err.details;
        tryErrors.report(msg, Object.assign(err, { details }), { arguments: args });
      }
    });
    replace(tryEl, h('div', { class: 'try-panel' }, tryForm));
    tryForm.scrollIntoView({ block: 'nearest' });
    args.focus({ preventScroll: true });
  }

  function showOutcome(el, { outcome, result }) {
    replace(
      el,
      h(
        'p',
        { class: 'try-outcome' },
        h('span', { class: ['badge', STATUS_BADGE[outcome.status] ?? 'off'], dataset: { status: outcome.status } }, toolStatusText(outcome.status)),
        outcome.httpStatus ? h('span', { class: 'http-status' }, httpStatusText(outcome.httpStatus)) : null,
        typeof outcome.ms === 'number' ? h('span', { class: 'muted' }, `${outcome.ms} ms`) : null,
      ),
      outcome.error ? h('p', { class: 'doc-error' }, outcome.error) : null,
      h('p', { class: 'group-label' }, 'What the model would get'),
      h('pre', { class: 'json', tabindex: '0', 'aria-label': 'What the model would get' }, prettyJson(result)),
    );
  }

  async function load() {
    try {
      const out = await apiAll(base, 'actions', { signal });
      state.actions = out.actions;
      renderList();
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  edit(null);
  load();
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'actions-title' },
    h('h2', { id: 'actions-title' }, 'Actions'),
    h('p', { class: 'muted' }, 'Calls to your own API the agent may make while it answers: it looks up an order, opens a ticket. The model sees each as a tool with its description and parameters, and gets the answer (at most 8 KiB) before it replies.'),
    listMsg.el,
    listEl,
    tryEl,
    form,
  );
}
