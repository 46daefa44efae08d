// The calls an agent made with its actions and MCP tools (GET /api/agents/:id/tool-calls),
// newest first, a page at a time: when, which tool, how it ended, how long it took, and the
// conversation it was for; the arguments (secrets redacted by the server) and what the model
// got open under each.
import { api, seg } from '../api.js';
import { busy, h, messages, pager, replace, table, time } from '../dom.js';
import { prettyJson } from '../json-text.js';
import { argsText, httpStatusText, toolStatusText } from '../words.js';

const PAGE = 20;
const SOURCE = { action: 'Action', mcp: 'MCP' };
const STATUS_BADGE = { ok: 'ok', started: 'pending', uncertain: 'pending', not_called: 'off' };

/** How a call ended, short: "OK · 200 OK", "Failed · 404 Not Found", "Timed out". */
function outcomeCell(c) {
  return h(
    'div',
    {},
    h('span', { class: ['badge', STATUS_BADGE[c.status] ?? 'failing'] }, toolStatusText(c.status)),
    c.httpStatus ? h('span', { class: 'http-status' }, httpStatusText(c.httpStatus)) : null,
    c.error ? h('p', { class: 'muted small cell-note' }, c.error) : null,
  );
}

function toolCell(c) {
  return h(
    'div',
    {},
    h('code', { class: 'tool-name' }, c.name),
    h('span', { class: 'tag' }, SOURCE[c.source] ?? c.source),
    h(
      'details',
      { class: 'call-details' },
      h('summary', {}, 'Arguments and result'),
      h('p', { class: 'small' }, h('span', { class: 'muted' }, 'Arguments: '), h('code', {}, argsText(c.args))),
      c.result !== null && c.result !== undefined ? h('pre', { class: 'json', 'aria-label': `What the model got from ${c.name}` }, prettyJson(c.result)) : null,
    ),
  );
}

function conversationCell(c) {
  if (c.conversationId == null) return h('span', { class: 'muted' }, 'A test');
  return h('a', { href: `#/conversations/${seg(c.conversationId)}`, 'aria-label': `Conversation ${c.conversationId}` }, `Conversation ${c.conversationId}`);
}

/** agentToolCalls({ signal, agentId }) → the Tool calls section of an agent's page. */
export function agentToolCalls({ signal, agentId }) {
  const msg = messages();
  const listEl = h('div');
  const reload = h('button', { type: 'button', class: 'secondary small' }, 'Refresh');
  const pages = pager(PAGE, () => load(), { rangeRole: 'status' });
  let generation = 0;

  async function load() {
    const gen = ++generation;
    const query = new URLSearchParams({ limit: String(PAGE), offset: String(pages.offset) });
    try {
      const out = await busy(reload, () => api('GET', `/api/agents/${seg(agentId)}/tool-calls?${query}`, undefined, { signal }));
      if (gen !== generation) return;
      if (!pages.shown(out.total, out.toolCalls.length)) return load();
      msg.clear();
      replace(
        listEl,
        table(
          '!Tool calls',
          [
            { label: 'Time', class: 'log-time', cell: (c) => time(c.calledAt) },
            { label: 'Tool', cell: toolCell },
            { label: 'Outcome', cell: outcomeCell },
            { label: 'Took', class: 'num', cell: (c) => (typeof c.ms === 'number' ? `${c.ms} ms` : '—') },
            { label: 'Conversation', cell: conversationCell },
          ],
          out.toolCalls,
          { empty: 'No tool calls yet. When the agent uses an action or an MCP tool, the call is listed here.', rowProps: (c) => ({ dataset: { status: c.status } }) },
        ),
      );
    } catch (err) {
      if (err.name !== 'AbortError' && gen === generation) msg.error(err);
    }
  }

  reload.addEventListener('click', () => load());
  load();
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'tool-calls-title' },
    h('div', { class: 'section-head' }, h('h2', { id: 'tool-calls-title' }, 'Tool calls'), reload),
    h('p', { class: 'muted' }, 'Every call the agent made with its actions and MCP tools, newest first. Secrets in the arguments are redacted.'),
    msg.el,
    listEl,
    pages.el,
  );
}
