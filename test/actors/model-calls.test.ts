import t from 'tap';
import { chargeModelUsage, reserveCredit, sweepExpiredReservations } from '../../lib/credit.js';
import { inTransaction, openSqlPool } from '../../lib/db.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Model calls at real model latency (contract.md § Model calls), with small numbers: two
 * places for calls in flight (MODEL_MAX_CONCURRENCY=2) and a 2.5 s slow-down budget
 * (MODEL_RETRY_BUDGET_MS), a model stand-in that takes about a second where a test needs
 * model latency. What is asserted is counts and order, never how long something took.
 * Each company's agent has its own API key, so the stand-in tells their requests apart.
 */
const svc = await startTestService(t, 'model_calls', { env: { PARTITIONS: '2', MODEL_MAX_CONCURRENCY: '2', MODEL_RETRY_BUDGET_MS: '2500' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'calls' });
await waitForPartitions([worker], 2);

const keyOf = (r: ModelRequest) => String(r.headers.authorization ?? '').replace(/^Bearer /, '');
const requestsOf = (key: string) => llm.requests.filter((r) => keyOf(r) === key);
/** Per API key: how many of its requests the stand-in has seen, for scripted answers. */
const seen = new Map<string, number>();

llm.respond((req) => {
  const key = keyOf(req);
  const n = (seen.get(key) ?? 0) + 1;
  seen.set(key, n);
  const text = llm.lastUserText(req);
  switch (key) {
    case 'sk-fair-a':
    case 'sk-fair-b':
      return { delayMs: 1000, content: `Model says: ${text}` };
    case 'sk-capped':
      return { delayMs: 300, content: `Model says: ${text}` };
    case 'sk-slowed':
      // The first two requests are told to slow down for a second.
      return n <= 2 ? { status: 429, retryAfter: 1, errorCode: 'rate_limit_exceeded' } : { delayMs: 200, content: `Model says: ${text}` };
    case 'sk-always-429':
      return { status: 429, retryAfter: 1 };
    case 'sk-no-quota':
      return { status: 429, errorCode: 'insufficient_quota' };
    case 'sk-credit':
      return { delayMs: 300, content: `Model says: ${text}`, usage: { prompt_tokens: 50, completion_tokens: 567 } };
    default:
      return { content: `Model says: ${text}` };
  }
});

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);

async function setup(name: string, apiKey: string, model: Record<string, unknown> = {}) {
  const user = await signUp(svc.api, name);
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: llm.baseUrl, apiKey, ...model } },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, agent: created.body.agent, integration };
}

const handoffReasons = async (integrationId: number) =>
  (await sql(svc.orm, `select snapshot->'context'->>'handoffReason' as reason from conversations where integration_id = ? and snapshot->'context'->>'handoffReason' is not null`, [integrationId])).map((r) => r.reason);
const billing = async (token: string) => (await svc.api('GET', '/api/billing', { token })).body.billing;

t.test('a company with a backlog does not delay another company: its call takes the next free place', async (t) => {
  const a = await setup('Backlog Co', 'sk-fair-a');
  const b = await setup('Other Co', 'sk-fair-b');
  const backlog = Array.from({ length: 8 }, (_, i) => `backlog-${i}`);
  for (const c of backlog) await publishEnvelope(svc.nc, svc.config, messageEnvelope(a.integration, c, `question of ${c}`));
  // Both places are taken by the backlog; six of its calls wait.
  await llm.waitFor(() => requestsOf('sk-fair-a').length === 2);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(b.integration, 'other-1', 'a question from another company'));
  await helpdesk.waitFor(() => helpdesk.sent().length === 9, 20_000);

  const order = llm.requests.filter((r) => ['sk-fair-a', 'sk-fair-b'].includes(keyOf(r))).map(keyOf);
  const position = order.indexOf('sk-fair-b') + 1;
  t.ok(position >= 3 && position <= 4, `the other company's call started with the first two places that came free (request #${position} of ${order.length}), not behind the backlog (#9)`);
  t.equal(llm.peakInflight(), 2, 'never more than MODEL_MAX_CONCURRENCY calls in flight');
  t.same(backlog.map((c) => sentTo(c).length), backlog.map(() => 1), 'the whole backlog answered');
  t.equal(sentTo('other-1')[0]?.text, 'Model says: a question from another company');
  await untilIdle(svc);
});

t.test("an agent's model.maxConcurrency caps its own calls", async (t) => {
  const capped = await setup('Capped Agent Co', 'sk-capped', { maxConcurrency: 1 });
  t.equal(capped.agent.model.maxConcurrency, 1);
  for (const c of ['cap-1', 'cap-2', 'cap-3']) await publishEnvelope(svc.nc, svc.config, messageEnvelope(capped.integration, c, `hello from ${c}`));
  await helpdesk.waitFor(() => ['cap-1', 'cap-2', 'cap-3'].every((c) => sentTo(c).length === 1), 15_000);
  t.equal(llm.peakInflight('sk-capped'), 1, 'one call of the agent at a time, although two places were free');
  t.ok(requestsOf('sk-capped').every((r) => r.inflightOfKeyAtArrival === 0));
  await untilIdle(svc);
});

