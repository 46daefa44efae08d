// Lists that end (issue #18): conversations, their messages and transitions, and the credit
// ledger take `limit` (default 50, 1–200) and `offset` and answer a `total`, the documents'
// shape; conversations filter by customer id and by start date. Before, they stopped silently
// at 200 or had no bound at all.
import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'lists', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Many Lists Co');
// The built-in agent without a knowledge base, told to answer what it cannot with its fallback
// text (the bot stays on): every message gets a reply, and the ledger only what this file writes.
const agent = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'Support', onNoAnswer: 'fallback' } });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', agent.body.agent.id);
await startTestWorker(t, svc);

const CONVERSATIONS = 55;
const clients = Array.from({ length: CONVERSATIONS }, (_, k) => `cust-${String(k).padStart(2, '0')}`);
await Promise.all(clients.map((c) => publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, c, `hello from ${c}`))));
// One long conversation: 30 questions, 30 answers.
for (let k = 0; k < 30; k++) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'cust-00', `question ${k}`));
await untilIdle(svc, 60_000);
const get = (path: string) => svc.api('GET', path, { token: user.token });

t.test('conversations: 50 by default with the total; offset pages to the end; limit up to 200', async (t) => {
  const first = await get('/api/conversations');
  t.equal(first.status, 200);
  t.same(Object.keys(first.body).sort(), ['conversations', 'limit', 'offset', 'total']);
  t.match(first.body, { total: CONVERSATIONS, limit: 50, offset: 0 });
  t.equal(first.body.conversations.length, 50);
  const rest = await get('/api/conversations?offset=50');
  t.match(rest.body, { total: CONVERSATIONS, limit: 50, offset: 50 });
  t.equal(rest.body.conversations.length, 5);
  const ids = [...first.body.conversations, ...rest.body.conversations].map((c: { id: number }) => c.id);
  t.equal(new Set(ids).size, CONVERSATIONS, 'every conversation once across the pages');
  const all = await get('/api/conversations?limit=200');
  t.equal(all.body.conversations.length, CONVERSATIONS);
  t.same(all.body.conversations.map((c: { id: number }) => c.id), ids, 'the same order');
  t.match((await get('/api/conversations?offset=100')).body, { conversations: [], total: CONVERSATIONS });
  t.match((await get('/api/conversations?status=active&limit=10')).body, { total: CONVERSATIONS, limit: 10 });
  t.equal((await get('/api/conversations?status=active&limit=10')).body.conversations.length, 10);
});

t.test('conversations: filtered by customer id and by start date', async (t) => {
  const one = await get('/api/conversations?clientId=cust-07');
  t.equal(one.body.total, 1);
  t.equal(one.body.conversations[0].clientId, 'cust-07');
  t.match((await get('/api/conversations?clientId=nobody')).body, { conversations: [], total: 0 });
  t.match((await get(`/api/conversations?clientId=cust-07&integrationId=${integration.id}`)).body, { total: 1 });

  // Conversations that started on other days (the worker stamps them now).
  await sql(svc.orm, `update conversations set created_at = '2026-01-10T12:00:00Z' where client_id = any(?::text[])`, [`{${clients.slice(0, 10).join(',')}}`]);
  await sql(svc.orm, `update conversations set created_at = '2026-02-10T12:00:00Z' where client_id = any(?::text[])`, [`{${clients.slice(10, 15).join(',')}}`]);
  t.match((await get('/api/conversations?from=2026-01-01&to=2026-01-31')).body, { total: 10 });
  t.match((await get('/api/conversations?to=2026-01-10')).body, { total: 10 }, 'a date `to` includes that whole day');
  t.match((await get('/api/conversations?to=2026-01-10T11:59:59Z')).body, { total: 0 }, 'a date-time `to` is that instant');
  t.match((await get('/api/conversations?from=2026-02-01&to=2026-02-28')).body, { total: 5 });
  t.match((await get('/api/conversations?from=2026-01-10T12:00:00.000Z&to=2026-02-10T12:00:00Z')).body, { total: 15 }, 'both ends included');
  t.match((await get('/api/conversations?from=2026-03-01')).body, { total: CONVERSATIONS - 15 });
  const filtered = await get('/api/conversations?from=2026-01-01&to=2026-01-31&limit=4&offset=8');
  t.match(filtered.body, { total: 10, limit: 4, offset: 8 });
  t.equal(filtered.body.conversations.length, 2);
});

