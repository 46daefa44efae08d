import { createHash } from 'node:crypto';
import t from 'tap';
import { partitionOf, streamNames } from '../../lib/streams.js';
import { SignatureVerifier, signBody } from '../../gateway/webhook/signature.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver, dropNatsPrefixAtEnd, inboundCount, inboundMessages } from '../support/webhooks.js';

// A clock the test can move (secret grace periods); everything else runs on real time.
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

const svc = await startTestService(t, 'webhook', { now });
dropNatsPrefixAtEnd(t, svc);
const { api, nc, config } = svc;
const prefix = config.natsPrefix;
const names = streamNames(prefix);
const owner = await signUp(api, 'Webhook Co');
const agentId = await createAgent(api, owner.token);
const helpdesk = await createIntegration(api, owner.token, { name: 'Desk', agentId });
const secret: string = helpdesk.webhookSecret;
const webchat = await createIntegration(api, owner.token, { type: 'webchat', name: 'Site', agentId });
const other = await createIntegration(api, owner.token, { name: 'Other desk', agentId });

let seq = 0;
const inbox = (extra: Record<string, unknown> = {}) => ({
  hook_type: 'inbox',
  type: 'from_client',
  message_id: 500_000 + ++seq,
  text: 'Hello, do you ship to Lisbon?',
  client_id: 4242,
  channel_id: 17,
  transport: 'telegram',
  request_id: 9001,
  dialog_id: 7001,
  event_time: '2024-05-01T10:00:00 UTC',
  ...extra,
});
const countNow = () => inboundCount(nc, prefix);

t.test('GET verifies the endpoint; unknown connector or integration is 404', async (t) => {
  const ok = await api('GET', `/api/webhook/helpdesk/${helpdesk.id}`);
  t.equal(ok.status, 200);
  t.same(ok.body, { ok: true, verified: true });
  t.equal((await api('GET', `/api/webhook/sms/${helpdesk.id}`)).status, 404);
  t.equal((await api('GET', '/api/webhook/helpdesk/999999')).status, 404);
  t.equal((await api('GET', `/api/webhook/helpdesk/${webchat.id}`)).status, 404, 'a webchat integration is not a helpdesk one');
});

t.test('404: unknown connector type, unknown integration, wrong connector, webchat', async (t) => {
  const before = await countNow();
  const payload = inbox();
  const r1 = await deliver(api, helpdesk.id, payload, { secret, type: 'sms' });
  t.equal(r1.status, 404);
  t.equal(r1.body.error.code, 'NOT_FOUND');
  t.equal((await deliver(api, 999_999, payload, { secret })).status, 404, 'no such integration');
  t.equal((await deliver(api, 'abc', payload, { secret })).status, 404, 'not an id');
  t.equal((await deliver(api, webchat.id, payload, { secret: webchat.webhookSecret })).status, 404, 'helpdesk path, webchat integration');
  t.equal((await deliver(api, webchat.id, payload, { secret: webchat.webhookSecret, type: 'webchat' })).status, 404, 'webchat speaks WebSocket');
  t.equal(await countNow(), before, 'nothing enqueued');
});

t.test('401 for a missing or wrong signature, under both header names', async (t) => {
  const before = await countNow();
  const payload = inbox();
  const body = JSON.stringify(payload);
  const cases: [string, Parameters<typeof deliver>[3]][] = [
    ['no signature', {}],
    ['garbage', { signature: 'sha256=not-hex' }],
    ['wrong secret (x-webhook-signature)', { secret: other.webhookSecret }],
    ['wrong secret (x-hub-signature-256)', { secret: other.webhookSecret, header: 'x-hub-signature-256' }],
    ['signature of another body', { signature: signBody(secret, body + ' ') }],
    ['truncated digest', { signature: signBody(secret, body).slice(0, 40) }],
  ];
  for (const [label, options] of cases) {
    const res = await deliver(api, helpdesk.id, body, options);
    t.equal(res.status, 401, label);
    t.equal(res.body.error?.code, 'INVALID_SIGNATURE', label);
  }
  t.equal(await countNow(), before, 'nothing enqueued');

  for (const header of ['x-webhook-signature', 'x-hub-signature-256'] as const) {
    const res = await deliver(api, helpdesk.id, inbox(), { secret, header });
    t.equal(res.status, 200, `valid signature in ${header}`);
    t.same(res.body, { ok: true });
  }
  t.equal(await countNow(), before + 2);
});

