import { randomBytes } from 'node:crypto';
import t from 'tap';
import { SecretBox } from '../../lib/secrets.js';
import { partitionOf, streamNames } from '../../lib/streams.js';
import { signBody } from '../../gateway/webhook/signature.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, deliver, dropNatsPrefixAtEnd, inboundMessages, type StoredInbound } from '../support/webhooks.js';

/**
 * The webhook ingress with the direct channels (contract.md § Direct channels): WhatsApp Cloud
 * API (X-Hub-Signature-256 with the app secret, batched messages and statuses, Meta's GET
 * probe) and Telegram (X-Telegram-Bot-Api-Secret-Token), on a real gateway. Their integration
 * rows are written directly (secrets sealed with the service's key), as the API's create
 * route would.
 */

const svc = await startTestService(t, 'webhook-channels');
dropNatsPrefixAtEnd(t, svc);
const { api, nc, config } = svc;
const prefix = config.natsPrefix;
const names = streamNames(prefix);
const owner = await signUp(api, 'Channels Co');
const agentId = await createAgent(api, owner.token);
const box = new SecretBox(config.secretsKeys);

async function sql<T = any>(query: string, params: unknown[] = []): Promise<T[]> {
  return (await svc.orm.em.fork().execute(query, params as never[], 'all')) as unknown as T[];
}

interface Row {
  type: 'whatsapp' | 'telegram';
  secret: string;
  active?: boolean;
  previous?: string;
  /** Seconds from now until which `previous` verifies (negative: already over). */
  previousForS?: number;
  verifyToken?: string;
  phoneNumberId?: string;
}

async function insertIntegration(row: Row): Promise<number> {
  const [r] = await sql<{ id: number }>(
    `insert into integrations (company_id, type, name, agent_id, active, webhook_secret_sealed, previous_secret_sealed, previous_secret_expires_at, phone_number_id, verify_token, api_token_sealed)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id`,
    [
      owner.companyId,
      row.type,
      `${row.type} ${randomBytes(3).toString('hex')}`,
      agentId,
      row.active ?? true,
      box.seal(row.secret),
      row.previous ? box.seal(row.previous) : null,
      row.previous ? new Date(Date.now() + (row.previousForS ?? 3600) * 1000) : null,
      row.phoneNumberId ?? null,
      row.verifyToken ?? null,
      box.seal('platform-token'),
    ],
  );
  return r!.id;
}

/** The sequence of the last message in the inbound stream (0 when empty). */
const mark = async (): Promise<number> => (await inboundMessages(nc, prefix)).at(-1)?.seq ?? 0;
const since = async (seq: number): Promise<StoredInbound[]> => (await inboundMessages(nc, prefix)).filter((m) => m.seq > seq);

// ---------------------------------------------------------------- WhatsApp

const appSecret = `wa-app-${randomBytes(16).toString('hex')}`;
const verifyToken = `vt-${randomBytes(8).toString('hex')}`;
const phoneNumberId = '106540352242922';
const wa = await insertIntegration({ type: 'whatsapp', secret: appSecret, verifyToken, phoneNumberId });

let wamidNo = 0;
const wamid = () => `wamid.HBgL${Date.now().toString(36)}${++wamidNo}`;
const waMessage = (id: string, from: string, text = 'When are you open?') => ({ from, id, timestamp: '1749416383', type: 'text', text: { body: text } });
const waStatus = (id: string, recipient: string, status = 'delivered') => ({ id, status, timestamp: '1749416390', recipient_id: recipient });
const waChange = (value: { messages?: unknown[]; statuses?: unknown[]; contacts?: unknown[] }) => ({
  field: 'messages',
  value: { messaging_product: 'whatsapp', metadata: { display_phone_number: '15550783881', phone_number_id: phoneNumberId }, ...value },
});
const waBody = (...entries: ReturnType<typeof waChange>[][]) => ({
  object: 'whatsapp_business_account',
  entry: entries.map((changes, i) => ({ id: `10229012934039${i}`, changes })),
});
const deliverWa = (id: number, body: unknown, secret = appSecret, header: 'x-hub-signature-256' | 'x-webhook-signature' = 'x-hub-signature-256') =>
  deliver(api, id, body, { secret, header, type: 'whatsapp' });

