import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Roles (contract.md § A team works the conversations): operators read and work
 * conversations and leads and use canned replies; the company's setup (integrations, agents,
 * knowledge, API tokens, users, billing changes) answers them 403 FORBIDDEN, and nothing
 * changes. Admins and company API tokens manage it (API tokens themselves still need a session).
 */
const svc = await startTestService(t, 'roles', { env: { PARTITIONS: '1' } });
const { api } = svc;
const stub = await startChat2DeskStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'roles' });
await waitForPartitions([worker], 1);

const owner = await signUp(api, 'Roles Co');
const integration = await createHelpdeskIntegration(svc, owner, stub, 'Desk');
await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-roles', 'hello'));
await untilIdle(svc);
const [{ id: conversationId }] = await eventually(async () => {
  const rows = await sql<{ id: number }>(svc.orm, 'select id from conversations where integration_id = ?', [integration.id]);
  return rows.length ? rows : null;
}, 15_000, 'the conversation');
const agentId = (await api('GET', '/api/agents', { token: owner.token })).body.agents[0].id as number;
const kbId = (await api('POST', '/api/knowledge-bases', { token: owner.token, body: { name: 'Help' } })).body.knowledgeBase.id as number;
const apiToken = (await api('POST', '/api/api-tokens', { token: owner.token, body: { name: 'ops' } })).body.apiToken;
const admin = await join(api, owner.token, 'admin', 'Ada');
const operator = await join(api, owner.token, 'operator', 'Otto');

interface Call {
  method: string;
  path: string;
  body?: unknown;
}

/** The company's setup: one read and one write of each family (and the users' management). */
const SETUP: Record<string, Call[]> = {
  integrations: [
    { method: 'GET', path: '/api/integrations' },
    { method: 'PATCH', path: `/api/integrations/${integration.id}`, body: { name: 'Mine now' } },
    { method: 'POST', path: `/api/integrations/${integration.id}/rotate-secret` },
  ],
  agents: [
    { method: 'GET', path: `/api/agents/${agentId}` },
    { method: 'POST', path: '/api/agents', body: { name: 'Rogue' } },
    { method: 'POST', path: `/api/agents/${agentId}/evaluations`, body: { cases: [{ question: 'hi?', expect: ['hi'] }] } },
  ],
  knowledge: [
    { method: 'GET', path: '/api/knowledge-bases' },
    { method: 'GET', path: `/api/knowledge-bases/${kbId}/gaps` },
    { method: 'POST', path: `/api/knowledge-bases/${kbId}/documents`, body: { title: 'Secret', content: 'text' } },
    { method: 'DELETE', path: `/api/knowledge-bases/${kbId}` },
  ],
  'API tokens': [
    { method: 'GET', path: '/api/api-tokens' },
    { method: 'DELETE', path: `/api/api-tokens/${apiToken.id}` },
  ],
  users: [
    { method: 'GET', path: '/api/users/invitations' },
    { method: 'POST', path: '/api/users/invitations', body: { email: 'friend@example.com', role: 'operator' } },
    { method: 'PATCH', path: `/api/users/${admin.id}`, body: { role: 'operator' } },
    { method: 'DELETE', path: `/api/users/${admin.id}` },
  ],
  'canned replies': [{ method: 'POST', path: '/api/canned-replies', body: { shortcut: 'hi', text: 'Hello!' } }],
  billing: [{ method: 'PATCH', path: '/api/billing', body: { spendCapUsdPerDay: '0.01' } }],
};

