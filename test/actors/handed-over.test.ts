import t from 'tap';
import type { AgentInputForRunner, AgentRunner } from '../../actors/agents/types.js';
import type { ClarifyOption } from '../../schema/conversation.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { createWebchatIntegration, openChat } from '../support/webchat.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, statusEnvelope, waitForPartitions } from '../support/worker.js';

// Never silent after a handoff, and the options of a clarify reply (contract.md § Answers that
// find what the help centre says), through the worker: the built-in agent answers from the
// database inside the message's transaction, the replies go through the outbox.
const svc = await startTestService(t, 'handed_over', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Handed Over Co');
const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ', language: 'english' } });
await addDocument(svc.api, user.token, kb.body.knowledgeBase.id, { title: 'Shop', content: '# Shop\n\n## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.' });
const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'FAQ bot', knowledgeBaseId: kb.body.knowledgeBase.id } })).body.agent;
const desk = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.id);
const chat = await createWebchatIntegration(svc.api, user.token, { agentId: agent.id });

const OPTIONS: ClarifyOption[] = [
  { documentId: 1, chunkId: 11, title: 'Returns' },
  { documentId: 2, chunkId: 22, title: 'Exchanges' },
];
const CLARIFY = 'Do you mean: 1. Returns 2. Exchanges?';
/** What the agent was asked, in order. */
const asked: AgentInputForRunner[] = [];
// The real runner, but for the question a clarify reply answers (whether the help centre gives
// one is the knowledge's business, not this test's) and the pick that follows it.
const recording = (runner: AgentRunner): AgentRunner => ({
  routeOf: (companyId, integrationId) => runner.routeOf(companyId, integrationId),
  async answer(input) {
    asked.push(input);
    if (input.text === 'What is your policy?') return { kind: 'reply', text: CLARIFY, options: OPTIONS };
    if (input.text === '2' && input.options?.length) return { kind: 'reply', text: `${input.options[1]!.title} are free within 30 days.` };
    return runner.answer(input);
  },
});
const worker = await startTestWorker(t, svc, { workerId: 'handed-over', options: { agentRunnerFrom: recording } });
await waitForPartitions([worker], 2);

const sentTo = (c: string) => stub.sent().filter((b) => b.client_id === c).map((b) => b.text as string);
const conversationOf = async (client: string) => (await sql(svc.orm, `select * from conversations where client_id = ?`, [client]))[0];
const agentDone = (id: number) => sql(svc.orm, `select payload, to_state, actions from conversation_transitions where conversation_id = ? and event = 'xstate.done.actor.agent' order by seq`, [id]);
const needingHuman = async () => (await svc.api('GET', '/api/conversations?needsHuman=true', { token: user.token })).body.conversations.map((c: { id: number }) => c.id);
const transfersOf = async (id: number) => (await sql(svc.orm, `select actions from conversation_transitions where conversation_id = ?`, [id])).flatMap((r) => r.actions).filter((a: { type: string }) => a.type === 'session_transfer_external');
const say = (client: string, text: string, requestId: number | null = null) => publishEnvelope(svc.nc, svc.config, messageEnvelope(desk, client, text, { requestId }));

