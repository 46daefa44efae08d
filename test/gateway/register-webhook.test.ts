import t from 'tap';
import { DEFAULT_HELPDESK_TIMEOUT_MS } from '../../lib/helpdesk-client.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, dropNatsPrefixAtEnd } from '../support/webhooks.js';

const PUBLIC = 'https://mas.example.test';
const TOKEN = 'c2d-account-token-4711';
const desk = await startChat2DeskStub(t, TOKEN);
const svc = await startTestService(t, 'register_webhook', { env: { HELPDESK_GLOBAL_URL: desk.url, PUBLIC_BASE_URL: PUBLIC } });
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const owner = await signUp(api, 'Registering Co');
const agentId = await createAgent(api, owner.token);
const register = (id: number) => api('POST', `/api/integrations/${id}/register-webhook`, { token: owner.token });
const EVENTS = ['inbox', 'close_dialog', 'close_request', 'dialog_transferred'];

t.test('registers the webhook, then updates the same registration', async (t) => {
  const i = await createIntegration(api, owner.token, { name: 'Desk', agentId, apiToken: TOKEN, region: 'global' });
  t.equal(i.apiUrl, desk.url);
  t.equal(i.webhookStatus, 'ok', 'registered on creation');

  const first = await register(i.id);
  t.equal(first.status, 200);
  t.same(Object.keys(first.body).sort(), ['ok', 'webhookRegisteredAt']);
  t.equal(first.body.ok, true);
  t.match(first.body.webhookRegisteredAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.equal(desk.webhooks.length, 1);
  const hook = desk.webhooks[0]!;
  t.equal(hook.url, `${PUBLIC}/api/webhook/helpdesk/${i.id}`);
  t.same(hook.events, EVENTS);
  t.type(hook.name, 'string');
  const created = desk.requests.find((r) => r.method === 'POST' && r.path === '/v1/webhooks')!;
  t.equal(created.headers.authorization, TOKEN, 'Authorization is the bare token');
  t.ok(desk.requests.some((r) => r.method === 'GET' && r.path === '/v1/webhooks'), 'looked for an existing one first');

  const shown = (await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration;
  t.equal(shown.webhookStatus, 'ok');
  t.equal(shown.webhookRegisteredAt, first.body.webhookRegisteredAt);

  await new Promise((r) => setTimeout(r, 5));
  const again = await register(i.id);
  t.equal(again.status, 200);
  t.ok(Date.parse(again.body.webhookRegisteredAt) > Date.parse(first.body.webhookRegisteredAt), 'a new registration time');
  t.equal(desk.webhooks.length, 1, 'no duplicate');
  t.ok(desk.requests.some((r) => r.method === 'PUT' && r.path === `/v1/webhooks/${hook.id}`), 'PUT on the same remote id');
  t.equal(desk.requests.filter((r) => r.method === 'POST' && r.path === '/v1/webhooks').length, 1, 'created only once');
});

t.test('an existing registration with our URL is updated, not duplicated', async (t) => {
  // Refused at creation: the one set up by hand below is the only one with our URL.
  desk.handle((r) => (r.method === 'POST' && r.path === '/v1/webhooks' ? { status: 500, body: {} } : undefined));
  const i = await createIntegration(api, owner.token, { name: 'Desk 2', agentId, apiToken: TOKEN, region: 'global' });
  desk.handle(null);
  t.equal(i.webhookStatus, 'pending');
  const url = `${PUBLIC}/api/webhook/helpdesk/${i.id}`;
  desk.webhooks.push({ id: 77, url, name: 'set up by hand', events: ['inbox'] });
  const before = desk.webhooks.length;
  const res = await register(i.id);
  t.equal(res.status, 200);
  t.equal(desk.webhooks.length, before);
  const updated = desk.webhooks.find((w) => w.id === 77)!;
  t.same(updated.events, EVENTS, 'now subscribed to every event we act on');
  t.equal(updated.url, url);
});

t.test('400 not_supported without apiUrl, or for webchat', async (t) => {
  const plain = await createIntegration(api, owner.token, { name: 'No URL', agentId });
  const res = await register(plain.id);
  t.equal(res.status, 400);
  t.equal(res.body.error.code, 'not_supported');
  const chat = await createIntegration(api, owner.token, { type: 'webchat', name: 'Widget', agentId });
  const chatRes = await register(chat.id);
  t.equal(chatRes.status, 400);
  t.equal(chatRes.body.error.code, 'not_supported');
  t.equal((await api('GET', `/api/integrations/${plain.id}`, { token: owner.token })).body.integration.webhookStatus, 'pending');
});

t.test('502 naming what the helpdesk answered (never its own words) when it refuses or is down', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.method === 'POST' && r.path === '/v1/webhooks' ? { status: 400, body: { status: 'error', message: 'Webhooks limit (5) reached' } } : undefined));
  const i = await createIntegration(api, owner.token, { name: 'Refused', agentId, apiToken: TOKEN, region: 'global' });
  const full = await register(i.id);
  t.equal(full.status, 502);
  t.equal(full.body.error.code, 'UPSTREAM_ERROR');
  t.match(full.body.error.message, /HTTP 400/);
  t.notMatch(full.body.error.message, /Webhooks limit/, 'the helpdesk\'s own text is not relayed');
  t.notOk(JSON.stringify(full.body).includes(TOKEN), 'never the token');
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration.webhookStatus, 'pending', 'still pending');
  desk.handle(null);

  const wrong = await createIntegration(api, owner.token, { name: 'Wrong token', agentId, apiUrl: desk.url, apiToken: 'wrong-token-9876' });
  const refused = await register(wrong.id);
  t.equal(refused.status, 502);
  t.match(refused.body.error.message, /refused the API token \(HTTP 401\)/);
  t.notOk(refused.body.error.message.includes('wrong-token-9876'), 'never the token');

  const gone = await createIntegration(api, owner.token, { name: 'Gone', agentId, apiUrl: 'http://127.0.0.1:9', apiToken: TOKEN });
  const down = await register(gone.id);
  t.equal(down.status, 502);
  t.equal(down.body.error.code, 'UPSTREAM_ERROR');
  t.match(down.body.error.message, /unreachable|timed out/);
});

