import pg from 'pg';
import t from 'tap';
import { lockedConversations } from '../../actors/tables/conversations.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// Auto-resolve (contract.md § The first hour) with a real gateway and worker: the built-in
// agent answers from its knowledge base, the worker's sweep closes the sessions whose customer
// stayed silent after the answer for the agent's autoResolveMinutes (1 here: the answers are
// moved back in time in the database rather than waited for), and Outcomes counts them.
const svc = await startTestService(t, 'auto_resolve', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Auto Resolve Co');
const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ', language: 'english' } });
await addDocument(svc.api, user.token, kb.body.knowledgeBase.id, { title: 'Shop', content: '# Shop\n\n## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.' });
const created = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'FAQ bot', knowledgeBaseId: kb.body.knowledgeBase.id, autoResolveMinutes: 1 } });
const agent = created.body.agent;
const desk = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.id);
const worker = await startTestWorker(t, svc, { workerId: 'auto-resolve', options: { autoResolve: { everyMs: 150 } } });
await waitForPartitions([worker], 2);

const QUESTION = 'When is the shop open?';
const sentTo = (c: string) => stub.sent().filter((b) => b.client_id === c).map((b) => b.text as string);
const sessionsOf = (client: string) => sql(svc.orm, `select * from conversations where client_id = ? order by id`, [client]);
const say = (client: string, text: string) => publishEnvelope(svc.nc, svc.config, messageEnvelope(desk, client, text));
const transitionsOf = async (id: number) => (await svc.api('GET', `/api/conversations/${id}/transitions`, { token: user.token })).body.transitions;
/** The customer's silence, lived two minutes faster: the session's messages and its last answer moved back. */
const silentFor2Minutes = async (id: number) => {
  await sql(svc.orm, `update conversation_messages set created_at = created_at - interval '2 minutes' where conversation_id = ?`, [id]);
  await sql(svc.orm, `update conversations set last_message_at = last_message_at - interval '2 minutes' where id = ?`, [id]);
};
/** Long enough for many sweeps (every 150 ms) to have looked. */
const severalSweeps = () => new Promise((r) => setTimeout(r, 1500));
const today = new Date().toISOString().slice(0, 10);
const analytics = async () => (await svc.api('GET', `/api/analytics?from=${today}&to=${today}`, { token: user.token })).body.analytics;

t.test('the API keeps the setting, 1440 by default, 0 … 43200', async (t) => {
  t.equal(agent.autoResolveMinutes, 1);
  const other = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Defaults' } });
  t.equal(other.body.agent.autoResolveMinutes, 1440, 'a day by default');
  const never = await svc.api('PATCH', `/api/agents/${other.body.agent.id}`, { token: user.token, body: { autoResolveMinutes: 0 } });
  t.equal(never.body.agent.autoResolveMinutes, 0, '0: never');
  for (const bad of [-1, 43201, 1.5, '60']) {
    const res = await svc.api('PATCH', `/api/agents/${other.body.agent.id}`, { token: user.token, body: { autoResolveMinutes: bad } });
    t.equal(res.status, 400, `${JSON.stringify(bad)} refused`);
    t.match(res.body.error.details, [{ field: 'autoResolveMinutes' }]);
  }
});

t.test('answered, then silent past autoResolveMinutes: closed as resolved by the agent; a later message opens a new session', async (t) => {
  await say('ar-1', QUESTION);
  await stub.waitFor(() => sentTo('ar-1').length === 1);
  t.match(sentTo('ar-1')[0], /9 am to 6 pm/, 'the agent answered');
  const [open] = await sessionsOf('ar-1');
  t.equal(open.status, 'active');
  await severalSweeps();
  t.equal((await sessionsOf('ar-1'))[0].status, 'active', 'not closed before the customer was silent for a minute');

  await silentFor2Minutes(open.id);
  const closed = await eventually(async () => {
    const [c] = await sessionsOf('ar-1');
    return c.status === 'closed' ? c : null;
  }, 10_000, 'the session closed');
  t.equal(closed.state, 'closed');
  t.ok(closed.closed_at, 'closedAt set');
  const last = (await transitionsOf(open.id)).at(-1);
  t.match(last, {
    event: 'agent.auto_resolve', from: { active: 'idle' }, to: 'closed',
    actions: [{ type: 'session_close', params: { origin: 'agent', event: 'agent.auto_resolve', reason: 'auto_resolved' } }],
  }, 'the transition log says the agent resolved it, and why');
  const [logged] = await sql(svc.orm, `select payload from conversation_transitions where conversation_id = ? order by seq desc limit 1`, [open.id]);
  t.match(logged.payload, { idleMinutes: 1, answeredAt: String }, 'with the setting and the answer it was about');
  const view = (await svc.api('GET', `/api/conversations/${open.id}`, { token: user.token })).body.conversation;
  t.equal(view.status, 'closed', 'the API shows it closed');
  t.equal(sentTo('ar-1').length, 1, 'nothing more was sent to the customer');

  const figures = await analytics();
  t.equal(figures.autoResolved, 1, 'Outcomes counts it as auto-resolved');
  t.not(figures.costPerResolutionUsd, null, 'and has a cost per resolution');

  await say('ar-1', 'What are your opening hours?');
  const sessions = await eventually(async () => {
    const list = await sessionsOf('ar-1');
    return list.length === 2 && list[1].last_message_role === 'agent' ? list : null;
  }, 10_000, 'a new session answered');
  t.equal(sessions[0].status, 'closed', 'the resolved session stays closed');
  t.equal(sessions[1].status, 'active', 'the later message opened a new session');
  t.not(sessions[1].id, open.id);
  await stub.waitFor(() => sentTo('ar-1').length === 2);
});

