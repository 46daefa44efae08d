import t from 'tap';
import { noticesOf } from '../../lib/conversations.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import {
  createHelpdeskIntegration,
  eventually,
  messageEnvelope,
  publishEnvelope,
  sql,
  startTestWorker,
  untilIdle,
  waitForPartitions,
} from '../support/worker.js';

const svc = await startTestService(t, 'delivery', { env: { PARTITIONS: '4' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Delivery Co');
const model = await startRepeatingModel(t, { delayMs: (text) => (text.startsWith('slow') ? 1200 : 0) });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const worker = await startTestWorker(t, svc, { workerId: 'delivery-1' });
await waitForPartitions([worker], 4);

const messagesTo = (clientId: string) => stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.body?.client_id === clientId);
const conversationOf = async (clientId: string) =>
  (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc limit 1', [integration.id, clientId]))[0];
const agentMessages = (conversationId: number) =>
  sql(svc.orm, `select m.*, o.status as outbox_status, o.attempts from conversation_messages m left join outbox o on o.message_id = m.id where m.conversation_id = ? and m.role = 'agent' order by m.seq`, [conversationId]);

t.test('helpdesk answers 503 then 200: the reply is sent once', async (t) => {
  let failures = 0;
  stub.handle((r) => (r.path === '/v1/messages' && r.body?.client_id === 'c-503' && failures++ < 1 ? { status: 503, body: { status: 'error' } } : undefined));
  t.teardown(() => stub.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-503', 'hello'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-503');
    if (!c) return null;
    const [m] = await agentMessages(c.id);
    return m?.delivery === 'sent' ? c : null;
  });
  await new Promise((r) => setTimeout(r, 400));
  t.equal(messagesTo('c-503').length, 2, 'one 503, then one success');
  const [m] = await agentMessages(conv.id);
  t.equal(m.outbox_status, 'sent');
  t.equal(m.attempts, 2);
});

t.test('a permanent 4xx is recorded as failed and not retried', async (t) => {
  stub.handle((r) => (r.path === '/v1/messages' && r.body?.client_id === 'c-400' ? { status: 400, body: { status: 'error', message: 'bad client' } } : undefined));
  t.teardown(() => stub.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-400', 'hello'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-400');
    if (!c) return null;
    const [m] = await agentMessages(c.id);
    return m?.delivery === 'failed' ? c : null;
  });
  await new Promise((r) => setTimeout(r, 800));
  t.equal(messagesTo('c-400').length, 1, 'tried once');
  const [m] = await agentMessages(conv.id);
  t.equal(m.outbox_status, 'failed');
  t.match(m.delivery_error, /HTTP 400/);
});

t.test('HTTP 200 with {"status":"error"} is a failure: not marked sent, not retried, not reconciled', async (t) => {
  stub.handle((r) => (r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'c-status-error' ? { status: 200, body: { status: 'error', message: 'Client is blocked' } } : undefined));
  t.teardown(() => stub.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-status-error', 'hello'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-status-error');
    if (!c) return null;
    const [m] = await agentMessages(c.id);
    return m?.delivery && m.delivery !== 'pending' && m.delivery !== 'sending' ? c : null;
  });
  await untilIdle(svc);
  const [m] = await agentMessages(conv.id);
  t.equal(m.delivery, 'failed', 'the helpdesk refused it: failed, not sent');
  t.equal(m.outbox_status, 'failed');
  t.equal(m.external_id, null, 'no message id was made up');
  t.match(m.delivery_error, /status "error" \(HTTP 200\)/, 'says what the helpdesk answered');
  t.notMatch(m.delivery_error, /blocked/, "never the helpdesk's own words");
  t.equal(messagesTo('c-status-error').length, 1, 'a certain refusal is not retried');
  t.notOk(stub.requests.some((r) => r.method === 'GET' && r.path === '/v1/messages' && r.query.get('client_id') === 'c-status-error'), 'nor reconciled against the history');
});

