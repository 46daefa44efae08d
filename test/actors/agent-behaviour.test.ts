import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelAnswer, type ModelRequest } from '../support/openai-stub.js';
import { startTestService } from '../support/service.js';
import { eventually, modelAgentCompany, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// Agent behaviour through a real worker (contract.md § Behaviour customers expect from an
// agent): debounce, the model's tools, the helpdesk transfer. The model is an
// OpenAI-compatible stand-in answering in about a second.
const MODEL_MS = 1000;
const svc = await startTestService(t, 'agent_behaviour', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'behaviour', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

const model = (req: ModelRequest): ModelAnswer => {
  const text = llm.lastUserText(req);
  // "DO handoff|close {args}": the model calls that tool (the words of a customer asking for a person would hand off before the model is asked).
  const tool = /^DO (handoff|close)(?: (\{.*\}))?/.exec(text);
  if (tool?.[1] === 'handoff') return { delayMs: MODEL_MS, content: null, toolCalls: [{ name: 'handoff_to_human', arguments: tool[2] ?? '{}' }] };
  if (tool?.[1] === 'close') return { delayMs: MODEL_MS, content: 'Glad I could help, bye!', toolCalls: [{ name: 'close_conversation', arguments: '{}' }] };
  return { delayMs: MODEL_MS, content: `Model says: ${text.replace(/\n/g, ' | ')}` };
};
llm.respond(model);

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const modelAskedBy = (fragment: string) => llm.requests.filter((r) => llm.lastUserText(r).includes(fragment));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const setup = (name: string, agent: Record<string, unknown> = {}) => modelAgentCompany(svc, helpdesk, llm.baseUrl, name, agent);

t.test('debounce: three messages inside the window get one answer, to all three', async (t) => {
  const DEBOUNCE = 1500;
  const { integration } = await setup('Debounce Co', { debounceMs: DEBOUNCE });
  const texts = ['Hi', 'I ordered a lamp', 'where is it?'];
  let lastSent = 0;
  for (const text of texts) {
    lastSent = Date.now();
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'dana', text, { sentAt: new Date(lastSent).toISOString() }));
    await sleep(300);
  }
  await helpdesk.waitFor(() => sentTo('dana').length >= 1, 15_000);
  await sleep(MODEL_MS + 1000); // room for a second (wrong) answer
  t.equal(sentTo('dana').length, 1, 'one answer');
  t.equal(sentTo('dana')[0]!.text, 'Model says: Hi | I ordered a lamp | where is it?', 'answering every message, in order');
  const asked = modelAskedBy('I ordered a lamp');
  t.equal(asked.length, 1, 'one model call');
  t.equal(llm.lastUserText(asked[0]!), texts.join('\n'));
  const added = asked[0]!.at - lastSent - DEBOUNCE;
  t.ok(added >= 0, 'not asked before the window ended');
  t.ok(added < 1000, `the model is asked right when the window ends (${added} ms late)`);
  t.comment(`debounce latency added (model asked − last message − debounceMs): ${added} ms; reply ${helpdesk.requests.find((r) => r.method === 'POST' && r.body?.client_id === 'dana')!.at - lastSent} ms after the last message`);

  // Without debounce, each message is answered by itself.
  const plain = await setup('Plain Co');
  for (const text of ['one', 'two']) {
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(plain.integration, 'eve', text));
    await helpdesk.waitFor(() => sentTo('eve').some((m) => m.text === `Model says: ${text}`), 15_000);
  }
  t.equal(sentTo('eve').length, 2, 'debounceMs 0: one answer per message');
});

const conversationOf = async (integrationId: number, clientId: string) =>
  (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc', [integrationId, clientId]))[0];
const transitionsOf = (conversationId: number) => sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conversationId]);

