// One agent's own tools (#/agents/<id>): its actions (agent-actions.js), its MCP servers
// (agent-mcp-servers.js) and the calls it made with them (agent-tool-calls.js).
import { api, seg } from '../api.js';
import { h } from '../dom.js';
import { agentActions } from './agent-actions.js';
import { agentMcpServers } from './agent-mcp-servers.js';
import { agentToolCalls } from './agent-tool-calls.js';

export async function render(root, { signal }, agentId) {
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/agents' }, '← Agents'));
  let agent;
  try {
    ({ agent } = await api('GET', `/api/agents/${seg(agentId)}`, undefined, { signal }));
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    root.append(crumbs, h('h1', {}, 'Agent'), h('p', { role: 'alert', class: 'error' }, err.status === 404 ? 'There is no such agent.' : err.message));
    return;
  }
  document.title = `${agent.name} · Messaging automation`;
  root.append(
    crumbs,
    h('h1', {}, `Actions and tools of ${agent.name}`),
    h('p', { class: 'lead muted' }, 'What the agent can do besides answering from its knowledge: call your API, use the tools of MCP servers. Every call it makes is listed under Tool calls.'),
    agentActions({ signal, agentId: agent.id }),
    agentMcpServers({ signal, agentId: agent.id }),
    agentToolCalls({ signal, agentId: agent.id }),
  );
}
