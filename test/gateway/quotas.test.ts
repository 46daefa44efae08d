// Quotas per company (issue #26 finding 4; contract.md § No tenant slows another down): one
// more agent, knowledge base, integration or live API token than the company's quota is 403
// QUOTA_EXCEEDED naming the resource and the limit; creates racing at the limit never both
// pass; another company's quota is its own. Small quotas here (QUOTA_* in the environment).
import t from 'tap';
import { signUp, startTestService, type ApiClient } from '../support/service.js';

const LIMITS = { agents: 3, knowledgeBases: 2, integrations: 2, apiTokens: 2 };
const svc = await startTestService(t, 'quotas', {
  env: {
    QUOTA_AGENTS: String(LIMITS.agents),
    QUOTA_KNOWLEDGE_BASES: String(LIMITS.knowledgeBases),
    QUOTA_INTEGRATIONS: String(LIMITS.integrations),
    QUOTA_API_TOKENS: String(LIMITS.apiTokens),
  },
});
const { api } = svc;

const create = {
  agents: (api: ApiClient, token: string, n: number) => api('POST', '/api/agents', { token, body: { name: `Agent ${n}` } }),
  knowledgeBases: (api: ApiClient, token: string, n: number) => api('POST', '/api/knowledge-bases', { token, body: { name: `Base ${n}`, synonyms: [['esim', 'embedded sim']] } }),
  apiTokens: (api: ApiClient, token: string, n: number) => api('POST', '/api/api-tokens', { token, body: { name: `Token ${n}` } }),
};

const exceeded = (field: string, limit: number) => ({ status: 403, body: { error: { code: 'QUOTA_EXCEEDED', details: [{ field, message: `limit ${limit}` }] } } });

t.test('agents, knowledge bases and API tokens: the one past the quota is refused, the others are kept', async (t) => {
  const acme = await signUp(api, 'Quota Acme');
  for (const [field, make] of Object.entries(create)) {
    const limit = LIMITS[field as keyof typeof LIMITS];
    for (let n = 1; n <= limit; n++) t.equal((await make(api, acme.token, n)).status, 201, `${field} ${n} of ${limit}`);
    const over = await make(api, acme.token, limit + 1);
    t.match(over, exceeded(field, limit), `${field}: one more is 403 QUOTA_EXCEEDED naming the resource and the limit`);
  }
  t.equal((await api('GET', '/api/agents', { token: acme.token })).body.total, LIMITS.agents, 'the refused agent was not stored');
  t.equal((await api('GET', '/api/knowledge-bases', { token: acme.token })).body.total, LIMITS.knowledgeBases);
  const tokens = (await api('GET', '/api/api-tokens', { token: acme.token })).body;
  t.equal(tokens.total, LIMITS.apiTokens);

  // A revoked token counts no more; a deleted agent frees its place.
  t.equal((await api('DELETE', `/api/api-tokens/${tokens.apiTokens[0].id}`, { token: acme.token })).status, 204);
  t.equal((await create.apiTokens(api, acme.token, 9)).status, 201, 'a token again after one was revoked');
  const agents = (await api('GET', '/api/agents', { token: acme.token })).body.agents;
  t.equal((await api('DELETE', `/api/agents/${agents[0].id}`, { token: acme.token })).status, 204);
  t.equal((await create.agents(api, acme.token, 9)).status, 201, 'an agent again after one was deleted');
  t.match(await create.agents(api, acme.token, 10), exceeded('agents', LIMITS.agents));

  const globex = await signUp(api, 'Quota Globex');
  t.equal((await create.agents(api, globex.token, 1)).status, 201, "another company's quota is its own");
});

t.test('integrations: the quota counts every type', async (t) => {
  const acme = await signUp(api, 'Quota Integrations');
  const agentId = (await create.agents(api, acme.token, 1)).body.agent.id;
  const webchat = (n: number) => api('POST', '/api/integrations', { token: acme.token, body: { type: 'webchat', name: `Chat ${n}`, agentId } });
  t.equal((await webchat(1)).status, 201);
  t.equal((await api('POST', '/api/integrations', { token: acme.token, body: { type: 'helpdesk', name: 'Desk', agentId } })).status, 201);
  t.match(await webchat(3), exceeded('integrations', LIMITS.integrations));
  t.equal((await api('GET', '/api/integrations', { token: acme.token })).body.total, LIMITS.integrations);
});

t.test('creates racing at the limit: exactly as many pass as there are places', async (t) => {
  const acme = await signUp(api, 'Quota Race');
  const RACERS = 12;
  for (const [field, make] of Object.entries(create)) {
    const limit = LIMITS[field as keyof typeof LIMITS];
    const answers = await Promise.all(Array.from({ length: RACERS }, (_, n) => make(api, acme.token, n)));
    const statuses = answers.map((a) => a.status).sort();
    t.same(statuses, [...Array(limit).fill(201), ...Array(RACERS - limit).fill(403)], `${field}: ${limit} created, ${RACERS - limit} refused`);
    t.ok(answers.filter((a) => a.status === 403).every((a) => a.body.error.code === 'QUOTA_EXCEEDED'));
  }
  const [{ n }] = (await svc.orm.em.fork().getConnection().execute('select count(*)::int as n from agents where company_id = ?', [acme.companyId])) as { n: number }[];
  t.equal(n, LIMITS.agents, 'the database holds exactly the quota');
});