t.test('handoff_to_human: paused with its reason logged; the agent answers meanwhile, never hands over twice, and is silent once a person acts', async (t) => {
  const { user, integration } = await setup('Handoff Tool Co', { handoffMessage: 'Passing you to a colleague.' });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'hal', 'DO handoff {"reason":"wants a refund"}'));
  await eventually(async () => (await conversationOf(integration.id, 'hal'))?.status === 'paused', 15_000, 'paused');
  const conv = await conversationOf(integration.id, 'hal');
  const log = await transitionsOf(conv.id);
  const handoff = log.find((r: any) => r.actions.some((a: any) => a.type === 'session_transfer_external'));
  t.match(handoff.payload, { output: { kind: 'handoff', detail: 'wants a refund' } }, `the tool's reason is in the transition log (${JSON.stringify(handoff.payload)})`);
  await helpdesk.waitFor(() => sentTo('hal').length === 1);
  t.equal(sentTo('hal')[0]!.text, 'Passing you to a colleague.', 'the handoff notice');

  // Never silent: until a person acts, the agent still answers (contract.md § Answers that find what the help centre says).
  let asked = llm.requests.length;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'hal', 'hello? anyone?'));
  await helpdesk.waitFor(() => sentTo('hal').length === 2, 15_000);
  t.equal(sentTo('hal')[1]!.text, 'Model says: hello? anyone?', 'the model answers while the customer waits for a person');
  t.equal(llm.requests.length, asked + 1);
  t.same((await conversationOf(integration.id, 'hal')).state, { paused: { handedOver: 'idle' } }, 'still handed over');

  // Its handoff then waits for the person: nothing sent, no second transfer.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'hal', 'DO handoff {"reason":"still wants a refund"}'));
  await eventually(async () => (await transitionsOf(conv.id)).filter((r: any) => r.event === 'xstate.done.actor.agent').length === 3, 15_000, 'answered');
  await sleep(500);
  t.equal(sentTo('hal').length, 2, 'no second handoff notice');
  t.equal((await transitionsOf(conv.id)).filter((r: any) => r.actions.some((a: any) => a.type === 'session_transfer_external')).length, 1, 'one transfer');

  // A person answers: the agent stops.
  t.equal((await svc.api('POST', `/api/conversations/${conv.id}/messages`, { token: user.token, body: { text: 'Hi, Ana here.' } })).status, 200);
  await helpdesk.waitFor(() => sentTo('hal').length === 3, 10_000);
  asked = llm.requests.length;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'hal', 'thanks Ana'));
  await eventually(async () => (await sql(svc.orm, 'select 1 from conversation_messages where conversation_id = ? and text = ?', [conv.id, 'thanks Ana'])).length === 1, 10_000, 'stored');
  await sleep(MODEL_MS + 500);
  t.equal(llm.requests.length, asked, 'the model is not asked once a person has it');
  t.equal(sentTo('hal').length, 3, 'no bot message after the person');
});

t.test('close_conversation: its last words go out, then the conversation is closed', async (t) => {
  const { integration } = await setup('Close Tool Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'cid', 'DO close'));
  await helpdesk.waitFor(() => sentTo('cid').length === 1, 15_000);
  t.equal(sentTo('cid')[0]!.text, 'Glad I could help, bye!');
  const conv = await conversationOf(integration.id, 'cid');
  t.equal(conv.status, 'closed');
  const log = await transitionsOf(conv.id);
  t.match(log.at(-1).actions, [{ type: 'agent_reply' }, { type: 'session_close', params: { origin: 'agent', reason: 'close_conversation' } }], 'why, in the transition log');
});

t.test('set_lead_stage: the lead moves (GET /api/leads), an unknown stage is logged, nothing breaks', async (t) => {
  const { user, integration } = await setup('Lead Tool Co');
  const [qualified] = await sql(svc.orm, `select id from pipeline_stages where company_id = ? and name = 'Qualified'`, [user.companyId]);
  llm.respond((req) => {
    const text = llm.lastUserText(req);
    const stage = /^STAGE (.+)$/.exec(text)?.[1];
    if (stage) return { delayMs: MODEL_MS, content: 'Noted, thanks!', toolCalls: [{ name: 'set_lead_stage', arguments: JSON.stringify({ stage }) }] };
    return model(req);
  });
  t.teardown(() => llm.respond(model));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'lea', 'STAGE qualified'));
  await helpdesk.waitFor(() => sentTo('lea').length === 1, 15_000);
  t.equal(sentTo('lea')[0]!.text, 'Noted, thanks!', 'the answer goes out with the move');
  const leads = (await svc.api('GET', `/api/leads?stageId=${qualified.id}`, { token: user.token })).body.leads;
  t.match(leads, [{ clientId: 'lea', stageId: qualified.id }], 'the lead is in Qualified');
  const conv = await conversationOf(integration.id, 'lea');
  t.match((await transitionsOf(conv.id)).at(-1).actions.find((a: any) => a.type === 'lead_stage'), { params: { stage: 'qualified' }, effect: /moved from "New" to "Qualified"|moved from ".+" to "Qualified"/ });

  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'lea', 'STAGE Moon base'));
  await helpdesk.waitFor(() => sentTo('lea').length === 2, 15_000);
  const moved = (await transitionsOf(conv.id)).at(-1).actions.find((a: any) => a.type === 'lead_stage');
  t.match(moved, { params: { stage: 'Moon base' }, effect: /^not moved: no stage "Moon base"/ }, 'an unknown stage is told in the log');
  t.match((await svc.api('GET', `/api/leads?stageId=${qualified.id}`, { token: user.token })).body.leads, [{ clientId: 'lea' }], 'the lead stays where it was');
  t.equal((await conversationOf(integration.id, 'lea')).status, 'active', 'the conversation goes on');
});