t.test('429 with Retry-After slows that server down and retries; other servers go on; no handoff, one charge per answer', async (t) => {
  const slowed = await setup('Slowed Co', 'sk-slowed');
  const other = await setup('Unhurried Co', 'sk-other');
  const customers = ['slow-1', 'slow-2', 'slow-3', 'slow-4'];
  for (const c of customers) await publishEnvelope(svc.nc, svc.config, messageEnvelope(slowed.integration, c, `please answer ${c}`));
  // Both places went to this server, and both requests were told to slow down for a second.
  await llm.waitFor(() => requestsOf('sk-slowed').filter((r) => r.status === 429).length === 2);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(other.integration, 'unhurried', 'meanwhile, elsewhere'));
  await helpdesk.waitFor(() => customers.every((c) => sentTo(c).length === 1) && sentTo('unhurried').length === 1, 20_000);

  const d = requestsOf('sk-slowed');
  const [e] = requestsOf('sk-other');
  t.equal(d.length, 6, 'two refused requests, then one per customer');
  t.ok(e!.at >= d[1]!.answeredAt! && e!.at < d[2]!.at, "the other company's call went out while the slowed server paused (its waiting calls gave their places back)");
  t.equal(d[2]!.inflightOfKeyAtArrival, 0, 'after the pause the first retry went out alone (half of the two in flight when it complained)');
  t.ok(d[3]!.at >= d[2]!.answeredAt!, 'and the next one only after it was answered');
  t.same(customers.map((c) => sentTo(c)[0]?.text), customers.map((c) => `Model says: please answer ${c}`), 'every customer answered by the model');
  t.same(await handoffReasons(slowed.integration.id), [], 'nobody handed to a human');
  const attempts = await sql(svc.orm, `select m.answer_attempts from conversation_messages m join conversations c on c.id = m.conversation_id where c.integration_id = ? and m.role = 'customer'`, [slowed.integration.id]);
  t.same(attempts.map((r) => r.answer_attempts), [1, 1, 1, 1], 'a slow-down is waited out within one answer attempt');
  const b = await billing(slowed.user.token);
  t.equal(b.ledger.filter((l: { kind: string }) => l.kind === 'model_usage').length, 4, 'one charge per answer, none for the refused requests');
  t.equal(b.reservedUsd, '0.00');
  await untilIdle(svc);
});

t.test('a server that keeps asking to slow down: handed to a human after MODEL_RETRY_BUDGET_MS, at no cost', async (t) => {
  const stuck = await setup('Throttled Co', 'sk-always-429');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(stuck.integration, 'throttled', 'anyone there?'));
  await helpdesk.waitFor(() => sentTo('throttled').length === 1, 15_000);
  t.equal(sentTo('throttled')[0].text, 'A human colleague will take over shortly.');
  const n = requestsOf('sk-always-429').length;
  t.ok(n >= 2 && n <= 4, `retried at the server's pace (Retry-After: 1) within the 2.5 s budget, not hammered (${n} requests)`);
  t.same(await handoffReasons(stuck.integration.id), ['model_failed']);
  const [out] = await sql(svc.orm, `select t.payload->'output'->>'detail' as detail from conversation_transitions t join conversations c on c.id = t.conversation_id where c.integration_id = ? and t.event = 'xstate.done.actor.agent'`, [stuck.integration.id]);
  t.match(out.detail, /slow down \(HTTP 429\)/);
  const b = await billing(stuck.user.token);
  t.equal(b.balanceUsd, '5.00', 'nothing charged');
  t.equal(b.reservedUsd, '0.00', 'its reservation released');
  await untilIdle(svc);
});

t.test('a 429 saying the account has no quota left is not waited out: handed to a human at once', async (t) => {
  const broke = await setup('No Quota Co', 'sk-no-quota');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(broke.integration, 'no-quota', 'hello?'));
  await helpdesk.waitFor(() => sentTo('no-quota').length === 1, 15_000);
  t.equal(requestsOf('sk-no-quota').length, 1, 'asked once');
  t.same(await handoffReasons(broke.integration.id), ['model_failed']);
  const [out] = await sql(svc.orm, `select t.payload->'output'->>'detail' as detail from conversation_transitions t join conversations c on c.id = t.conversation_id where c.integration_id = ? and t.event = 'xstate.done.actor.agent'`, [broke.integration.id]);
  t.match(out.detail, /HTTP 429: the model account has no quota left/);
  await untilIdle(svc);
});

