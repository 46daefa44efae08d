import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';

const PUBLIC = 'https://hooks.example.test';
const globalDesk = await startChat2DeskStub(t, 'tok-global-account');
const europeDesk = await startChat2DeskStub(t, 'tok-europe-account');
const svc = await startTestService(t, 'integrations', {
  env: { HELPDESK_GLOBAL_URL: globalDesk.url, HELPDESK_EUROPE_URL: europeDesk.url, PUBLIC_BASE_URL: PUBLIC },
});
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const acme = await signUp(api, 'Acme');
const acmeAgent = await createAgent(api, acme.token);
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const apiInfoCalls = () => [...globalDesk.requests, ...europeDesk.requests].filter((r) => r.path === '/v1/companies/api_info').length;

t.test('create answers the integration with its secret, shown only this once', async (t) => {
  const res = await api('POST', '/api/integrations', {
    token: acme.token,
    body: { type: 'helpdesk', name: ' Support desk ', agentId: acmeAgent, apiUrl: globalDesk.url, apiToken: 'tok-global-account' },
  });
  t.equal(res.status, 201);
  const i = res.body.integration;
  t.match(i, {
    id: Number,
    type: 'helpdesk',
    name: 'Support desk',
    agentId: acmeAgent,
    active: true,
    apiUrl: globalDesk.url,
    region: 'global',
    hasApiToken: true,
    webhookStatus: 'ok',
    webhookRegisteredAt: ISO_MS,
    createdAt: ISO_MS,
  });
  t.equal(res.body.webhookError, null, 'registered at creation: no error beside it');
  t.equal(i.webhookUrl, `${PUBLIC}/api/webhook/helpdesk/${i.id}`);
  t.match(i.webhookSecret, /^[0-9a-f]{64}$/);
  t.notOk('apiToken' in i, 'the helpdesk token is write-only');
  t.equal(apiInfoCalls(), 0, 'an explicit apiUrl is not probed');

  const one = await api('GET', `/api/integrations/${i.id}`, { token: acme.token });
  t.equal(one.status, 200);
  t.same({ ...one.body.integration }, (({ webhookSecret: _s, ...rest }) => rest)(i), 'GET shows the same record without the secret');
  const list = await api('GET', '/api/integrations', { token: acme.token });
  t.equal(list.status, 200);
  t.ok(list.body.integrations.some((x: { id: number }) => x.id === i.id));
  for (const text of [JSON.stringify(one.body), JSON.stringify(list.body)]) {
    t.notOk(text.includes(i.webhookSecret), 'no secret');
    t.notOk(text.includes('tok-global-account'), 'no token');
  }
  const second = await createIntegration(api, acme.token, { name: 'Second', agentId: acmeAgent });
  t.not(second.webhookSecret, i.webhookSecret, 'every integration has its own secret');

  const chat = await api('POST', '/api/integrations', {
    token: acme.token,
    body: { type: 'webchat', name: 'Site widget', agentId: acmeAgent, allowedOrigins: ['https://Shop.Example.com/', 'https://shop.example.com'] },
  });
  t.equal(chat.status, 201);
  t.match(chat.body.integration, { type: 'webchat', apiUrl: null, hasApiToken: false, allowedOrigins: ['https://shop.example.com'] });
  t.equal(chat.body.integration.webhookUrl, `${PUBLIC}/api/webhook/webchat/${chat.body.integration.id}`);
});