t.test('HTTP 200 with {"status":"error"} is a failed registration, not a success', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.method === 'POST' && r.path === '/v1/webhooks' ? { status: 200, body: { status: 'error', message: 'Webhooks limit (5) reached' } } : undefined));
  const i = await createIntegration(api, owner.token, { name: 'Status error', agentId, apiToken: TOKEN, region: 'global' });
  t.equal(i.webhookStatus, 'pending', 'not OK at creation either');
  const res = await register(i.id);
  t.equal(res.status, 502);
  t.equal(res.body.error.code, 'UPSTREAM_ERROR');
  t.match(res.body.error.message, /status "error" \(HTTP 200\)/, 'says what came back');
  t.notMatch(res.body.error.message, /limit/, "never the helpdesk's own words");
  t.match((await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration, { webhookStatus: 'pending', webhookRegisteredAt: null });
});

t.test('re-registering switches a disabled webhook back on and reads its status back', async (t) => {
  const i = await createIntegration(api, owner.token, { name: 'Switched off', agentId, apiToken: TOKEN, region: 'global' });
  t.equal((await register(i.id)).status, 200);
  const hook = desk.webhooks.find((w) => w.url === `${PUBLIC}/api/webhook/helpdesk/${i.id}`)!;
  t.equal(hook.status, 'enable', 'created switched on');
  // Chat2Desk switches a webhook off after 5 h without a successful delivery.
  desk.disableWebhook(hook.id);
  const before = desk.requests.length;
  const again = await register(i.id);
  t.equal(again.status, 200);
  t.equal(hook.status, 'enable', 'switched on again');
  const calls = desk.requests.slice(before).map((r) => `${r.method} ${r.path}`);
  t.same(calls, ['GET /v1/webhooks', `PUT /v1/webhooks/${hook.id}`, 'GET /v1/webhooks'], 'found, updated, read back');
  t.match(desk.requests.slice(before)[1]!.body, { url: hook.url, events: EVENTS, status: 'enable' });
});

t.test('a helpdesk that keeps the webhook switched off: 502, and the badge no longer says OK', async (t) => {
  t.teardown(() => desk.handle(null));
  const i = await createIntegration(api, owner.token, { name: 'Stays off', agentId, apiToken: TOKEN, region: 'global' });
  t.equal((await register(i.id)).status, 200);
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration.webhookStatus, 'ok');
  const hook = desk.webhooks.find((w) => w.url === `${PUBLIC}/api/webhook/helpdesk/${i.id}`)!;
  desk.disableWebhook(hook.id);
  // The helpdesk says success but does not switch it on.
  desk.handle((r) => (r.method === 'PUT' && r.path === `/v1/webhooks/${hook.id}` ? { status: 200, body: { status: 'success', data: hook } } : undefined));
  const res = await register(i.id);
  t.equal(res.status, 502);
  t.match(res.body.error.message, /keeps the webhook switched off/);
  t.equal((await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration.webhookStatus, 'pending');
});

