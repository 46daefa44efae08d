import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Replays (contract.md § Replay before publishing): past customer messages answered again
 * with changes to the agent, by a real worker (actors/replays/), against a model stand-in
 * whose answer depends on the system prompt. Nothing is sent and no conversation changes;
 * the model calls are debited as `replay_usage`; a finished replay is published as a new
 * version once. The conversations replayed are real ones: customers writing through the
 * helpdesk webhook, answered by the worker.
 */
const svc = await startTestService(t, 'replays', { env: { PARTITIONS: '1' } });
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
// maxReplays above the company quota: the slow replays of the last test must not keep the others waiting.
// No agent cache: a published replay answers the very next customer message (the cache's 5 s would make that depend on timing).
const worker = await startTestWorker(t, svc, { workerId: 'replays', options: { replay: { pollMs: 100, maxReplays: 8 }, agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 1);

const BASE_PROMPT = 'You are the assistant of Acme.';
const GENEROUS_PROMPT = 'You are the assistant of Acme. Be generous.';
const NOTICE = 'A human colleague will take over shortly.';
/** 1,234 input + 567 output tokens (the stand-in's usage) of gpt-4o at 2.50 / 10.00 USD per million. */
const CALL_USD = 0.008755;

const systemOf = (req: ModelRequest): string => String(req.body.messages?.[0]?.content ?? '');
const handoffCall = (reason: string) => ({ delayMs: 1000, content: null, toolCalls: [{ name: 'handoff_to_human', arguments: JSON.stringify({ reason }) }] });
// A model at a model's pace (1 s), whose answer depends on the prompt: the base prompt hands
// refunds over; the generous one answers refunds and hands prices over; the rest is the same.
// "SLOW" in the prompt: 15 s, a replay that is still running while a test looks at it.
llm.respond((req) => {
  const system = systemOf(req);
  const question = llm.lastUserText(req);
  if (system.includes('SLOW')) return { delayMs: 15_000, content: 'slowly' };
  const generous = system.includes('Be generous.');
  if (/refund/i.test(question)) return generous ? { delayMs: 1000, content: 'Sure, we refund within 30 days.' } : handoffCall('refund request');
  if (/price/i.test(question) && generous) return handoffCall('pricing question');
  return { delayMs: 1000, content: `Answer: ${question}` };
});

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);

/** A company with a model agent on a helpdesk integration at the stand-ins. */
async function modelCompany(name: string, systemPrompt: string) {
  const user = await signUp(api, name);
  const created = await api('POST', '/api/agents', { token: user.token, body: { name: 'LLM', systemPrompt, model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-live-key' } } });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, token: user.token, agent: created.body.agent as { id: number; version: number }, integration };
}

/** A customer writes each text in turn; each waits for what the helpdesk then sends them (an answer, or the handoff notice), unless `answered` is false. */
async function converse(integration: { id: number; webhookSecret: string }, clientId: string, turns: { text: string; answered?: boolean }[]): Promise<number> {
  for (const { text, answered = true } of turns) {
    const before = sentTo(clientId).length;
    await customerWrites(api, integration, clientId, text);
    if (answered) await helpdesk.waitFor(() => sentTo(clientId).length === before + 1, 15_000);
  }
  await untilIdle(svc);
  const [row] = await sql<{ id: number }>(svc.orm, 'select id from conversations where integration_id = ? and client_id = ?', [integration.id, clientId]);
  return row!.id;
}

const A = await modelCompany('Replay Co', BASE_PROMPT);
const conv1 = await converse(A.integration, 'c1', [{ text: 'What are your opening hours?' }, { text: 'What is the price of a lamp?' }]);
// Handed over on the refund, the agent still answers until a person acts (contract.md § Answers
// that find what the help centre says): "hello? anyone?" gets its answer. Then a person replies,
// and the customer's next message is theirs: the agent does not answer it.
const conv2 = await converse(A.integration, 'c2', [{ text: 'Where is my parcel?' }, { text: 'I want a refund' }, { text: 'hello? anyone?' }]);
{
  const person = await api('POST', `/api/conversations/${conv2}/messages`, { token: A.token, body: { text: 'Olga here, let me look.' } });
  if (person.status !== 200) throw new Error(`operator reply: ${person.status} ${JSON.stringify(person.body)}`);
  await helpdesk.waitFor(() => sentTo('c2').some((b) => b.text === 'Olga here, let me look.'), 15_000);
  await converse(A.integration, 'c2', [{ text: 'thanks Olga, still there?', answered: false }]);
}
const B = await modelCompany('Other Co', 'You are the assistant of Other Co.');
const convB = await converse(B.integration, 'b1', [{ text: 'Do you ship abroad?' }]);

const replaysOf = (agentId: number) => `/api/agents/${agentId}/replays`;
const start = (token: string, agentId: number, body: unknown) => api('POST', replaysOf(agentId), { token, body });
const getReplay = (token: string, agentId: number, id: number, items?: string) => api('GET', `${replaysOf(agentId)}/${id}${items ? `?items=${items}` : ''}`, { token });
async function finished(token: string, agentId: number, id: number): Promise<any> {
  return eventually(async () => {
    const { body } = await getReplay(token, agentId, id);
    return body.replay.status === 'running' ? null : body.replay;
  }, 30_000, `replay ${id} finished`);
}
// The OpenAPI document's schemas, to hold real answers against (strict: a field added or dropped fails).
const DOC_ID = 'https://openapi.test/openapi.json';
const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addSchema(await (await fetch(`${svc.url}/api/openapi.json`)).json(), DOC_ID);
/** Why `body` is not what the document says `method path` answers with `status` (null: it is). */
function undocumented(method: string, path: string, status: number, body: unknown): string | null {
  const pointer = ['paths', path, method.toLowerCase(), 'responses', String(status), 'content', 'application/json', 'schema'].map((s) => '/' + encodeURIComponent(s.replace(/~/g, '~0').replace(/\//g, '~1'))).join('');
  const validate = ajv.getSchema(`${DOC_ID}#${pointer}`) ?? ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
  return validate(body) ? null : JSON.stringify(validate.errors?.slice(0, 3));
}

/** The 400's fields. */
const fieldsOf = (res: { status: number; body: any }) => (res.status === 400 ? res.body.error.details.map((d: { field: string }) => d.field) : [`status ${res.status}`]);

t.test('a bad request is refused with 400 naming the field, and starts nothing', async (t) => {
  const bad: [string, unknown, string[]][] = [
    ['no changes', { conversations: { limit: 5 } }, ['changes']],
    ['an unknown field', { changes: { systemPrompt: 'x' }, speed: 2 }, ['speed']],
    ['a relevance threshold above 1', { changes: { relevanceThreshold: 2 } }, ['changes.relevanceThreshold']],
    ['an unknown agent field', { changes: { temperature: 0.2 } }, ['changes.temperature']],
    ['a bad model field', { changes: { model: { provider: 'gpt' } } }, ['changes.model.provider']],
    ['empty changes', { changes: {} }, ['changes']],
    ['a new name only', { changes: { name: 'Renamed' } }, ['changes']],
    ['the prompt the agent has', { changes: { systemPrompt: BASE_PROMPT } }, ['changes']],
    ["another company's knowledge base", { changes: { knowledgeBaseId: 2_000_000 } }, ['changes.knowledgeBaseId']],
    ['a new model address without the key', { changes: { model: { baseUrl: 'http://127.0.0.1:9/v1' } } }, ['changes.model.apiKey']],
    ['limit 0', { changes: { systemPrompt: 'x' }, conversations: { limit: 0 } }, ['conversations.limit']],
    ['limit 201', { changes: { systemPrompt: 'x' }, conversations: { limit: 201 } }, ['conversations.limit']],
    ['201 ids', { changes: { systemPrompt: 'x' }, conversations: { ids: Array.from({ length: 201 }, (_, i) => i + 1) } }, ['conversations.ids']],
    ['an id that is no integer', { changes: { systemPrompt: 'x' }, conversations: { ids: ['7'] } }, ['conversations.ids.0']],
    ['a date that is no date-time', { changes: { systemPrompt: 'x' }, conversations: { from: 'yesterday' } }, ['conversations.from']],
    ['a window ending before it starts', { changes: { systemPrompt: 'x' }, conversations: { from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' } }, ['conversations.to']],
    ['ids and a window', { changes: { systemPrompt: 'x' }, conversations: { ids: [conv1], from: '2026-01-01T00:00:00Z' } }, ['conversations.from']],
    ['an unknown conversation', { changes: { systemPrompt: 'x' }, conversations: { ids: [conv1, 2_000_000] } }, ['conversations.ids']],
    ["another company's conversation", { changes: { systemPrompt: 'x' }, conversations: { ids: [convB] } }, ['conversations.ids']],
    ['a window without conversations', { changes: { systemPrompt: 'x' }, conversations: { from: '2099-01-01T00:00:00Z' } }, ['conversations']],
  ];
  for (const [what, body, fields] of bad) {
    const res = await start(A.token, A.agent.id, body);
    t.same(fieldsOf(res), fields, what);
    if (res.status === 400) t.equal(res.body.error.code, 'VALIDATION_ERROR');
  }
  const unknown = await start(A.token, A.agent.id, { changes: { systemPrompt: 'x' }, conversations: { ids: [conv1, 2_000_000] } });
  t.match(unknown.body.error.details[0].message, /2000000/, 'the unknown id is named');
  t.equal((await api('GET', replaysOf(A.agent.id), { token: A.token })).body.total, 0, 'no replay was started');
  t.equal((await start(A.token, 2_000_000, { changes: { systemPrompt: 'x' } })).status, 404, 'an unknown agent: 404');
  t.equal((await api('GET', `${replaysOf(A.agent.id)}/2000000`, { token: A.token })).status, 404, 'an unknown replay: 404');
  t.same(fieldsOf(await api('GET', `${replaysOf(A.agent.id)}?limit=0`, { token: A.token })), ['limit']);
});

t.test('a replay with another prompt: each answered message answered again, nothing sent, nothing of the conversations changed, billed as replay_usage', async (t) => {
  // Every row of what a conversation is, as it is before the replay.
  const snapshot = async () =>
    (
      await sql(
        svc.orm,
        `select (select md5(coalesce(string_agg(c::text, '|' order by c.id), '')) from conversations c) as conversations,
                (select md5(coalesce(string_agg(m::text, '|' order by m.id), '')) from conversation_messages m) as messages,
                (select md5(coalesce(string_agg(x::text, '|' order by x.id), '')) from conversation_transitions x) as transitions,
                (select md5(coalesce(string_agg(l::text, '|' order by l.id), '')) from leads l) as leads,
                (select md5(coalesce(string_agg(o::text, '|' order by o.id), '')) from outbox o) as outbox,
                (select count(*)::int from conversation_messages) as message_count,
                (select count(*)::int from conversation_transitions) as transition_count`,
      )
    )[0];
  const ledger = async (kind: string) => sql<{ amount_usd: string; conversation_id: number | null; message_id: string | null }>(svc.orm, 'select amount_usd::text, conversation_id, message_id::text from credit_ledger where company_id = ? and kind = ? order by id', [A.user.companyId, kind]);
  const before = await snapshot();
  const liveUsage = (await ledger('model_usage')).length;
  const helpdeskRequests = helpdesk.requests.length;
  const balanceBefore = (await api('GET', '/api/billing', { token: A.token })).body.billing.balanceUsd;

  const res = await start(A.token, A.agent.id, { changes: { systemPrompt: GENEROUS_PROMPT } });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body.replay).sort(), ['done', 'id', 'status', 'total']);
  t.match(res.body.replay, { status: 'running', total: 5, done: 0 }, 'the customer messages the agent answered, handed over or not; the one a person had is not replayed');
  const replay = await finished(A.token, A.agent.id, res.body.replay.id);

  t.same(Object.keys(replay).sort(), ['agentId', 'baseVersion', 'changeFields', 'changes', 'createdAt', 'done', 'error', 'finishedAt', 'id', 'items', 'publishedVersion', 'status', 'summary', 'total']);
  t.match(replay, { agentId: A.agent.id, status: 'done', total: 5, done: 5, changes: { systemPrompt: GENEROUS_PROMPT }, changeFields: ['systemPrompt'], baseVersion: 1, publishedVersion: null, error: null });
  t.ok(Date.parse(replay.finishedAt) >= Date.parse(replay.createdAt));
  t.same(
    replay.items.map((i: any) => [i.seq, i.conversationId, i.question, i.before.kind, i.after.kind, i.changed]),
    [
      [1, conv1, 'What are your opening hours?', 'reply', 'reply', false],
      [2, conv1, 'What is the price of a lamp?', 'reply', 'handoff', true],
      [3, conv2, 'Where is my parcel?', 'reply', 'reply', false],
      [4, conv2, 'I want a refund', 'handoff', 'reply', true],
      [5, conv2, 'hello? anyone?', 'reply', 'reply', false],
    ],
    'conversations oldest first, each one in order: before and after side by side',
  );
  const [hours, price, , refund, meanwhile] = replay.items;
  t.same(meanwhile.before, { kind: 'reply', text: 'Answer: hello? anyone?', sources: [] }, 'answered while handed over: the reply the customer got');
  t.same(hours.before, { kind: 'reply', text: 'Answer: What are your opening hours?', sources: [] });
  t.same(hours.after, { kind: 'reply', text: 'Answer: What are your opening hours?', sources: [] });
  t.match(price.after, { kind: 'handoff', reason: String });
  t.match(refund.before, { kind: 'handoff', text: NOTICE, sources: [] }, 'a handoff answered with the notice the customer got');
  t.match(refund.after, { kind: 'reply', text: 'Sure, we refund within 30 days.' });
  const [question] = await sql<{ id: string }>(svc.orm, `select id::text from conversation_messages where conversation_id = ? and text = 'I want a refund'`, [conv2]);
  t.equal(refund.messageId, Number(question!.id), 'the customer message it answers again');
  t.same(replay.summary, { same: 3, changed: 2, newHandoffs: 1, resolvedHandoffs: 1, costUsd: (5 * CALL_USD).toFixed(6) });
  t.same(replay.items.map((i: any) => i.costUsd), Array(5).fill(String(CALL_USD)));

  t.equal(helpdesk.requests.length, helpdeskRequests, 'nothing was sent to the helpdesk');
  t.same(await snapshot(), before, 'no conversation, message, transition, lead or outbox row changed');
  const replayUsage = await ledger('replay_usage');
  t.equal(replayUsage.length, 5, 'one replay_usage entry per model call');
  t.equal((-replayUsage.reduce((sum, e) => sum + Number(e.amount_usd), 0)).toFixed(6), (5 * CALL_USD).toFixed(6), "which sum to the replay's cost");
  t.ok(replayUsage.every((e) => e.conversation_id === null && e.message_id === null), 'tied to no conversation');
  t.equal((await ledger('model_usage')).length, liveUsage, 'no model_usage entry');
  const billing = (await api('GET', '/api/billing', { token: A.token })).body.billing;
  t.equal(Number(billing.balanceUsd).toFixed(6), (Number(balanceBefore) - 5 * CALL_USD).toFixed(6), 'the balance pays for it');
  t.match(billing.ledger[0], { kind: 'replay_usage', model: 'gpt-4o', agentId: A.agent.id, conversationId: null });

  const REPLAY_PATH = '/api/agents/{id}/replays/{rid}';
  t.equal(undocumented('POST', '/api/agents/{id}/replays', 201, res.body), null, 'POST answers as documented');
  t.equal(undocumented('GET', REPLAY_PATH, 200, { replay }), null, 'GET answers as documented');
  t.equal(undocumented('GET', '/api/agents/{id}/replays', 200, (await api('GET', replaysOf(A.agent.id), { token: A.token })).body), null, 'the list answers as documented');

  // The items a user filters on.
  const shown = async (items: string) => (await getReplay(A.token, A.agent.id, replay.id, items)).body.replay.items?.map((i: any) => i.seq);
  t.same(await shown('changed'), [2, 4]);
  t.same(await shown('newHandoffs'), [2]);
  t.same(await shown('resolvedHandoffs'), [4]);
  t.same(await shown('all'), [1, 2, 3, 4, 5]);
  const none = (await getReplay(A.token, A.agent.id, replay.id, 'none')).body.replay;
  t.notOk('items' in none, 'items=none: the summary only');
  t.same(none.summary, replay.summary);
  t.same(fieldsOf(await getReplay(A.token, A.agent.id, replay.id, 'some')), ['items']);

  // Publish: the changes become the agent's next version, once.
  const published = await api('POST', `${replaysOf(A.agent.id)}/${replay.id}/publish`, { token: A.token });
  t.equal(published.status, 201);
  t.equal(undocumented('POST', `${REPLAY_PATH}/publish`, 201, published.body), null, 'publish answers as documented');
  t.match(published.body.agent, { id: A.agent.id, systemPrompt: GENEROUS_PROMPT, version: 2 });
  t.match(published.body.version, { version: 2, changes: ['systemPrompt'], replayId: replay.id, restoredFrom: null, current: true, createdBy: A.user.userId });
  const versions = (await api('GET', `/api/agents/${A.agent.id}/versions`, { token: A.token })).body;
  t.match(versions.versions[0], { version: 2, replayId: replay.id, changes: ['systemPrompt'], current: true });
  t.equal(versions.total, 2);
  t.equal((await getReplay(A.token, A.agent.id, replay.id, 'none')).body.replay.publishedVersion, 2);
  const again = await api('POST', `${replaysOf(A.agent.id)}/${replay.id}/publish`, { token: A.token });
  t.equal(again.status, 409, 'a replay is published once');
  t.equal(again.body.error.code, 'CONFLICT');
  t.equal((await api('GET', `/api/agents/${A.agent.id}/versions`, { token: A.token })).body.total, 2, 'and makes no other version');

  // The agent answers customers with it now.
  await converse(A.integration, 'c3', [{ text: 'I need a refund' }]);
  t.equal(sentTo('c3')[0].text, 'Sure, we refund within 30 days.');
});

t.test('which conversations: the most recently active ones up to limit, those of ids, those created in a window', async (t) => {
  const total = async (conversations: unknown) => {
    const res = await start(A.token, A.agent.id, { changes: { systemPrompt: `${GENEROUS_PROMPT} Selection.` }, conversations });
    t.equal(res.status, 201, JSON.stringify(conversations));
    // Each runs to its end before the next starts: the company runs at most 3 at once.
    const replay = await finished(A.token, A.agent.id, res.body.replay.id);
    return replay.items.map((i: any) => [i.conversationId, i.question]);
  };
  // c3 is the conversation of the previous test, after the publish.
  const [{ id: conv3, created_at: conv3Created }] = await sql(svc.orm, `select id, created_at from conversations where integration_id = ? and client_id = 'c3'`, [A.integration.id]);
  t.same(await total({ limit: 1 }), [[conv3, 'I need a refund']], 'limit 1: the conversation active last');
  t.same(await total({ limit: 2 }), [[conv2, 'Where is my parcel?'], [conv2, 'I want a refund'], [conv2, 'hello? anyone?'], [conv3, 'I need a refund']], 'limit 2: the two active last, the older one first');
  t.same(await total({ ids: [conv1] }), [[conv1, 'What are your opening hours?'], [conv1, 'What is the price of a lamp?']]);
  const [{ created_at: conv2Created }] = await sql(svc.orm, 'select created_at from conversations where id = ?', [conv2]);
  t.same(
    (await total({ from: new Date(conv2Created).toISOString(), to: new Date(conv3Created).toISOString() })).map(([id]: [number]) => id),
    [conv2, conv2, conv2],
    'created in [from, to)',
  );
});

t.test("a model key in the changes is kept sealed and never shown", async (t) => {
  const res = await start(A.token, A.agent.id, { changes: { model: { apiKey: 'sk-replay-secret' } }, conversations: { ids: [conv1] } });
  t.equal(res.status, 201);
  const replay = await finished(A.token, A.agent.id, res.body.replay.id);
  t.same(replay.changes, { model: { apiKey: '********' } });
  t.same(replay.changeFields, ['model.apiKey']);
  const calls = llm.requests.filter((r) => r.headers.authorization === 'Bearer sk-replay-secret');
  t.equal(calls.length, 2, 'the replay called the model with the new key');
  const list = await api('GET', replaysOf(A.agent.id), { token: A.token });
  for (const shown of [JSON.stringify((await getReplay(A.token, A.agent.id, replay.id)).body), JSON.stringify(list.body)]) t.notMatch(shown, 'sk-replay-secret');
  const [stored] = await sql(svc.orm, 'select changes::text, settings::text from agent_replays where id = ?', [replay.id]);
  t.notMatch(stored.changes + stored.settings, 'sk-replay-secret', 'stored sealed');
  // Published, the agent gets the key (it answers with it), still never shown.
  const published = await api('POST', `${replaysOf(A.agent.id)}/${replay.id}/publish`, { token: A.token });
  t.equal(published.status, 201);
  t.match(published.body.version, { changes: ['model.apiKey'], replayId: replay.id });
  t.notMatch(JSON.stringify(published.body), 'sk-replay-secret');
  await converse(A.integration, 'c4', [{ text: 'Is the key new?' }]);
  t.equal(llm.requests.at(-1)!.headers.authorization, 'Bearer sk-replay-secret');
});

t.test('roles and companies: operators 403, another company 404', async (t) => {
  const [rid] = (await api('GET', replaysOf(A.agent.id), { token: A.token })).body.replays.map((r: { id: number }) => r.id);
  const operator = await join(api, A.token, 'operator');
  for (const [method, path, body] of [
    ['POST', replaysOf(A.agent.id), { changes: { systemPrompt: 'x' } }],
    ['GET', replaysOf(A.agent.id)],
    ['GET', `${replaysOf(A.agent.id)}/${rid}`],
    ['POST', `${replaysOf(A.agent.id)}/${rid}/publish`],
  ] as [string, string, unknown?][]) {
    const res = await api(method, path, { token: operator.token, body });
    t.equal(res.status, 403, `operator: ${method} ${path}`);
  }
  for (const [method, path, body] of [
    ['POST', replaysOf(A.agent.id), { changes: { systemPrompt: 'x' } }],
    ['GET', replaysOf(A.agent.id)],
    ['GET', `${replaysOf(A.agent.id)}/${rid}`],
    ['GET', `${replaysOf(B.agent.id)}/${rid}`],
    ['POST', `${replaysOf(B.agent.id)}/${rid}/publish`],
  ] as [string, string, unknown?][]) {
    const res = await api(method, path, { token: B.token, body });
    t.equal(res.status, 404, `another company: ${method} ${path}`);
  }
});

t.test('running replays: not published, at most 3 per company, listed newest first and paged', async (t) => {
  const ids: number[] = [];
  for (const n of [1, 2, 3]) {
    const res = await start(B.token, B.agent.id, { changes: { systemPrompt: `SLOW ${n}` } });
    t.equal(res.status, 201);
    ids.push(res.body.replay.id);
  }
  const fourth = await start(B.token, B.agent.id, { changes: { systemPrompt: 'SLOW 4' } });
  t.equal(fourth.status, 409, 'a fourth while 3 run');
  t.match(fourth.body.error, { code: 'CONFLICT', message: /3 replays are running/ });
  t.equal((await start(A.token, A.agent.id, { changes: { systemPrompt: 'Another company runs its own.' }, conversations: { ids: [conv1] } })).status, 201, "another company's replays do not count");

  const publish = await api('POST', `${replaysOf(B.agent.id)}/${ids[0]}/publish`, { token: B.token });
  t.equal(publish.status, 409, 'a running replay is not published');
  t.match(publish.body.error.message, /running/);
  t.equal((await api('GET', `/api/agents/${B.agent.id}`, { token: B.token })).body.agent.version, 1, 'the agent is unchanged');

  const running = (await getReplay(B.token, B.agent.id, ids[0]!)).body.replay;
  t.match(running, { status: 'running', total: 1, finishedAt: null, summary: { same: 0, changed: 0, newHandoffs: 0, resolvedHandoffs: 0, costUsd: '0.00' } });
  t.same(running.items.map((i: any) => [i.conversationId, i.after, i.changed]), [[convB, null, null]], 'an item not answered yet');
  t.equal(undocumented('GET', '/api/agents/{id}/replays/{rid}', 200, { replay: running }), null, 'as documented');

  const page1 = (await api('GET', `${replaysOf(B.agent.id)}?limit=2`, { token: B.token })).body;
  t.same(page1.replays.map((r: { id: number }) => r.id), [ids[2], ids[1]], 'newest first');
  t.match(page1, { total: 3, limit: 2, offset: 0 });
  t.ok(page1.replays.every((r: object) => !('items' in r)), 'listed without their items');
  const page2 = (await api('GET', `${replaysOf(B.agent.id)}?limit=2&offset=2`, { token: B.token })).body;
  t.same(page2.replays.map((r: { id: number }) => r.id), [ids[0]]);
  t.match(page2, { total: 3, limit: 2, offset: 2 });
});
