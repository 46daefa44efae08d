import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t, { type Test } from 'tap';
import { settingsOf } from '../../lib/agents/versions.js';
import { SecretBox } from '../../lib/secrets.js';
import { tenantScope } from '../../lib/tenancy.js';
import { applyAgentInput } from '../../gateway/routes/agents.js';
import { AgentSchema } from '../../schema/entities.js';
import { signUp, startTestService, type ApiResponse } from '../support/service.js';
import { join } from '../support/team.js';

/**
 * An agent's versions (contract.md § Replay before publishing): every change of what the
 * agent does makes a version, listed newest first with the fields it changed and who made
 * it; a restore makes a new version equal to an older one.
 */
const svc = await startTestService(t, 'agent_versions');
const { api } = svc;
const acme = await signUp(api, 'Acme');
const globex = await signUp(api, 'Globex');
const apiToken = (await api('POST', '/api/api-tokens', { token: acme.token, body: { name: 'CI' } })).body.apiToken.token as string;
const operator = await join(api, acme.token, 'operator');

// Every answer of these routes is checked against the schema the OpenAPI document shows for it.
const doc = (await api('GET', '/api/openapi.json')).body;
const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(doc, 'doc');
const validators = new Map<string, ValidateFunction>();
const pointer = (segments: string[]) => segments.map((s) => '/' + encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('');
function documented(t: Test, method: string, path: string, res: ApiResponse): ApiResponse {
  const response = doc.paths[path]?.[method]?.responses?.[String(res.status)];
  if (!response) {
    t.fail(`${method.toUpperCase()} ${path} → ${res.status} is not documented`);
    return res;
  }
  // An error answer is a shared response (a $ref to components.responses).
  const segments: string[] = response.$ref ? response.$ref.replace(/^#\//, '').split('/') : ['paths', path, method, 'responses', String(res.status)];
  const at = pointer([...segments, 'content', 'application/json', 'schema']);
  let v = validators.get(at);
  if (!v) validators.set(at, (v = ajv.compile({ $ref: `doc#${at}` })));
  t.ok(v(res.body), `${method.toUpperCase()} ${path} → ${res.status} matches its documented schema ${JSON.stringify(v.errors?.slice(0, 2) ?? '')}`);
  return res;
}

const versions = async (t: Test, id: number, query = '', token = acme.token) => documented(t, 'get', '/api/agents/{id}/versions', await api('GET', `/api/agents/${id}/versions${query}`, { token }));
const restore = async (t: Test, id: number, v: number | string, token = acme.token) => documented(t, 'post', '/api/agents/{id}/versions/{v}/restore', await api('POST', `/api/agents/${id}/versions/${v}/restore`, { token }));
const patch = async (id: number, body: unknown, token = acme.token) => api('PATCH', `/api/agents/${id}`, { token, body });
const newAgent = async (body: Record<string, unknown> = {}) => {
  const res = await api('POST', '/api/agents', { token: acme.token, body: { name: 'Support', ...body } });
  if (res.status !== 201) throw new Error(`POST /api/agents: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.agent;
};

t.test('a new agent is version 1; a change of its name alone makes none', async (t) => {
  const agent = await newAgent({ systemPrompt: 'Be brief.' });
  t.equal(agent.version, 1);
  const first = await versions(t, agent.id);
  t.same(first.body, { versions: [{ version: 1, createdAt: first.body.versions[0].createdAt, createdBy: acme.userId, changes: [], restoredFrom: null, replayId: null, current: true }], total: 1, limit: 50, offset: 0 });
  const renamed = await patch(agent.id, { name: 'Support desk' });
  t.equal(renamed.status, 200);
  t.match(renamed.body.agent, { name: 'Support desk', version: 1 });
  t.equal((await versions(t, agent.id)).body.total, 1, 'no version for a name');
});

t.test('a PATCH of several fields makes one version naming them by their API fields', async (t) => {
  const agent = await newAgent();
  const res = await patch(agent.id, { name: 'LLM', systemPrompt: 'Answer in French.', relevanceThreshold: 0.5, model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-one' } });
  t.equal(res.status, 200);
  t.equal(res.body.agent.version, 2);
  const list = (await versions(t, agent.id)).body;
  t.equal(list.total, 2);
  t.match(list.versions[0], { version: 2, createdBy: acme.userId, current: true, restoredFrom: null });
  t.same(list.versions[0].changes, ['systemPrompt', 'model.provider', 'model.name', 'model.baseUrl', 'model.apiKey', 'relevanceThreshold'], 'the fields that changed, not name');
  t.match(list.versions[1], { version: 1, current: false });

  const same = await patch(agent.id, { systemPrompt: 'Answer in French.', relevanceThreshold: 0.5, model: { name: 'gpt-4o-mini' } });
  t.equal(same.body.agent.version, 2, 'values sent again as they are: no version');
  t.equal((await patch(agent.id, { spendCapUsdPerDay: '2.50' })).body.agent.version, 3);
  t.equal((await patch(agent.id, { spendCapUsdPerDay: '2.5' })).body.agent.version, 3, 'the same amount written otherwise: no version');
  t.equal((await versions(t, agent.id)).body.versions[0].changes[0], 'spendCapUsdPerDay');
});

t.test('a version made with an API token has no author', async (t) => {
  const agent = await newAgent();
  t.equal((await patch(agent.id, { greeting: 'Hello there!' }, apiToken)).status, 200);
  const [latest] = (await versions(t, agent.id, '', apiToken)).body.versions;
  t.match(latest, { version: 2, createdBy: null, changes: ['greeting'] });
});

t.test('versions are paged, newest first', async (t) => {
  const agent = await newAgent();
  for (const debounceMs of [100, 200, 300, 400]) t.equal((await patch(agent.id, { debounceMs })).status, 200);
  const page1 = (await versions(t, agent.id, '?limit=2')).body;
  t.same(page1.versions.map((v: { version: number }) => v.version), [5, 4]);
  t.same([page1.total, page1.limit, page1.offset], [5, 2, 0]);
  t.same(page1.versions.map((v: { current: boolean }) => v.current), [true, false], 'only the newest is current');
  const page3 = (await versions(t, agent.id, '?limit=2&offset=4')).body;
  t.same(page3.versions.map((v: { version: number }) => v.version), [1]);
  t.equal((await api('GET', `/api/agents/${agent.id}/versions?limit=0`, { token: acme.token })).status, 400);
});

t.test('a restore makes a new version equal to the one restored, its model key included', async (t) => {
  const box = new SecretBox(svc.config.secretsKeys);
  const agent = await newAgent({ systemPrompt: 'v1' });
  const v2 = (await patch(agent.id, { systemPrompt: 'v2', model: { provider: 'openai', name: 'gpt-4o', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-version-two' } })).body.agent;
  t.equal(v2.version, 2);
  const v3 = (await patch(agent.id, { systemPrompt: 'v3', onNoAnswer: 'fallback', model: { provider: 'builtin', name: null, baseUrl: null, apiKey: null } })).body.agent;
  t.match(v3, { version: 3, model: { provider: 'builtin', hasApiKey: false } });

  const restored = await restore(t, agent.id, 2);
  t.equal(restored.status, 201);
  t.match(restored.body.version, { version: 4, createdBy: acme.userId, restoredFrom: 2, replayId: null, current: true });
  t.same(restored.body.version.changes, ['systemPrompt', 'model.provider', 'model.name', 'model.baseUrl', 'model.apiKey', 'onNoAnswer']);
  const { version: _v, updatedAt: _u, ...now } = restored.body.agent;
  const { version: _v2, updatedAt: _u2, ...then } = v2;
  t.same(now, then, 'every field as it was in version 2');
  t.equal(restored.body.agent.version, 4);
  t.equal(restored.body.agent.model.hasApiKey, true, 'the key that went with the model server is back');
  const row = await svc.orm.em.fork().findOneOrFail(AgentSchema, { id: agent.id }, { filters: false, populate: ['modelApiKeySealed'] });
  t.equal(box.open(row.modelApiKeySealed!), 'sk-version-two', 'and it opens to the key sent with version 2');
  t.same((await api('GET', `/api/agents/${agent.id}`, { token: acme.token })).body.agent, restored.body.agent, 'stored');

  const list = (await versions(t, agent.id)).body;
  t.same(list.versions.map((v: { version: number; current: boolean }) => [v.version, v.current]), [[4, true], [3, false], [2, false], [1, false]], 'history is kept, the restore is on top');
});

t.test('restoring the settings the agent has: 200, nothing new', async (t) => {
  const agent = await newAgent({ systemPrompt: 'one' });
  await patch(agent.id, { systemPrompt: 'two', spendCapUsdPerDay: '3.00' });
  const current = await restore(t, agent.id, 2);
  t.equal(current.status, 200);
  t.match(current.body, { agent: { id: agent.id, version: 2, systemPrompt: 'two' }, version: { version: 2, current: true, changes: ['systemPrompt', 'spendCapUsdPerDay'] } });
  await patch(agent.id, { systemPrompt: 'one', spendCapUsdPerDay: null }); // version 3: the settings of version 1 again
  const again = await restore(t, agent.id, 1);
  t.equal(again.status, 200, 'version 1 has the settings of now');
  t.match(again.body.version, { version: 3, current: true });
  t.equal((await versions(t, agent.id)).body.total, 3, 'no version was made');
});

t.test('an unknown version: 404', async (t) => {
  const agent = await newAgent();
  for (const v of [2, 0, 'x', 99999999999]) {
    const res = await api('POST', `/api/agents/${agent.id}/versions/${v}/restore`, { token: acme.token });
    t.equal(res.status, 404, `version ${v}`);
    t.match(res.body.error, { code: 'NOT_FOUND', message: 'Version not found.' });
  }
  documented(t, 'post', '/api/agents/{id}/versions/{v}/restore', await api('POST', `/api/agents/${agent.id}/versions/7/restore`, { token: acme.token }));
});

t.test("a version whose knowledge base was deleted is not restored: 400 knowledgeBaseId", async (t) => {
  const kb = (await api('POST', '/api/knowledge-bases', { token: acme.token, body: { name: 'Old FAQ', language: 'english' } })).body.knowledgeBase;
  const agent = await newAgent({ knowledgeBaseId: kb.id });
  t.equal((await patch(agent.id, { knowledgeBaseId: null })).body.agent.version, 2);
  t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}`, { token: acme.token })).status, 204);
  const res = await restore(t, agent.id, 1);
  t.equal(res.status, 400);
  t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field: 'knowledgeBaseId' }] });
  t.match((await api('GET', `/api/agents/${agent.id}`, { token: acme.token })).body.agent, { version: 2, knowledgeBaseId: null }, 'nothing changed');
  t.equal((await versions(t, agent.id)).body.total, 2);
});

