import { createHmac, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { createLogger } from '../../lib/logger.js';
import { startTelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually } from '../support/worker.js';

/**
 * WhatsApp Cloud API and Telegram integrations (contract.md § Direct channels): create, list,
 * get, patch, delete; write-only secrets (never in an answer, a list or the gateway's log);
 * WhatsApp's generated verifyToken; Telegram's setWebhook on create, register-webhook,
 * rotate-secret and a new botToken; a Telegram that refuses or is down; every bad field.
 */
const PUBLIC = 'https://hooks.example.test';
const BOT = `${1_000_000 + Math.floor(Math.random() * 1e6)}:${randomBytes(24).toString('base64url')}`;
const OTHER_BOT = `${2_000_000 + Math.floor(Math.random() * 1e6)}:${randomBytes(24).toString('base64url')}`;
const tg = await startTelegramSandbox({ tokens: [BOT, OTHER_BOT], latencyMs: [0, 5] });
let sandboxClosed = false;
t.teardown(async () => {
  if (!sandboxClosed) await tg.close();
});

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});
const svc = await startTestService(t, 'integrations_channels', { env: { TELEGRAM_API_URL: tg.url, PUBLIC_BASE_URL: PUBLIC }, logger: createLogger('debug', sink) });
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const acme = await signUp(api, 'Channels Co');
const agentId = await createAgent(api, acme.token);
const other = await signUp(api, 'Other Co');
const otherAgent = await createAgent(api, other.token);

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const ACCESS_TOKEN = `EAAG${randomBytes(40).toString('base64url')}`;
const APP_SECRET = randomBytes(16).toString('hex');
/** Every secret the tests hand to the service: none may come back, or reach the log. */
const SECRETS = new Set([BOT, OTHER_BOT, ACCESS_TOKEN, APP_SECRET]);
const noSecretIn = (tt: Test, value: unknown, what: string) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  for (const s of SECRETS) tt.notOk(text.includes(s), `${what}: no write-only secret`);
};

