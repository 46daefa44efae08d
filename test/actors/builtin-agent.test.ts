import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// The worker's default agent runner (actors/agents/runner.ts) answers builtin agents from the knowledge base.
const svc = await startTestService(t, 'builtin_agent', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Builtin Co');
const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ' } });
const kbId = kb.body.knowledgeBase.id as number;
await svc.api('POST', `/api/knowledge-bases/${kbId}/documents`, {
  token: user.token,
  body: { title: 'Opening hours', content: 'Our shop is open from 9 am to 6 pm, Monday to Saturday.' },
});
const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'FAQ bot', knowledgeBaseId: kbId } });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.body.agent.id);
const worker = await startTestWorker(t, svc, { agent: 'builtin', workerId: 'builtin' });
await waitForPartitions([worker], 2);

const sentTo = (c: string) => stub.sent().filter((b) => b.client_id === c);

t.test('answers from the knowledge base', async (t) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'kb-1', 'What are your opening hours?'));
  await stub.waitFor(() => sentTo('kb-1').length === 1);
  t.match(sentTo('kb-1')[0].text, /9 am to 6 pm/);
});

t.test('asking for a person hands off: notice sent, conversation paused', async (t) => {
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'kb-2', 'I want to talk to a human please'));
  await stub.waitFor(() => sentTo('kb-2').length === 1);
  t.equal(sentTo('kb-2')[0].text, 'A human colleague will take over shortly.');
  const conv = await eventually(async () => (await sql(svc.orm, `select * from conversations where client_id = 'kb-2'`))[0]);
  t.same(conv.state, { paused: 'operator' });
  t.equal(conv.snapshot.context.handoffReason, 'asked_for_human');
  const tr = await sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conv.id]);
  t.match(tr[tr.length - 1].actions, [{ type: 'session_transfer_external', params: { origin: 'agent', reason: 'asked_for_human' } }]);
});