t.test('a customer message that reaches the worker before the resolve wins: not closed', async (t) => {
  await say('ar-2', QUESTION);
  await stub.waitFor(() => sentTo('ar-2').length === 1);
  const [conv] = await sessionsOf('ar-2');
  // The command a sweep makes of this answer, queued right behind the customer's next message.
  const answeredAt = new Date(conv.last_message_at).toISOString();
  await say('ar-2', 'Thanks, and on Saturday?');
  const resolve: InboundEnvelope = {
    v: 1, kind: 'operator', idempotencyKey: `auto-resolve:${conv.id}:${answeredAt}`, companyId: user.companyId, integrationId: desk.id, channel: 'helpdesk',
    receivedAt: new Date().toISOString(), conversationId: conv.id, clientId: 'ar-2', command: { action: 'auto_resolve', by: null, answeredAt, idleMinutes: 1 },
  };
  await publishEnvelope(svc.nc, svc.config, resolve);
  await stub.waitFor(() => sentTo('ar-2').length === 2);
  await eventually(async () => (await sql(svc.orm, `select 1 from inbound_receipts where idempotency_key = ?`, [resolve.idempotencyKey])).length === 1, 10_000, 'the command applied');
  const [after] = await sessionsOf('ar-2');
  t.equal(after.status, 'active', 'still open: the customer wrote after the answer the command was about');
  t.notOk((await transitionsOf(conv.id)).some((x: { event: string }) => x.event === 'agent.auto_resolve'), 'no auto-resolve in the log');
});

t.test('the customer wrote last: not closed', async (t) => {
  // Another agent that waits 2 s for more messages: the customer's second message waits unanswered meanwhile.
  const slow = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Patient bot', knowledgeBaseId: kb.body.knowledgeBase.id, autoResolveMinutes: 1, debounceMs: 2000 } });
  const desk2 = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk 2', slow.body.agent.id);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(desk2, 'ar-3', QUESTION));
  await stub.waitFor(() => sentTo('ar-3').length === 1);
  const [conv] = await sessionsOf('ar-3');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(desk2, 'ar-3', 'What are your opening hours?'));
  await eventually(async () => (await sessionsOf('ar-3'))[0].last_message_role === 'customer', 5000, 'the customer message stored');
  // Answer and question both "two minutes ago": the customer still wrote last.
  await silentFor2Minutes(conv.id);
  await severalSweeps();
  t.equal((await sessionsOf('ar-3'))[0].status, 'active', 'not closed while the customer waits for the answer');
  await stub.waitFor(() => sentTo('ar-3').length === 2);
  t.equal((await sessionsOf('ar-3'))[0].status, 'active', 'answered, and open again for a minute of silence');
});

t.test('paused (an operator has it): not closed', async (t) => {
  await say('ar-4', QUESTION);
  await stub.waitFor(() => sentTo('ar-4').length === 1);
  const [conv] = await sessionsOf('ar-4');
  const paused = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: user.token });
  t.equal(paused.body.conversation.status, 'paused');
  await silentFor2Minutes(conv.id);
  await severalSweeps();
  const [after] = await sessionsOf('ar-4');
  t.equal(after.status, 'paused', 'a person has it: the agent does not resolve it');
  t.equal(after.last_message_role, 'agent', "the agent's answer is still the last message");
  t.equal((await analytics()).autoResolved, 1, 'Outcomes still counts only the one resolved');
});

t.test("closed by an operator's Close: a person resolved it, not counted as auto-resolved", async (t) => {
  await say('ar-5', QUESTION);
  await stub.waitFor(() => sentTo('ar-5').length === 1);
  const [conv] = await sessionsOf('ar-5');
  const closed = await svc.api('POST', `/api/conversations/${conv.id}/close`, { token: user.token });
  t.equal(closed.body.conversation.status, 'closed');
  t.equal((await analytics()).autoResolved, 1, 'still only the one the agent resolved');
});

t.test("a step's load never reads the auto-resolve index (a batch of new customers included)", async (t) => {
  // `where id = any('{}')` (no known conversation in the batch) is a contradiction the planner
  // proves any partial index from: it read the whole auto-resolve index (every active session
  // the agent answered last) on such batches. The tests' tables are small enough for a
  // sequential scan, so it is ruled out here, as on a table of production size.
  const db = new pg.Client({ connectionString: svc.config.databaseUrl });
  await db.connect();
  t.teardown(() => db.end());
  await db.query('set enable_seqscan = off');
  const used = new Set<string>();
  const walk = (node: Record<string, unknown>) => {
    if (node['Relation Name'] === 'conversations') used.add(String(node['Index Name'] ?? node['Node Type']));
    for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  for (const ids of [[], [1, 2]]) {
    // As the worker's statements are planned (plan_cache_mode: every run, its parameters as constants).
    const { rows } = await db.query(`explain (format json) ${lockedConversations(`'{${ids.join(',')}}'`, `'{${desk.id}}'`, `'{ar-new}'`)}`);
    walk((rows[0]['QUERY PLAN'] as { Plan: Record<string, unknown> }[])[0]!.Plan);
  }
  t.notOk(used.has('conversations_auto_resolve_idx'), `conversations read through: ${[...used].join(', ')}`);
});