const create = (body: Record<string, unknown>, token = acme.token) => api('POST', '/api/integrations', { token, body });
const get = (id: number, token = acme.token) => api('GET', `/api/integrations/${id}`, { token });
const patch = (id: number, body: Record<string, unknown>, token = acme.token) => api('PATCH', `/api/integrations/${id}`, { token, body });
const registerWebhook = (id: number, token = acme.token) => api('POST', `/api/integrations/${id}/register-webhook`, { token });
const rotate = (id: number, token = acme.token) => api('POST', `/api/integrations/${id}/rotate-secret`, { token });
const sign = (secret: string, raw: string) => `sha256=${createHmac('sha256', secret).update(raw).digest('hex')}`;
/** POSTs a WhatsApp delivery to the real gateway, signed with `secret`. */
const whatsappPost = async (id: number, secret: string) => {
  const raw = JSON.stringify({ object: 'whatsapp_business_account', entry: [] });
  const res = await fetch(`${svc.url}/api/webhook/whatsapp/${id}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-hub-signature-256': sign(secret, raw) }, body: raw });
  await res.arrayBuffer();
  return res.status;
};
/** Telegram's delivery of a (group: ignored) update with `secret` in X-Telegram-Bot-Api-Secret-Token. */
const telegramPost = async (id: number, secret: string) =>
  (await tg.deliverUpdate(`${svc.url}/api/webhook/telegram/${id}`, secret, tg.update({ updateId: Math.floor(Math.random() * 1e9), chatId: -42, chatType: 'group', text: 'hi' }))).status;

const whatsappBody = { type: 'whatsapp', name: ' WhatsApp shop ', agentId, phoneNumberId: '106540352242922', accessToken: ACCESS_TOKEN, appSecret: APP_SECRET };

t.test('WhatsApp: create shows the verifyToken and never the access token or the app secret', async (t) => {
  const res = await create(whatsappBody);
  t.equal(res.status, 201, JSON.stringify(res.body));
  const i = res.body.integration;
  t.match(i, {
    id: Number,
    type: 'whatsapp',
    name: 'WhatsApp shop',
    agentId,
    active: true,
    apiUrl: null,
    phoneNumberId: '106540352242922',
    hasApiToken: true,
    hasAppSecret: true,
    webhookStatus: 'pending',
    webhookRegisteredAt: null,
    createdAt: ISO_MS,
  });
  t.equal(i.webhookUrl, `${PUBLIC}/api/webhook/whatsapp/${i.id}`);
  t.match(i.verifyToken, /^[0-9a-f]{64}$/, 'a generated verifyToken');
  t.notOk('webhookSecret' in i, 'the webhook secret is the app secret: write-only');
  t.equal(res.body.webhookError, null);
  for (const k of ['accessToken', 'appSecret', 'apiToken']) t.notOk(k in i, `no ${k}`);
  noSecretIn(t, res.body, 'create');

  const one = await get(i.id);
  t.equal(one.status, 200);
  t.same(one.body.integration, i, 'GET shows the same record, verifyToken included');
  const list = await api('GET', '/api/integrations', { token: acme.token });
  t.same(list.body.integrations.find((x: { id: number }) => x.id === i.id), i, 'so does the list');
  noSecretIn(t, one.body, 'GET');
  noSecretIn(t, list.body, 'list');
  const second = (await create({ ...whatsappBody, name: 'Second number', phoneNumberId: '2' })).body.integration;
  t.not(second.verifyToken, i.verifyToken, 'every integration its own verifyToken');

  // Meta's GET probe echoes the challenge with the shown verifyToken only; deliveries are signed with the app secret.
  const probe = await fetch(`${svc.url}/api/webhook/whatsapp/${i.id}?hub.mode=subscribe&hub.verify_token=${i.verifyToken}&hub.challenge=1158201444`);
  t.equal(probe.status, 200);
  t.equal(await probe.text(), '1158201444');
  const wrongProbe = await fetch(`${svc.url}/api/webhook/whatsapp/${i.id}?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`);
  t.equal(wrongProbe.status, 403);
  await wrongProbe.arrayBuffer();
  t.not(await whatsappPost(i.id, APP_SECRET), 401, 'signed with the app secret: verified');
  t.equal(await whatsappPost(i.id, 'not-the-app-secret'), 401);
});

/** The integration once `check` holds (webhook activity is recorded in batches: seconds at most). */
const until = (id: number, check: (i: any) => boolean, what: string): Promise<any> =>
  eventually(async () => {
    const i = (await get(id)).body.integration;
    return check(i) ? i : null;
  }, 5_000, what);

t.test("the health badge's webhookStatus of both: failing while deliveries are refused for their proof, ok once a proven one arrives", async (t) => {
  const w = (await create({ ...whatsappBody, name: 'Health WA' })).body.integration;
  const g = (await create({ type: 'telegram', name: 'Health TG', agentId, botToken: BOT })).body.integration;
  t.equal(w.webhookStatus, 'pending', 'WhatsApp: set in Meta’s dashboard, nothing received yet');
  t.equal(g.webhookStatus, 'ok', 'Telegram: registered by the create');

  t.equal(await whatsappPost(w.id, 'an old app secret'), 401);
  t.equal(await telegramPost(g.id, 'a'.repeat(64)), 401);
  for (const [i, what] of [[w, 'WhatsApp'], [g, 'Telegram']] as const) {
    const failing = await until(i.id, (x) => x.signatureFailuresLastHour === 1, `${what}: the refusal counted`);
    t.equal(failing.webhookStatus, 'failing', `${what}: not "Webhook OK" while its deliveries are refused`);
    t.equal(failing.lastWebhookAt, null);
    t.match(failing.lastSignatureFailure, { at: ISO_MS, reason: String }, `${what}: the last refusal and why`);
  }

  t.equal(await whatsappPost(w.id, APP_SECRET), 200);
  t.equal(await telegramPost(g.id, g.webhookSecret), 200);
  for (const [i, what] of [[w, 'WhatsApp'], [g, 'Telegram']] as const) {
    const ok = await until(i.id, (x) => x.lastWebhookAt !== null, `${what}: the accepted delivery recorded`);
    t.equal(ok.webhookStatus, 'ok', `${what}: deliveries arrive`);
    t.equal(ok.signatureFailuresLastHour, 1, `${what}: the refusal still counted for the hour`);
  }
});

t.test('WhatsApp: patch, register-webhook and rotate-secret refused, delete', async (t) => {
  const i = (await create({ ...whatsappBody, name: 'Patched' })).body.integration;
  const newSecret = randomBytes(20).toString('hex');
  const newToken = `EAAG${randomBytes(30).toString('base64url')}`;
  SECRETS.add(newSecret).add(newToken);
  const res = await patch(i.id, { name: 'Renamed', phoneNumberId: '999', accessToken: newToken, appSecret: newSecret });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.match(res.body.integration, { name: 'Renamed', phoneNumberId: '999', hasApiToken: true, hasAppSecret: true, verifyToken: i.verifyToken });
  t.notOk('webhookError' in res.body, 'nothing registered: no webhookError');
  noSecretIn(t, res.body, 'PATCH');
  t.not(await whatsappPost(i.id, newSecret), 401, 'the new app secret verifies');
  t.not(await whatsappPost(i.id, APP_SECRET), 401, 'the previous one through the grace period');

  const reg = await registerWebhook(i.id);
  t.equal(reg.status, 400);
  t.equal(reg.body.error.code, 'not_supported');
  t.match(reg.body.error.message, /Meta App Dashboard/);
  const rot = await rotate(i.id);
  t.equal(rot.status, 400);
  t.equal(rot.body.error.code, 'not_supported');
  t.match(rot.body.error.message, /appSecret/);
  noSecretIn(t, rot.body, 'rotate');

  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: acme.token })).status, 204);
  t.equal((await get(i.id)).status, 404);
});

t.test('Telegram: create registers the webhook with its secret, the bot token stays write-only', async (t) => {
  const before = tg.webhooks.length;
  const res = await create({ type: 'telegram', name: 'Bot', agentId, botToken: BOT });
  t.equal(res.status, 201, JSON.stringify(res.body));
  const i = res.body.integration;
  t.match(i, { type: 'telegram', hasApiToken: true, hasAppSecret: false, verifyToken: null, phoneNumberId: null, webhookStatus: 'ok', webhookRegisteredAt: ISO_MS });
  t.equal(res.body.webhookError, null);
  t.match(i.webhookSecret, /^[0-9a-f]{64}$/);
  t.equal(tg.webhooks.length, before + 1, 'setWebhook called once');
  t.same(tg.webhooks.at(-1), { token: BOT, url: `${PUBLIC}/api/webhook/telegram/${i.id}`, secret_token: i.webhookSecret, allowed_updates: ['message'], at: tg.webhooks.at(-1)!.at });
  noSecretIn(t, res.body, 'create');
  t.notOk('botToken' in i);

  const one = (await get(i.id)).body;
  t.same(one.integration, (({ webhookSecret: _s, ...rest }) => rest)(i), 'GET: the same without the secret');
  noSecretIn(t, one, 'GET');
  t.notOk(JSON.stringify(one).includes(i.webhookSecret), 'GET: no webhook secret');

  await new Promise((r) => setTimeout(r, 5));
  const reg = await registerWebhook(i.id);
  t.equal(reg.status, 200);
  t.same(Object.keys(reg.body).sort(), ['ok', 'webhookRegisteredAt']);
  t.ok(Date.parse(reg.body.webhookRegisteredAt) > Date.parse(i.webhookRegisteredAt), 'registered again');
  t.match(tg.webhooks.at(-1), { token: BOT, secret_token: i.webhookSecret, allowed_updates: ['message'] });
  t.equal((await get(i.id)).body.integration.webhookRegisteredAt, reg.body.webhookRegisteredAt);
});

t.test('Telegram: rotate-secret registers the new secret; the old one verifies through the grace period', async (t) => {
  const i = (await create({ type: 'telegram', name: 'Rotating', agentId, botToken: BOT })).body.integration;
  t.not(await telegramPost(i.id, i.webhookSecret), 401, 'the first secret verifies');
  const res = await rotate(i.id);
  t.equal(res.status, 200, JSON.stringify(res.body));
  const fresh = res.body.integration.webhookSecret;
  t.match(fresh, /^[0-9a-f]{64}$/);
  t.not(fresh, i.webhookSecret);
  t.match(tg.webhooks.at(-1), { token: BOT, url: `${PUBLIC}/api/webhook/telegram/${i.id}`, secret_token: fresh, allowed_updates: ['message'] });
  t.equal(res.body.integration.webhookStatus, 'ok');
  noSecretIn(t, res.body, 'rotate');
  t.not(await telegramPost(i.id, fresh), 401, 'the new secret verifies');
  t.not(await telegramPost(i.id, i.webhookSecret), 401, 'the old one too, in its grace period');
  t.equal(await telegramPost(i.id, 'another-secret'), 401);
});

t.test('Telegram: a new botToken re-registers the webhook', async (t) => {
  const i = (await create({ type: 'telegram', name: 'Switching', agentId, botToken: BOT })).body.integration;
  const res = await patch(i.id, { botToken: OTHER_BOT, name: 'Other bot' });
  t.equal(res.status, 200, JSON.stringify(res.body));
  t.equal(res.body.webhookError, null);
  t.match(res.body.integration, { name: 'Other bot', webhookStatus: 'ok', webhookRegisteredAt: ISO_MS });
  t.match(tg.webhooks.at(-1), { token: OTHER_BOT, url: `${PUBLIC}/api/webhook/telegram/${i.id}`, secret_token: i.webhookSecret, allowed_updates: ['message'] });
  noSecretIn(t, res.body, 'PATCH');

  // A token Telegram does not know: stored, not registered, and the answer says why.
  const unknown = `123:${randomBytes(24).toString('base64url')}`;
  SECRETS.add(unknown);
  const refused = await patch(i.id, { botToken: unknown });
  t.equal(refused.status, 200);
  t.match(refused.body.webhookError, { code: 'UPSTREAM_ERROR', message: /Telegram did not register the webhook: Telegram refused the bot token \(error 401\)/ });
  t.equal(refused.body.integration.webhookStatus, 'pending');
  t.equal(refused.body.integration.webhookRegisteredAt, null);
  noSecretIn(t, refused.body, 'PATCH refused');
  const again = await registerWebhook(i.id);
  t.equal(again.status, 502);
  t.equal(again.body.error.code, 'UPSTREAM_ERROR');
  noSecretIn(t, again.body, '502');
  t.equal((await patch(i.id, { botToken: BOT })).body.integration.webhookStatus, 'ok', 'a known token again: registered');
  t.equal((await api('DELETE', `/api/integrations/${i.id}`, { token: acme.token })).status, 204);
  t.equal((await get(i.id)).status, 404);
});

t.test('Telegram failing: create still 201 with webhookError, register 502, rotate 502 keeps the old secret', async (t) => {
  t.teardown(() => tg.answer(null));
  tg.answer((r) => (r.method === 'setWebhook' ? { status: 500, body: { ok: false, error_code: 500, description: `Internal Server Error at ${r.path}` } } : undefined));
  const res = await create({ type: 'telegram', name: 'Down', agentId, botToken: BOT });
  t.equal(res.status, 201);
  t.match(res.body.webhookError, { code: 'UPSTREAM_ERROR', message: 'Telegram did not register the webhook: Telegram answered with error 500.' });
  const i = res.body.integration;
  t.match(i, { webhookStatus: 'pending', webhookRegisteredAt: null, hasApiToken: true, webhookSecret: /^[0-9a-f]{64}$/ });
  noSecretIn(t, res.body, 'create');
  t.equal((await get(i.id)).status, 200, 'the record exists');

  const reg = await registerWebhook(i.id);
  t.equal(reg.status, 502);
  t.equal(reg.body.error.code, 'UPSTREAM_ERROR');
  t.notOk(JSON.stringify(reg.body).includes('Internal Server Error'), "Telegram's own words are not repeated");
  noSecretIn(t, reg.body, 'register 502');

  const rot = await rotate(i.id);
  t.equal(rot.status, 502);
  t.match(rot.body.error.message, /previous secret stays in use/);
  t.not(await telegramPost(i.id, i.webhookSecret), 401, 'the old secret is still current');

  tg.answer(null);
  const ok = await registerWebhook(i.id);
  t.equal(ok.status, 200);
  t.match(tg.webhooks.at(-1), { secret_token: i.webhookSecret }, 'registered with the secret that stayed current');
});

t.test('every bad field gets a 400 naming it', async (t) => {
  const wa = (extra: Record<string, unknown>) => ({ ...whatsappBody, ...extra });
  const cases: [Record<string, unknown>, string[]][] = [
    [{ type: 'whatsapp', name: 'x', agentId }, ['phoneNumberId', 'accessToken', 'appSecret']],
    [{ type: 'telegram', name: 'x', agentId }, ['botToken']],
    [wa({ phoneNumberId: 'abc' }), ['phoneNumberId']],
    [wa({ phoneNumberId: '1'.repeat(33) }), ['phoneNumberId']],
    [wa({ phoneNumberId: 106540352242922 }), ['phoneNumberId']],
    [wa({ accessToken: '' }), ['accessToken']],
    [wa({ accessToken: 'a'.repeat(4097) }), ['accessToken']],
    [wa({ accessToken: 'two words' }), ['accessToken']],
    [wa({ appSecret: 'short' }), ['appSecret']],
    [wa({ appSecret: 'has a space in the middle' }), ['appSecret']],
    [wa({ appSecret: 'x'.repeat(513) }), ['appSecret']],
    [wa({ botToken: BOT }), ['botToken']],
    [wa({ apiToken: 'tok', allowedOrigins: ['https://a.example'] }), ['apiToken', 'allowedOrigins']],
    [wa({ webhookSecret: 'a'.repeat(20) }), ['webhookSecret']],
    [{ type: 'telegram', name: 'x', agentId, botToken: 'not-a-token' }, ['botToken']],
    [{ type: 'telegram', name: 'x', agentId, botToken: '123:short' }, ['botToken']],
    [{ type: 'telegram', name: 'x', agentId, botToken: `12:${'a'.repeat(101)}` }, ['botToken']],
    [{ type: 'telegram', name: 'x', agentId, botToken: BOT, phoneNumberId: '1', appSecret: APP_SECRET }, ['phoneNumberId', 'appSecret']],
    [{ type: 'telegram', name: 'x', agentId, botToken: BOT, apiUrl: 'https://api.chat2desk.com' }, ['apiUrl']],
    [{ type: 'helpdesk', name: 'x', agentId, botToken: BOT }, ['botToken']],
    [{ type: 'webchat', name: 'x', agentId, accessToken: 'x' }, ['accessToken']],
    [{ type: 'telegram', name: 'x', agentId: 999999, botToken: BOT }, ['agentId']],
    [{ type: 'signal', name: 'x', agentId }, ['type']],
  ];
  const count = (await api('GET', '/api/integrations', { token: acme.token })).body.total;
  for (const [body, fields] of cases) {
    const res = await create(body);
    const label = JSON.stringify(body).slice(0, 120);
    t.equal(res.status, 400, label);
    t.equal(res.body.error?.code, 'VALIDATION_ERROR', label);
    t.same(res.body.error?.details?.map((d: { field: string }) => d.field).sort(), [...fields].sort(), `${label}: names ${fields}`);
    noSecretIn(t, res.body, label);
  }
  t.equal((await api('GET', '/api/integrations', { token: acme.token })).body.total, count, 'nothing created');

  const w = (await create(wa({ name: 'Patch target' }))).body.integration;
  const g = (await create({ type: 'telegram', name: 'Patch target', agentId, botToken: BOT })).body.integration;
  const patches: [number, Record<string, unknown>, string[]][] = [
    [w.id, { botToken: BOT }, ['botToken']],
    [w.id, { webhookSecret: 'a'.repeat(20) }, ['webhookSecret']],
    [w.id, { phoneNumberId: '' }, ['phoneNumberId']],
    [w.id, { accessToken: null }, ['accessToken']],
    [w.id, { appSecret: 'tiny' }, ['appSecret']],
    [g.id, { appSecret: APP_SECRET }, ['appSecret']],
    [g.id, { webhookSecret: 'a'.repeat(20) }, ['webhookSecret']],
    [g.id, { botToken: 'bad token' }, ['botToken']],
    [g.id, { accessToken: ACCESS_TOKEN, handoffGroupId: 3 }, ['accessToken', 'handoffGroupId']],
  ];
  for (const [id, body, fields] of patches) {
    const res = await patch(id, body);
    const label = `PATCH ${JSON.stringify(body).slice(0, 80)}`;
    t.equal(res.status, 400, label);
    t.same(res.body.error?.details?.map((d: { field: string }) => d.field).sort(), [...fields].sort(), label);
    noSecretIn(t, res.body, label);
  }
});

t.test("another company's WhatsApp or Telegram integration is not found", async (t) => {
  const w = (await create({ ...whatsappBody, name: 'Mine' })).body.integration;
  const g = (await create({ type: 'telegram', name: 'Mine', agentId, botToken: BOT })).body.integration;
  const hooks = tg.webhooks.length;
  for (const id of [w.id, g.id]) {
    t.equal((await get(id, other.token)).status, 404);
    t.equal((await patch(id, { name: 'pwned', agentId: otherAgent }, other.token)).status, 404);
    t.equal((await patch(id, { botToken: OTHER_BOT }, other.token)).status, 404);
    t.equal((await registerWebhook(id, other.token)).status, 404);
    t.equal((await rotate(id, other.token)).status, 404);
    t.equal((await api('DELETE', `/api/integrations/${id}`, { token: other.token })).status, 404);
  }
  t.equal(tg.webhooks.length, hooks, 'nothing registered for the other company');
  t.match((await get(g.id)).body.integration, { name: 'Mine', hasApiToken: true });
  t.notOk((await api('GET', '/api/integrations', { token: other.token })).body.integrations.some((x: { id: number }) => x.id === w.id || x.id === g.id));
});

t.test('Telegram down: create still 201 with webhookError, register-webhook 502', async (t) => {
  await tg.close();
  sandboxClosed = true;
  const res = await create({ type: 'telegram', name: 'Unreachable', agentId, botToken: BOT });
  t.equal(res.status, 201);
  t.match(res.body.webhookError, { code: 'UPSTREAM_ERROR', message: 'Telegram did not register the webhook: Telegram could not be reached.' });
  t.equal(res.body.integration.webhookStatus, 'pending');
  const reg = await registerWebhook(res.body.integration.id);
  t.equal(reg.status, 502);
  t.equal(reg.body.error.code, 'UPSTREAM_ERROR');
  noSecretIn(t, reg.body, '502');
});

t.test("the gateway's log holds none of the write-only secrets", async (t) => {
  t.ok(logLines.length > 0, 'something was logged');
  noSecretIn(t, logLines.join('\n'), 'log');
});
