import t from 'tap';
import { startTestService, signUp } from '../support/service.js';
import { ApiTokenSchema } from '../../schema/entities.js';
import { sha256Hex } from '../../lib/secrets.js';

const svc = await startTestService(t, 'apitokens');
const { api } = svc;
const acme = await signUp(api, 'Acme');
const globex = await signUp(api, 'Globex');

t.test('create shows the token once; only a hash is stored', async (t) => {
  const res = await api('POST', '/api/api-tokens', { token: acme.token, body: { name: 'CI script' } });
  t.equal(res.status, 201);
  const tok = res.body.apiToken;
  t.match(tok, { id: Number, name: 'CI script', prefix: /^mas_.{8}$/, token: /^mas_[\w-]{43}$/ });
  t.ok(tok.token.startsWith(tok.prefix));
  t.match(tok.createdAt, /Z$/);
  const rows = await svc.orm.em.fork().find(ApiTokenSchema, {}, { filters: false });
  t.equal(rows.length, 1);
  t.equal(rows[0]!.tokenHash, sha256Hex(tok.token));
  t.notOk(JSON.stringify(rows).includes(tok.token), 'the token itself is not stored');

  const list = await api('GET', '/api/api-tokens', { token: acme.token });
  t.equal(list.status, 200);
  t.equal(list.body.apiTokens.length, 1);
  t.notOk('token' in list.body.apiTokens[0], 'list has no secrets');
  t.equal(list.body.apiTokens[0].lastUsedAt, null);
  t.equal(tok.createdBy, acme.userId, 'the token records who made it');
  t.equal(list.body.apiTokens[0].createdBy, acme.userId, 'and the list says so');
});

t.test('an API token works on protected routes, scoped to its company', async (t) => {
  const created = await api('POST', '/api/api-tokens', { token: acme.token, body: { name: 'agents reader' } });
  const key = created.body.apiToken.token;
  const agents = await api('GET', '/api/agents', { token: key });
  t.equal(agents.status, 200);
  t.same(agents.body, { agents: [], total: 0, limit: 50, offset: 0 });
  await api('POST', '/api/agents', { token: globex.token, body: { name: 'Globex bot' } });
  t.same((await api('GET', '/api/agents', { token: key })).body.agents, [], "another company's agent is not visible");
  const billing = await api('GET', '/api/billing', { token: key });
  t.equal(billing.body.billing.balanceUsd, '5.00');

  const list = await api('GET', '/api/api-tokens', { token: acme.token });
  const mine = list.body.apiTokens.find((x: { id: number }) => x.id === created.body.apiToken.id);
  t.match(mine.lastUsedAt, /Z$/, 'last-used time recorded');

  t.equal((await api('GET', '/api/api-tokens', { token: key })).status, 401, 'token management needs a session');
  t.equal((await api('POST', '/api/api-tokens', { token: key, body: { name: 'x' } })).status, 401);
  t.equal((await api('GET', '/api/auth/me', { token: key })).status, 401, '/me is for sessions');
});

t.test('revoke: 204, then the token answers 401; other companies get 404', async (t) => {
  const created = await api('POST', '/api/api-tokens', { token: acme.token, body: { name: 'temp' } });
  const { id, token } = created.body.apiToken;
  t.equal((await api('DELETE', `/api/api-tokens/${id}`, { token: globex.token })).status, 404, "another company can't revoke it");
  t.equal((await api('GET', '/api/agents', { token })).status, 200, 'still works after the foreign attempt');
  t.equal((await api('DELETE', `/api/api-tokens/${id}`, { token: acme.token })).status, 204);
  const after = await api('GET', '/api/agents', { token });
  t.equal(after.status, 401);
  t.equal(after.body.error.code, 'UNAUTHORIZED');
  t.equal((await api('DELETE', `/api/api-tokens/${id}`, { token: acme.token })).status, 404, 'already revoked');
  t.equal((await api('DELETE', '/api/api-tokens/abc', { token: acme.token })).status, 404);
  t.notOk((await api('GET', '/api/api-tokens', { token: acme.token })).body.apiTokens.some((x: { id: number }) => x.id === id));
});

t.test('validation', async (t) => {
  const res = await api('POST', '/api/api-tokens', { token: acme.token, body: { name: '' } });
  t.equal(res.status, 400);
  t.equal(res.body.error.details[0].field, 'name');
});
