import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import pg from 'pg';
import t from 'tap';
import { MAX_GAP_QUESTIONS, NO_ANSWERS_SQL, readNoAnswers } from '../../lib/knowledge/gaps.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

// GET /api/knowledge-bases/:id/gaps (contract.md § Answers a company can trust): the questions
// customers asked that the built-in agent could not answer from the base, grouped however
// they were typed, most frequent first. Customers write through the helpdesk webhook, the
// real worker answers, and the gaps are read from what it recorded.
const svc = await startTestService(t, 'knowledge_gaps', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Gaps Co');
const intruder = await signUp(svc.api, 'Other Co');
const kb = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
const shop = await addDocument(svc.api, user.token, kb.id, {
  title: 'Shop',
  content: '# Shop\n\n## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.\n\n## Delivery\n\nWe deliver parcels within Germany in two working days.',
});
// A strict threshold: a near miss ("deliver parcels to Japan" of a base that delivers within
// Germany) is a gap with a best match whatever the default threshold is tuned to.
const THRESHOLD = 0.9;
const handoffAgent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Help bot', knowledgeBaseId: kb.id, relevanceThreshold: THRESHOLD } })).body.agent;
const fallbackAgent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Chatty bot', knowledgeBaseId: kb.id, onNoAnswer: 'fallback', relevanceThreshold: THRESHOLD } })).body.agent;
const desk = await createHelpdeskIntegration(svc, user, stub, 'Desk', handoffAgent.id);
const chattyDesk = await createHelpdeskIntegration(svc, user, stub, 'Chatty desk', fallbackAgent.id);
const worker = await startTestWorker(t, svc, { workerId: 'gaps' });
await waitForPartitions([worker], 2);

let messageId = 1000;
/** A customer writes through the helpdesk webhook; resolves once the agent's answer reached the helpdesk. */
async function ask(integration: { id: number; webhookSecret: string }, client: string, text: string): Promise<void> {
  const before = stub.sent().filter((b) => b.client_id === client).length;
  const res = await deliver(svc.api, integration.id, { message_id: ++messageId, type: 'from_client', text, client_id: client, channel_id: 'ch-1', transport: 'telegram' }, { secret: integration.webhookSecret });
  if (res.status !== 200) throw new Error(`webhook: ${res.status} ${JSON.stringify(res.body)}`);
  await stub.waitFor(() => stub.sent().filter((b) => b.client_id === client).length > before);
}
const conversationOf = async (client: string): Promise<number> => (await eventually(async () => (await sql(svc.orm, 'select id from conversations where client_id = ?', [client]))[0])).id;
const gaps = (query = '', token = user.token, id = kb.id) => svc.api('GET', `/api/knowledge-bases/${id}/gaps${query}`, { token });
const pause = () => new Promise((r) => setTimeout(r, 50));

// Before `middle`: three phrasings of one question (two in one conversation with the
// fallback agent, which stays on), tea twice, an answered question. After: Peru again, Japan, a greeting.
const started = new Date(Date.now() - 1000);
await ask(desk, 'c1', 'What is the capital of Peru?');
await ask(desk, 'c2', 'capital of peru');
await ask(desk, 'c3', 'Do you sell tea?');
await ask(desk, 'c4', 'When is the shop open?');
await ask(chattyDesk, 'f1', 'do you sell tea');
await ask(chattyDesk, 'f1', 'whats the capitol of peru');
await pause();
const middle = new Date();
await pause();
await ask(desk, 'c5', 'What is the capital of Peru');
await ask(desk, 'c6', 'Do you deliver parcels to Japan?');
await ask(desk, 'c7', 'hello!');
const ended = new Date(Date.now() + 1000);
const conv = Object.fromEntries(await Promise.all(['c1', 'c2', 'c3', 'c5', 'c6', 'f1'].map(async (c) => [c, await conversationOf(c)] as const)));

t.test('the answered question and the greeting are not gaps; the others are grouped, most frequent first', async (t) => {
  t.match(stub.sent().find((b) => b.client_id === 'c4')?.text, /9 am to 6 pm/, 'c4 was answered from the base');
  const res = await gaps();
  t.equal(res.status, 200);
  t.same(
    res.body.gaps.map((g: any) => [g.question, g.count]),
    [['What is the capital of Peru', 4], ['do you sell tea', 2], ['Do you deliver parcels to Japan?', 1]],
    'three phrasings of Peru in one group (its most frequent phrasing, as last typed); no "When is the shop open?", no "hello!"',
  );
  t.match(res.body, { total: 3, limit: 50, offset: 0, truncated: false });
  const [peru, tea, japan] = res.body.gaps;
  t.same(peru.conversationIds, [conv.c5, conv.f1, conv.c2, conv.c1], 'distinct conversations, newest first');
  t.same(tea.conversationIds, [conv.f1, conv.c3]);
  t.same(japan.conversationIds, [conv.c6]);
  const newest = await sql(svc.orm, `select at from conversation_transitions where conversation_id = ? and event = 'xstate.done.actor.agent' order by seq desc limit 1`, [conv.c6]);
  t.equal(japan.lastAt, new Date(newest[0].at).toISOString(), 'lastAt: when the newest was asked');
  t.ok(Date.parse(peru.lastAt) > Date.parse(tea.lastAt), 'Peru was asked last after tea');
  // The best passage: what the agent found for the newest question (below its threshold), or nothing.
  t.match(japan.bestMatch, { documentId: shop.id, title: 'Shop' }, 'the near miss names the passage that came closest');
  for (const g of res.body.gaps) {
    if (g.bestMatch === null) continue;
    t.match(g.bestMatch, { documentId: shop.id, chunkId: Number, title: 'Shop' }, `${g.question}: a passage of the base`);
    t.ok(g.bestMatch.confidence >= 0 && g.bestMatch.confidence < handoffAgent.relevanceThreshold, `${g.question}: below the threshold (${g.bestMatch.confidence})`);
  }
  const recorded = await sql(svc.orm, `select payload #> '{output,decision,best}' as best from conversation_transitions where conversation_id = ? and event = 'xstate.done.actor.agent'`, [conv.c6]);
  // The recorded passage also carries its evidence (lexical, semantic); the gap shows the passage and its confidence.
  const shown = (b: any) => b && { documentId: b.documentId, chunkId: b.chunkId, title: b.title, confidence: b.confidence };
  t.same(japan.bestMatch, shown(recorded[0].best ?? null), "the best match is the one recorded with the decision");
});

t.test('the answer is what the OpenAPI document says', async (t) => {
  const doc = await (await fetch(`${svc.url}/api/openapi.json`)).json();
  const ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  ajv.addSchema(doc, 'openapi');
  const operation = doc.paths['/api/knowledge-bases/{id}/gaps'].get;
  t.match(operation.description, /newest 5000/, 'the docs say the grouping covers the newest questions only');
  const valid = ajv.compile({ $ref: 'openapi#/paths/~1api~1knowledge-bases~1{id}~1gaps/get/responses/200/content/application~1json/schema' });
  const res = await gaps();
  t.ok(res.body.gaps.some((g: any) => g.bestMatch !== null), 'with a best match');
  t.ok(valid(res.body), JSON.stringify(valid.errors));
  t.notOk(valid({ ...res.body, gaps: [{ ...res.body.gaps[0], extra: 1 }] }), 'a field it does not document would fail');
});

t.test('from and to: only the questions asked in the period', async (t) => {
  const after = await gaps(`?from=${middle.toISOString()}`);
  t.same(after.body.gaps.map((g: any) => [g.question, g.count]), [['Do you deliver parcels to Japan?', 1], ['What is the capital of Peru', 1]], 'once each: the most recently asked first');
  t.equal(after.body.total, 2);
  t.equal(after.body.from, middle.toISOString());
  const before = await gaps(`?from=${started.toISOString()}&to=${middle.toISOString()}`);
  t.same(before.body.gaps.map((g: any) => [g.question, g.count]), [['whats the capitol of peru', 3], ['do you sell tea', 2]], 'each phrasing of Peru once: the newest');
  t.same(before.body.gaps[0].conversationIds, [conv.f1, conv.c2, conv.c1]);
  const all = await gaps(`?from=${started.toISOString()}&to=${ended.toISOString()}`);
  t.equal(all.body.total, 3);
  const dates = await gaps(`?from=${started.toISOString().slice(0, 10)}&to=${ended.toISOString().slice(0, 10)}`);
  t.equal(dates.body.total, 3, 'UTC dates: the whole of the `to` day');
  const long = await gaps(`?from=2000-01-01T00:00:00Z&to=${middle.toISOString()}`);
  t.equal(long.body.total, 2, 'a long period is fine: the work is bounded by the questions read');
  const none = await gaps(`?to=${started.toISOString()}`);
  t.same(none.body, { gaps: [], total: 0, limit: 50, offset: 0, from: new Date(started.getTime() - 30 * 86_400_000).toISOString(), to: started.toISOString(), truncated: false }, 'before anything was asked: empty; from defaults to 30 days before to');
  const defaults = await gaps();
  t.ok(Math.abs(Date.parse(defaults.body.to) - Date.now()) < 10_000 && Date.parse(defaults.body.to) - Date.parse(defaults.body.from) === 30 * 86_400_000, 'default: the last 30 days up to now');
});

t.test('paged: limit and offset over the groups, total counts the groups', async (t) => {
  const second = await gaps('?limit=1&offset=1');
  t.equal(second.status, 200);
  t.same(second.body.gaps.map((g: any) => g.question), ['do you sell tea']);
  t.match(second.body, { total: 3, limit: 1, offset: 1 });
  const past = await gaps('?offset=3');
  t.same(past.body.gaps, []);
  t.equal(past.body.total, 3);
});

t.test('bad input: 400 VALIDATION_ERROR naming the parameter', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['?from=yesterday', 'from', /date/],
    ['?to=2026-02-30', 'to', /date/],
    ['?from=2026-03-01T10:00:00', 'from', /zone/],
    ['?from=2026-03-02&to=2026-03-01', 'from', /must be before to/],
    ['?from=2026-03-02T00:00:00Z&to=2026-03-01T23:00:00Z', 'from', /must be before to/],
    ['?from=2026-03-01T10:00:00Z&to=2026-03-01T10:00:00Z', 'from', /must be before to/],
    ['?from=2999-01-01', 'from', /must be in the past/],
    ['?limit=0', 'limit', /1 to 200/],
    ['?limit=201', 'limit', /1 to 200/],
    ['?offset=-1', 'offset', /non-negative/],
    ['?from=a%00b', 'from', /U\+0000/],
  ];
  for (const [query, field, message] of cases) {
    const res = await gaps(query);
    t.equal(res.status, 400, query);
    t.equal(res.body.error.code, 'VALIDATION_ERROR', query);
    t.match(res.body.error.details, [{ field, message }], `${query}: ${JSON.stringify(res.body.error.details)}`);
  }
  t.equal((await gaps('?from=2026-03-01&to=2026-03-01')).status, 200, 'one day: from and to the same date');
});

