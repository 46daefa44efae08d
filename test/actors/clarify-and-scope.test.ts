import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// The decision table through a real worker and the real built-in agent (contract.md § Answers
// that find what the help centre says): an off-topic question no longer ends the bot, and a
// question two articles fit is asked back, the customer's "2" answered from the second.
const svc = await startTestService(t, 'clarify_scope', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Jacket Shop');
const kb = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Help' } })).body.knowledgeBase;
const returns = await addDocument(svc.api, user.token, kb.id, { title: 'Returns', content: 'Items can be sent back within 30 days of delivery for a full refund.' });
const exchanges = await addDocument(svc.api, user.token, kb.id, { title: 'Exchanges', content: 'Items can be exchanged for another size within 30 days of delivery.' });
await addDocument(svc.api, user.token, kb.id, { title: 'Opening hours', content: 'Our shop is open Monday to Saturday from 9:00 to 18:00.' });
const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Bot', knowledgeBaseId: kb.id } })).body.agent;
const desk = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.id);
const worker = await startTestWorker(t, svc, { workerId: 'clarify-scope' });
await waitForPartitions([worker], 2);

const sentTo = (c: string) => stub.sent().filter((b) => b.client_id === c).map((b) => b.text as string);
const say = (client: string, text: string) => publishEnvelope(svc.nc, svc.config, messageEnvelope(desk, client, text));
const conversationOf = async (client: string) => (await sql(svc.orm, `select * from conversations where client_id = ?`, [client]))[0];
const decisions = async (id: number) =>
  (await sql(svc.orm, `select payload from conversation_transitions where conversation_id = ? and event = 'xstate.done.actor.agent' order by seq`, [id])).map((r) => r.payload.output.decision);

t.test('an off-topic question gets the out-of-scope line and the bot stays on', async (t) => {
  await say('scope-1', 'What is the capital of France?');
  await stub.waitFor(() => sentTo('scope-1').length === 1);
  t.match(sentTo('scope-1')[0], /only help with questions about our products/, 'a polite line, not the handoff notice');
  const conv = await conversationOf('scope-1');
  t.equal(conv.status, 'active', 'no handoff: the conversation stays with the bot');
  await say('scope-1', 'when is the shop open on saturday?');
  await stub.waitFor(() => sentTo('scope-1').length === 2);
  t.match(sentTo('scope-1')[1], /Monday to Saturday from 9:00 to 18:00/, 'the next question is answered');
  t.match(await decisions(conv.id), [{ kind: 'out_of_scope' }, { kind: 'answer', best: { title: 'Opening hours' } }], 'each decision in the transition log');
});

t.test('a question two articles fit is asked back; "2" is answered from the second', async (t) => {
  await say('clarify-1', 'how many days after delivery for my jacket?');
  await stub.waitFor(() => sentTo('clarify-1').length === 1);
  const asked = sentTo('clarify-1')[0]!;
  t.match(asked, /^Do you mean:\n1\. (Returns|Exchanges)\n2\. (Returns|Exchanges)\nReply with the number or the name\.$/, 'numbered options in the helpdesk text');
  const conv = await conversationOf('clarify-1');
  const [clarify] = await decisions(conv.id);
  t.equal(clarify.kind, 'clarify');
  t.same(clarify.options.map((o: { documentId: number }) => o.documentId).sort(), [returns.id, exchanges.id].sort(), 'the two articles offered');
  const second = clarify.options[1];
  const messages = await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token });
  t.same(messages.body.messages.find((m: { role: string }) => m.role === 'agent').options, clarify.options, 'the options on the message');

  await say('clarify-1', '2');
  await stub.waitFor(() => sentTo('clarify-1').length === 2);
  t.match(sentTo('clarify-1')[1], second.title === 'Returns' ? /full refund/ : /another size/, `answered from ${second.title}`);
  const after = await eventually(async () => {
    const d = await decisions(conv.id);
    return d.length === 2 ? d : undefined;
  });
  t.match(after[1], { kind: 'answer', best: { documentId: second.documentId } });
  t.equal((await conversationOf('clarify-1')).status, 'active');
});
