import { createHmac } from 'node:crypto';
import t from 'tap';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelAnswer } from '../support/openai-stub.js';
import { startTestService } from '../support/service.js';
import { openChat, type ChatClient } from '../support/webchat.js';
import { deliver } from '../support/webhooks.js';
import { eventually, modelAgentCompany, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Customers have names (contract.md § The first hour), through the real gateway, worker,
 * PostgreSQL and NATS; the helpdesk, the model and the company's API are local stand-ins:
 * - the helpdesk's `client.name` / `client.phone` name the lead and the listed conversation,
 *   cleaned of hostile text, never over what an operator wrote;
 * - the widget's `MAS.identify` with a right hash names the lead, verified; a wrong hash is an
 *   error frame and nothing is stored, the chat goes on;
 * - the pre-chat form's answers name the lead, but an action's `{customer.email}` is filled only
 *   by a verified or an operator's email, never a typed one.
 */
const svc = await startTestService(t, 'customer_names', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const shop = await startActionApiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'names-1', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

// A question that starts with "orders" makes the model call my_orders, then answer; anything else is answered at once.
llm.respond((req): ModelAnswer => {
  const asked = llm.lastUserText(req);
  const toolResults = (req.body.messages as { role: string }[]).filter((m) => m.role === 'tool');
  if (asked.startsWith('orders') && toolResults.length === 0) return { delayMs: 50, toolCalls: [{ name: 'my_orders', arguments: '{}' }] };
  return { delayMs: 50, content: 'Happy to help.' };
});

const company = await modelAgentCompany(svc, helpdesk, llm.baseUrl, 'Names Co');
const { token } = company.user;
const integration = company.integration;
const action = await svc.api('POST', `/api/agents/${company.agent.id}/actions`, {
  token,
  body: { name: 'my_orders', description: "The asking customer's orders", parameters: { type: 'object', properties: {} }, request: { method: 'GET', url: `${shop.url}/orders?who={customer.id}`, headers: { 'X-Email': '{customer.email}' } } },
});
if (action.status !== 201) throw new Error(`action: ${action.status} ${JSON.stringify(action.body)}`);

const chatRes = await svc.api('POST', '/api/integrations', { token, body: { type: 'webchat', name: 'Site chat', agentId: company.agent.id } });
const chat = chatRes.body.integration as { id: number; webhookSecret: string; prechatForm: string };
const hashOf = (id: string, secret = chat.webhookSecret) => createHmac('sha256', secret).update(id).digest('hex');

let messageNo = 0;
async function helpdeskWrites(clientId: string, text: string, client?: unknown) {
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 7_300_000 + ++messageNo, text, client_id: clientId, channel_id: 12, transport: 'telegram', ...(client === undefined ? {} : { client }) };
  const res = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${JSON.stringify(res.body)}`);
  await untilIdle(svc);
}
const leadOf = async (integrationId: number, clientId: string) => {
  const res = await svc.api('GET', `/api/leads?limit=200`, { token });
  return (res.body.leads as any[]).find((l) => l.integrationId === integrationId && l.clientId === clientId);
};
const conversationOf = async (clientId: string) => (await svc.api('GET', `/api/conversations?clientId=${encodeURIComponent(clientId)}`, { token })).body.conversations[0];

t.test('the helpdesk names its customer: lead, listed conversation and the conversation itself', async (t) => {
  await helpdeskWrites('101', 'Hi, where is my parcel?', { id: 101, name: '  Ann\u202e\u0007 Lee\n', phone: '+7 900 000-00-01', client_phone: 'ignored' });
  const lead = await leadOf(integration.id, '101');
  t.match(lead, { name: 'Ann Lee', phone: '+7 900 000-00-01', email: null, verifiedId: null }, 'the name without its control characters, and the phone');
  const listed = await conversationOf('101');
  t.same(listed.customer, { name: 'Ann Lee', email: null, phone: '+7 900 000-00-01' }, 'the inbox lists the name');
  const one = await svc.api('GET', `/api/conversations/${listed.id}`, { token });
  t.same(one.body.conversation.customer, { name: 'Ann Lee', email: null, phone: '+7 900 000-00-01' }, 'the conversation carries name, email and phone');

  const patched = await svc.api('PATCH', `/api/leads/${lead.id}`, { token, body: { name: 'Ann Lee (VIP)' } });
  t.equal(patched.status, 200);
  await helpdeskWrites('101', 'Any news?', { name: 'Ann' });
  t.equal((await leadOf(integration.id, '101')).name, 'Ann Lee (VIP)', "the helpdesk never overwrites an operator's name");
});

t.test('a name that comes later fills an existing lead; hostile client cards cost nothing', async (t) => {
  await helpdeskWrites('202', 'hello', undefined);
  t.match(await leadOf(integration.id, '202'), { name: null, phone: null }, 'no client card: no name');
  await helpdeskWrites('202', 'it is Bob', { name: 'Bob Stone' });
  t.equal((await leadOf(integration.id, '202')).name, 'Bob Stone', 'filled on the lead the first message made');
  await helpdeskWrites('202', 'again', { name: 'Robert' });
  t.equal((await leadOf(integration.id, '202')).name, 'Bob Stone', 'a later helpdesk name does not replace the first');

  await helpdeskWrites('303', 'long', { name: 'x'.repeat(100_000), phone: { nested: true } });
  t.match(await leadOf(integration.id, '303'), { name: 'x'.repeat(200), phone: null }, 'a huge name is cut to 200 characters, a phone that is not text is dropped');
  await helpdeskWrites('404', 'odd card', 'not an object');
  t.match(await leadOf(integration.id, '404'), { name: null }, 'a client that is not an object: the message is still taken');
});

/** A welcomed visitor: hello with `identity` when given; the frames before the welcome are returned too. */
async function visitor(tt: Parameters<typeof openChat>[0], hello: Record<string, unknown> = {}) {
  const c = await openChat(tt, svc.url, chat.id);
  c.send({ type: 'hello', ...hello });
  const before: any[] = [];
  for (;;) {
    const f = await c.next();
    if (f.type === 'welcome') return { c, welcome: f, before };
    before.push(f);
  }
}
async function firstMessage(c: ChatClient, clientMessageId: string, text: string, extra: Record<string, unknown> = {}) {
  c.send({ type: 'message', clientMessageId, text, ...extra });
  const ack = await c.next('ack', 15_000);
  await untilIdle(svc);
  return ack;
}

t.test('MAS.identify with a right hash names the lead, verified; a wrong one is refused and nothing is stored', async (t) => {
  const identity = { id: 'user-42', name: 'Carla Verified', email: 'carla@shop.test' };
  const good = await visitor(t, { identity: { ...identity, hash: hashOf('user-42') } });
  t.same(good.before, [], 'no error');
  t.equal(good.welcome.prechat, 'off', 'the welcome says the integration asks nothing');
  await firstMessage(good.c, 'g-1', 'orders please');
  t.match(await leadOf(chat.id, good.welcome.visitorId), { name: 'Carla Verified', email: 'carla@shop.test', verifiedId: 'user-42' });
  const asked = await eventually(async () => shop.requests.find((r) => r.path === `/orders?who=${good.welcome.visitorId}`), 15_000, 'the action call');
  t.equal(asked.headers['x-email'], 'carla@shop.test', "a verified email fills the action's {customer.email}");

  const bad = await visitor(t, { identity: { ...identity, id: 'user-43', hash: hashOf('user-42') } });
  t.match(bad.before, [{ type: 'error', code: 'IDENTITY_INVALID' }], 'another id with that hash: an error frame');
  const forged = await visitor(t, { identity: { ...identity, hash: hashOf('user-42', 'not-the-secret') } });
  t.match(forged.before, [{ type: 'error', code: 'IDENTITY_INVALID' }], 'a hash made with another secret: refused');
  const malformed = await visitor(t, { identity: { id: 'user-42', hash: 'abc' } });
  t.match(malformed.before, [{ type: 'error', code: 'IDENTITY_INVALID' }], 'a hash that is not one: refused, and the hello still stands');
  await firstMessage(bad.c, 'b-1', 'hi');
  t.match(await leadOf(chat.id, bad.welcome.visitorId), { name: null, email: null, verifiedId: null }, 'the chat went on anonymously; nothing of the claim stored');

  // Identified later, on the open socket (MAS.identify after the widget loaded): stored with the next message.
  good.c.send({ type: 'identify', id: 'user-42', name: 'Carla V.', email: 'carla@shop.test', hash: hashOf('user-42') });
  await firstMessage(good.c, 'g-2', 'one more thing');
  t.equal((await leadOf(chat.id, good.welcome.visitorId)).name, 'Carla V.', 'a verified name replaces an earlier verified one');
  const lead = await leadOf(chat.id, good.welcome.visitorId);
  await svc.api('PATCH', `/api/leads/${lead.id}`, { token, body: { name: 'Carla (team)' } });
  good.c.send({ type: 'identify', id: 'user-42', name: 'Carla Again', email: 'carla@shop.test', hash: hashOf('user-42') });
  await firstMessage(good.c, 'g-3', 'and another');
  t.equal((await leadOf(chat.id, good.welcome.visitorId)).name, 'Carla (team)', "never over the team's name");
});

t.test("the pre-chat form names the lead, but a typed email never fills an action's {customer.email}", async (t) => {
  const patched = await svc.api('PATCH', `/api/integrations/${chat.id}`, { token, body: { prechatForm: 'name_email' } });
  t.equal(patched.status, 200, JSON.stringify(patched.body));
  t.equal(patched.body.integration.prechatForm, 'name_email');
  const bad = await svc.api('PATCH', `/api/integrations/${chat.id}`, { token, body: { prechatForm: 'phone' } });
  t.equal(bad.status, 400, 'an unknown form is refused');
  const onHelpdesk = await svc.api('PATCH', `/api/integrations/${integration.id}`, { token, body: { prechatForm: 'name' } });
  t.equal(onHelpdesk.status, 400, 'a helpdesk has no pre-chat form');

  const { c, welcome } = await eventually(async () => {
    const v = await visitor(t);
    return v.welcome.prechat === 'name_email' ? v : (await v.c.close(), null);
  }, 10_000, 'the new setting in the welcome');
  const before = shop.requests.length;
  await firstMessage(c, 'p-1', 'orders of mine', { contact: { name: 'Dan Typed', email: 'victim@other.test' } });
  t.match(await leadOf(chat.id, welcome.visitorId), { name: 'Dan Typed', email: 'victim@other.test', verifiedId: null }, 'the answers are on the lead for the team');
  const asked = await eventually(async () => shop.requests.slice(before).find((r) => r.path === `/orders?who=${welcome.visitorId}`), 15_000, 'the action call');
  t.not(asked.headers['x-email'], 'victim@other.test', 'the typed email is not sent to the company API as the caller');
  t.notOk(asked.headers['x-email'], '{customer.email} is empty');
  const [row] = await sql(svc.orm, 'select email_source from leads where integration_id = ? and client_id = ?', [chat.id, welcome.visitorId]);
  t.equal(row.email_source, 'customer');
});
