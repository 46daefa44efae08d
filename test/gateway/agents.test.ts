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

t.test('model pricing as decimal strings or JSON numbers; model.maxConcurrency', async (t) => {
  const model = { provider: 'openai', name: 'm', baseUrl: 'https://llm.example.com/v1' };
  const numbers = await api('POST', '/api/agents', { token: acme.token, body: { name: 'Priced', model: { ...model, pricing: { inputUsdPerMTok: 0.15, outputUsdPerMTok: 0.6 }, maxConcurrency: 50 } } });
  t.equal(numbers.status, 201);
  t.same(numbers.body.agent.model.pricing, { inputUsdPerMTok: '0.15', outputUsdPerMTok: '0.6' }, 'stored and shown as decimal strings, exactly as written');
  t.equal(numbers.body.agent.model.maxConcurrency, 50);
  const id = numbers.body.agent.id;
  const tiny = await api('PATCH', `/api/agents/${id}`, { token: acme.token, body: { model: { pricing: { inputUsdPerMTok: 1e-7, outputUsdPerMTok: '2.50' }, maxConcurrency: null } } });
  t.equal(tiny.status, 200);
  t.same(tiny.body.agent.model.pricing, { inputUsdPerMTok: '0.0000001', outputUsdPerMTok: '2.50' }, 'a number in exponent notation is written out; strings stay as sent');
  t.equal(tiny.body.agent.model.maxConcurrency, null, 'null removes the cap');
  t.equal((await api('GET', '/api/agents', { token: acme.token })).body.agents.find((a: { id: number }) => a.id === id).model.pricing.inputUsdPerMTok, '0.0000001');

  const bad = await api('PATCH', `/api/agents/${id}`, { token: acme.token, body: { model: { pricing: { inputUsdPerMTok: -1, outputUsdPerMTok: 1e12 }, maxConcurrency: 0 } } });
  t.equal(bad.status, 400);
  t.same(bad.body.error.details.map((d: { field: string }) => d.field).sort(), ['model.maxConcurrency', 'model.pricing.inputUsdPerMTok', 'model.pricing.outputUsdPerMTok']);
  const precise = await api('PATCH', `/api/agents/${id}`, { token: acme.token, body: { model: { pricing: { inputUsdPerMTok: 0.1234567891, outputUsdPerMTok: 1 } } } });
  t.equal(precise.status, 400);
  t.same(precise.body.error.details, [{ field: 'model.pricing.inputUsdPerMTok', message: 'must have at most 9 decimals' }], 'never rounded');
  const fractional = await api('PATCH', `/api/agents/${id}`, { token: acme.token, body: { model: { maxConcurrency: 1.5 } } });
  t.equal(fractional.status, 400);
  t.same((await api('GET', `/api/agents/${id}`, { token: acme.token })).body.agent.model.pricing, { inputUsdPerMTok: '0.0000001', outputUsdPerMTok: '2.50' }, 'nothing changed by the refused requests');
});

t.test('debounceMs and business hours: defaults, stored, validated field by field', async (t) => {
  const created = (await api('POST', '/api/agents', { token: acme.token, body: { name: 'Timed' } })).body.agent;
  t.match(created, { debounceMs: 0, hours: null }, 'off and always open by default');
  const hours = { timezone: 'Europe/Berlin', weekly: { mon: [['09:00', '18:00']], fri: [['22:00', '02:00']] }, holidays: ['2026-12-25'], outside: 'message', outsideMessage: 'Closed, back at 9.' };
  const patched = await api('PATCH', `/api/agents/${created.id}`, { token: acme.token, body: { debounceMs: 1500, hours } });
  t.equal(patched.status, 200);
  t.same(patched.body.agent.hours, hours);
  t.equal(patched.body.agent.debounceMs, 1500);
  t.same((await api('GET', `/api/agents/${created.id}`, { token: acme.token })).body.agent, patched.body.agent, 'stored');
  const minimal = await api('POST', '/api/agents', { token: acme.token, body: { name: 'Min', hours: { timezone: 'UTC', weekly: {}, outside: 'handoff' } } });
  t.same(minimal.body.agent.hours, { timezone: 'UTC', weekly: {}, holidays: [], outside: 'handoff', outsideMessage: null }, 'optional fields filled in');
  const cleared = await api('PATCH', `/api/agents/${created.id}`, { token: acme.token, body: { hours: null, debounceMs: 0 } });
  t.match(cleared.body.agent, { hours: null, debounceMs: 0 });

  const cases: [string, Record<string, unknown>, string][] = [
    ['debounce too long', { debounceMs: 60_001 }, 'debounceMs'],
    ['debounce negative', { debounceMs: -1 }, 'debounceMs'],
    ['debounce fractional', { debounceMs: 1.5 }, 'debounceMs'],
    ['unknown time zone', { hours: { ...hours, timezone: 'Mars/Olympus' } }, 'hours.timezone'],
    ['bad time', { hours: { ...hours, weekly: { mon: [['9:00', '18:00']] } } }, 'hours.weekly.mon.0.0'],
    ['empty range', { hours: { ...hours, weekly: { tue: [['10:00', '10:00']] } } }, 'hours.weekly.tue.0'],
    ['unknown weekday', { hours: { ...hours, weekly: { funday: [] } } }, 'hours.weekly.funday'],
    ['bad holiday', { hours: { ...hours, holidays: ['2026-02-30x'] } }, 'hours.holidays.0'],
    ['impossible holiday', { hours: { ...hours, holidays: ['2026-13-40'] } }, 'hours.holidays.0'],
    ['bad policy', { hours: { ...hours, outside: 'sleep' } }, 'hours.outside'],
    ['no policy', { hours: { timezone: 'UTC', weekly: {} } }, 'hours.outside'],
  ];
  for (const [label, body, field] of cases) {
    const res = await api('PATCH', `/api/agents/${created.id}`, { token: acme.token, body });
    t.equal(res.status, 400, label);
    t.equal(res.body.error?.code, 'VALIDATION_ERROR', label);
    t.ok(res.body.error?.details?.some((d: { field: string }) => d.field === field), `${label}: names ${field} (${JSON.stringify(res.body.error?.details)})`);
  }
  t.match((await api('GET', `/api/agents/${created.id}`, { token: acme.token })).body.agent, { hours: null, debounceMs: 0 }, 'nothing changed');
});
