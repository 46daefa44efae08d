import t from 'tap';
import { OUTCOMES_SQL, outcomeParams } from '../../gateway/analytics/outcomes.js';
import { openSqlPool } from '../../lib/db.js';
import { EXPECTED_OUTCOMES, OUTCOMES_FROM, OUTCOMES_TO, seedHistory, seedOutcomes } from '../support/outcomes.js';
import { signUp, startTestService } from '../support/service.js';

// The outcome figures of GET /api/analytics, each checked on a constructed history
// (test/support/outcomes.ts says what happened and why each figure is what it is).
const svc = await startTestService(t, 'analytics');
const pool = openSqlPool({ url: svc.config.databaseUrl, poolMax: 2 });
t.teardown(() => pool.end());
const user = await signUp(svc.api, 'Outcomes Co');
const other = await signUp(svc.api, 'Other Co');
const ids = await seedOutcomes(pool, user.companyId);
const otherIds = await seedOutcomes(pool, other.companyId); // the same history in another company: none of it may count
await seedHistory(pool, user.companyId, 5000); // two months of older sessions (then ANALYZE)

const analytics = async (query: string, token = user.token) => {
  const res = await svc.api('GET', `/api/analytics${query}`, { token });
  return res;
};
const figuresOf = (a: Record<string, unknown>) => {
  const { byDay: _byDay, from: _from, to: _to, agentId: _agentId, reopenWindowDays: _w, ...figures } = a;
  return figures;
};

t.test('the figures of the period, in total and per UTC day', async (t) => {
  const res = await analytics(`?from=${OUTCOMES_FROM}&to=${OUTCOMES_TO}`);
  t.equal(res.status, 200);
  const a = res.body.analytics;
  const { byDay, ...totals } = EXPECTED_OUTCOMES.all;
  t.same(figuresOf(a), totals);
  t.same(a.byDay, byDay);
  t.match(a, { from: '2026-03-01T00:00:00.000Z', to: '2026-03-04T00:00:00.000Z', agentId: null, reopenWindowDays: 7 }, 'dates are whole UTC days, `to` included');
});

t.test('per agent: the sessions of its integrations, the cost of its own calls', async (t) => {
  const one = (await analytics(`?from=${OUTCOMES_FROM}&to=${OUTCOMES_TO}&agentId=${ids.agent1}`)).body.analytics;
  t.same(figuresOf(one), EXPECTED_OUTCOMES.agent1);
  t.equal(one.agentId, ids.agent1);
  const two = (await analytics(`?from=${OUTCOMES_FROM}&to=${OUTCOMES_TO}&agentId=${ids.agent2}`)).body.analytics;
  t.same(figuresOf(two), EXPECTED_OUTCOMES.agent2);
  const foreign = (await analytics(`?from=${OUTCOMES_FROM}&to=${OUTCOMES_TO}&agentId=${otherIds.agent1}`)).body.analytics;
  t.same(figuresOf(foreign), { conversations: 0, autoResolved: 0, handedOff: 0, reopened: 0, replies: 0, modelCostUsd: '0.00', costPerResolutionUsd: null }, "another company's agent: nothing");
});

t.test('timestamps bound the period to the millisecond, `to` excluded', async (t) => {
  const a = (await analytics('?from=2026-03-01T09:15:00Z&to=2026-03-02T00:00:00.000Z')).body.analytics;
  // S2 started at 10:00 (S1 at 09:00 is before); S1 closed at 09:30 (S7 at 00:30 is before); S1's reply at 09:00:05 is before.
  t.same(figuresOf(a), { conversations: 1, autoResolved: 1, handedOff: 1, reopened: 0, replies: 0, modelCostUsd: '0.01', costPerResolutionUsd: '0.01' });
  t.same(a.byDay.map((d: { date: string }) => d.date), ['2026-03-01']);
  const shifted = (await analytics('?from=2026-03-03T23:59:59.999%2B00:00&to=2026-03-04T01:00:00%2B01:00')).body.analytics;
  t.equal(shifted.conversations, 1, 'S4 at 23:59:59.999 is in; S10 at 00:00 (01:00+01:00) is not');
});

t.test('without from / to: the last 30 days up to now', async (t) => {
  const before = Date.now();
  const a = (await analytics('')).body.analytics;
  const to = Date.parse(a.to);
  t.ok(to >= before && to <= Date.now(), 'to is now');
  t.equal(to - Date.parse(a.from), 30 * 86_400_000);
  t.ok(a.byDay.length === 30 || a.byDay.length === 31, 'one entry per UTC day touched');
});

t.test('bad periods and filters: 400 naming the field', async (t) => {
  const cases: [string, string][] = [
    ['?from=2026-02-30', 'from'],
    ['?from=03/01/2026', 'from'],
    ['?from=2026-03-01T00:00:00', 'from'],
    ['?to=yesterday', 'to'],
    ['?from=2026-03-02&to=2026-03-01', 'to'],
    ['?from=2026-03-02T00:00:00Z&to=2026-03-02T00:00:00Z', 'to'],
    ['?from=2025-03-01&to=2026-03-02', 'to'],
    ['?agentId=abc', 'agentId'],
    ['?agentId=0', 'agentId'],
    ['?from=a&from=b', 'from'],
  ];
  for (const [query, field] of cases) {
    const res = await analytics(query);
    t.equal(res.status, 400, query);
    t.match(res.body.error, { code: 'VALIDATION_ERROR', details: [{ field }] }, query);
  }
  const longest = await analytics('?from=2025-03-03&to=2026-03-03');
  t.equal(longest.status, 200, '366 days is the longest period');
  t.equal(longest.body.analytics.byDay.length, 366);
  t.equal((await svc.api('GET', '/api/analytics')).status, 401, 'needs a credential');
});

t.test('with months of history, every part of the query reads the period from an index', async (t) => {
  const indexes = new Set<string>();
  const scanned = new Set<string>();
  const walk = (plan: Record<string, unknown>) => {
    if (typeof plan['Index Name'] === 'string') indexes.add(plan['Index Name']);
    if (plan['Node Type'] === 'Seq Scan') scanned.add(String(plan['Relation Name']));
    for (const child of (plan.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  for (const agentId of [null, ids.agent1]) {
    const params = outcomeParams({ companyId: user.companyId, from: new Date('2026-03-01T00:00:00Z'), to: new Date('2026-03-04T00:00:00Z'), agentId });
    const { rows } = await pool.query(`explain (format json) ${OUTCOMES_SQL}`, params);
    walk(rows[0]['QUERY PLAN'][0].Plan);
  }
  for (const name of ['conversation_messages_first_idx', 'conversation_messages_agent_reply_idx', 'conversations_closed_idx', 'conversation_transitions_handoff_idx', 'credit_ledger_spend_idx']) {
    t.ok(indexes.has(name), name);
  }
  t.same([...scanned].filter((table) => table !== 'integrations'), [], 'no sequential scan of a history table');
});