t.test('operators may not see or restore versions; another company finds no agent', async (t) => {
  const agent = await newAgent();
  await patch(agent.id, { greeting: 'Hi!' });
  t.equal((await versions(t, agent.id, '', operator.token)).status, 403);
  t.equal((await restore(t, agent.id, 1, operator.token)).status, 403);
  t.equal((await versions(t, agent.id, '', globex.token)).status, 404);
  t.equal((await restore(t, agent.id, 1, globex.token)).status, 404);
  t.match((await api('GET', `/api/agents/${agent.id}`, { token: acme.token })).body.agent, { version: 2, greeting: 'Hi!' }, 'nothing restored');
});

t.test('two changes at the same moment: each saved one is a version of its own', async (t) => {
  const agent = await newAgent();
  const answers = await Promise.all(['a', 'b', 'c', 'd'].map((p) => patch(agent.id, { systemPrompt: p })));
  for (const a of answers) t.ok(a.status === 200 || (a.status === 409 && a.body.error.code === 'CONFLICT'), `200 or 409 CONFLICT (${a.status})`);
  t.comment(`statuses: ${answers.map((a) => a.status).join(', ')}`);
  const saved = answers.filter((a) => a.status === 200);
  t.ok(saved.length >= 1);
  const list = (await versions(t, agent.id)).body;
  const numbers = list.versions.map((v: { version: number }) => v.version);
  t.same(numbers, Array.from({ length: numbers.length }, (_, i) => numbers.length - i), 'numbered 1..n with no gap or twin');
  t.equal(list.total, 1 + saved.length, 'a version per saved change');
  const now = (await api('GET', `/api/agents/${agent.id}`, { token: acme.token })).body.agent;
  t.equal(now.version, numbers[0], "the agent's version is the newest");
});