t.test('concurrent calls of one company near a zero balance: reserved before, settled after, never below zero', async (t) => {
  // Priced so a call reserves 1,024 output tokens × 1 USD per million = 0.001024 USD and costs
  // 567 × 1 USD per million = 0.000567 USD (prices given as JSON numbers).
  const g = await setup('Last Cents Co', 'sk-credit', { pricing: { inputUsdPerMTok: 0, outputUsdPerMTok: 1 } });
  t.same(g.agent.model.pricing, { inputUsdPerMTok: '0', outputUsdPerMTok: '1' });
  await sql(svc.orm, `update companies set balance_usd = 0.003 where id = ?`, [g.user.companyId]);
  const customers = ['cent-1', 'cent-2', 'cent-3', 'cent-4', 'cent-5'];
  for (const c of customers) await publishEnvelope(svc.nc, svc.config, messageEnvelope(g.integration, c, `can you help ${c}?`));
  await helpdesk.waitFor(() => customers.every((c) => sentTo(c).length === 1), 20_000);
  await untilIdle(svc);

  // Two reservations fit in 0.003; the others wait for settlements, and each is admitted while
  // the balance less what is held covers it: after four calls 0.000732 is left, less than one
  // reservation, with nothing in flight: the fifth customer goes to a human.
  t.equal(requestsOf('sk-credit').length, 4, 'four calls made');
  const replies = customers.filter((c) => sentTo(c)[0].text.startsWith('Model says'));
  t.equal(replies.length, 4);
  t.same(await handoffReasons(g.integration.id), ['no_credit']);
  const b = await billing(g.user.token);
  t.equal(b.balanceUsd, '0.000732', 'exactly the four calls were debited');
  t.equal(b.reservedUsd, '0.00', 'nothing left held');
  const usage = b.ledger.filter((l: { kind: string }) => l.kind === 'model_usage');
  t.equal(usage.length, 4);
  t.ok(usage.every((l: { balanceAfterUsd: string }) => Number(l.balanceAfterUsd) >= 0), 'the balance never went below zero');
});

t.test('reservations across crashes: a re-asked answer replaces its reservation, an expired one is released, the debit is single', async (t) => {
  const user = await signUp(svc.api, 'Crash Co');
  const pool = openSqlPool({ url: svc.config.databaseUrl, poolMax: 1 });
  t.teardown(() => pool.end());
  const held = async () => (await sql(svc.orm, `select reserved_usd::text as r, balance_usd::text as b, (select count(*)::int from credit_reservations where company_id = ?) as n from companies where id = ?`, [user.companyId, user.companyId]))[0];
  const messageId = '900000001';

  const first = await reserveCredit(pool, { companyId: user.companyId, agentId: null, messageId, amountUsd: '0.5', ttlMs: 600_000 });
  t.ok(first.ok);
  // The worker died mid-call; the message is asked again (its redelivery) and reserves again.
  const again = await reserveCredit(pool, { companyId: user.companyId, agentId: null, messageId, amountUsd: '0.7', ttlMs: 600_000 });
  t.ok(again.ok);
  t.same(await held(), { r: '0.700000', b: '5.000000', n: 1 }, 'one reservation for the message, the new one: nothing held twice');

  // A call whose process died and whose message is never asked again: released once it expired.
  const orphan = await reserveCredit(pool, { companyId: user.companyId, agentId: null, messageId: '900000002', amountUsd: '0.2', ttlMs: 1 });
  t.ok(orphan.ok);
  t.same(await held(), { r: '0.900000', b: '5.000000', n: 2 });
  await new Promise((r) => setTimeout(r, 20));
  t.ok((await sweepExpiredReservations(pool)) >= 1);
  t.same(await held(), { r: '0.700000', b: '5.000000', n: 1 }, 'the expired reservation no longer holds credit');

  // Over-reserving is refused, not queued forever: 4.3 is free.
  const tooMuch = await reserveCredit(pool, { companyId: user.companyId, agentId: null, messageId: '900000003', amountUsd: '4.4', ttlMs: 600_000 });
  t.same(tooMuch, { ok: false, reason: 'balance', availableUsd: '4.300000', reservedUsd: '0.700000' });

  const charge = () => inTransaction(pool, (c) => chargeModelUsage(c, { companyId: user.companyId, conversationId: null, messageId, model: 'gpt-4o', inputTokens: 1, outputTokens: 1, costUsd: '0.3' }));
  t.match(await charge(), { amountUsd: '-0.300000', balanceAfterUsd: '4.700000' });
  t.same(await held(), { r: '0.000000', b: '4.700000', n: 0 }, 'settled: the exact debit replaced the reservation');
  t.equal(await charge(), null, 'a second debit of the same answer does nothing');
  t.same(await held(), { r: '0.000000', b: '4.700000', n: 0 });
});