t.test('validation errors name the field', async (t) => {
  const other = await signUp(api, 'Other Co');
  const foreignAgent = await createAgent(api, other.token);
  const cases: [string, Record<string, unknown>, string][] = [
    ['missing name', { type: 'helpdesk', agentId: acmeAgent }, 'name'],
    ['blank name', { type: 'helpdesk', name: '  ', agentId: acmeAgent }, 'name'],
    ['unknown type', { type: 'sms', name: 'x', agentId: acmeAgent }, 'type'],
    ['missing agent', { type: 'helpdesk', name: 'x' }, 'agentId'],
    ['agent of another company', { type: 'helpdesk', name: 'x', agentId: foreignAgent }, 'agentId'],
    ['agent that does not exist', { type: 'helpdesk', name: 'x', agentId: 987654 }, 'agentId'],
    ['apiUrl not http', { type: 'helpdesk', name: 'x', agentId: acmeAgent, apiUrl: 'ftp://example.com' }, 'apiUrl'],
    ['bad region', { type: 'helpdesk', name: 'x', agentId: acmeAgent, region: 'mars' }, 'region'],
    ['origins on a helpdesk', { type: 'helpdesk', name: 'x', agentId: acmeAgent, allowedOrigins: ['https://a.example'] }, 'allowedOrigins'],
    ['token on a webchat', { type: 'webchat', name: 'x', agentId: acmeAgent, apiToken: 'abc' }, 'apiToken'],
    ['origin with a path', { type: 'webchat', name: 'x', agentId: acmeAgent, allowedOrigins: ['https://a.example/page'] }, 'allowedOrigins.0'],
    ['unknown field', { type: 'helpdesk', name: 'x', agentId: acmeAgent, colour: 'red' }, 'colour'],
    ['handoff group on a webchat', { type: 'webchat', name: 'x', agentId: acmeAgent, handoffGroupId: 3 }, 'handoffGroupId'],
    ['handoff group zero', { type: 'helpdesk', name: 'x', agentId: acmeAgent, handoffGroupId: 0 }, 'handoffGroupId'],
    ['handoff group not a number', { type: 'helpdesk', name: 'x', agentId: acmeAgent, handoffGroupId: '3' }, 'handoffGroupId'],
  ];
  for (const [label, body, field] of cases) {
    const res = await api('POST', '/api/integrations', { token: acme.token, body });
    t.equal(res.status, 400, label);
    t.equal(res.body.error?.code, 'VALIDATION_ERROR', label);
    t.ok(res.body.error?.details?.some((d: { field: string }) => d.field === field), `${label}: names ${field}`);
  }
  t.equal((await api('POST', '/api/integrations', { body: { type: 'helpdesk', name: 'x', agentId: acmeAgent } })).status, 401, 'no credential');
  const list = await api('GET', '/api/integrations', { token: acme.token });
  t.notOk(list.body.integrations.some((i: { name: string }) => i.name === 'x'), 'nothing was created');
});

t.test('PATCH changes what it is given; DELETE removes', async (t) => {
  const i = await createIntegration(api, acme.token, { name: 'Desk', agentId: acmeAgent });
  const agent2 = await createAgent(api, acme.token, 'Second bot');
  const patched = await api('PATCH', `/api/integrations/${i.id}`, {
    token: acme.token,
    body: { name: 'Renamed', agentId: agent2, active: false, apiUrl: europeDesk.url, apiToken: 'tok-europe-account' },
  });
  t.equal(patched.status, 200);
  t.match(patched.body.integration, { name: 'Renamed', agentId: agent2, active: false, apiUrl: europeDesk.url, region: 'europe', hasApiToken: true });
  t.notOk('webhookSecret' in patched.body.integration);
  t.ok(Date.parse(patched.body.integration.updatedAt) >= Date.parse(i.updatedAt));
  t.same((await api('GET', `/api/integrations/${i.id}`, { token: acme.token })).body.integration, patched.body.integration, 'stored');

  const bad = await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { agentId: 424242 } });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.details[0].field, 'agentId');
  t.equal((await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { type: 'webchat' } })).status, 400, 'type cannot change');
  const cleared = await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { apiToken: null, apiUrl: null } });
  t.match(cleared.body.integration, { apiUrl: null, region: null, hasApiToken: false });
  t.equal(cleared.body.integration.handoffGroupId, null, 'no handoff group by default');
  const grouped = await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { handoffGroupId: 42 } });
  t.equal(grouped.body.integration.handoffGroupId, 42);
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: acme.token })).body.integration.handoffGroupId, 42, 'stored');
  t.equal((await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { handoffGroupId: null } })).body.integration.handoffGroupId, null, 'null clears it');

  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: acme.token })).status, 204);
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: acme.token })).status, 404);
  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: acme.token })).status, 404);
  t.equal((await deliver(api, i.id, { hook_type: 'outbox' }, { secret: i.webhookSecret })).status, 404, 'its webhook is gone too');
});

