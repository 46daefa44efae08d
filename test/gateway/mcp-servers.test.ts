import { randomBytes } from 'node:crypto';
import t from 'tap';
import { offeredToolName } from '../../lib/agents/tools/tool-names.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { sql } from '../support/worker.js';

/**
 * An agent's MCP servers (contract.md § Agent actions; .scratch/actions-api.md § API): each
 * write is followed by one check against the server (a stand-in built on the SDK's own server
 * and transport) whose finding is stored and shown: `connected` with the tools and the names
 * the model is offered them under, or `failed` with why (still 201: mend it, refresh). Header
 * values are sealed and never shown; quota per agent; admins only; another company's: 404.
 */
const QUOTA = 2;
const svc = await startTestService(t, 'mcp_servers', { env: { QUOTA_MCP_SERVERS_PER_AGENT: String(QUOTA) } });
const { api } = svc;
const owner = await signUp(api, 'MCP Co');
const operator = await join(api, owner.token, 'operator');
const KEY = `Bearer mcp-${randomBytes(12).toString('hex')}`;
const open = await startMcpStub(t);
const locked = await startMcpStub(t, { requiredHeaders: { authorization: KEY } });

const newAgent = async (name: string, token = owner.token): Promise<number> => {
  const res = await api('POST', '/api/agents', { token, body: { name } });
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.agent.id;
};
const agentId = await newAgent('Tool bot');
const servers = (agent = agentId) => `/api/agents/${agent}/mcp-servers`;
const create = (body: unknown, agent = agentId, token = owner.token) => api('POST', servers(agent), { token, body });
const remove = (id: number, agent = agentId) => api('DELETE', `${servers(agent)}/${id}`, { token: owner.token });

const STUB_TOOLS = [
  { name: 'order_status', description: 'The shipping status of an order', offeredAs: 'crm__order_status', idempotent: true, refused: null },
  { name: 'create_ticket', description: 'Opens a support ticket', offeredAs: 'crm__create_ticket', idempotent: false, refused: null },
  { name: 'crm_down', description: 'Looks the customer up in the CRM', offeredAs: 'crm__crm_down', idempotent: true, refused: null },
];

t.test('created and checked at once: connected, with its tools as the model is offered them', async (t) => {
  const created = await create({ name: 'crm', url: locked.url, headers: { Authorization: KEY }, timeoutMs: 5000 });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const server = created.body.mcpServer;
  t.match(server, { id: Number, agentId, name: 'crm', url: locked.url, timeoutMs: 5000, status: 'connected', lastError: null, checkedAt: /Z$/, createdAt: /Z$/, updatedAt: /Z$/ });
  t.same(server.headers, { Authorization: '********' }, 'the header is named, its value masked');
  t.same(server.tools, STUB_TOOLS, 'the tools, by the names the model is offered them under');
  t.notOk(JSON.stringify(created.body).includes(KEY.slice(7)), 'no answer holds the header value');
  const [row] = await sql(svc.orm, 'select headers_sealed, status, tools from agent_mcp_servers where id = ?', [server.id]);
  t.match(row.headers_sealed.Authorization, /^v1\./, 'sealed at rest');
  t.notOk(JSON.stringify(row.headers_sealed).includes(KEY.slice(7)));
  t.equal(row.status, 'connected');
  t.match(row.tools[0], { name: 'order_status', inputSchema: { type: 'object', properties: { orderId: { type: 'string' } } } }, 'the input schemas are kept for the worker');

  t.same((await api('GET', `${servers()}/${server.id}`, { token: owner.token })).body.mcpServer, server);
  const list = await api('GET', servers(), { token: owner.token });
  t.match(list.body, { total: 1, limit: 50, offset: 0 });
  t.same(list.body.mcpServers, [server]);

  const refreshed = await api('POST', `${servers()}/${server.id}/refresh`, { token: owner.token });
  t.equal(refreshed.status, 200);
  t.match(refreshed.body.mcpServer, { status: 'connected', tools: STUB_TOOLS });
  t.ok(refreshed.body.mcpServer.checkedAt >= server.checkedAt, 'checked again');

  const renamed = await api('PATCH', `${servers()}/${server.id}`, { token: owner.token, body: { name: 'shop' } });
  t.equal(renamed.status, 200, JSON.stringify(renamed.body));
  t.match(renamed.body.mcpServer, { name: 'shop', status: 'connected', headers: { Authorization: '********' } }, 'the stored header still opens the server');
  t.same(renamed.body.mcpServer.tools.map((x: any) => x.offeredAs), ['shop__order_status', 'shop__create_ticket', 'shop__crm_down'], 'offered under the new name');

  t.equal((await remove(server.id)).status, 204);
  t.equal((await api('GET', `${servers()}/${server.id}`, { token: owner.token })).status, 404);
  t.equal((await remove(server.id)).status, 404, 'deleted once');
});