t.test('WhatsApp: a signed delivery → 200, one envelope per message and per status, keyed by wamid', async (t) => {
  const before = await mark();
  const inId = wamid();
  const outId = wamid();
  const body = waBody([waChange({ contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }], messages: [waMessage(inId, '16505551234')], statuses: [waStatus(outId, '16505551234')] })]);
  const res = await deliverWa(wa, body);
  t.equal(res.status, 200);
  t.same(res.body, { ok: true });
  const stored = await since(before);
  t.equal(stored.length, 2, 'the message and the status, each its own envelope');
  const message = stored.find((m) => m.envelope.kind === 'message')!;
  const delivery = stored.find((m) => m.envelope.kind === 'delivery')!;
  t.match(message.envelope, {
    v: 1, idempotencyKey: `wa:${inId}`, companyId: owner.companyId, integrationId: wa, channel: 'whatsapp',
    message: { messageId: inId, text: 'When are you open?', clientId: '16505551234', transport: 'whatsapp', contact: { name: 'Sheena Nelson' } },
  });
  t.equal(message.msgId, `${wa}:wa:${inId}`, 'Nats-Msg-Id: integration and wamid');
  t.match(delivery.envelope, {
    idempotencyKey: `ws:${outId}:delivered`, integrationId: wa, channel: 'whatsapp',
    delivery: { externalId: outId, status: 'delivered', clientId: '16505551234', error: null },
  });
  t.equal(delivery.msgId, `${wa}:ws:${outId}:delivered`);
  // Both about the same customer: the same partition (the worker sees them in order).
  const partition = partitionOf(wa, '16505551234', config.partitions);
  for (const m of stored) t.equal(m.subject, names.inboundSubject(partition, owner.companyId), `${m.envelope.kind}: partitioned by the customer`);
  const journal = await sql<{ idempotency_key: string }>('select idempotency_key from inbound_accepted where integration_id = ? order by idempotency_key', [wa]);
  t.ok(journal.some((r) => r.idempotency_key === `wa:${inId}`) && journal.some((r) => r.idempotency_key === `ws:${outId}:delivered`), 'each item recorded in the acceptance journal');
});

t.test('WhatsApp: a batch (2 entries × messages + statuses) queues all of them; the same body again, none; old + new, only the new', async (t) => {
  const ids = { a1: wamid(), a2: wamid(), s1: wamid(), b1: wamid(), b2: wamid(), s2: wamid() };
  const body = waBody(
    [waChange({ messages: [waMessage(ids.a1, '111'), waMessage(ids.a2, '222', 'second')], statuses: [waStatus(ids.s1, '111', 'read')] })],
    [waChange({ messages: [waMessage(ids.b1, '333'), waMessage(ids.b2, '111', 'third')], statuses: [waStatus(ids.s2, '444', 'sent')] })],
  );
  let before = await mark();
  t.equal((await deliverWa(wa, body)).status, 200);
  const stored = await since(before);
  t.same(
    stored.map((m) => m.envelope.idempotencyKey).sort(),
    [`wa:${ids.a1}`, `wa:${ids.a2}`, `wa:${ids.b1}`, `wa:${ids.b2}`, `ws:${ids.s1}:read`, `ws:${ids.s2}:sent`].sort(),
    'every message and status of every entry',
  );
  t.ok(stored.every((m) => m.envelope.channel === 'whatsapp' && m.msgId === `${wa}:${m.envelope.idempotencyKey}`), 'each with its own Nats-Msg-Id');
  for (const m of stored) {
    const clientId = m.envelope.kind === 'message' ? m.envelope.message.clientId : m.envelope.delivery.clientId;
    t.equal(m.subject, names.inboundSubject(partitionOf(wa, clientId, config.partitions), owner.companyId), `${m.envelope.idempotencyKey}: its customer's partition`);
  }

  before = await mark();
  const again = await deliverWa(wa, body);
  t.equal(again.status, 200, 'Meta retries the same body');
  t.same(await since(before), [], 'nothing new is queued');

  before = await mark();
  const fresh = wamid();
  const mixed = waBody([waChange({ messages: [waMessage(ids.a1, '111'), waMessage(fresh, '111', 'a new one')], statuses: [waStatus(ids.s1, '111', 'read')] })]);
  t.equal((await deliverWa(wa, mixed)).status, 200);
  t.same((await since(before)).map((m) => m.envelope.idempotencyKey), [`wa:${fresh}`], 'only the new message');
});

t.test('WhatsApp: a body with nothing to act on → 200, nothing queued', async (t) => {
  const before = await mark();
  t.equal((await deliverWa(wa, { object: 'whatsapp_business_account', entry: [{ id: '1', changes: [{ field: 'account_update', value: {} }] }] })).status, 200);
  t.equal((await deliverWa(wa, waBody([waChange({ messages: [] })]))).status, 200);
  t.same(await since(before), []);
});