t.test('another company sees none of it, with a session or an API token', async (t) => {
  const i = await createIntegration(api, acme.token, { name: 'Private desk', agentId: acmeAgent, apiUrl: globalDesk.url, apiToken: 'tok-global-account' });
  const rival = await signUp(api, 'Rival');
  const rivalKey = await api('POST', '/api/api-tokens', { token: rival.token, body: { name: 'script' } });
  t.equal(rivalKey.status, 201);
  const acmeKey = await api('POST', '/api/api-tokens', { token: acme.token, body: { name: 'script' } });
  const before = (await api('GET', `/api/integrations/${i.id}`, { token: acme.token })).body.integration;
  const hooksBefore = globalDesk.requests.length;

  for (const [who, token] of [['session', rival.token], ['API token', rivalKey.body.apiToken.token]] as const) {
    const routes: [string, string, unknown][] = [
      ['GET', `/api/integrations/${i.id}`, undefined],
      ['PATCH', `/api/integrations/${i.id}`, { name: 'hijacked', active: false }],
      ['POST', `/api/integrations/${i.id}/rotate-secret`, undefined],
      ['POST', `/api/integrations/${i.id}/register-webhook`, undefined],
      ['DELETE', `/api/integrations/${i.id}`, undefined],
    ];
    for (const [method, path, body] of routes) {
      const res = await api(method, path, { token, body });
      t.equal(res.status, 404, `${who}: ${method} ${path}`);
      t.equal(res.body.error?.code, 'NOT_FOUND');
    }
    const list = await api('GET', '/api/integrations', { token });
    t.same(list.body.integrations, [], `${who}: an empty list`);
  }
  const after = await api('GET', `/api/integrations/${i.id}`, { token: acmeKey.body.apiToken.token });
  t.equal(after.status, 200, 'the owner still has it (with its own API token)');
  t.same(after.body.integration, before, 'unchanged: not renamed, deactivated, rotated or registered');
  t.equal(globalDesk.requests.length, hooksBefore, 'the helpdesk was never called');
  t.equal((await deliver(api, i.id, { hook_type: 'outbox' }, { secret: i.webhookSecret })).status, 200, 'still active');
});

t.test('region: the instance that accepts the token is chosen', async (t) => {
  const base = { name: 'Probed', agentId: acmeAgent };
  const g = await createIntegration(api, acme.token, { ...base, apiToken: 'tok-global-account' });
  t.match(g, { apiUrl: globalDesk.url, region: 'global', hasApiToken: true });
  const e = await createIntegration(api, acme.token, { ...base, apiToken: 'tok-europe-account' });
  t.match(e, { apiUrl: europeDesk.url, region: 'europe' });
  const asked = europeDesk.requests.filter((r) => r.path === '/v1/companies/api_info').at(-1)!;
  t.equal(asked.headers.authorization, 'tok-europe-account', 'bare token, no "Bearer"');

  const neither = await api('POST', '/api/integrations', { token: acme.token, body: { type: 'helpdesk', ...base, apiToken: 'tok-nobody' } });
  t.equal(neither.status, 400);
  t.equal(neither.body.error.code, 'VALIDATION_ERROR');
  t.same(neither.body.error.details.map((d: { field: string }) => d.field), ['apiToken']);
  t.notOk(JSON.stringify(neither.body).includes('tok-nobody'));

  const calls = apiInfoCalls();
  const forced = await createIntegration(api, acme.token, { ...base, apiToken: 'tok-global-account', region: 'europe' });
  t.match(forced, { apiUrl: europeDesk.url, region: 'europe' });
  t.equal(apiInfoCalls(), calls, 'a forced region is not probed');

  const later = await createIntegration(api, acme.token, { ...base });
  t.match(later, { apiUrl: null, region: null, hasApiToken: false });
  const withToken = await api('PATCH', `/api/integrations/${later.id}`, { token: acme.token, body: { apiToken: 'tok-europe-account' } });
  t.match(withToken.body.integration, { apiUrl: europeDesk.url, region: 'europe', hasApiToken: true }, 'a token added later is probed too');
});