t.test('a server that cannot be used is stored as failed, with why; mended, it is connected', async (t) => {
  const noHeader = await create({ name: 'locked', url: locked.url });
  t.equal(noHeader.status, 201, 'still created');
  t.match(noHeader.body.mcpServer, { status: 'failed', tools: [], lastError: /401/, checkedAt: /Z$/ }, 'a missing header: the refusal is named');
  const id = noHeader.body.mcpServer.id;

  const wrongKey = await api('PATCH', `${servers()}/${id}`, { token: owner.token, body: { headers: { authorization: 'Bearer wrong' } } });
  t.match(wrongKey.body.mcpServer, { status: 'failed', lastError: /401/ }, 'a PATCH checks again');
  const mended = await api('PATCH', `${servers()}/${id}`, { token: owner.token, body: { headers: { authorization: KEY } } });
  t.match(mended, { status: 200, body: { mcpServer: { status: 'connected', lastError: null } } });
  t.equal(mended.body.mcpServer.tools.length, 3);
  const kept = await api('PATCH', `${servers()}/${id}`, { token: owner.token, body: { headers: { authorization: '********' }, timeoutMs: 3000 } });
  t.match(kept.body.mcpServer, { status: 'connected', timeoutMs: 3000, headers: { authorization: '********' } }, '"********" keeps the stored value');
  t.match(await api('PATCH', `${servers()}/${id}`, { token: owner.token, body: { headers: { 'X-Other': '********' } } }), { status: 400, body: { error: { details: [{ field: 'headers.X-Other' }] } } }, 'nothing stored to keep');
  t.match(await api('PATCH', `${servers()}/${id}`, { token: owner.token, body: { url: 'http://127.0.0.2:9/mcp' } }), { status: 400, body: { error: { details: [{ field: 'headers' }] } } }, 'a new origin needs the header values again');
  await remove(id);

  // A server that is down, then one that answers at a new address, then down again: refresh tells.
  const gone = await startMcpStub(null);
  await gone.close();
  const down = await create({ name: 'later', url: gone.url });
  t.match(down, { status: 201, body: { mcpServer: { status: 'failed', tools: [], lastError: String } } });
  t.notOk(/127\.0\.0\.1|ECONNREFUSED/.test(down.body.mcpServer.lastError), `said in our words: ${down.body.mcpServer.lastError}`);
  const fresh = await startMcpStub(null);
  const moved = await api('PATCH', `${servers()}/${down.body.mcpServer.id}`, { token: owner.token, body: { url: fresh.url } });
  t.match(moved.body.mcpServer, { status: 'connected', lastError: null, url: fresh.url });
  t.match((await api('POST', `${servers()}/${down.body.mcpServer.id}/refresh`, { token: owner.token })).body.mcpServer, { status: 'connected' });
  await fresh.close();
  const refreshed = await api('POST', `${servers()}/${down.body.mcpServer.id}/refresh`, { token: owner.token });
  t.match(refreshed, { status: 200, body: { mcpServer: { status: 'failed', tools: [], lastError: String } } }, 'refresh checks again');
  await remove(down.body.mcpServer.id);

  const notMcp = await create({ name: 'wrong_path', url: locked.url.replace(/\/mcp$/, '/other') });
  t.match(notMcp.body.mcpServer, { status: 'failed', lastError: /404/ }, 'a wrong path');
  await remove(notMcp.body.mcpServer.id);
});

t.test('a server that never answers fails within its timeout', async (t) => {
  const silent = await startActionApiStub(t);
  silent.answer('POST', '/', { hang: true });
  silent.answer('GET', '/', { hang: true });
  const started = Date.now();
  const res = await create({ name: 'silent', url: `${silent.url}/mcp`, timeoutMs: 500 });
  const took = Date.now() - started;
  t.match(res, { status: 201, body: { mcpServer: { status: 'failed', lastError: /500 ms/ } } });
  t.ok(took < 5000, `answered in ${took} ms`);
  await remove(res.body.mcpServer.id);
});