const hooksAt = (id: number) => desk.webhooks.filter((w) => w.url === `${PUBLIC}/api/webhook/helpdesk/${id}`);
const create = (body: Record<string, unknown>) => api('POST', '/api/integrations', { token: owner.token, body: { type: 'helpdesk', agentId, ...body } });

t.test('a helpdesk integration created with an apiToken registers its webhook at once', async (t) => {
  const before = desk.requests.length;
  const res = await create({ name: 'At once', apiToken: TOKEN, region: 'global' });
  t.equal(res.status, 201);
  const i = res.body.integration;
  t.match(i, { webhookStatus: 'ok', webhookRegisteredAt: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/ });
  t.equal(res.body.webhookError, null);
  const [hook, ...more] = hooksAt(i.id);
  t.equal(more.length, 0, 'one registration');
  t.match(hook, { url: `${PUBLIC}/api/webhook/helpdesk/${i.id}`, events: EVENTS, status: 'enable' }, 'the helpdesk has our URL, switched on');
  t.ok(desk.requests.slice(before).some((r) => r.method === 'POST' && r.path === '/v1/webhooks' && r.headers.authorization === TOKEN), 'registered with the token given');
  const shown = (await api('GET', `/api/integrations/${i.id}`, { token: owner.token })).body.integration;
  t.same(shown, (({ webhookSecret: _s, ...rest }) => rest)(i), 'GET shows the same record, registered');
  // "Re-register" finds the same one.
  t.equal((await register(i.id)).status, 200);
  t.equal(hooksAt(i.id).length, 1, 'no duplicate');
});

t.test('a helpdesk that refuses or is down: created all the same, pending with its reason', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.method === 'POST' && r.path === '/v1/webhooks' ? { status: 400, body: { status: 'error', message: 'Webhooks limit (5) reached' } } : undefined));
  const refused = await create({ name: 'Refused at creation', apiToken: TOKEN, region: 'global' });
  t.equal(refused.status, 201);
  t.match(refused.body, { integration: { webhookStatus: 'pending', webhookRegisteredAt: null }, webhookError: { code: 'UPSTREAM_ERROR', message: /^The helpdesk did not register the webhook: .*HTTP 400/ } });
  t.notMatch(refused.body.webhookError.message, /Webhooks limit/, "never the helpdesk's own words");
  t.equal(hooksAt(refused.body.integration.id).length, 0);
  desk.handle(null);
  // Once the helpdesk takes it, "Register webhook" does it.
  t.equal((await register(refused.body.integration.id)).status, 200);
  t.equal((await api('GET', `/api/integrations/${refused.body.integration.id}`, { token: owner.token })).body.integration.webhookStatus, 'ok');

  const wrong = await create({ name: 'Wrong token at creation', apiUrl: desk.url, apiToken: 'wrong-token-1234' });
  t.equal(wrong.status, 201);
  t.match(wrong.body, { integration: { webhookStatus: 'pending' }, webhookError: { message: /refused the API token \(HTTP 401\)/ } });
  t.notOk(JSON.stringify(wrong.body).includes('wrong-token-1234'), 'never the token');

  const gone = await create({ name: 'Gone at creation', apiUrl: 'http://127.0.0.1:9', apiToken: TOKEN });
  t.equal(gone.status, 201);
  t.match(gone.body, { integration: { webhookStatus: 'pending' }, webhookError: { code: 'UPSTREAM_ERROR', message: /unreachable|timed out/ } });
});

t.test('a slow helpdesk holds the creation no longer than the helpdesk timeout', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.path === '/v1/webhooks' ? { status: 200, body: { status: 'success', data: [] }, delayMs: DEFAULT_HELPDESK_TIMEOUT_MS + 5_000 } : undefined));
  const started = Date.now();
  const slow = await create({ name: 'Slow at creation', apiToken: TOKEN, region: 'global' });
  const took = Date.now() - started;
  t.equal(slow.status, 201);
  t.match(slow.body, { integration: { webhookStatus: 'pending' }, webhookError: { code: 'UPSTREAM_ERROR', message: /timed out|did not answer within 10 s/ } });
  t.ok(took < DEFAULT_HELPDESK_TIMEOUT_MS + 2_000, `answered after ${took} ms`);
});

t.test('without an apiToken nothing is registered: pending, as before', async (t) => {
  const before = desk.requests.length;
  const res = await create({ name: 'No token' });
  t.equal(res.status, 201);
  t.match(res.body.integration, { webhookStatus: 'pending', webhookRegisteredAt: null });
  t.equal(res.body.webhookError, null, 'nothing to report');
  t.equal(desk.requests.length, before, 'the helpdesk was not asked');
});