t.test('WhatsApp: 401 for a wrong, missing or x-webhook-signature-only signature; 403 when inactive', async (t) => {
  const before = await mark();
  const body = JSON.stringify(waBody([waChange({ messages: [waMessage(wamid(), '555')] })]));
  const cases: [string, Record<string, string>][] = [
    ['wrong secret', { 'x-hub-signature-256': signBody('not-the-app-secret', body) }],
    ['signature of another body', { 'x-hub-signature-256': signBody(appSecret, `${body} `) }],
    ['malformed', { 'x-hub-signature-256': 'sha256=xyz' }],
    ['missing', {}],
    ['right signature, but in x-webhook-signature (the helpdesk header)', { 'x-webhook-signature': signBody(appSecret, body) }],
  ];
  for (const [label, headers] of cases) {
    const res = await api('POST', `/api/webhook/whatsapp/${wa}`, { rawBody: body, headers: { 'content-type': 'application/json', ...headers } });
    t.equal(res.status, 401, label);
    t.equal(res.body.error?.code, 'INVALID_SIGNATURE', label);
    t.notMatch(res.body.error?.message, /helpdesk/i, `${label}: the message does not speak of a helpdesk`);
  }
  const missing = await api('POST', `/api/webhook/whatsapp/${wa}`, { rawBody: body, headers: { 'content-type': 'application/json', 'x-webhook-signature': signBody(appSecret, body) } });
  t.match(missing.body.error.message, /no signature header \(x-hub-signature-256\)/, "the 401 names WhatsApp's header only");
  t.same(await since(before), [], 'nothing queued');

  const off = await insertIntegration({ type: 'whatsapp', secret: appSecret, active: false, verifyToken });
  const inactive = await deliverWa(off, JSON.parse(body));
  t.equal(inactive.status, 403);
  t.equal(inactive.body.error.code, 'INTEGRATION_INACTIVE');
  t.equal((await deliverWa(off, JSON.parse(body), 'wrong')).status, 401, 'the signature is checked first');
  t.equal((await deliverWa(wa, 'not json')).status, 400, 'signed, but not JSON');
  t.same(await since(before), []);
});

t.test("WhatsApp: Meta's GET probe answers the challenge as plain text with the right verify token", async (t) => {
  const challenge = '1158201444';
  const ok = await api('GET', `/api/webhook/whatsapp/${wa}?hub.mode=subscribe&hub.verify_token=${encodeURIComponent(verifyToken)}&hub.challenge=${challenge}`);
  t.equal(ok.status, 200);
  t.equal(ok.body, challenge, 'the challenge, as it was sent');
  t.match(ok.headers.get('content-type'), /^text\/plain; charset=utf-8/);

  const wrong = await api('GET', `/api/webhook/whatsapp/${wa}?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=${challenge}`);
  t.equal(wrong.status, 403, 'a wrong verify token');
  t.match(wrong.headers.get('content-type'), /^text\/plain/);
  t.not(wrong.body, challenge);
  const prefixOnly = await api('GET', `/api/webhook/whatsapp/${wa}?hub.mode=subscribe&hub.verify_token=${verifyToken.slice(0, -1)}&hub.challenge=${challenge}`);
  t.equal(prefixOnly.status, 403, 'a prefix of the token');
  t.equal((await api('GET', `/api/webhook/whatsapp/${wa}?hub.mode=subscribe&hub.challenge=${challenge}`)).status, 403, 'no token');

  const plain = await api('GET', `/api/webhook/whatsapp/${wa}`);
  t.equal(plain.status, 200, 'no hub parameters: the generic check');
  t.same(plain.body, { ok: true, verified: true });
  t.equal((await api('GET', `/api/webhook/telegram/${wa}`)).status, 404, 'a WhatsApp integration is not a Telegram one');
});

// ---------------------------------------------------------------- Telegram

const tgSecret = `tg_${randomBytes(12).toString('hex')}-Z`;
const tg = await insertIntegration({ type: 'telegram', secret: tgSecret });
let updateNo = 815_274_000 + Math.floor(Math.random() * 1_000_000);
const tgUpdate = (chat: Record<string, unknown> = { id: 123_456_789, type: 'private', first_name: 'Ann' }, text = 'When are you open?') => ({
  update_id: ++updateNo,
  message: { message_id: updateNo % 10_000, date: 1_749_416_383, text, chat, from: { id: 123_456_789, is_bot: false, first_name: 'Ann', last_name: 'Lee' } },
});
/** `secret` null: no secret header at all. */
const deliverTg = (id: number, body: unknown, secret: string | null = tgSecret, extra: Record<string, string> = {}) =>
  api('POST', `/api/webhook/telegram/${id}`, {
    rawBody: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...(secret === null ? {} : { 'x-telegram-bot-api-secret-token': secret }), ...extra },
  });

t.test('Telegram: the right secret header → 200 and one envelope keyed tg:<update_id>', async (t) => {
  const before = await mark();
  const update = tgUpdate();
  const res = await deliverTg(tg, update);
  t.equal(res.status, 200);
  t.same(res.body, { ok: true });
  const stored = await since(before);
  t.equal(stored.length, 1);
  t.match(stored[0]!.envelope, {
    kind: 'message', idempotencyKey: `tg:${update.update_id}`, integrationId: tg, companyId: owner.companyId, channel: 'telegram',
    message: { clientId: '123456789', text: 'When are you open?', transport: 'telegram', contact: { name: 'Ann Lee' } },
  });
  t.equal(stored[0]!.msgId, `${tg}:tg:${update.update_id}`);
  t.equal(stored[0]!.subject, names.inboundSubject(partitionOf(tg, '123456789', config.partitions), owner.companyId));

  const again = await deliverTg(tg, update);
  t.equal(again.status, 200, 'Telegram retries the same update');
  t.equal((await since(before)).length, 1, 'not queued twice');
});

