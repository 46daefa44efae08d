import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import {
  createHelpdeskIntegration,
  eventually,
  messageEnvelope,
  publishEnvelope,
  sql,
  startTestWorker,
  waitForPartitions,
} from '../support/worker.js';

const svc = await startTestService(t, 'conversations', { env: { PARTITIONS: '4' } });
const stub = await startChat2DeskStub(t);
const alice = await signUp(svc.api, 'Alice Co');
const bob = await signUp(svc.api, 'Bob Co');
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, alice, stub, 'Helpdesk', await model.createAgent(svc.api, alice.token));
const worker = await startTestWorker(t, svc, { workerId: 'conv-api' });
await waitForPartitions([worker], 4);

const sentTo = (clientId: string) => stub.sent().filter((b) => b.client_id === clientId);

await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'op-1', 'hello', { requestId: 11, dialogId: 12 }));
await stub.waitFor(() => sentTo('op-1').length === 1);
const listed = await svc.api('GET', `/api/conversations?integrationId=${integration.id}`, { token: alice.token });
const convId: number = listed.body.conversations[0].id;

t.test('list, get, messages, transitions', async (t) => {
  t.equal(listed.status, 200);
  t.equal(listed.body.conversations.length, 1);
  const active = await svc.api('GET', '/api/conversations?status=active', { token: alice.token });
  t.same(active.body.conversations.map((c: any) => c.id), [convId]);
  const closed = await svc.api('GET', '/api/conversations?status=closed', { token: alice.token });
  t.same(closed.body.conversations, []);
  const bad = await svc.api('GET', '/api/conversations?status=weird', { token: alice.token });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'VALIDATION_ERROR');

  const one = await svc.api('GET', `/api/conversations/${convId}`, { token: alice.token });
  t.equal(one.status, 200);
  t.match(one.body.conversation, {
    id: convId, integrationId: integration.id, channel: 'helpdesk', clientId: 'op-1', status: 'active',
    state: { active: 'idle' }, context: { requestIds: [11], dialogIds: [12], transfers: [] },
    createdAt: /Z$/, updatedAt: /Z$/, lastMessageAt: /Z$/,
  });

  const msgs = await svc.api('GET', `/api/conversations/${convId}/messages`, { token: alice.token });
  t.match(msgs.body.messages, [
    { seq: 1, role: 'customer', text: 'hello', createdAt: /Z$/ },
    { seq: 2, role: 'agent', text: 'echo: hello' },
  ]);
  const tr = await svc.api('GET', `/api/conversations/${convId}/transitions`, { token: alice.token });
  t.match(tr.body.transitions, [
    { seq: 1, at: /Z$/, event: 'customer.message', from: { active: 'idle' }, to: { active: 'answering' }, actions: [] },
    { seq: 2, event: 'xstate.done.actor.agent', from: { active: 'answering' }, to: { active: 'idle' }, actions: [{ type: 'agent_reply' }] },
  ]);
});

t.test('inspect streams committed transitions (SSE)', async (t) => {
  const ac = new AbortController();
  const res = await fetch(`${svc.url}/api/conversations/${convId}/inspect`, { headers: { authorization: `Bearer ${alice.token}` }, signal: ac.signal });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/event-stream/);
  const reader = res.body!.getReader();
  let buffer = '';
  const readUntil = async (pattern: RegExp) => {
    const deadline = Date.now() + 10_000;
    while (!pattern.test(buffer)) {
      if (Date.now() > deadline) throw new Error(`SSE: ${pattern} not seen in ${buffer}`);
      const { value, done } = await reader.read();
      if (done) throw new Error('SSE ended');
      buffer += new TextDecoder().decode(value);
    }
  };
  await readUntil(/event: conversation\ndata: .*"clientId":"op-1"/);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'op-1', 'are you there?'));
  await readUntil(/event: transition\ndata: .*"event":"xstate.done.actor.agent"/);
  t.match(buffer, /event: message\ndata: .*"text":"are you there\?"/);
  ac.abort();
  await stub.waitFor(() => sentTo('op-1').length === 2);
});

