import t from 'tap';
import type { Express } from 'express';
import { createGatewayApp } from '../../gateway/app.js';
import { listAppRoutes } from '../../gateway/http/route-table.js';
import { createLogger } from '../../lib/logger.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Tenant isolation, route by route: every route that takes an id is called with another
 * company's session token AND its API token. The answer is 404 (API-token management, which
 * needs a session, answers 401 to an API token), and nothing of the owner's changes: every
 * table's rows are compared before and after, and the helpdesk stand-in hears nothing.
 * The routes are enumerated from the express app itself, so a new route with an id and no
 * entry here fails this suite.
 */
const svc = await startTestService(t, 'tenant', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const stub = await startChat2DeskStub(t);
const model = await startRepeatingModel(t);
const owner = await signUp(svc.api, 'Owner Co');
const intruder = await signUp(svc.api, 'Intruder Co');
const tokenOf = async (s: { token: string }) => (await svc.api('POST', '/api/api-tokens', { token: s.token, body: { name: 'ci' } })).body.apiToken;
const ownerApiToken = await tokenOf(owner);
const intruderApiToken = await tokenOf(intruder);

// The owner's resources.
const kb = (await svc.api('POST', '/api/knowledge-bases', { token: owner.token, body: { name: 'KB' } })).body.knowledgeBase;
const doc = await addDocument(svc.api, owner.token, kb.id, { title: 'Hours', content: 'We open at nine.' });
const agent = (await svc.api('POST', '/api/agents', { token: owner.token, body: { name: 'Bot', knowledgeBaseId: kb.id, model: { provider: 'openai', name: 'm', baseUrl: model.baseUrl, apiKey: 'sk-owner' } } })).body.agent;
const integration = (await svc.api('POST', '/api/integrations', { token: owner.token, body: { type: 'helpdesk', name: 'Desk', agentId: agent.id, apiUrl: stub.url, apiToken: stub.token } })).body.integration;
const worker = await startTestWorker(t, svc, { workerId: 'tenant-w' });
await waitForPartitions([worker], 2);
await deliver(svc.api, integration.id, { message_id: 1, text: 'hello', client_id: 'c-1', channel_id: 'ch', transport: 'telegram', request_id: 5 }, { secret: integration.webhookSecret });
const conversation = await eventually(async () => (await svc.api('GET', '/api/conversations', { token: owner.token })).body.conversations?.[0], 10_000, 'conversation');
await eventually(async () => stub.sent().length === 1, 10_000, 'first reply');
const lead = (await svc.api('GET', '/api/leads', { token: owner.token })).body.leads[0];
const ownerWonStage = (await svc.api('GET', '/api/pipelines', { token: owner.token })).body.pipelines[0].stages[4].id;
const teammate = await join(svc.api, owner.token, 'operator');
const invitation = (await svc.api('POST', '/api/users/invitations', { token: owner.token, body: { email: 'invitee@example.com', role: 'operator' } })).body.invitation;
const cannedReply = (await svc.api('POST', '/api/canned-replies', { token: owner.token, body: { shortcut: 'hours', text: 'We open at nine.' } })).body.cannedReply;
const action = (await svc.api('POST', `/api/agents/${agent.id}/actions`, { token: owner.token, body: { name: 'order_status', description: 'x', parameters: { type: 'object' }, request: { method: 'GET', url: 'http://127.0.0.1:9/orders' } } })).body.action;
// Nothing listens there: stored as failed, which is all the matrix needs.
const mcpServer = (await svc.api('POST', `/api/agents/${agent.id}/mcp-servers`, { token: owner.token, body: { name: 'crm', url: 'http://127.0.0.1:9/mcp' } })).body.mcpServer;
// A replay of the owner's conversation, finished before the matrix runs (its rows must hold still for the snapshot).
const replay = (await svc.api('POST', `/api/agents/${agent.id}/replays`, { token: owner.token, body: { changes: { systemPrompt: 'Be brief.' }, conversations: { ids: [conversation.id] } } })).body.replay;
await eventually(async () => (await svc.api('GET', `/api/agents/${agent.id}/replays/${replay.id}?items=none`, { token: owner.token })).body.replay?.status === 'done', 15_000, 'the replay done');

const ids: Record<string, number | string> = {
  agents: agent.id,
  'api-tokens': ownerApiToken.id,
  integrations: integration.id,
  'knowledge-bases': kb.id,
  conversations: conversation.id,
  leads: lead.id,
  users: teammate.id,
  'canned-replies': cannedReply.id,
};

/** Every route with a path parameter: "METHOD /path/:id" → request body (undefined: none). */
const MATRIX: Record<string, unknown> = {
  'GET /api/agents/:id': undefined,
  'PATCH /api/agents/:id': { name: 'pwned' },
  'DELETE /api/agents/:id': undefined,
  'POST /api/agents/:id/evaluations': { cases: [{ question: 'pwned: when do you open?', expect: [] }] },
  'GET /api/agents/:id/evaluations': undefined,
  'GET /api/agents/:id/evaluation-cases': undefined,
  'PUT /api/agents/:id/evaluation-cases': { cases: [{ question: 'pwned: when do you open?', expect: ['pwned'] }] },
  'GET /api/agents/:id/actions': undefined,
  'POST /api/agents/:id/actions': { name: 'pwned', description: 'pwned', parameters: { type: 'object' }, request: { method: 'GET', url: 'http://127.0.0.1:9/pwned' } },
  'GET /api/agents/:id/actions/:actionId': undefined,
  'PATCH /api/agents/:id/actions/:actionId': { description: 'pwned' },
  'DELETE /api/agents/:id/actions/:actionId': undefined,
  'POST /api/agents/:id/actions/:actionId/try': { arguments: {} },
  'GET /api/agents/:id/mcp-servers': undefined,
  'POST /api/agents/:id/mcp-servers': { name: 'pwned', url: 'http://127.0.0.1:9/pwned' },
  'GET /api/agents/:id/mcp-servers/:serverId': undefined,
  'PATCH /api/agents/:id/mcp-servers/:serverId': { name: 'pwned' },
  'DELETE /api/agents/:id/mcp-servers/:serverId': undefined,
  'POST /api/agents/:id/mcp-servers/:serverId/refresh': undefined,
  'GET /api/agents/:id/tool-calls': undefined,
  'GET /api/agents/:id/versions': undefined,
  'POST /api/agents/:id/versions/:v/restore': undefined,
  'POST /api/agents/:id/replays': { changes: { systemPrompt: 'pwned' }, conversations: { ids: [conversation.id] } },
  'GET /api/agents/:id/replays': undefined,
  'GET /api/agents/:id/replays/:rid': undefined,
  'POST /api/agents/:id/replays/:rid/publish': undefined,
  'DELETE /api/api-tokens/:id': undefined,
  'GET /api/integrations/:id': undefined,
  'PATCH /api/integrations/:id': { active: false, name: 'pwned' },
  'DELETE /api/integrations/:id': undefined,
  'POST /api/integrations/:id/rotate-secret': {},
  'POST /api/integrations/:id/register-webhook': {},
  'GET /api/knowledge-bases/:id': undefined,
  'PATCH /api/knowledge-bases/:id': { name: 'pwned' },
  'DELETE /api/knowledge-bases/:id': undefined,
  'POST /api/knowledge-bases/:id/documents': { title: 'pwned', content: 'pwned' },
  'GET /api/knowledge-bases/:id/documents': undefined,
  'GET /api/knowledge-bases/:id/documents/:docId': undefined,
  'GET /api/knowledge-bases/:id/documents/:docId/chunks': undefined,
  'DELETE /api/knowledge-bases/:id/documents/:docId': undefined,
  'POST /api/knowledge-bases/:id/documents/:docId/retry': undefined,
  'GET /api/knowledge-bases/:id/search': undefined,
  'GET /api/knowledge-bases/:id/gaps': undefined,
  'GET /api/conversations/:id': undefined,
  'GET /api/conversations/:id/messages': undefined,
  'POST /api/conversations/:id/messages': { text: 'pwned' },
  'GET /api/conversations/:id/transitions': undefined,
  'POST /api/conversations/:id/pause': {},
  'POST /api/conversations/:id/resume': {},
  'POST /api/conversations/:id/close': {},
  'GET /api/conversations/:id/inspect': undefined,
  'PATCH /api/conversations/:id': { assigneeId: null },
  'PUT /api/conversations/:id/labels': { labels: ['pwned'] },
  'POST /api/conversations/:id/notes': { text: 'pwned' },
  'POST /api/conversations/:id/read': {},
  'GET /api/leads/:id': undefined,
  'PATCH /api/leads/:id': { stageId: ownerWonStage },
  'PATCH /api/users/:id': { displayName: 'pwned', role: 'owner' },
  'DELETE /api/users/:id': undefined,
  'DELETE /api/users/invitations/:id': undefined,
  'PATCH /api/canned-replies/:id': { text: 'pwned' },
  'DELETE /api/canned-replies/:id': undefined,
};
/** Routes with a parameter that are not company resources. */
const NOT_TENANT_ROUTES = new Set(['GET /api/webhook/:connectorType/:integrationId', 'POST /api/webhook/:connectorType/:integrationId', 'GET /api/docs/assets/:version/:file']);

/** Every route of the app as "METHOD /full/path" (the same route table /metrics labels by). */
const enumerateRoutes = (app: Express): string[] => listAppRoutes(app).filter((r) => r.method !== '*').map((r) => `${r.method} ${r.path}`);

t.test('every route with an id is in the matrix', async (t) => {
  const { app, close } = createGatewayApp({ config: svc.config, orm: svc.orm, nc: svc.nc, logger: createLogger('silent') });
  t.teardown(close);
  const routes = enumerateRoutes(app).filter((r) => r.includes('/:') && r.includes(' /api/'));
  t.ok(routes.length >= Object.keys(MATRIX).length, `enumerated ${routes.length} routes with a parameter`);
  const missing = routes.filter((r) => !(r in MATRIX) && !NOT_TENANT_ROUTES.has(r));
  t.same(missing, [], 'no route with an id lacks a tenant test (add it to MATRIX)');
  const stale = Object.keys(MATRIX).filter((r) => !routes.includes(r));
  t.same(stale, [], 'every matrix entry is a real route');
});

/** Every company-owned row, as JSON, for before/after comparison. */
async function snapshot(): Promise<string> {
  const tables = ['agents', 'agent_evaluations', 'api_tokens', 'integrations', 'knowledge_bases', 'knowledge_documents', 'knowledge_chunks', 'knowledge_terms', 'conversations', 'conversation_messages', 'conversation_transitions', 'outbox', 'inbound_receipts', 'leads', 'lead_stage_moves', 'users', 'user_invitations', 'canned_replies', 'conversation_reads', 'agent_actions', 'agent_mcp_servers', 'agent_tool_calls', 'agent_versions', 'agent_replays', 'agent_replay_items'];
  const out: Record<string, unknown> = {};
  for (const table of tables) {
    const rows = await sql(svc.orm, `select * from ${table} where company_id = ? order by 1`, [owner.companyId]);
    // last_used_at of the owner's API token is the owner's own business (not touched here, but advisory).
    out[table] = rows.map((r: any) => ({ ...r, last_used_at: undefined }));
  }
  return JSON.stringify(out);
}

const fill = (route: string) =>
  route
    .replace(/^(\w+) /, '')
    .replace('/invitations/:id', `/invitations/${invitation.id}`)
    .replace(/\/api\/([\w-]+)\/:id/, (_m, res: string) => `/api/${res}/${ids[res]}`)
    .replace(':docId', String(doc.id))
    .replace(':actionId', String(action.id))
    .replace(':serverId', String(mcpServer.id))
    .replace(':v/', '1/')
    .replace(':rid', String(replay.id)) + (route.endsWith('/search') ? '?q=nine' : '');

t.test("another company's session and API token: 404, and no side effect", async (t) => {
  const before = await snapshot();
  const stubRequestsBefore = stub.requests.length;
  for (const [route, body] of Object.entries(MATRIX)) {
    const method = route.split(' ')[0]!;
    const path = fill(route);
    for (const [kind, token] of [['session', intruder.token], ['api token', intruderApiToken.token]] as const) {
      const sessionOnly = route.includes('/api-tokens/') || route.endsWith('/read');
      if (route.endsWith('/inspect')) {
        const ctrl = new AbortController();
        const res = await fetch(svc.url + path, { headers: { authorization: `Bearer ${token}` }, signal: ctrl.signal });
        t.equal(res.status, sessionOnly && kind === 'api token' ? 401 : 404, `${route} (${kind})`);
        ctrl.abort();
        continue;
      }
      const res = await svc.api(method, path, { token, body });
      const expected = sessionOnly && kind === 'api token' ? 401 : 404;
      t.equal(res.status, expected, `${route} (${kind}) → ${expected}`);
      if (expected === 404) t.equal(res.body?.error?.code, 'NOT_FOUND', `${route} (${kind}) says NOT_FOUND`);
      t.notMatch(JSON.stringify(res.body ?? ''), /pwned|We open at nine|hello/, 'nothing of the owner in the answer');
    }
  }
  await untilIdle(svc); // anything an intruder's call queued has been applied
  t.equal(await snapshot(), before, "the owner's rows are unchanged");
  t.equal(stub.requests.length, stubRequestsBefore, 'the helpdesk heard nothing');
  // And the owner still sees everything, with both credentials.
  for (const token of [owner.token, ownerApiToken.token]) {
    t.equal((await svc.api('GET', `/api/agents/${agent.id}`, { token })).status, 200);
    t.equal((await svc.api('GET', `/api/conversations/${conversation.id}/messages`, { token })).status, 200);
  }
});

t.test('lists never show another company', async (t) => {
  for (const path of ['/api/agents', '/api/integrations', '/api/knowledge-bases', '/api/conversations', '/api/api-tokens', '/api/leads']) {
    const res = await svc.api('GET', path, { token: intruder.token });
    t.equal(res.status, 200, path);
    const list = Object.values(res.body)[0] as any[];
    t.ok(Array.isArray(list), `${path} is a list`);
    t.notOk(list.some((x) => [agent.id, integration.id, kb.id, conversation.id, ownerApiToken.id].includes(x.id) && path !== '/api/api-tokens') || list.some((x) => path === '/api/api-tokens' && x.id === ownerApiToken.id), `${path}: none of the owner's`);
  }
  const search = await svc.api('GET', `/api/conversations?integrationId=${integration.id}`, { token: intruder.token });
  t.same(search.body.conversations, []);
  const period = `?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 60_000).toISOString()}`;
  t.equal((await svc.api('GET', `/api/analytics${period}`, { token: owner.token })).body.analytics.conversations, 1, "the owner's session counts for the owner");
  for (const q of [period, `${period}&agentId=${agent.id}`]) {
    t.equal((await svc.api('GET', `/api/analytics${q}`, { token: intruder.token })).body.analytics.conversations, 0, `analytics${q.includes('agentId') ? ' (the owner agent)' : ''}: none of the owner's sessions`);
  }
});