t.test('every field is checked: 400 naming it, nothing stored', async (t) => {
  const base = { name: 'crm', url: open.url };
  const cases: [string, unknown, string][] = [
    ['no name', { url: open.url }, 'name'],
    ['a name starting with a digit', { ...base, name: '1crm' }, 'name'],
    ['a name with a dot', { ...base, name: 'crm.v2' }, 'name'],
    ['a name of 33 characters', { ...base, name: 'a'.repeat(33) }, 'name'],
    ['no URL', { name: 'crm' }, 'url'],
    ['a URL that is not http', { ...base, url: 'ws://example.com/mcp' }, 'url'],
    ['not a URL', { ...base, url: 'http://' }, 'url'],
    ['a URL with credentials', { ...base, url: open.url.replace('http://', 'http://user:pw@') }, 'url'],
    ['a URL of 2049 characters', { ...base, url: `${open.url}?${'x'.repeat(2049)}` }, 'url'],
    ['a header name with a space', { ...base, headers: { 'X Key': 'a' } }, 'headers.X Key'],
    ['Transfer-Encoding', { ...base, headers: { 'Transfer-Encoding': 'chunked' } }, 'headers.Transfer-Encoding'],
    ['a CR LF in a value', { ...base, headers: { 'X-Key': 'a\r\nX-Injected: 1' } }, 'headers.X-Key'],
    ['"********" at create', { ...base, headers: { 'X-Key': '********' } }, 'headers.X-Key'],
    ['21 headers', { ...base, headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])) }, 'headers'],
    ['timeoutMs over 15000', { ...base, timeoutMs: 15001 }, 'timeoutMs'],
    ['an unknown field', { ...base, tools: [] }, 'tools'],
    ['a NUL byte in the name', { ...base, name: 'crm\u0000' }, 'name'],
  ];
  for (const [what, body, field] of cases) {
    const res = await create(body);
    t.equal(res.status, 400, `${what}: ${JSON.stringify(res.body).slice(0, 200)}`);
    const fields = (res.body.error?.details ?? []).map((d: { field: string }) => d.field);
    t.ok(fields.includes(field), `${what}: names ${field} (${fields.join(', ')})`);
    t.notOk(JSON.stringify(res.body).includes('must match pattern'), `${what}: said in words`);
  }
  t.equal((await api('GET', servers(), { token: owner.token })).body.total, 0, 'nothing was stored');
});

t.test('a name is taken once per agent (409); the quota is per agent', async (t) => {
  const first = await create({ name: 'crm', url: open.url });
  t.equal(first.status, 201);
  t.match(await create({ name: 'crm', url: open.url }), { status: 409, body: { error: { code: 'CONFLICT' } } });
  const second = await create({ name: 'erp', url: open.url });
  t.equal(second.status, 201);
  t.match(await api('PATCH', `${servers()}/${second.body.mcpServer.id}`, { token: owner.token, body: { name: 'crm' } }), { status: 409 }, 'renamed onto a taken one');
  t.match(await create({ name: 'third', url: open.url }), { status: 403, body: { error: { code: 'QUOTA_EXCEEDED', details: [{ field: 'mcpServers', message: `limit ${QUOTA}` }] } } });
  t.equal((await api('GET', servers(), { token: owner.token })).body.total, QUOTA);
  const other = await newAgent('Other bot');
  t.equal((await create({ name: 'crm', url: open.url }, other)).status, 201, 'the same name and the quota on another agent');
});

t.test('operators may not; another company sees nothing', async (t) => {
  const [mine] = (await api('GET', servers(), { token: owner.token })).body.mcpServers;
  const one = `${servers()}/${mine.id}`;
  const calls = [['GET', servers(), undefined], ['POST', servers(), { name: 'op', url: open.url }], ['GET', one, undefined], ['PATCH', one, { name: 'x' }], ['DELETE', one, undefined], ['POST', `${one}/refresh`, undefined]] as const;
  for (const [method, path, body] of calls) {
    t.match(await api(method, path, { token: operator.token, body }), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, `${method} ${path.replace(/\d+/g, ':n')} by an operator`);
  }
  const stranger = await signUp(api, 'Other Co');
  for (const [method, path, body] of calls) {
    t.match(await api(method, path, { token: stranger.token, body }), { status: 404, body: { error: { code: 'NOT_FOUND' } } }, `${method} ${path.replace(/\d+/g, ':n')} by another company`);
  }
  const sibling = await newAgent('Sibling bot');
  t.equal((await api('GET', `${servers(sibling)}/${mine.id}`, { token: owner.token })).status, 404, 'a server is found only under its own agent');
  t.same((await api('GET', one, { token: owner.token })).body.mcpServer, mine, 'nothing changed');
});

t.test('the names MCP tools are offered under', async (t) => {
  t.equal(offeredToolName('crm', 'order_status'), 'crm__order_status');
  t.equal(offeredToolName('crm', 'orders.get status'), 'crm__orders_get_status', 'characters outside [A-Za-z0-9_-] become _');
  t.equal(offeredToolName('crm', 'заказ'), 'crm_______', 'one _ per character, whatever its script');
  t.equal(offeredToolName('crm', '📦'), 'crm___', 'one _ for a character outside the BMP too');
  t.equal(offeredToolName('crm', 'x'.repeat(100)), `crm__${'x'.repeat(59)}`, 'cut to 64');
});