t.test('operator pause, reply, resume, close through the API', async (t) => {
  const pause = await svc.api('POST', `/api/conversations/${convId}/pause`, { token: alice.token });
  t.equal(pause.status, 200);
  t.match(pause.body.conversation, { id: convId, status: 'paused', state: { paused: 'operator' }, context: { handoffReason: 'operator_pause' } });

  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'op-1', 'hello while paused'));
  await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where text = 'hello while paused'`)).length === 1);

  const reply = await svc.api('POST', `/api/conversations/${convId}/messages`, { token: alice.token, body: { text: 'Hi, a human here.' } });
  t.equal(reply.status, 200);
  t.equal(reply.body.conversation.status, 'paused');
  await stub.waitFor(() => sentTo('op-1').length === 3);
  t.match(sentTo('op-1')[2], { client_id: 'op-1', text: 'Hi, a human here.', transport: 'telegram', channel_id: 'ch-1', type: 'to_client', external_id: /^\d+$/ });
  const badReply = await svc.api('POST', `/api/conversations/${convId}/messages`, { token: alice.token, body: { text: '' } });
  t.equal(badReply.status, 400);

  const resume = await svc.api('POST', `/api/conversations/${convId}/resume`, { token: alice.token });
  t.equal(resume.status, 200);
  t.match(resume.body.conversation, { status: 'active', state: { active: 'idle' }, context: { handoffReason: null } });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'op-1', 'after resume'));
  await stub.waitFor(() => sentTo('op-1').length === 4);
  t.equal(sentTo('op-1')[3].text, 'echo: after resume');

  const close = await svc.api('POST', `/api/conversations/${convId}/close`, { token: alice.token });
  t.equal(close.status, 200);
  t.match(close.body.conversation, { status: 'closed', state: 'closed', closedAt: /Z$/ });
  const tr = await svc.api('GET', `/api/conversations/${convId}/transitions`, { token: alice.token });
  const last = tr.body.transitions[tr.body.transitions.length - 1];
  t.match(last, { event: 'operator.close', to: 'closed', actions: [{ type: 'session_close', params: { origin: 'operator' } }] });

  const msgs = await svc.api('GET', `/api/conversations/${convId}/messages`, { token: alice.token });
  t.same(msgs.body.messages.map((m: any) => m.role), ['customer', 'agent', 'customer', 'agent', 'customer', 'operator', 'customer', 'agent']);
  t.same(msgs.body.messages.map((m: any) => m.seq), [1, 2, 3, 4, 5, 6, 7, 8]);

  const closedReply = await svc.api('POST', `/api/conversations/${convId}/messages`, { token: alice.token, body: { text: 'too late' } });
  t.equal(closedReply.status, 409);
});

t.test('tenant isolation: another company gets 404 everywhere, with no side effect', async (t) => {
  const before = await sql(svc.orm, 'select status, hold_requested_at, transition_seq, message_seq from conversations where id = ?', [convId]);
  const sentBefore = stub.sent().length;
  const routes: [string, string, unknown?][] = [
    ['GET', `/api/conversations/${convId}`],
    ['GET', `/api/conversations/${convId}/messages`],
    ['GET', `/api/conversations/${convId}/transitions`],
    ['GET', `/api/conversations/${convId}/inspect`],
    ['POST', `/api/conversations/${convId}/pause`],
    ['POST', `/api/conversations/${convId}/resume`],
    ['POST', `/api/conversations/${convId}/close`],
    ['POST', `/api/conversations/${convId}/messages`, { text: 'intrusion' }],
  ];
  for (const [method, path, body] of routes) {
    const res = await svc.api(method, path, { token: bob.token, body });
    t.equal(res.status, 404, `${method} ${path}`);
    t.equal(res.body.error.code, 'NOT_FOUND');
  }
  const list = await svc.api('GET', '/api/conversations', { token: bob.token });
  t.same(list.body.conversations, []);
  const filtered = await svc.api('GET', `/api/conversations?integrationId=${integration.id}`, { token: bob.token });
  t.same(filtered.body.conversations, []);
  await new Promise((r) => setTimeout(r, 300));
  t.same(await sql(svc.orm, 'select status, hold_requested_at, transition_seq, message_seq from conversations where id = ?', [convId]), before, 'unchanged');
  t.equal(stub.sent().length, sentBefore, 'nothing sent');
  for (const path of ['/api/conversations', `/api/conversations/${convId}`, '/api/machines/conversation']) {
    t.equal((await svc.api('GET', path)).status, 401, `${path} needs a credential`);
  }
  t.equal((await svc.api('GET', '/api/conversations/abc', { token: alice.token })).status, 404);
  t.equal((await svc.api('GET', '/api/conversations/999999', { token: alice.token })).status, 404);
});

t.test('the machine definition', async (t) => {
  const res = await svc.api('GET', '/api/machines/conversation', { token: alice.token });
  t.equal(res.status, 200);
  t.equal(res.body.machine.id, 'conversation');
  for (const s of ['active', 'active.idle', 'active.answering', 'paused', 'paused.operator', 'paused.transferred', 'paused.handedOver', 'paused.handedOver.idle', 'paused.handedOver.answering', 'closed']) t.ok(res.body.machine.states.includes(s), s);
  t.ok(res.body.machine.events.includes('helpdesk.dialog_transferred'));
  t.same(res.body.machine.hostActions, ['agent_reply', 'session_transfer_external', 'session_close', 'lead_stage']);
  t.type(res.body.machine.definition, 'object');
});