t.test('handed over, the agent still answers a greeting; silent once an operator replied', async (t) => {
  await say('ho-1', 'I want to talk to a person');
  await stub.waitFor(() => sentTo('ho-1').length === 1);
  t.same(sentTo('ho-1'), ['A human colleague will take over shortly.'], 'the handoff notice');
  let conv = await eventually(async () => {
    const c = await conversationOf('ho-1');
    return c?.status === 'paused' ? c : undefined;
  });
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'asked_for_human');
  t.ok((await needingHuman()).includes(conv.id), 'listed as needing a person');

  // "hello" while waiting for the person: answered, and the conversation still waits.
  await say('ho-1', 'hello');
  await stub.waitFor(() => sentTo('ho-1').length === 2);
  const greeting = sentTo('ho-1')[1]!;
  t.ok(greeting.trim().length > 0 && greeting !== sentTo('ho-1')[0], `a greeting is sent: ${greeting}`);
  t.match(asked.at(-1), { text: 'hello', handedOver: true }, 'the agent was told it handed over');
  conv = await conversationOf('ho-1');
  t.same(conv.state, { paused: { handedOver: 'idle' } }, 'still handed over');
  t.equal(conv.status, 'paused');
  t.equal(conv.last_message_role, 'customer', 'the customer still waits for a person');
  t.ok((await needingHuman()).includes(conv.id), 'still needs a person');
  const [, greeted] = await agentDone(conv.id);
  t.match(greeted, { payload: { output: { kind: 'reply' } }, to_state: { paused: { handedOver: 'idle' } } });
  t.match(greeted.actions, [{ type: 'agent_reply', effect: 'queued' }]);
  const messages = (await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token })).body.messages;
  t.match(messages.at(-1), { role: 'agent', kind: 'reply', text: greeting, delivery: 'sent' });

  // Asking for a person again: nothing sent, no second transfer, the answer in the log all the same.
  await say('ho-1', 'I want to talk to a person');
  const [, , again] = await eventually(async () => {
    const rows = await agentDone(conv.id);
    return rows.length === 3 ? rows : undefined;
  });
  t.match(again, { payload: { output: { kind: 'handoff', reason: 'asked_for_human' } }, to_state: { paused: { handedOver: 'idle' } }, actions: [] });
  await new Promise((r) => setTimeout(r, 500));
  t.equal(sentTo('ho-1').length, 2, 'nothing more sent');
  t.equal((await transfersOf(conv.id)).length, 1, 'one transfer');

  // A person answers: the agent stops.
  const reply = await svc.api('POST', `/api/conversations/${conv.id}/messages`, { token: user.token, body: { text: 'Olga here, how can I help?' } });
  t.equal(reply.status, 200);
  t.match(reply.body.conversation, { status: 'paused', state: { paused: 'operator' }, lastMessage: { role: 'operator' } });
  await stub.waitFor(() => sentTo('ho-1').length === 3);
  t.equal(sentTo('ho-1')[2], 'Olga here, how can I help?');
  t.notOk((await needingHuman()).includes(conv.id), 'a person answered');

  const before = asked.length;
  await say('ho-1', 'hello');
  await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where conversation_id = ? and role = 'customer' and text = 'hello'`, [conv.id])).length === 2);
  await new Promise((r) => setTimeout(r, 500));
  t.equal(asked.length, before, 'the agent is not asked');
  t.equal(sentTo('ho-1').length, 3, 'no bot reply');
  conv = await conversationOf('ho-1');
  t.same(conv.state, { paused: 'operator' });
  t.ok((await needingHuman()).includes(conv.id), 'the customer wrote last: needs the person again');
});

t.test('handed over, an operator pause or a helpdesk transfer ends it too', async (t) => {
  for (const [client, end, requestId] of [['ho-pause', 'pause', 9001], ['ho-transfer', 'transfer', 9002]] as const) {
    await say(client, 'I want to talk to a person', requestId);
    await stub.waitFor(() => sentTo(client).length === 1);
    const conv = await eventually(async () => {
      const c = await conversationOf(client);
      return c?.status === 'paused' ? c : undefined;
    });
    if (end === 'pause') {
      const res = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: user.token });
      t.match(res.body.conversation, { status: 'paused', state: { paused: 'operator' } }, 'paused by the operator');
    } else {
      await publishEnvelope(svc.nc, svc.config, statusEnvelope(desk, 'dialog_transferred', requestId, { clientId: client }));
      await eventually(async () => ((await conversationOf(client)).state.paused === 'transferred' ? true : undefined));
      t.pass('transferred by the helpdesk');
    }
    await say(client, 'hello');
    await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id])).length === 2);
    await new Promise((r) => setTimeout(r, 500));
    t.equal(sentTo(client).length, 1, `${end}: no bot reply after a person acted`);
  }
});

t.test('a clarify reply: its options stored, shown to the visitor, passed with the next message, then forgotten', async (t) => {
  const c = await openChat(t, svc.url, chat.id);
  const welcome = await c.hello();
  c.send({ type: 'message', clientMessageId: 'q-1', text: 'What is your policy?' });
  const { conversationId } = await c.next('ack');
  const clarify = await c.next('message');
  t.same(clarify, { type: 'message', seq: 2, role: 'agent', text: CLARIFY, at: clarify.at, name: null, options: ['Returns', 'Exchanges'] }, 'the titles, in order');
  const [conv] = await sql(svc.orm, 'select snapshot from conversations where id = ?', [conversationId]);
  t.same(conv.snapshot.context.pendingOptions, OPTIONS, 'remembered by the machine');
  const listed = (await svc.api('GET', `/api/conversations/${conversationId}/messages`, { token: user.token })).body.messages;
  t.same(listed.map((m: { options: unknown }) => m.options), [null, OPTIONS], 'the message view carries them');

  c.send({ type: 'message', clientMessageId: 'q-2', text: '2' });
  const picked = await c.next('message');
  t.same(picked, { type: 'message', seq: 4, role: 'agent', text: 'Exchanges are free within 30 days.', at: picked.at, name: null }, 'no options on a plain reply');
  t.same(asked.at(-1)?.options, OPTIONS, 'the next message was asked with them');
  const [after] = await sql(svc.orm, 'select snapshot from conversations where id = ?', [conversationId]);
  t.equal(after.snapshot.context.pendingOptions, null, 'forgotten by the answer');

  // Replayed on hello after lastSeq: the stored options come again.
  const back = await openChat(t, svc.url, chat.id);
  await back.hello({ visitorToken: welcome.visitorToken, lastSeq: 1, conversationId });
  const replayed = await back.drain(600);
  t.same(replayed.filter((f) => f.type === 'message').map((f) => [f.seq, f.options]), [[2, ['Returns', 'Exchanges']], [3, undefined], [4, undefined]]);
});
