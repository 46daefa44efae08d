import t, { type Test } from 'tap';
import { insertChannelIntegration, postWhatsApp, testWamid, waCustomerWrites, waMessagesBody, webhookUrl } from '../support/channel-integrations.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { startWhatsAppStub } from '../support/whatsapp-stub.js';
import { eventually, listedConversationId, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * The WhatsApp Cloud API channel end to end (contract.md § Direct channels): a real gateway,
 * worker, PostgreSQL and NATS; Meta's Graph API is the sandbox (scripts/sandbox/whatsapp.ts),
 * which delivers a send when it arrives and posts signed status webhooks back. The agent is a
 * model agent whose stand-in model repeats the question (`echo: <text>`), so every reply
 * names the message it answers.
 */
const graph = await startWhatsAppStub(t);
const svc = await startTestService(t, 'whatsapp_channel', { env: { PARTITIONS: '2', WHATSAPP_GRAPH_URL: graph.url, WHATSAPP_GRAPH_VERSION: 'v21.0' } });
dropNatsPrefixAtEnd(t, svc);
const { api } = svc;
const LONG = 'word '.repeat(1000).trim(); // 4999 characters
const llm = await startRepeatingModel(t, { answer: (text) => (text.startsWith('LONG') ? LONG : undefined) });
const user = await signUp(api, 'WhatsApp Co');
const agentId = await llm.createAgent(api, user.token);
const integration = await insertChannelIntegration(svc, { companyId: user.companyId, agentId, type: 'whatsapp', apiToken: graph.token, phoneNumberId: graph.account.phoneNumberId });
const hook = webhookUrl(svc.url, integration);
graph.connect(hook, integration.webhookSecret, { read: true });
const worker = await startTestWorker(t, svc, { workerId: 'wa-1' });
await waitForPartitions([worker], 2);

const token = user.token;
let customerNo = 0;
const newCustomer = () => `1555${String(Date.now()).slice(-5)}${String(++customerNo).padStart(2, '0')}`;
const sendsTo = (to: string) => graph.requests.filter((r) => r.method === 'POST' && r.body?.to === to);
const sentTo = (to: string) => graph.sent.filter((m) => m.to === to);
const messagesOf = async (conversationId: number): Promise<any[]> => {
  const res = await api('GET', `/api/conversations/${conversationId}/messages?limit=100`, { token });
  if (res.status !== 200) throw new Error(`messages: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.messages;
};
const conversation = async (id: number): Promise<any> => (await api('GET', `/api/conversations/${id}`, { token })).body.conversation;
const needsHuman = async (): Promise<number[]> => ((await api('GET', '/api/conversations?needsHuman=true&limit=100', { token })).body.conversations as any[]).map((c) => c.id);
const transitions = async (id: number): Promise<any[]> => (await api('GET', `/api/conversations/${id}/transitions?limit=100`, { token })).body.transitions;
/** The conversation's first sent (agent or operator) message, once it satisfies `until`. */
const sentMessage = (conversationId: number, until: (m: any) => boolean, what: string, timeoutMs = 15_000) =>
  eventually(async () => (await messagesOf(conversationId)).find((m) => (m.role === 'agent' || m.role === 'operator') && until(m)), timeoutMs, what);

t.test('a customer text is answered through Graph in Meta’s shape; statuses sent → delivered → read shown', async (t) => {
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'hello there', { name: 'Ann Lee' });
  await graph.waitFor(() => sendsTo(wa).length >= 1, 15_000);
  const [req] = sendsTo(wa);
  t.equal(req!.path, `/v21.0/${graph.account.phoneNumberId}/messages`, 'POST {graph}/{version}/{phoneNumberId}/messages');
  t.equal(req!.headers.authorization, `Bearer ${graph.token}`, 'the access token as Bearer');
  t.match(req!.body, { messaging_product: 'whatsapp', recipient_type: 'individual', to: wa, type: 'text', text: { preview_url: false, body: 'echo: hello there' } });
  t.match(req!.body.biz_opaque_callback_data, /^\d+$/, 'our outbox id rides along');

  const id = await listedConversationId(api, token, wa);
  const conv = await conversation(id);
  t.equal(conv.channel, 'whatsapp');
  t.equal(conv.clientId, wa, 'the customer is the wa_id');
  t.equal(conv.customer?.name, 'Ann Lee', "the lead's name from contacts[].profile.name");

  const read = await sentMessage(id, (m) => m.deliveryStatus === 'read', 'the reply read');
  t.equal(read.text, 'echo: hello there');
  t.equal(read.externalId, graph.sent.find((m) => m.to === wa)!.wamid, "Graph's messages[0].id is stored");
  const [outbox] = await sql(svc.orm, 'select id::text as id from outbox where message_id = ?', [read.id]);
  t.equal(req!.body.biz_opaque_callback_data, outbox.id, 'biz_opaque_callback_data = the outbox id');
  t.equal(read.deliveryError, null);
  t.equal(sentTo(wa).length, 1, 'one message delivered');
  // Each status taken by the worker leaves its receipt: the acceptance journal forgets it rather than publish it again and again.
  const wanted = ['sent', 'delivered', 'read'].map((status) => `ws:${read.externalId}:${status}`);
  let keys: string[] = [];
  // Written right after the status it records (a statement of its own).
  for (const until = Date.now() + 5_000; Date.now() < until && !wanted.every((k) => keys.includes(k)); await new Promise((r) => setTimeout(r, 50))) {
    keys = (await sql<{ idempotency_key: string }>(svc.orm, `select idempotency_key from inbound_receipts where integration_id = ? and idempotency_key like 'ws:%'`, [integration.id])).map((r) => r.idempotency_key);
  }
  for (const key of wanted) t.ok(keys.includes(key), `${key.split(':').at(-1)}: its receipt`);
});

t.test('statuses never move back: a late delivered after read is ignored, a duplicate changes nothing, out of order ends at read', async (t) => {
  // Statuses posted by hand: none from the sandbox for this one.
  graph.disconnect();
  t.teardown(() => graph.connect(hook, integration.webhookSecret, { read: true }));
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'status check');
  const id = await listedConversationId(api, token, wa);
  const reply = await sentMessage(id, (m) => m.delivery === 'sent', 'the reply sent');
  const out = graph.sent.find((m) => m.to === wa)!;
  const status = (s: 'sent' | 'delivered' | 'read', ts: number) =>
    postWhatsApp(api, integration, graph.statusBody({ wamid: out.wamid, status: s, recipientId: wa, timestamp: ts, bizOpaqueCallbackData: out.bizOpaqueCallbackData ?? undefined }, integration.webhookSecret).body);
  const now = Math.floor(Date.now() / 1000);
  t.equal((await status('read', now + 3)).status, 200);
  await sentMessage(id, (m) => m.id === reply.id && m.deliveryStatus === 'read', 'read');
  t.equal((await status('delivered', now + 2)).status, 200, 'a late delivered');
  t.equal((await status('sent', now + 1)).status, 200, 'a late sent');
  await untilIdle(svc);
  t.equal((await messagesOf(id)).find((m) => m.id === reply.id).deliveryStatus, 'read', 'still read');
  const again = await status('read', now + 3);
  t.equal(again.status, 200, 'Meta delivers the same webhook again');
  await untilIdle(svc);
  const after = (await messagesOf(id)).find((m) => m.id === reply.id);
  t.equal(after.deliveryStatus, 'read');
  t.equal(after.deliveryError, null);

  // The sandbox posting in reverse order (read, delivered, delivered, sent), duplicates included.
  graph.connect(hook, integration.webhookSecret, { read: true, outOfOrder: true, duplicate: true });
  const wa2 = newCustomer();
  await waCustomerWrites(api, integration, wa2, 'out of order');
  const id2 = await listedConversationId(api, token, wa2);
  await sentMessage(id2, (m) => m.delivery === 'sent', 'the reply sent');
  const wamid2 = sentTo(wa2)[0]!.wamid;
  const hooks = () => graph.webhooks().filter((w) => w.body.includes(wamid2));
  // read, delivered, delivered, sent: each posted 20 ms after the one before.
  await eventually(async () => hooks().length === 4 && hooks().every((w) => w.statuses.length > 0), 10_000, 'the four status webhooks posted');
  await graph.webhooksIdle();
  t.ok(hooks().every((w) => w.delivered), `every status webhook answered 2xx (${hooks().map((w) => w.statuses.join('/')).join(', ')})`);
  await untilIdle(svc);
  const m2 = (await messagesOf(id2)).find((m) => m.role === 'agent');
  t.equal(m2.deliveryStatus, 'read', 'out of order: ends at read');
});

t.test('a failed status with errors shows deliveryError {code, message}', async (t) => {
  graph.connect(hook, integration.webhookSecret, {});
  t.teardown(() => graph.connect(hook, integration.webhookSecret, { read: true }));
  graph.failNext(1, 'fails_later');
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'will fail later');
  const id = await listedConversationId(api, token, wa);
  const failed = await sentMessage(id, (m) => m.deliveryStatus === 'failed', 'the failed status shown');
  t.equal(failed.delivery, 'sent', 'the send itself was taken');
  t.match(failed.deliveryError, { code: '131026', message: String });
  t.ok(failed.deliveryError.message.length > 0, `with a message (${failed.deliveryError.message})`);
  await untilIdle(svc);
  t.equal(sendsTo(wa).length, 1, 'a failed status is not a reason to send again');
});

for (const fault of ['rate_limit', 'server_error', 'unavailable', 'pair_rate_limit'] as const) {
  t.test(`${fault}: retried with backoff, delivered once`, async (t) => {
    graph.failNext(1, fault);
    const wa = newCustomer();
    await waCustomerWrites(api, integration, wa, `retry after ${fault}`);
    const id = await listedConversationId(api, token, wa);
    const m = await sentMessage(id, (x) => x.delivery === 'sent', 'the reply sent');
    await untilIdle(svc);
    t.equal(sendsTo(wa).length, 2, 'refused once, then sent');
    t.equal(sentTo(wa).length, 1, 'delivered once');
    t.equal(m.text, `echo: retry after ${fault}`);
    t.equal((await messagesOf(id)).find((x) => x.id === m.id).deliveryError, null);
  });
}

t.test('131026 (undeliverable): failed at once and shown, not retried', async (t) => {
  graph.failNext(1, 'undeliverable');
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'nobody home');
  const id = await listedConversationId(api, token, wa);
  const m = await sentMessage(id, (x) => x.delivery === 'failed', 'the reply failed');
  await untilIdle(svc);
  t.equal(sendsTo(wa).length, 1, 'tried once');
  t.equal(m.deliveryStatus, 'failed');
  t.match(m.deliveryError, { code: '131026', message: /./ });
  t.equal((await conversation(id)).status, 'active', 'a refused number does not hand the conversation over');
});

/** Handed over (contract.md): paused, the reason in the context and the transition log, listed under needsHuman; `state` the machine's paused state expected. */
async function checkHandedOver(t: Test, id: number, reason: string, state: string) {
  const conv = await eventually(async () => {
    const c = await conversation(id);
    return c.status === 'paused' && c.context?.handoffReason === reason ? c : null;
  }, 15_000, `paused with ${reason}`).catch(async (err) => {
    t.comment(JSON.stringify(await conversation(id)));
    t.comment(JSON.stringify((await transitions(id)).map((x) => [x.event, x.to, x.actions])));
    throw err;
  });
  t.equal(conv.status, 'paused');
  t.equal(conv.context.handoffReason, reason, `handoffReason ${reason}`);
  const paused = typeof conv.state?.paused === 'string' ? conv.state.paused : Object.keys(conv.state?.paused ?? {})[0];
  t.equal(paused, state, `paused.${state} (${JSON.stringify(conv.state)})`);
  const list = await eventually(async () => {
    const ids = await needsHuman();
    return ids.includes(id) ? ids : null;
  }, 10_000, 'listed under needsHuman');
  t.ok(list.includes(id), 'listed by GET /api/conversations?needsHuman=true');
  return conv;
}

t.test('a reply more than 24 h after the customer’s timestamp: no Graph call, failed window_closed, handed over', async (t) => {
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'an old question', { timestamp: Math.floor(Date.now() / 1000) - 25 * 3600 });
  const id = await listedConversationId(api, token, wa);
  const m = await sentMessage(id, (x) => x.delivery === 'failed', 'the reply failed');
  t.equal(m.deliveryError?.code, 'window_closed', `deliveryError ${JSON.stringify(m.deliveryError)}`);
  await checkHandedOver(t, id, 'window_closed', 'operator');
  await untilIdle(svc);
  t.equal(sendsTo(wa).length, 0, 'no Graph call at all');
  t.ok((await transitions(id)).some((x) => x.event === 'channel.window_closed'), 'the transition log says why');
});

t.test('a 131047 answer (re-engagement): the same hand-over', async (t) => {
  graph.failNext(1, 'window_closed');
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'meta says closed');
  const id = await listedConversationId(api, token, wa);
  const m = await sentMessage(id, (x) => x.delivery === 'failed', 'the reply failed');
  t.equal(m.deliveryError?.code, '131047', `deliveryError ${JSON.stringify(m.deliveryError)}`);
  await checkHandedOver(t, id, 'window_closed', 'operator');
  await untilIdle(svc);
  t.equal(sendsTo(wa).length, 1, 'tried once, not retried');
  t.equal(sentTo(wa).length, 0);
});

t.test('a 131047 reported late (a failed status after Meta took the send): the same hand-over', async (t) => {
  graph.failNext(1, 'window_closed_later');
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'closed after taking it');
  const id = await listedConversationId(api, token, wa);
  const m = await sentMessage(id, (x) => x.deliveryStatus === 'failed', 'the failed status shown');
  t.equal(m.delivery, 'sent', 'the send itself was taken');
  t.equal(m.deliveryError?.code, '131047', `deliveryError ${JSON.stringify(m.deliveryError)}`);
  await checkHandedOver(t, id, 'window_closed', 'operator');
  await untilIdle(svc);
  t.equal(sendsTo(wa).length, 1, 'not sent again');
});

t.test('an image: the "text only" line is sent and the conversation handed over (unsupported_message)', async (t) => {
  const wa = newCustomer();
  const res = await postWhatsApp(api, integration, waMessagesBody(integration.phoneNumberId!, [{ from: wa, type: 'image', text: 'look at this' }], { [wa]: 'Pic Sender' }));
  t.equal(res.status, 200);
  await graph.waitFor(() => sendsTo(wa).length >= 1, 15_000);
  const id = await listedConversationId(api, token, wa);
  await checkHandedOver(t, id, 'unsupported_message', 'handedOver');
  await untilIdle(svc);
  t.equal(sentTo(wa).length, 1, 'one line sent');
  t.match(sentTo(wa)[0]!.body, /text only/i, `"${sentTo(wa)[0]!.body}"`);
  t.equal(llm.requests.filter((r) => llm.lastUserText(r).includes('[image]')).length, 0, 'the model is not asked about an image');
});

t.test('a batch carrying an old wamid with a new one answers only the new one', async (t) => {
  const wa = newCustomer();
  const old = testWamid();
  await waCustomerWrites(api, integration, wa, 'first question', { wamid: old });
  await graph.waitFor(() => sentTo(wa).length >= 1, 15_000);
  await untilIdle(svc);
  const res = await postWhatsApp(
    api,
    integration,
    waMessagesBody(integration.phoneNumberId!, [
      { from: wa, text: 'first question', wamid: old },
      { from: wa, text: 'second question', wamid: testWamid() },
    ]),
  );
  t.equal(res.status, 200);
  await graph.waitFor(() => sentTo(wa).length >= 2, 15_000);
  await untilIdle(svc);
  t.same(sentTo(wa).map((m) => m.body), ['echo: first question', 'echo: second question'], 'the old one is not answered again');
  const id = await listedConversationId(api, token, wa);
  t.equal((await messagesOf(id)).filter((m) => m.role === 'customer').length, 2, 'two customer messages stored');
});

t.test('an operator reply goes out through Graph and takes over (the bot is paused)', async (t) => {
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'can I talk to you');
  await graph.waitFor(() => sentTo(wa).length >= 1, 15_000);
  const id = await listedConversationId(api, token, wa);
  await untilIdle(svc);
  const res = await api('POST', `/api/conversations/${id}/messages`, { token, body: { text: 'Operator Olga here.' } });
  t.equal(res.status, 200, JSON.stringify(res.body));
  await graph.waitFor(() => sentTo(wa).length >= 2, 15_000);
  t.equal(sentTo(wa)[1]!.body, 'Operator Olga here.');
  const req = sendsTo(wa)[1]!;
  t.match(req.body, { messaging_product: 'whatsapp', to: wa, type: 'text', text: { body: 'Operator Olga here.' } });
  const conv = await conversation(id);
  t.equal(conv.status, 'paused', `paused (${JSON.stringify(conv.state)})`);
  t.match(JSON.stringify(conv.state), /operator/);
  await waCustomerWrites(api, integration, wa, 'are you still there');
  await untilIdle(svc);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(sentTo(wa).length, 2, 'the bot stays silent after the take-over');
  const op = (await messagesOf(id)).find((m) => m.role === 'operator');
  t.equal(op.delivery, 'sent');
});

t.test('a reply over 4096 characters goes out as parts, in order; an operator reply over 4096 is refused by the API', async (t) => {
  const wa = newCustomer();
  await waCustomerWrites(api, integration, wa, 'LONG answer please');
  await graph.waitFor(() => sentTo(wa).length >= 2, 15_000);
  await untilIdle(svc);
  const parts = sentTo(wa).map((m) => m.body);
  t.equal(parts.length, 2, `two parts (${parts.map((p) => p.length).join(' + ')} characters)`);
  t.ok(parts.every((p) => p.length <= 4096), 'each at most 4096');
  t.equal(parts.join(' '), LONG, 'in order, nothing lost (split at a space)');
  t.ok(sentTo(wa)[0]!.at <= sentTo(wa)[1]!.at);
  const id = await listedConversationId(api, token, wa);
  const m = (await messagesOf(id)).find((x) => x.role === 'agent');
  t.equal(m.delivery, 'sent');
  t.equal(m.text, LONG, 'stored whole');

  // The API takes an operator reply of at most 4096 characters (gateway/routes/conversation-schemas.ts replyBody).
  const five = 'x'.repeat(5000);
  const res = await api('POST', `/api/conversations/${id}/messages`, { token, body: { text: five } });
  t.equal(res.status, 400, 'a 5000-character operator reply is refused (VALIDATION_ERROR)');
  t.equal(res.body?.error?.code, 'VALIDATION_ERROR');
});