t.test('region: both instances are asked at once', async (t) => {
  t.teardown(() => {
    globalDesk.handle(null);
    europeDesk.handle(null);
  });
  const slow = (accept: boolean) => (r: { path: string }) =>
    r.path === '/v1/companies/api_info' ? { status: accept ? 200 : 401, body: { status: accept ? 'success' : 'error' }, delayMs: 600 } : undefined;
  globalDesk.handle(slow(false));
  europeDesk.handle(slow(true));
  const started = Date.now();
  const e = await createIntegration(api, acme.token, { name: 'Slow', agentId: acmeAgent, apiToken: 'tok-any' });
  t.equal(e.region, 'europe');
  t.ok(Date.now() - started < 1150, `two 600 ms answers took ${Date.now() - started} ms`);
});

t.test('an apiUrl without its apiToken is refused; PATCH {apiUrl: null} clears it', async (t) => {
  const base = { type: 'helpdesk', name: 'Half set', agentId: acmeAgent };
  for (const [label, body] of [
    ['apiUrl alone', { ...base, apiUrl: globalDesk.url }],
    ['region alone', { ...base, region: 'europe' }],
  ] as const) {
    const res = await api('POST', '/api/integrations', { token: acme.token, body });
    t.equal(res.status, 400, label);
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
    t.same(res.body.error.details.map((d: { field: string }) => d.field), ['apiToken'], `${label}: names apiToken`);
    t.match(res.body.error.message, /no reply can be sent/);
  }

  const i = await createIntegration(api, acme.token, { name: 'Clearable', agentId: acmeAgent, apiToken: 'tok-global-account' });
  t.equal(i.apiUrl, globalDesk.url);
  const dropToken = await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { apiToken: null } });
  t.equal(dropToken.status, 400, 'the token cannot go while the apiUrl stays');
  t.same(dropToken.body.error.details.map((d: { field: string }) => d.field), ['apiToken']);

  const probes = apiInfoCalls();
  const cleared = await api('PATCH', `/api/integrations/${i.id}`, { token: acme.token, body: { apiUrl: null } });
  t.equal(cleared.status, 200);
  t.match(cleared.body.integration, { apiUrl: null, region: null, hasApiToken: true, webhookStatus: 'pending' }, 'cleared, not found again with the stored token');
  t.equal(apiInfoCalls(), probes, 'no instance was asked');
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: acme.token })).body.integration.apiUrl, null, 'stored');
  const registered = await api('POST', `/api/integrations/${i.id}/register-webhook`, { token: acme.token });
  t.equal(registered.body.error?.code, 'not_supported', 'no apiUrl: nothing to register with');
});

t.test('region: 502 when neither instance can be reached', async (t) => {
  await globalDesk.close();
  await europeDesk.close();
  const res = await api('POST', '/api/integrations', { token: acme.token, body: { type: 'helpdesk', name: 'Down', agentId: acmeAgent, apiToken: 'tok-secret-value' } });
  t.equal(res.status, 502);
  t.equal(res.body.error.code, 'UPSTREAM_ERROR');
  t.notOk(JSON.stringify(res.body).includes('tok-secret-value'), 'the token is not in the message');
  const list = await api('GET', '/api/integrations', { token: acme.token });
  t.notOk(list.body.integrations.some((i: { name: string }) => i.name === 'Down'), 'nothing was created');
});
