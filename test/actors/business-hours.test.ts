import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { startTestService } from '../support/service.js';
import { eventually, modelAgentCompany, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// Business hours through a real worker whose clock is injected: Sunday 2026-11-22 03:00 in
// Berlin, outside the agent's Monday–Friday 09:00–18:00 (contract.md § Behaviour).
const SUNDAY_NIGHT = Date.parse('2026-11-22T02:00:00Z');
const svc = await startTestService(t, 'business_hours', { env: { PARTITIONS: '1' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
llm.respond((req) => ({ delayMs: 1000, content: `Model says: ${llm.lastUserText(req)}` }));
const worker = await startTestWorker(t, svc, { workerId: 'hours', now: () => SUNDAY_NIGHT, options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 1);

const WEEKDAYS = Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri'].map((d) => [d, [['09:00', '18:00']]]));
const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const conversationOf = async (integrationId: number, clientId: string) => (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ?', [integrationId, clientId]))[0];

const setup = async (name: string, hours: Record<string, unknown>) =>
  (await modelAgentCompany(svc, helpdesk, llm.baseUrl, name, { hours: { timezone: 'Europe/Berlin', weekly: WEEKDAYS, ...hours } })).integration;

t.test('"message": the customer is told the hours once, the model is not asked, the conversation stays active', async (t) => {
  const integration = await setup('Message Co', { outside: 'message', outsideMessage: 'We are closed; back Monday 9:00.' });
  const asked = llm.requests.length;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'mia', 'Is my order shipped?'));
  await helpdesk.waitFor(() => sentTo('mia').length === 1, 10_000);
  t.equal(sentTo('mia')[0]!.text, 'We are closed; back Monday 9:00.');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'mia', 'Hello??'));
  const conv = await conversationOf(integration.id, 'mia');
  await eventually(async () => (await sql(svc.orm, `select 1 from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id])).length === 2, 10_000, 'second message stored');
  await sleep(1500);
  t.equal(sentTo('mia').length, 1, 'told once, not per message');
  t.equal(llm.requests.length, asked, 'no model call at night');
  t.equal((await conversationOf(integration.id, 'mia')).status, 'active', 'stays active');
});

t.test('"handoff": a human takes it, reason outside_hours', async (t) => {
  const integration = await setup('Handoff Co', { outside: 'handoff' });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'ned', 'Is my order shipped?'));
  await eventually(async () => (await conversationOf(integration.id, 'ned'))?.status === 'paused', 10_000, 'paused');
  const conv = await conversationOf(integration.id, 'ned');
  t.equal(conv.snapshot.context.handoffReason, 'outside_hours');
  await helpdesk.waitFor(() => sentTo('ned').length === 1, 10_000);
  t.equal(sentTo('ned')[0]!.text, 'A human colleague will take over shortly.', 'the handoff notice');
});

t.test('"answer": answered as at any hour', async (t) => {
  const integration = await setup('Answer Co', { outside: 'answer' });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'ola', 'Is my order shipped?'));
  await helpdesk.waitFor(() => sentTo('ola').length === 1, 10_000);
  t.equal(sentTo('ola')[0]!.text, 'Model says: Is my order shipped?');
});