t.test('403 when the integration is inactive (after the signature check)', async (t) => {
  const off = await api('PATCH', `/api/integrations/${helpdesk.id}`, { token: owner.token, body: { active: false } });
  t.equal(off.status, 200);
  const before = await countNow();
  const res = await deliver(api, helpdesk.id, inbox(), { secret });
  t.equal(res.status, 403);
  t.equal(res.body.error.code, 'INTEGRATION_INACTIVE');
  t.equal((await deliver(api, helpdesk.id, inbox(), { secret: 'f'.repeat(64) })).status, 401, 'a bad signature is still 401');
  t.equal(await countNow(), before);
  const on = await api('PATCH', `/api/integrations/${helpdesk.id}`, { token: owner.token, body: { active: true } });
  t.equal(on.status, 200);
  t.equal((await deliver(api, helpdesk.id, inbox(), { secret })).status, 200, 'active again');
});

t.test('413 above 1 MiB, but only once the signature and the active flag passed', async (t) => {
  const before = await countNow();
  const MiB = 1024 * 1024;
  // Chat2Desk sends more than we keep (client {...}, ...): padding there sizes the body, not the envelope.
  const base = JSON.stringify(inbox({ client: { note: '' } }));
  const sized = (n: number) => base.replace('"note":""', `"note":"${'a'.repeat(n - base.length)}"`);
  const exact = sized(MiB);
  t.equal(Buffer.byteLength(exact), MiB);
  t.equal((await deliver(api, helpdesk.id, exact, { secret })).status, 200, 'exactly 1 MiB is accepted');

  const big = sized(MiB + 1);
  const res = await deliver(api, helpdesk.id, big, { secret });
  t.equal(res.status, 413);
  t.equal(res.body.error.code, 'PAYLOAD_TOO_LARGE');
  t.equal((await deliver(api, helpdesk.id, big, { secret: other.webhookSecret })).status, 401, 'bad signature first');
  await api('PATCH', `/api/integrations/${helpdesk.id}`, { token: owner.token, body: { active: false } });
  t.equal((await deliver(api, helpdesk.id, big, { secret })).status, 403, 'inactive first');
  await api('PATCH', `/api/integrations/${helpdesk.id}`, { token: owner.token, body: { active: true } });

  // Within 1 MiB, but a text that large makes an envelope NATS cannot carry: a final 413, not a 503 to retry forever.
  const textBase = JSON.stringify(inbox({ text: '' }));
  const hugeText = textBase.replace('"text":""', `"text":"${'b'.repeat(MiB - textBase.length)}"`);
  t.equal(Buffer.byteLength(hugeText), MiB);
  const tooBigToQueue = await deliver(api, helpdesk.id, hugeText, { secret });
  t.equal(tooBigToQueue.status, 413);
  t.equal(tooBigToQueue.body.error.code, 'PAYLOAD_TOO_LARGE');

  const huge = Buffer.alloc(9 * MiB, 0x20);
  t.equal((await deliver(api, helpdesk.id, huge, { secret })).status, 413, 'a body beyond the hard cap is refused unread');
  t.equal(await countNow(), before + 1, 'only the 1 MiB message was enqueued');
});

t.test('400 for a body that is not JSON or not a valid payload', async (t) => {
  const before = await countNow();
  const notJson = await deliver(api, helpdesk.id, 'hook_type=inbox&text=hi', { secret });
  t.equal(notJson.status, 400);
  t.equal(notJson.body.error.code, 'VALIDATION_ERROR');

  const noClient = await deliver(api, helpdesk.id, { hook_type: 'inbox', text: 'hi', channel_id: 1, transport: 'telegram' }, { secret });
  t.equal(noClient.status, 400);
  t.equal(noClient.body.error.code, 'VALIDATION_ERROR');
  t.ok(noClient.body.error.details.some((d: { field: string }) => d.field === 'client_id'), 'names client_id');

  const noRequest = await deliver(api, helpdesk.id, { hook_type: 'close_dialog', dialog_id: 5 }, { secret });
  t.equal(noRequest.status, 400);
  t.ok(noRequest.body.error.details.some((d: { field: string }) => d.field === 'request_id'), 'names request_id');
  t.equal((await deliver(api, helpdesk.id, { hook_type: 'close_request', request_id: 'abc' }, { secret })).status, 400, 'request_id must be a number');
  t.equal((await deliver(api, helpdesk.id, [inbox()], { secret })).status, 400, 'an array is not a payload');
  t.equal((await deliver(api, helpdesk.id, { hook_type: 7, text: 'x', client_id: 1 }, { secret })).status, 400, 'hook_type must be a string');
  t.equal(await countNow(), before, 'nothing enqueued');
});

