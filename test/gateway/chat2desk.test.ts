// Chat2Desk as it really is (issue #18): it signs webhooks with a secret of its own, counts a
// refused delivery as failed (three retries, then the event is lost), sends ids as integers or
// "" and names status events in hook_type. The stand-in (test/support/chat2desk-stub.ts)
// behaves so; these tests drive the service with it.
import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver, eventually, inboundMessages, startPeerGateway } from '../support/webhooks.js';

// The service's clock, moved forward to end a secret's grace period.
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

const TOKEN = 'c2d-real-account-token';
const desk = await startChat2DeskStub(t, TOKEN);
const svc = await startTestService(t, 'chat2desk', {
  env: { HELPDESK_GLOBAL_URL: desk.url, PUBLIC_BASE_URL: 'https://mas.example.test' },
  now,
  // Written every 100 ms instead of 5 s, so the tests see it at once.
  webhookActivity: { flushMs: 100 },
});
const { api, nc, config } = svc;
const owner = await signUp(api, 'Real Desk Co');
const agentId = await createAgent(api, owner.token);
const hookUrl = (id: number, base = svc.url) => `${base}/api/webhook/helpdesk/${id}`;
const shown = async (id: number) => (await api('GET', `/api/integrations/${id}`, { token: owner.token })).body.integration;
/** Polls the integration until `check` holds for it (the gateways write activity every 100 ms). */
const until = async (id: number, check: (i: any) => boolean, what: string) => {
  let last: any;
  const ok = await eventually(async () => check((last = await shown(id))), 5000, 50);
  if (!ok) throw new Error(`${what}: not reached; integration is ${JSON.stringify(last)}`);
  return last;
};
const helpdesk = (name: string) => createIntegration(api, owner.token, { name, agentId, apiToken: TOKEN, region: 'global' });

let seq = 0;
const inbox = (extra: Record<string, unknown> = {}) => ({
  hook_type: 'inbox',
  type: 'from_client',
  message_id: 7_100_000 + ++seq,
  text: 'Is my order on its way?',
  client_id: 5551,
  channel_id: 12,
  transport: 'telegram',
  request_id: 8001,
  dialog_id: 9001,
  event_time: '2026-03-01T10:00:00 UTC',
  ...extra,
});