t.test("another company: 404 for the base, and its own base has no gaps of ours", async (t) => {
  const theirs = (await svc.api('POST', '/api/knowledge-bases', { token: intruder.token, body: { name: 'Theirs' } })).body.knowledgeBase;
  for (const res of [await gaps('', intruder.token), await gaps('?from=2000-01-01', intruder.token)]) {
    t.equal(res.status, 404);
    t.equal(res.body.error.code, 'NOT_FOUND');
    t.notMatch(JSON.stringify(res.body), /Peru|tea/i);
  }
  const own = await gaps('', intruder.token, theirs.id);
  t.equal(own.status, 200);
  t.same(own.body.gaps, []);
  t.equal((await gaps('', user.token, theirs.id)).status, 404, 'nor the other way round');
  t.equal((await gaps('', user.token, 2147483647)).status, 404, 'no such base');
  t.equal((await svc.api('GET', '/api/knowledge-bases/abc/gaps', { token: user.token })).status, 404);
  t.equal((await svc.api('GET', `/api/knowledge-bases/${kb.id}/gaps`)).status, 401, 'a credential is needed');
});

t.test('a deleted base: 404', async (t) => {
  const gone = (await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Gone' } })).body.knowledgeBase;
  t.equal((await svc.api('DELETE', `/api/knowledge-bases/${gone.id}`, { token: user.token })).status, 204);
  t.equal((await gaps('', user.token, gone.id)).status, 404);
});

t.test('bounded: the newest no-answers are read, and the answer says when there were more', async (t) => {
  const pool = new pg.Pool({ connectionString: svc.config.databaseUrl, max: 1 });
  t.teardown(() => pool.end());
  const scope = { companyId: user.companyId, knowledgeBaseId: kb.id, from: started, to: ended };
  const some = await readNoAnswers(pool, scope, 2);
  t.equal(some.truncated, true, 'seven in the period, two read');
  t.same(some.noAnswers.map((n) => n.question), ['Do you deliver parcels to Japan?', 'What is the capital of Peru'], 'the newest');
  const all = await readNoAnswers(pool, scope, 7);
  t.equal(all.truncated, false);
  t.equal(all.noAnswers.length, 7);
  t.equal(MAX_GAP_QUESTIONS, 5000);
});

t.test('the query uses the partial index of migration 0018 (EXPLAIN), among many other transitions', async (t) => {
  const client = new pg.Client({ connectionString: svc.config.databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  // A busy log: 60,000 other transitions of this company and 3,000 no-answers of another base.
  await client.query(
    `insert into conversation_transitions (company_id, conversation_id, seq, at, event, payload, to_state)
     select $1, $2, 100000 + g, now() - (g || ' seconds')::interval,
            case when g % 20 = 0 then 'xstate.done.actor.agent' else 'customer.message' end,
            case when g % 20 = 0 then jsonb_build_object('output', jsonb_build_object('decision', jsonb_build_object('kind', case when g % 40 = 0 then 'no_answer' else 'answer' end, 'knowledgeBaseId', 2147483000, 'question', 'q' || g)))
                 else jsonb_build_object('text', 'hello ' || g) end,
            '"idle"'::jsonb
     from generate_series(1, 63000) g`,
    [user.companyId, conv.c1],
  );
  await client.query('analyze conversation_transitions');
  const explain = await client.query(`explain (format json) ${NO_ANSWERS_SQL}`, [user.companyId, kb.id, started, ended, MAX_GAP_QUESTIONS + 1]);
  const plan = JSON.stringify(explain.rows[0]['QUERY PLAN']);
  t.match(plan, /"Index Name":"conversation_transitions_gaps_idx"/, 'read through conversation_transitions_gaps_idx');
  t.notMatch(plan, /"Node Type":"Seq Scan"/, 'no sequential scan of the log');
  const res = await gaps();
  t.equal(res.body.total, 3, 'the other base and the other events are not gaps of this base');
});