t.test('an operator gets 403 FORBIDDEN on the company\'s setup, and nothing changes', async (t) => {
  const before = await api('GET', '/api/agents', { token: owner.token });
  for (const [family, calls] of Object.entries(SETUP)) {
    for (const call of calls) {
      const res = await api(call.method, call.path, { token: operator.token, body: call.body });
      t.match(res, { status: 403, body: { error: { code: 'FORBIDDEN', message: /admin/ } } }, `${family}: ${call.method} ${call.path}`);
    }
  }
  t.equal((await api('GET', '/api/agents', { token: owner.token })).body.total, before.body.total, 'no agent was made');
  t.equal((await api('GET', `/api/integrations/${integration.id}`, { token: owner.token })).body.integration.name, 'Desk', 'the integration is as it was');
  t.equal((await api('GET', `/api/knowledge-bases/${kbId}`, { token: owner.token })).status, 200, 'the knowledge base is there');
  t.equal((await api('GET', '/api/billing', { token: owner.token })).body.billing.spendCapUsdPerDay, null, 'no cap was set');
  t.equal((await api('GET', '/api/users', { token: owner.token })).body.total, 3, 'nobody was invited or removed');
  t.match((await api('GET', `/api/users/${admin.id}`, { token: operator.token })), { status: 404 }, 'a path no route has stays 404');
});

t.test('an operator reads and works conversations and leads, reads canned replies, analytics and billing', async (t) => {
  const ok = async (method: string, path: string, body?: unknown, status = 200) => {
    const res = await api(method, path, { token: operator.token, body });
    t.equal(res.status, status, `${method} ${path}: ${res.status} ${res.status >= 400 ? JSON.stringify(res.body) : ''}`);
    return res.body;
  };
  t.match(await ok('GET', '/api/auth/me'), { user: { role: 'operator', displayName: 'Otto' } });
  t.equal((await ok('GET', '/api/users')).total, 3);
  await ok('PATCH', `/api/users/${operator.id}`, { displayName: 'Otto K.' });
  t.ok((await ok('GET', '/api/conversations')).conversations.some((c: any) => c.id === conversationId));
  await ok('GET', `/api/conversations/${conversationId}`);
  await ok('GET', `/api/conversations/${conversationId}/messages`);
  await ok('GET', `/api/conversations/${conversationId}/transitions`);
  await ok('GET', '/api/machines/conversation');
  t.equal((await ok('POST', `/api/conversations/${conversationId}/pause`)).conversation.status, 'paused');
  await ok('POST', `/api/conversations/${conversationId}/messages`, { text: 'A person here.' });
  t.equal((await ok('POST', `/api/conversations/${conversationId}/resume`)).conversation.status, 'active');
  const lead = (await ok('GET', '/api/leads')).leads[0];
  await ok('GET', `/api/leads/${lead.id}`);
  const pipelines = (await ok('GET', '/api/pipelines')).pipelines;
  t.match(await ok('PATCH', `/api/leads/${lead.id}`, { stageId: pipelines[0].stages[1].id, name: 'Maria' }), { lead: { name: 'Maria', stageId: pipelines[0].stages[1].id } });
  await ok('GET', '/api/canned-replies');
  await ok('GET', '/api/canned-replies?q=hi');
  await ok('GET', '/api/analytics');
  await ok('GET', '/api/billing');
  await ok('GET', '/api/billing/ledger');
});

t.test('an admin and a company API token manage the setup; API tokens still need a session', async (t) => {
  for (const token of [admin.token, apiToken.token]) {
    t.equal((await api('GET', '/api/integrations', { token })).status, 200);
    t.equal((await api('PATCH', `/api/integrations/${integration.id}`, { token, body: { name: 'Desk' } })).status, 200);
    t.equal((await api('GET', '/api/users/invitations', { token })).status, 200);
    t.equal((await api('PATCH', '/api/billing', { token, body: { spendCapUsdPerDay: null } })).status, 200);
  }
  t.equal((await api('POST', '/api/canned-replies', { token: apiToken.token, body: { shortcut: 'by-token', text: 'Hi' } })).status, 201);
  t.equal((await api('GET', '/api/api-tokens', { token: admin.token })).status, 200, 'an admin manages API tokens');
  t.equal((await api('GET', '/api/api-tokens', { token: apiToken.token })).status, 401, 'with a session: an API token does not');
});