t.test("the helpdesk's own signing secret: refused until PATCH {webhookSecret} sets it; write-only; shown per integration", async (t) => {
  const i = await helpdesk('Signed by Chat2Desk');
  t.equal((await api('POST', `/api/integrations/${i.id}/register-webhook`, { token: owner.token })).status, 200);
  t.match(await shown(i.id), { webhookStatus: 'ok', lastWebhookAt: null, signatureFailuresLastHour: 0, lastSignatureFailure: null }, 'registered, nothing received yet');

  // Chat2Desk signs with the secret it issued: our generated one does not match.
  const refused = await desk.sendWebhook(hookUrl(i.id), inbox());
  t.same(refused.statuses, [401, 401, 401, 401], 'refused, retried three times, then lost by the helpdesk');
  t.equal(refused.lastBody.error.code, 'INVALID_SIGNATURE');
  t.match(refused.lastBody.error.message, /does not match the integration's webhook secret/, 'the sender is told why');
  const failing = await until(i.id, (x) => x.signatureFailuresLastHour === 4, 'four refusals counted');
  t.equal(failing.webhookStatus, 'failing', '"Webhook OK" is not claimed while deliveries are refused');
  t.equal(failing.lastWebhookAt, null);
  t.match(failing.lastSignatureFailure, { at: /^\d{4}-\d\d-\d\dT/, reason: 'mismatch', message: /does not match/ });

  const set = await api('PATCH', `/api/integrations/${i.id}`, { token: owner.token, body: { webhookSecret: desk.signingSecret } });
  t.equal(set.status, 200);
  t.notOk('webhookSecret' in set.body.integration, 'write-only: not in the answer');
  t.notOk(JSON.stringify(set.body).includes(desk.signingSecret));
  t.notOk(JSON.stringify(await shown(i.id)).includes(desk.signingSecret), 'nor in GET');

  const accepted = await desk.sendWebhook(hookUrl(i.id), inbox());
  t.same(accepted.statuses, [200], 'taken at the first attempt');
  const ok = await until(i.id, (x) => x.lastWebhookAt !== null, 'the webhook recorded');
  t.equal(ok.webhookStatus, 'ok', 'webhooks arrive');
  t.equal(ok.signatureFailuresLastHour, 4, 'the refusals of the last hour are still shown');
  t.ok(Date.parse(ok.lastWebhookAt) > Date.parse(ok.lastSignatureFailure.at));
  const queued = (await inboundMessages(nc, config.natsPrefix)).filter((m) => m.envelope.integrationId === i.id);
  t.equal(queued.length, 1, 'the accepted one is queued, the refused ones never were');

  // Same grace rotation as rotate-secret: the generated secret keeps verifying for a day.
  t.equal((await deliver(api, i.id, inbox(), { secret: i.webhookSecret })).status, 200, 'the replaced secret in its grace period');
  offsetMs = (24 * 3600 + 5) * 1000;
  t.teardown(() => {
    offsetMs = 0;
  });
  t.equal((await deliver(api, i.id, inbox(), { secret: i.webhookSecret })).status, 401, 'not after it');
  t.same((await desk.sendWebhook(hookUrl(i.id), inbox())).statuses, [200], "the helpdesk's secret still");
  offsetMs = 0;

  const short = await api('PATCH', `/api/integrations/${i.id}`, { token: owner.token, body: { webhookSecret: 'too-short' } });
  t.equal(short.status, 400);
  t.same(short.body.error.details, [{ field: 'webhookSecret', message: 'must be at least 16 characters' }]);
  const chat = await createIntegration(api, owner.token, { type: 'webchat', name: 'Widget', agentId });
  const onChat = await api('PATCH', `/api/integrations/${chat.id}`, { token: owner.token, body: { webhookSecret: desk.signingSecret } });
  t.equal(onChat.status, 400);
  t.same(onChat.body.error.details, [{ field: 'webhookSecret', message: 'is not used by webchat integrations' }]);
});

t.test('activity adds up across gateway processes, off the webhook path', async (t) => {
  const i = await helpdesk('Two gateways');
  const peer = await startPeerGateway(t, svc, { webhookActivity: { flushMs: 100 } });
  t.match(await shown(i.id), { webhookStatus: 'ok', signatureFailuresLastHour: 0 }, 'registered at creation, nothing received');

  for (let k = 0; k < 3; k++) t.equal((await deliver(api, i.id, inbox(), { secret: 'f'.repeat(64) })).status, 401);
  for (let k = 0; k < 2; k++) t.equal((await deliver(peer.api, i.id, inbox(), {})).status, 401, 'unsigned, at the other gateway');
  const counted = await until(i.id, (x) => x.signatureFailuresLastHour === 5, 'five refusals from two processes');
  t.equal(counted.webhookStatus, 'failing');
  t.equal(counted.lastSignatureFailure.reason, 'missing_signature', 'the latest reason');
  t.match(counted.lastSignatureFailure.message, /no signature header/);

  t.equal((await deliver(peer.api, i.id, inbox(), { secret: i.webhookSecret })).status, 200);
  const arrived = await until(i.id, (x) => x.lastWebhookAt !== null, 'the accepted webhook');
  t.equal(arrived.webhookStatus, 'ok', 'a signed webhook proves the helpdesk has our URL');
  t.equal(arrived.signatureFailuresLastHour, 5);

  // A gateway that stops writes what it still holds.
  t.equal((await deliver(peer.api, i.id, inbox(), { secret: 'e'.repeat(64) })).status, 401);
  await peer.close();
  t.equal((await shown(i.id)).signatureFailuresLastHour, 6, 'written on close');
});

t.test('"" ids count as absent; ids as strings of digits are read as numbers', async (t) => {
  const i = await helpdesk('Empty ids');
  t.equal((await api('PATCH', `/api/integrations/${i.id}`, { token: owner.token, body: { webhookSecret: desk.signingSecret } })).status, 200);
  const last = async () => (await inboundMessages(nc, config.natsPrefix)).filter((m) => m.envelope.integrationId === i.id).at(-1)!.envelope;

  const close = await desk.sendWebhook(hookUrl(i.id), { hook_type: 'close_dialog', request_id: 4711, dialog_id: '', client_id: '', message_id: '' });
  t.same(close.statuses, [200], 'taken, not refused (a refusal is retried three times, then lost)');
  t.same((await last()).status, { hookType: 'close_dialog', requestId: 4711, dialogId: null, clientId: null });

  const transfer = await desk.sendWebhook(hookUrl(i.id), { hook_type: 'dialog_transferred', request_id: '4712', dialog_id: '99', client_id: 5551 });
  t.same(transfer.statuses, [200]);
  t.same((await last()).status, { hookType: 'dialog_transferred', requestId: 4712, dialogId: 99, clientId: '5551' });

  const message = await desk.sendWebhook(hookUrl(i.id), inbox({ channel_id: '', dialog_id: '', request_id: '' }));
  t.same(message.statuses, [200]);
  t.match((await last()).message, { clientId: '5551', channelId: null, requestId: null, dialogId: null });
});

t.test('what to fix, one message per field: hook_type, not event; a field of the wrong type', async (t) => {
  const i = await helpdesk('Strict');
  const misnamed = await deliver(api, i.id, { event: 'close_dialog', request_id: 1 }, { secret: i.webhookSecret });
  t.equal(misnamed.status, 400);
  t.equal(misnamed.body.error.code, 'VALIDATION_ERROR');
  t.match(misnamed.body.error.message, /hook_type, not in event/);
  t.same(misnamed.body.error.details, [{ field: 'hook_type', message: 'is required: this payload has event: "close_dialog"; the field is named hook_type' }], 'one detail, not "text is required, client_id is required"');
  const asType = await deliver(api, i.id, { type: 'dialog_transferred', request_id: 1 }, { secret: i.webhookSecret });
  t.equal(asType.status, 400);
  t.same(asType.body.error.details.map((d: { field: string }) => d.field), ['hook_type']);

  const wrongType = await deliver(api, i.id, { hook_type: 'close_dialog', request_id: 1, client_id: { id: 5 }, dialog_id: 'x' }, { secret: i.webhookSecret });
  t.equal(wrongType.status, 400);
  t.same(
    wrongType.body.error.details,
    [
      { field: 'dialog_id', message: 'must be a whole number ≥ 0, a string of digits or null' },
      { field: 'client_id', message: 'must be a non-empty string, an integer or null' },
    ],
    'the alternatives in one message per field',
  );
});

t.test('POST /api/webhook/webchat/:id says the widget speaks WebSocket, and where', async (t) => {
  const chat = await createIntegration(api, owner.token, { type: 'webchat', name: 'Site chat', agentId });
  const res = await deliver(api, chat.id, { text: 'hi', client_id: 1 }, { secret: chat.webhookSecret, type: 'webchat' });
  t.equal(res.status, 404, 'as the contract says');
  t.equal(res.body.error.code, 'NOT_FOUND');
  t.match(res.body.error.message, new RegExp(`WebSocket at /api/webchat/${chat.id}/ws`));
  t.notMatch(res.body.error.message, /Unknown connector type/);
  t.match((await deliver(api, 999_999, {}, { type: 'webchat' })).body.error.message, /Integration not found/, 'an unknown id is just not found');
});