t.test('Telegram: 401 for a missing, wrong or longer secret; the HMAC headers do not count', async (t) => {
  const before = await mark();
  const body = JSON.stringify(tgUpdate());
  const cases: [string, string | null, Record<string, string>][] = [
    ['missing', null, {}],
    ['wrong', 'tg_wrong-secret-of-some-length', {}],
    ['the secret with more after it', `${tgSecret}x`, {}],
    ['a prefix of the secret', tgSecret.slice(0, -1), {}],
    ['empty', '', {}],
    ['a body signature instead', null, { 'x-hub-signature-256': signBody(tgSecret, body), 'x-webhook-signature': signBody(tgSecret, body) }],
  ];
  for (const [label, secret, extra] of cases) {
    const res = await deliverTg(tg, body, secret, extra);
    t.equal(res.status, 401, label);
    t.equal(res.body.error?.code, 'INVALID_SIGNATURE', label);
    t.notMatch(res.body.error?.message, /helpdesk/i, `${label}: the message does not speak of a helpdesk`);
    t.match(res.body.error?.message, /x-telegram-bot-api-secret-token/, `${label}: the message names the header`);
  }
  t.same(await since(before), [], 'nothing queued');
});

t.test('Telegram: a group message, an edited message, a photo → 200, nothing queued', async (t) => {
  const before = await mark();
  t.equal((await deliverTg(tg, tgUpdate({ id: -100_200_300, type: 'group', title: 'Team' }))).status, 200, 'group');
  t.equal((await deliverTg(tg, tgUpdate({ id: -100_200_301, type: 'supergroup', title: 'Team' }))).status, 200, 'supergroup');
  t.equal((await deliverTg(tg, { update_id: ++updateNo, edited_message: { message_id: 1, chat: { id: 1, type: 'private' }, text: 'edit' } })).status, 200, 'edited');
  t.equal((await deliverTg(tg, { update_id: ++updateNo, message: { message_id: 2, chat: { id: 1, type: 'private' }, photo: [] } })).status, 200, 'photo');
  t.same(await since(before), []);
  t.equal((await deliverTg(tg, { update_id: 'x' })).status, 400, 'a malformed update is 400');
});

t.test('Telegram: the previous secret works during its grace period, not after', async (t) => {
  const current = `tg_${randomBytes(10).toString('hex')}`;
  const previous = `tg_${randomBytes(10).toString('hex')}`;
  const rotated = await insertIntegration({ type: 'telegram', secret: current, previous, previousForS: 3600 });
  const before = await mark();
  t.equal((await deliverTg(rotated, tgUpdate(), previous)).status, 200, 'the previous secret within its grace period');
  t.equal((await deliverTg(rotated, tgUpdate(), current)).status, 200, 'the current one');
  t.equal((await since(before)).length, 2);

  const expired = await insertIntegration({ type: 'telegram', secret: current, previous, previousForS: -60 });
  t.equal((await deliverTg(expired, tgUpdate(), previous)).status, 401, 'the previous secret after its grace period');
  t.equal((await deliverTg(expired, tgUpdate(), current)).status, 200, 'the current one still');

  const inactive = await insertIntegration({ type: 'telegram', secret: current, active: false });
  t.equal((await deliverTg(inactive, tgUpdate(), current)).status, 403, 'inactive (after the secret check)');
  t.equal((await deliverTg(inactive, tgUpdate(), previous)).status, 401);
});

t.test('the connector in the path must be the integration’s; the channels’ GET without a probe is the generic check', async (t) => {
  t.equal((await deliverTg(wa, tgUpdate())).status, 404, 'a Telegram delivery to a WhatsApp integration');
  t.equal((await deliver(api, tg, waBody([]), { secret: tgSecret, type: 'whatsapp', header: 'x-hub-signature-256' })).status, 404, 'a WhatsApp delivery to a Telegram integration');
  t.equal((await deliver(api, wa, { hook_type: 'inbox' }, { secret: appSecret })).status, 404, 'a helpdesk delivery to a WhatsApp integration');
  const plain = await api('GET', `/api/webhook/telegram/${tg}?hub.mode=subscribe&hub.verify_token=x&hub.challenge=y`);
  t.equal(plain.status, 200, 'Telegram has no probe');
  t.same(plain.body, { ok: true, verified: true });
});