t.test("429 with Retry-After: the next attempt waits as long as the helpdesk asked", async (t) => {
  let limited = 0;
  stub.handle((r) =>
    r.path === '/v1/messages' && r.method === 'POST' && r.body?.client_id === 'c-429' && limited++ < 1
      ? { status: 429, body: { status: 'error', message: 'Too many requests' }, headers: { 'Retry-After': '2' } }
      : undefined,
  );
  t.teardown(() => stub.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-429', 'hello'));
  await stub.waitFor(() => messagesTo('c-429').length >= 2, 15_000);
  await untilIdle(svc);
  const [first, second] = messagesTo('c-429');
  // The worker's own backoff here is 150 ms: only the Retry-After makes it wait 2 s.
  t.ok(second!.at - first!.at >= 1900, `retried after ${second!.at - first!.at} ms (Retry-After: 2)`);
  t.equal(messagesTo('c-429').length, 2, 'a 429 was not delivered: sent again once, not reconciled');
  t.equal(stub.delivered('c-429').length, 1);
  const [m] = await agentMessages((await conversationOf('c-429')).id);
  t.equal(m.delivery, 'sent');
});

t.test('an operator pause while the agent is thinking wins: the reply is cancelled', async (t) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-race', 'slow question'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-race');
    return c && c.state?.active === 'answering' ? c : null;
  });
  const res = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: user.token });
  t.equal(res.status, 200);
  t.same(res.body.conversation.state, { paused: 'operator' }, 'the pause is applied while the agent thinks');
  // The runner gives up the model's call: no late answer to store (a test whose model
  // answers at the very moment of the pause would find it stored as cancelled).
  await eventually(async () => model.askedAbout('slow question')[0]?.aborted, 5000, 'the model call is cancelled');
  await untilIdle(svc);
  t.same(await agentMessages(conv.id), [], 'no reply made, none queued');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(messagesTo('c-race').length, 0, 'nothing sent');
});

t.test('a hold recorded before the pause is applied cancels the reply (host check)', async (t) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-hold', 'slow again'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-hold');
    return c && c.state?.active === 'answering' ? c : null;
  });
  // What the pause route does first, before its envelope is applied.
  await sql(svc.orm, 'update conversations set hold_requested_at = now() where id = ?', [conv.id]);
  const [m] = await eventually(async () => {
    const rows = await agentMessages(conv.id);
    return rows.length ? rows : null;
  });
  t.equal(m.delivery, 'cancelled');
  await new Promise((r) => setTimeout(r, 300));
  t.equal(messagesTo('c-hold').length, 0, 'nothing sent');
});

t.test('a reply waiting for a retry is cancelled when a human takes over (the outbox sender checks it again)', async (t) => {
  let down = true;
  stub.handle((r) => (r.path === '/v1/messages' && r.body?.client_id === 'c-late' && down ? { status: 503 } : undefined));
  t.teardown(() => stub.handle(null));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'c-late', 'hello'));
  const conv = await eventually(async () => {
    const c = await conversationOf('c-late');
    return c && messagesTo('c-late').length >= 1 ? c : null;
  });
  const res = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: user.token });
  t.equal(res.status, 200);
  down = false;
  const [m] = await eventually(async () => {
    const rows = await agentMessages(conv.id);
    return rows[0]?.delivery === 'cancelled' ? rows : null;
  }, 8000, 'cancelled by the outbox sender');
  t.equal(m.outbox_status, 'cancelled');
  await new Promise((r) => setTimeout(r, 300));
  t.ok(stub.requests.filter((r) => r.path === '/v1/messages' && r.body?.client_id === 'c-late').length >= 1);
  t.equal(stub.sent().filter((b) => b.client_id === 'c-late').length, messagesTo('c-late').length, 'no request after the pause');
});