t.test('200 and nothing enqueued for payloads the service does not act on', async (t) => {
  const before = await countNow();
  for (const payload of [
    { hook_type: 'outbox', text: 'operator says hi', client_id: 1, message_id: 1 },
    { hook_type: 'new_client', client_id: 1 },
    { hook_type: 'new_request', request_id: 3, client_id: 1 },
    inbox({ type: 'to_client', text: 'bot echo' }),
  ]) {
    const res = await deliver(api, helpdesk.id, payload, { secret });
    t.equal(res.status, 200, `${payload.hook_type} ${'type' in payload ? payload.type : ''}`);
    t.same(res.body, { ok: true });
  }
  t.equal(await countNow(), before, 'none of them reached the queue');
});

t.test('a customer message lands on its partition subject with the normalised envelope', async (t) => {
  const before = await countNow();
  const payload = inbox({ attachments: [{ link: 'https://cdn.example/x.png' }] });
  const res = await deliver(api, helpdesk.id, payload, { secret });
  t.equal(res.status, 200);
  const all = await inboundMessages(nc, prefix);
  t.equal(all.length, before + 1);
  const last = all.at(-1)!;
  t.equal(last.subject, names.inboundSubject(partitionOf(helpdesk.id, '4242', config.partitions), owner.companyId));
  t.equal(last.msgId, `${helpdesk.id}:m:${payload.message_id}`);
  const env = last.envelope;
  t.match(env, {
    v: 1,
    kind: 'message',
    idempotencyKey: `m:${payload.message_id}`,
    companyId: owner.companyId,
    integrationId: helpdesk.id,
    channel: 'helpdesk',
    message: {
      messageId: String(payload.message_id),
      text: payload.text,
      clientId: '4242',
      channelId: '17',
      transport: 'telegram',
      requestId: 9001,
      dialogId: 7001,
      attachments: [{ link: 'https://cdn.example/x.png' }],
      sentAt: '2024-05-01T10:00:00.000Z',
    },
  });
  t.match(env.receivedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

  // Without hook_type, string ids, no message_id: keyed by the body's hash.
  const bare = JSON.stringify({ text: 'plain', client_id: 'c-77', channel_id: 'ch', transport: 'whatsapp' });
  t.equal((await deliver(api, helpdesk.id, bare, { secret })).status, 200);
  const bareMsg = (await inboundMessages(nc, prefix)).at(-1)!;
  const hash = createHash('sha256').update(bare).digest('hex');
  t.equal(bareMsg.envelope.idempotencyKey, `h:${hash}`);
  t.equal(bareMsg.msgId, `${helpdesk.id}:h:${hash}`);
  t.equal(bareMsg.subject, names.inboundSubject(partitionOf(helpdesk.id, 'c-77', config.partitions), owner.companyId));
  t.match(bareMsg.envelope.message, { messageId: null, clientId: 'c-77', requestId: null, dialogId: null, attachments: [] });
});

t.test('status events are enqueued with their own key; without client_id they are keyed by request', async (t) => {
  t.equal((await deliver(api, helpdesk.id, { hook_type: 'close_dialog', request_id: 9001 }, { secret })).status, 200);
  let last = (await inboundMessages(nc, prefix)).at(-1)!;
  t.equal(last.subject, names.inboundSubject(partitionOf(helpdesk.id, 'request:9001', config.partitions), owner.companyId));
  t.match(last.envelope, {
    kind: 'status',
    idempotencyKey: 's:close_dialog:9001:',
    integrationId: helpdesk.id,
    companyId: owner.companyId,
    status: { hookType: 'close_dialog', requestId: 9001, dialogId: null, clientId: null },
  });

  const transfer = { hook_type: 'dialog_transferred', request_id: 9002, dialog_id: 7002, client_id: 4242 };
  t.equal((await deliver(api, helpdesk.id, transfer, { secret })).status, 200);
  last = (await inboundMessages(nc, prefix)).at(-1)!;
  t.equal(last.subject, names.inboundSubject(partitionOf(helpdesk.id, '4242', config.partitions), owner.companyId), 'same partition as the client');
  t.equal(last.msgId, `${helpdesk.id}:s:dialog_transferred:9002:7002`);
  t.same(last.envelope.status, { hookType: 'dialog_transferred', requestId: 9002, dialogId: 7002, clientId: '4242' });

  t.equal((await deliver(api, helpdesk.id, { hook_type: 'close_request', request_id: 9003, dialog_id: null }, { secret })).status, 200);
  t.equal((await inboundMessages(nc, prefix)).at(-1)!.envelope.status.hookType, 'close_request');
});

t.test('a redelivered webhook is stored once', async (t) => {
  const before = await countNow();
  const payload = inbox();
  for (let i = 0; i < 3; i++) t.equal((await deliver(api, helpdesk.id, payload, { secret })).status, 200, `delivery ${i + 1}`);
  const status = { hook_type: 'close_request', request_id: 123, dialog_id: 456 };
  for (let i = 0; i < 2; i++) t.equal((await deliver(api, helpdesk.id, status, { secret })).status, 200);
  // Same message_id but a different integration is a different message.
  t.equal((await deliver(api, other.id, payload, { secret: other.webhookSecret })).status, 200);
  t.equal(await countNow(), before + 3);
});

t.test('webhooks are timed in /metrics by route pattern and status', async (t) => {
  await deliver(api, helpdesk.id, inbox(), { secret });
  await deliver(api, helpdesk.id, inbox(), { secret: 'f'.repeat(64) });
  const metrics = (await api('GET', '/metrics')).body as string;
  t.match(metrics, /http_request_duration_seconds_count\{method="POST",route="\/api\/webhook\/helpdesk\/:id",status="200"\} [1-9]/);
  t.match(metrics, /http_request_duration_seconds_count\{method="POST",route="\/api\/webhook\/helpdesk\/:id",status="401"\} [1-9]/);
});

t.test('rotate-secret: the new secret verifies, the old one only during the grace period', async (t) => {
  t.teardown(() => {
    offsetMs = 0;
  });
  const rotated = await api('POST', `/api/integrations/${helpdesk.id}/rotate-secret`, { token: owner.token });
  t.equal(rotated.status, 200);
  const fresh: string = rotated.body.integration.webhookSecret;
  t.match(fresh, /^[0-9a-f]{64}$/);
  t.not(fresh, secret);
  t.equal(rotated.body.integration.id, helpdesk.id);
  const shown = await api('GET', `/api/integrations/${helpdesk.id}`, { token: owner.token });
  t.notOk('webhookSecret' in shown.body.integration, 'GET never shows it');

  t.equal((await deliver(api, helpdesk.id, inbox(), { secret: fresh })).status, 200, 'new secret');
  t.equal((await deliver(api, helpdesk.id, inbox(), { secret })).status, 200, 'old secret right after rotation');
  offsetMs = (24 * 3600 - 60) * 1000;
  t.equal((await deliver(api, helpdesk.id, inbox(), { secret })).status, 200, 'old secret a minute before the 24 h grace ends');
  offsetMs = (24 * 3600 + 1) * 1000;
  const late = await deliver(api, helpdesk.id, inbox(), { secret, header: 'x-hub-signature-256' });
  t.equal(late.status, 401, 'old secret after the grace period');
  t.equal(late.body.error.code, 'INVALID_SIGNATURE');
  t.equal((await deliver(api, helpdesk.id, inbox(), { secret: fresh })).status, 200, 'new secret still');
});

t.test('the verifier says why, never throws, and judges the grace period by its clock', async (t) => {
  let clock = 1_000_000;
  const verifier = new SignatureVerifier(() => clock);
  const keys = { current: Buffer.from('new-secret'), previous: Buffer.from('old-secret'), previousValidUntil: 1_000_500 };
  const body = Buffer.from('{"text":"hi"}');
  t.same(verifier.verify(keys, body, {}), { ok: false, error: 'missing_signature' });
  t.same(verifier.verify(keys, body, { 'x-webhook-signature': 'sha256=xyz' }), { ok: false, error: 'malformed_signature' });
  t.same(verifier.verify(keys, body, { 'x-webhook-signature': signBody('other', body) }), { ok: false, error: 'mismatch' });
  t.same(verifier.verify(keys, body, { 'x-hub-signature-256': signBody('new-secret', body).toUpperCase().replace('SHA256=', 'sha256=') }), { ok: true }, 'hex case does not matter');
  t.same(verifier.verify(keys, body, { 'x-hub-signature-256': signBody('old-secret', body) }), { ok: true }, 'previous secret within grace');
  clock = 1_000_500;
  t.same(verifier.verify(keys, body, { 'x-hub-signature-256': signBody('old-secret', body) }), { ok: false, error: 'mismatch' }, 'previous secret at its deadline');
  t.same(verifier.verify(keys, body, { 'x-webhook-signature': signBody('new-secret', body) }), { ok: true });
  // Streaming in pieces gives the same answer as the whole body.
  const streamed = verifier.begin(keys);
  for (const piece of [body.subarray(0, 3), body.subarray(3)]) streamed.update(piece);
  t.same(streamed.verify({ 'x-webhook-signature': signBody('new-secret', body) }), { ok: true });
});
