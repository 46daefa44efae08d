// An agent's MCP servers (/api/agents/:id/mcp-servers, contract.md § Agent actions): Model
// Context Protocol servers (Streamable HTTP) whose tools the agent is offered. Each is checked
// when added, saved or refreshed (connect, list its tools); the page shows whether that
// worked, when, why not, and the tools as the model sees them.
import { api, apiAll, seg } from '../api.js';
import { busy, field, fieldErrors, h, messages, replace, table, time, uid } from '../dom.js';
import { headerRows, placeHeaderDetails } from './header-rows.js';

const DEFAULT_TIMEOUT_MS = 10_000;
const TAKEN = 'is taken by another MCP server of this agent';
const STATUS = {
  connected: ['ok', 'Connected'],
  failed: ['failing', 'Failed'],
  pending: ['pending', 'Not checked yet'],
};

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** What a check came to, for the message after an add, a save or a refresh. */
function checkText(server, done) {
  if (server.status === 'connected') return `MCP server “${server.name}” ${done}: connected, ${plural(server.tools?.length ?? 0, 'tool')}.`;
  if (server.status === 'failed') return `MCP server “${server.name}” ${done}, but it could not be used: ${server.lastError ?? 'no reason given'}. Fix it and save, or refresh it later.`;
  return `MCP server “${server.name}” ${done}; it has not been checked yet.`;
}