t.test('conversations: a bad limit, offset or date says which and why', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['limit=0', 'limit', /from 1 to 200/],
    ['limit=201', 'limit', /from 1 to 200/],
    ['limit=ten', 'limit', /from 1 to 200/],
    ['offset=-1', 'offset', /non-negative/],
    ['from=yesterday', 'from', /2026-03-01/],
    ['to=2026-13-45x', 'to', /ISO 8601/],
    ['from=2026-03-02&to=2026-03-01', 'from', /not be later than to/],
    ['clientId=', 'clientId', /1 to 200 characters/],
  ];
  for (const [query, field, message] of cases) {
    const res = await get(`/api/conversations?${query}`);
    t.equal(res.status, 400, query);
    t.equal(res.body.error.code, 'VALIDATION_ERROR');
    t.match(res.body.error.details, [{ field, message }], `${query}: ${field}`);
  }
});

t.test('messages and transitions of a long conversation: paged, oldest first, with the total', async (t) => {
  const [conv] = await sql(svc.orm, `select id from conversations where client_id = 'cust-00'`);
  const [{ n: messageCount }] = await sql(svc.orm, 'select count(*)::int as n from conversation_messages where conversation_id = ?', [conv.id]);
  t.equal(messageCount, 62, 'one greeting and 30 questions, each answered');
  const first = await get(`/api/conversations/${conv.id}/messages`);
  t.match(first.body, { total: 62, limit: 50, offset: 0 });
  t.same(first.body.messages.map((m: { seq: number }) => m.seq), Array.from({ length: 50 }, (_, k) => k + 1));
  const last = await get(`/api/conversations/${conv.id}/messages?offset=50`);
  t.same(last.body.messages.map((m: { seq: number }) => m.seq), Array.from({ length: 12 }, (_, k) => k + 51));
  t.match(last.body.messages.slice(-2), [{ role: 'customer', text: 'question 29' }, { role: 'agent' }], 'the newest last');

  const [{ n: transitionCount }] = await sql(svc.orm, 'select count(*)::int as n from conversation_transitions where conversation_id = ?', [conv.id]);
  const transitions = await get(`/api/conversations/${conv.id}/transitions?limit=200`);
  t.match(transitions.body, { total: transitionCount, limit: 200, offset: 0 });
  t.equal(transitions.body.transitions.length, transitionCount);
  const page = await get(`/api/conversations/${conv.id}/transitions?limit=10&offset=${transitionCount - 3}`);
  t.equal(page.body.transitions.length, 3);
  t.equal(page.body.transitions[0].seq, transitionCount - 2);
  t.equal((await get(`/api/conversations/${conv.id}/messages?limit=500`)).status, 400);
});

t.test('the credit ledger: the newest page in GET /api/billing with its total; GET /api/billing/ledger pages it all', async (t) => {
  await sql(
    svc.orm,
    `insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, at)
     select ?, 'model_usage', -0.001, 5 - 0.001 * g, 100, 10, 'gpt-4o-mini', now() + g * interval '1 second' from generate_series(1, 60) g`,
    [user.companyId],
  );
  const billing = (await get('/api/billing')).body.billing;
  t.equal(billing.ledger.length, 50, 'the newest 50');
  t.equal(billing.ledgerTotal, 61, 'and how many there are (60 + the signup bonus)');
  t.equal(billing.ledger[0].balanceAfterUsd, '4.94', 'newest first');
  const page = await get('/api/billing/ledger?offset=50&limit=50');
  t.match(page.body, { total: 61, limit: 50, offset: 50 });
  t.equal(page.body.ledger.length, 11);
  t.equal(page.body.ledger.at(-1).kind, 'signup_bonus', 'the oldest last');
  t.equal((await get('/api/billing/ledger?limit=0')).status, 400);
  t.equal((await svc.api('GET', '/api/billing/ledger')).status, 401);
});
