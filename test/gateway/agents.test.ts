import t from 'tap';
import { startTestService, signUp } from '../support/service.js';
import { AgentSchema, KnowledgeBaseSchema } from '../../schema/entities.js';

const svc = await startTestService(t, 'agents');
const { api } = svc;
const acme = await signUp(api, 'Acme');
const globex = await signUp(api, 'Globex');

t.test('create, read, update, delete', async (t) => {
  const created = await api('POST', '/api/agents', { token: acme.token, body: { name: 'Support', systemPrompt: 'Be brief.' } });
  t.equal(created.status, 201);
  const a = created.body.agent;
  t.match(a, { id: Number, name: 'Support', systemPrompt: 'Be brief.', model: { provider: 'builtin', name: null, baseUrl: null }, knowledgeBaseId: null, createdAt: /Z$/ });
  t.same((await api('GET', `/api/agents/${a.id}`, { token: acme.token })).body.agent, a);
  const patched = await api('PATCH', `/api/agents/${a.id}`, { token: acme.token, body: { name: 'Support 2', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-secret-value' } } });
  t.equal(patched.status, 200);
  t.match(patched.body.agent, { name: 'Support 2', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:9/v1', hasApiKey: true } });
  t.notOk(JSON.stringify(patched.body).includes('sk-secret-value'), 'apiKey is write-only');
  t.equal((await api('GET', '/api/agents', { token: acme.token })).body.agents.length, 1);
  t.equal((await api('DELETE', `/api/agents/${a.id}`, { token: acme.token })).status, 204);
  t.equal((await api('GET', `/api/agents/${a.id}`, { token: acme.token })).status, 404);
});

t.test('the model key is stored sealed', async (t) => {
  const res = await api('POST', '/api/agents', { token: acme.token, body: { name: 'LLM', model: { provider: 'openai', name: 'm', baseUrl: 'https://llm.example.com/v1', apiKey: 'sk-very-secret' } } });
  const row = await svc.orm.em.fork().findOne(AgentSchema, { id: res.body.agent.id }, { filters: false, populate: ['modelApiKeySealed'] });
  t.ok(row!.modelApiKeySealed);
  t.notMatch(row!.modelApiKeySealed!, /sk-very-secret/);
  t.match(row!.modelApiKeySealed!, /^v1\./);
});

t.test('validation errors list each bad field', async (t) => {
  const res = await api('POST', '/api/agents', { token: acme.token, body: { name: '', model: { provider: 'llama', pricing: { inputUsdPerMTok: 'free' } }, extra: 1 } });
  t.equal(res.status, 400);
  const fields = res.body.error.details.map((d: { field: string }) => d.field);
  for (const f of ['name', 'model.provider', 'model.pricing.outputUsdPerMTok', 'model.pricing.inputUsdPerMTok', 'extra']) t.ok(fields.includes(f), `${f} reported`);
  const openai = await api('POST', '/api/agents', { token: acme.token, body: { name: 'x', model: { provider: 'openai' } } });
  t.same(openai.body.error.details.map((d: { field: string }) => d.field).sort(), ['model.baseUrl', 'model.name']);
});

t.test("another company's agent: 404 everywhere, nothing changes", async (t) => {
  const mine = (await api('POST', '/api/agents', { token: acme.token, body: { name: 'Mine' } })).body.agent;
  const key = (await api('POST', '/api/api-tokens', { token: globex.token, body: { name: 'k' } })).body.apiToken.token;
  for (const token of [globex.token, key]) {
    t.equal((await api('GET', `/api/agents/${mine.id}`, { token })).status, 404);
    t.equal((await api('PATCH', `/api/agents/${mine.id}`, { token, body: { name: 'Hacked' } })).status, 404);
    t.equal((await api('DELETE', `/api/agents/${mine.id}`, { token })).status, 404);
  }
  t.equal((await api('GET', `/api/agents/${mine.id}`, { token: acme.token })).body.agent.name, 'Mine');
});

t.test("an agent cannot point at another company's knowledge base", async (t) => {
  const em = svc.orm.em.fork();
  const kb = em.create(KnowledgeBaseSchema, { companyId: globex.companyId, name: 'Theirs', createdAt: new Date() } as never);
  await em.flush();
  const res = await api('POST', '/api/agents', { token: acme.token, body: { name: 'x', knowledgeBaseId: kb.id } });
  t.equal(res.status, 400);
  t.equal(res.body.error.details[0].field, 'knowledgeBaseId');
});