/** agentMcpServers({ signal, agentId }) → the MCP servers section of an agent's page. */
export function agentMcpServers({ signal, agentId }) {
  const base = `/api/agents/${seg(agentId)}/mcp-servers`;
  const state = { servers: [], editing: null, notes: new Map() };
  const listMsg = messages();
  const listEl = h('div', { class: 'cards mcp-list' });

  // ---- the editor ----
  const name = h('input', { type: 'text', name: 'name', maxlength: '32', spellcheck: 'false', autocomplete: 'off', placeholder: 'crm', dataset: { expects: 'a letter, then letters, digits, _ or - (up to 32 characters)' } });
  const url = h('input', { type: 'url', name: 'url', class: 'mono', maxlength: '2048', spellcheck: 'false', autocomplete: 'off', placeholder: 'https://mcp.example.com/mcp' });
  const headers = headerRows({ prefix: 'mcp-header' });
  const timeout = h('input', { type: 'number', name: 'timeoutMs', min: '100', max: '15000', step: '100', inputmode: 'numeric', placeholder: String(DEFAULT_TIMEOUT_MS) });
  const title = h('h3', {}, 'Add an MCP server');
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Add and connect');
  const cancel = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Cancel');
  const formMsg = messages();
  const errors = fieldErrors();
  const form = h(
    'form',
    { method: 'post', class: 'mcp-form', 'aria-label': 'New MCP server', novalidate: true },
    title,
    h(
      'div',
      { class: 'grid-2' },
      field('Name', name, 'Starts the names of its tools as the model sees them (name__tool): a letter, then letters, digits, _ or -.'),
      field('Timeout (milliseconds)', timeout, `For connecting and for each tool call: 100–15000. Empty: ${DEFAULT_TIMEOUT_MS}.`),
    ),
    field('URL', url, 'The server’s Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp.'),
    headers.el,
    h('div', { class: 'actions' }, submit, cancel),
    formMsg.el,
  );

  const controls = (path) => ({ name, url, timeoutMs: timeout })[path] ?? headers.control(path);

  function edit(server) {
    state.editing = server;
    const label = server ? `Edit MCP server “${server.name}”` : 'New MCP server';
    title.textContent = server ? label : 'Add an MCP server';
    form.setAttribute('aria-label', label);
    submit.textContent = server ? 'Save and reconnect' : 'Add and connect';
    cancel.hidden = !server;
    name.value = server?.name ?? '';
    url.value = server?.url ?? '';
    headers.set(server?.headers ?? {});
    timeout.value = server ? String(server.timeoutMs) : '';
    errors.clear();
    formMsg.clear();
  }

  cancel.addEventListener('click', () => {
    edit(null);
    name.focus();
  });

  function keep(server) {
    const i = state.servers.findIndex((s) => s.id === server.id);
    if (i >= 0) state.servers[i] = server;
    else state.servers.push(server);
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    const twice = headers.duplicate();
    if (twice) {
      errors.report(formMsg, Object.assign(new Error(''), { details: [{ field: 'headers', message: 'is given twice' }] }), () => twice);
      return;
    }
    const editing = state.editing;
    const values = { name: name.value.trim(), url: url.value.trim(), headers: headers.value(), timeoutMs: timeout.value.trim() === '' ? DEFAULT_TIMEOUT_MS : Number(timeout.value) };
    let body = values;
    if (editing) {
      body = {};
      for (const k of ['name', 'url', 'timeoutMs']) if (values[k] !== editing[k]) body[k] = values[k];
      if (headers.changed(editing.headers)) body.headers = values.headers;
    }
    formMsg.ok(editing ? 'Saving and connecting…' : 'Connecting…');
    try {
      const { mcpServer } = await busy(submit, () => (editing ? api('PATCH', `${base}/${seg(editing.id)}`, body, { signal }) : api('POST', base, body, { signal })));
      keep(mcpServer);
      state.notes.delete(mcpServer.id);
      renderList();
      edit(null);
      const said = checkText(mcpServer, editing ? 'saved' : 'added');
      if (mcpServer.status === 'failed') formMsg.error(new Error(said));
      else formMsg.ok(said);
    } catch (err) {
      if (err.name === 'AbortError') return;
      const placed = err.code === 'CONFLICT' ? Object.assign(err, { details: [{ field: 'name', message: TAKEN }] }) : placeHeaderDetails(err);
      errors.report(formMsg, placed, controls);
    }
  });

  // ---- the list ----
  async function refresh(server, button) {
    state.notes.set(server.id, { text: 'Connecting…', failed: false });
    renderList();
    try {
      const { mcpServer } = await busy(button, () => api('POST', `${base}/${seg(server.id)}/refresh`, undefined, { signal }));
      keep(mcpServer);
      state.notes.set(mcpServer.id, { text: checkText(mcpServer, 'refreshed'), failed: mcpServer.status === 'failed' });
    } catch (err) {
      if (err.name === 'AbortError') return;
      state.notes.set(server.id, { text: err.message, failed: true });
    }
    renderList();
  }

  async function remove(server, button) {
    if (!window.confirm(`Delete the MCP server “${server.name}”? The agent can no longer use its tools.`)) return;
    try {
      await busy(button, () => api('DELETE', `${base}/${seg(server.id)}`, undefined, { signal }));
      state.servers = state.servers.filter((s) => s.id !== server.id);
      if (state.editing?.id === server.id) edit(null);
      renderList();
      listMsg.ok(`MCP server “${server.name}” deleted.`);
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  function toolsTable(s) {
    if (s.status !== 'connected' && !s.tools?.length) return null;
    return table(
      `Tools of ${s.name}`,
      [
        { label: 'Tool', cell: (t) => h('code', { class: 'tool-name' }, t.name) },
        { label: 'Description', cell: (t) => t.description || h('span', { class: 'muted' }, 'none') },
        {
          label: 'Offered as',
          cell: (t) => {
            if (t.refused) return h('span', { class: 'tag changes', title: t.refused }, 'Not offered: its input schema is refused', h('p', { class: 'muted small cell-note' }, t.refused));
            return t.offeredAs ? h('code', {}, t.offeredAs) : h('span', { class: 'muted', title: 'Its name clashes with another tool of this agent.' }, 'not offered (name taken)');
          },
        },
        { label: 'Repeats', cell: (t) => (t.idempotent ? h('span', { class: 'muted' }, 'Safe to repeat') : h('span', { class: 'tag changes' }, 'May change data')) },
      ],
      s.tools ?? [],
      { empty: 'It lists no tools.' },
    );
  }

  function card(s) {
    const headingId = uid('mcp');
    const [badgeClass, badgeText] = STATUS[s.status] ?? STATUS.pending;
    const headerNames = Object.keys(s.headers ?? {});
    const refreshButton = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Refresh ${s.name}` }, 'Refresh');
    refreshButton.addEventListener('click', () => refresh(s, refreshButton));
    const editButton = h('button', { type: 'button', class: 'secondary small', 'aria-label': `Edit ${s.name}` }, 'Edit');
    editButton.addEventListener('click', () => {
      edit(s);
      form.scrollIntoView({ block: 'start' });
      name.focus({ preventScroll: true });
    });
    const del = h('button', { type: 'button', class: 'danger small', 'aria-label': `Delete ${s.name}` }, 'Delete');
    del.addEventListener('click', () => remove(s, del));
    const note = state.notes.get(s.id);
    return h(
      'article',
      { class: 'card mcp-server', 'aria-labelledby': headingId, dataset: { mcpServerId: String(s.id), status: s.status } },
      h('header', { class: 'card-head' }, h('h3', { id: headingId }, s.name), h('span', { class: ['badge', badgeClass] }, badgeText), h('div', { class: 'actions tight card-actions' }, refreshButton, editButton, del)),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'URL'),
        h('dd', { class: 'mono' }, s.url),
        h('dt', {}, 'Headers'),
        h('dd', {}, headerNames.length ? `${headerNames.join(', ')} (values hidden)` : h('span', { class: 'muted' }, 'none')),
        h('dt', {}, 'Timeout'),
        h('dd', {}, `${s.timeoutMs} ms`),
        h('dt', {}, 'Last checked'),
        h('dd', {}, s.checkedAt ? time(s.checkedAt) : h('span', { class: 'muted' }, 'never')),
      ),
      s.status === 'failed' ? h('p', { class: 'doc-error mcp-error' }, `Could not be used: ${s.lastError ?? 'no reason given'}`) : null,
      toolsTable(s),
      note?.failed ? h('p', { role: 'alert', class: 'error small' }, note.text) : h('p', { role: 'status', class: 'status small' }, note?.text ?? ''),
    );
  }

  function renderList() {
    replace(listEl, state.servers.length ? state.servers.map(card) : h('p', { class: 'muted empty' }, 'No MCP servers yet. Add one below: its tools are offered to the agent like actions.'));
  }

  async function load() {
    try {
      const out = await apiAll(base, 'mcpServers', { signal });
      state.servers = out.mcpServers;
      renderList();
    } catch (err) {
      if (err.name !== 'AbortError') listMsg.error(err);
    }
  }

  edit(null);
  load();
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'mcp-title' },
    h('h2', { id: 'mcp-title' }, 'MCP servers'),
    h('p', { class: 'muted' }, 'Model Context Protocol servers (Streamable HTTP) whose tools the agent may use, like actions. Each is checked when added, saved or refreshed.'),
    listMsg.el,
    listEl,
    form,
  );
}