t.test('a helpdesk handoff is transferred to the integration\'s operator group, once; none without a group', async (t) => {
  const transfers = () => helpdesk.requests.filter((r) => r.method === 'GET' && /\/transfer_to_group$/.test(r.path));
  const grouped = await setup('Transfer Co');
  const patched = await svc.api('PATCH', `/api/integrations/${grouped.integration.id}`, { token: grouped.user.token, body: { handoffGroupId: 42 } });
  t.equal(patched.status, 200);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(grouped.integration, 'tom', 'DO handoff {"reason":"angry"}', { messageId: 'c2d-msg-777' }));
  try {
    await eventually(async () => transfers().length >= 1, 15_000, 'the transfer call');
  } catch (err) {
    const c = await conversationOf(grouped.integration.id, 'tom');
    t.comment(JSON.stringify(await sql(svc.orm, 'select m.kind, m.delivery, m.delivery_error, o.kind as okind, o.status, o.last_error from conversation_messages m left join outbox o on o.message_id = m.id where m.conversation_id = ?', [c.id])));
    t.comment(JSON.stringify((await transitionsOf(c.id)).map((r: any) => r.actions)));
    throw err;
  }
  await sleep(1000);
  t.equal(transfers().length, 1, 'exactly one transfer');
  t.equal(transfers()[0]!.path, '/v1/messages/c2d-msg-777/transfer_to_group', "keyed to the customer's helpdesk message");
  t.equal(transfers()[0]!.query.get('group_id'), '42');
  t.equal(sentTo('tom').length, 1, 'the handoff notice went out too');
  const conv = await conversationOf(grouped.integration.id, 'tom');
  const [record] = await sql(svc.orm, `select role, kind, delivery from conversation_messages where conversation_id = ? and kind = 'transfer'`, [conv.id]);
  t.match(record, { role: 'system', kind: 'transfer', delivery: 'sent' }, 'recorded for operators, sent');
  const log = await transitionsOf(conv.id);
  t.match(log.at(-1).actions.find((a: any) => a.type === 'session_transfer_external'), { effect: /transfer to helpdesk group 42 queued/ });

  const before = transfers().length;
  const plain = await setup('No Group Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(plain.integration, 'una', 'DO handoff {"reason":"angry"}'));
  await helpdesk.waitFor(() => sentTo('una').length === 1, 15_000);
  await sleep(1000);
  t.equal(transfers().length, before, 'no handoffGroupId: no transfer call');
  const unaConv = await conversationOf(plain.integration.id, 'una');
  t.match((await transitionsOf(unaConv.id)).at(-1).actions.find((a: any) => a.type === 'session_transfer_external'), { effect: /no helpdesk group configured/ });
});