t.test('applyAgentInput on a copy of the agent changes the copy only (what a replay validates its changes with)', async (t) => {
  const agent = await newAgent({ systemPrompt: 'kept' });
  const tenant = tenantScope(svc.orm, acme.companyId);
  const managed = await tenant.em.findOneOrFail(AgentSchema, { id: agent.id }, { populate: ['modelApiKeySealed'] });
  const copy = { ...managed };
  await applyAgentInput(tenant, copy, { systemPrompt: 'changed', model: { provider: 'openai', name: 'm', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-copy' } }, new SecretBox(svc.config.secretsKeys), svc.config);
  t.match(settingsOf(copy), { systemPrompt: 'changed', modelProvider: 'openai', modelName: 'm' });
  t.ok(copy.modelApiKeySealed, 'the key sealed on the copy');
  t.equal(managed.systemPrompt, 'kept', 'the managed entity is untouched');
  await tenant.em.flush();
  t.match((await api('GET', `/api/agents/${agent.id}`, { token: acme.token })).body.agent, { systemPrompt: 'kept', version: 1, model: { provider: 'builtin', hasApiKey: false } }, 'a flush of its manager saves nothing of the copy');
  const refused = applyAgentInput(tenant, { ...managed }, { model: { provider: 'openai' } }, new SecretBox(svc.config.secretsKeys), svc.config);
  await t.rejects(refused, { code: 'VALIDATION_ERROR' }, 'every PATCH rule applies');
});