t.test('end to end through the signed helpdesk webhook', async (t) => {
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 987654, text: 'via webhook', client_id: 4242, channel_id: 9, transport: 'telegram', request_id: 31337, dialog_id: 313 };
  const res = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
  t.equal(res.status, 200);
  t.same(res.body, { ok: true });
  await stub.waitFor(() => stub.sent().some((b) => b.client_id === 4242));
  // The helpdesk retries the same delivery later: no second reply.
  const again = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
  t.equal(again.status, 200);
  await untilIdle(svc);
  const sent = stub.sent().filter((b) => b.client_id === 4242);
  t.equal(sent.length, 1);
  // Chat2Desk's ids are integers: they go back as numbers (a string of digits is refused with {"status":"error"}).
  t.same(sent[0], { client_id: 4242, text: 'echo: via webhook', transport: 'telegram', channel_id: 9, type: 'to_client', external_id: sent[0].external_id });
  t.match(sent[0].external_id, /^\d+$/);
  t.equal(stub.delivered('4242').length, 1, 'the helpdesk took it');
  const [reply] = await agentMessages((await conversationOf('4242')).id);
  t.match(reply, { delivery: 'sent', external_id: String(stub.delivered('4242')[0]!.id) }, 'recorded as sent with the helpdesk message id');
  // a status event carrying only request_id closes that session
  const close = await deliver(svc.api, integration.id, { hook_type: 'close_request', request_id: 31337 }, { secret: integration.webhookSecret });
  t.equal(close.status, 200);
  const conv = await eventually(async () => {
    const c = await conversationOf('4242');
    return c?.status === 'closed' ? c : null;
  });
  t.equal(conv.state, 'closed');
});

t.test('a burst across many conversations: each reply sent once, in order per conversation, each delivery announced', async (t) => {
  const conversations = 30;
  const perConversation = 4;
  const clients = Array.from({ length: conversations }, (_, c) => `burst-${c}`);
  // What the operator's live view (GET /conversations/:id/inspect) relays.
  const announced = new Map<string, (string | null)[]>();
  const sub = svc.nc.subscribe(`${svc.config.natsPrefix}.conv.${user.companyId}.*`, {
    callback: (err, msg) => {
      if (err) return;
      for (const notice of noticesOf(msg.data)) {
        if (notice.type !== 'message' || notice.message.delivery !== 'sent' || !notice.message.text.startsWith('echo: burst')) continue;
        announced.set(notice.message.text, [...(announced.get(notice.message.text) ?? []), notice.message.externalId]);
      }
    },
  });
  t.teardown(() => sub.unsubscribe());

  await Promise.all(
    clients.map(async (clientId) => {
      for (let k = 0; k < perConversation; k++) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, `burst ${clientId} #${k}`));
    }),
  );
  const want = (clientId: string) => Array.from({ length: perConversation }, (_, k) => `echo: burst ${clientId} #${k}`);
  await stub.waitFor(() => clients.every((c) => messagesTo(c).length >= perConversation), 20_000);
  await untilIdle(svc);
  for (const clientId of clients) t.same(messagesTo(clientId).map((r) => r.body.text), want(clientId), `${clientId}: each reply once, in order`);

  const rows = await sql(
    svc.orm,
    `select o.status, o.attempts, m.delivery, m.external_id from outbox o join conversation_messages m on m.id = o.message_id
     join conversations c on c.id = o.conversation_id where c.integration_id = ? and c.client_id = any(?::text[])`,
    [integration.id, `{${clients.join(',')}}`],
  );
  t.equal(rows.length, conversations * perConversation);
  t.ok(rows.every((r) => r.status === 'sent' && r.attempts === 1 && r.delivery === 'sent' && r.external_id), 'every row and message recorded as sent once, with the helpdesk id');
  await eventually(async () => announced.size === conversations * perConversation, 5000, 'every delivery announced');
  t.ok([...announced.values()].every((ids) => ids.length === 1 && ids[0]), 'each delivery announced once, with the helpdesk message id');
});
