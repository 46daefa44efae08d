import t, { type Test } from 'tap';
import { MAX_ANSWER_ATTEMPTS } from '../../actors/host.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { startTestService } from '../support/service.js';
import { deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, messageEnvelope, modelAgentCompany, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * No message makes the worker loop: an answer the database refuses hands the conversation to
 * a human with the reason (the model asked a bounded number of times, counted durably), an
 * envelope the database cannot store is set aside, and what a tenant's model server reports
 * (absurd token counts, NUL characters) cannot break a commit. Daily spend caps stop model
 * calls for the rest of the day.
 */
const svc = await startTestService(t, 'answer_bounds', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'bounds', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

llm.respond((req) => {
  const text = llm.lastUserText(req);
  if (text.startsWith('HUGE')) return { content: 'Counted generously.', usage: { prompt_tokens: 3_000_000_000, completion_tokens: 5_000_000_000 } };
  if (text.startsWith('NUL')) return { content: 'a\u0000b answer' };
  return { content: `Model says: ${text}` };
});

const setup = (name: string, agentExtra: Record<string, unknown> = {}) => modelAgentCompany(svc, helpdesk, llm.baseUrl, name, agentExtra);

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const modelCallsFor = (text: string) => llm.requests.filter((r) => llm.lastUserText(r) === text).length;
const agentOutputs = async (integrationId: number, clientId: string) =>
  (
    await sql(svc.orm, `select t.payload from conversation_transitions t join conversations c on c.id = t.conversation_id where c.integration_id = ? and c.client_id = ? and t.event = 'xstate.done.actor.agent' order by t.id`, [
      integrationId,
      clientId,
    ])
  ).map((r) => r.payload.output);
const usage = async (companyId: number) => sql(svc.orm, `select input_tokens, output_tokens, amount_usd::text from credit_ledger where company_id = ? and kind = 'model_usage'`, [companyId]);
/** What the company's model calls still hold: the counter and the reservation rows. */
const held = async (companyId: number) =>
  (await sql(svc.orm, `select reserved_usd::text as reserved, (select count(*)::int from credit_reservations where company_id = ?) as reservations from companies where id = ?`, [companyId, companyId]))[0];

/** Makes PostgreSQL refuse this company's ledger entries with the given SQLSTATE (a fault of the database, not of our code). */
async function refuseLedger(t: Test, companyId: number, sqlstate: string) {
  const fn = `refuse_ledger_${companyId}`;
  await sql(svc.orm, `create function ${fn}() returns trigger language plpgsql as $$ begin if new.company_id = ${companyId} then raise exception 'refused by the test' using errcode = '${sqlstate}'; end if; return new; end $$`);
  await sql(svc.orm, `create trigger ${fn} before insert on credit_ledger for each row execute function ${fn}()`);
  t.teardown(async () => {
    await sql(svc.orm, `drop trigger ${fn} on credit_ledger`);
    await sql(svc.orm, `drop function ${fn}()`);
  });
}

t.test('an answer the database refuses: handed to a human with the reason, the model asked once', async (t) => {
  const { user, integration } = await setup('Refused Co');
  await refuseLedger(t, user.companyId, '22003');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'r-1', 'Can you help?'));
  const [out] = await eventually(async () => {
    const o = await agentOutputs(integration.id, 'r-1');
    return o.length ? o : null;
  }, 15_000, 'the handoff');
  t.match(out, { kind: 'handoff', reason: 'model_failed', detail: 'the answer could not be stored (SQLSTATE 22003)' });
  await helpdesk.waitFor(() => sentTo('r-1').length === 1);
  t.equal(sentTo('r-1')[0].text, 'A human colleague will take over shortly.', 'the customer is told a human takes over');
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(modelCallsFor('Can you help?'), 1, 'the model was not asked again');
  t.same(await usage(user.companyId), [], 'nothing charged');
  t.same(await held(user.companyId), { reserved: '0.000000', reservations: 0 }, "the call's reservation was released with the handoff");
});

t.test(`an answer that cannot be stored for another reason: at most ${MAX_ANSWER_ATTEMPTS} model calls, then a human`, async (t) => {
  const { user, integration } = await setup('Flaky Co');
  await refuseLedger(t, user.companyId, '40001');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'f-1', 'Still there?'));
  const [out] = await eventually(async () => {
    const o = await agentOutputs(integration.id, 'f-1');
    return o.length ? o : null;
  }, 40_000, 'the handoff');
  t.match(out, { kind: 'handoff', reason: 'model_failed', detail: `no answer could be stored after ${MAX_ANSWER_ATTEMPTS} attempts` });
  t.equal(modelCallsFor('Still there?'), MAX_ANSWER_ATTEMPTS, 'the model was asked a bounded number of times');
  const [msg] = await sql(svc.orm, `select answer_attempts from conversation_messages m join conversations c on c.id = m.conversation_id where c.integration_id = ? and m.role = 'customer'`, [integration.id]);
  t.equal(msg.answer_attempts, MAX_ANSWER_ATTEMPTS + 1, 'every attempt was counted in the database');
  t.same(await usage(user.companyId), [], 'nothing charged');
  t.same(await held(user.companyId), { reserved: '0.000000', reservations: 0 }, 'each re-asked call replaced the reservation of the one before; the last was released');
});

t.test('absurd token counts are not believed: the answer is stored, charged by an estimate', async (t) => {
  const { user, integration } = await setup('Huge Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'h-1', 'HUGE question'));
  await helpdesk.waitFor(() => sentTo('h-1').length === 1);
  t.equal(sentTo('h-1')[0].text, 'Counted generously.');
  const [entry] = await eventually(async () => {
    const rows = await usage(user.companyId);
    return rows.length ? rows : null;
  }, 5000, 'the charge');
  t.ok(Number(entry.input_tokens) < 1_000_000 && Number(entry.output_tokens) < 1_000_000, `estimated counts (${entry.input_tokens} / ${entry.output_tokens})`);
  t.equal(modelCallsFor('HUGE question'), 1);
});

t.test('NUL characters from a model or a webhook never break a commit', async (t) => {
  const { integration } = await setup('Nul Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'n-1', 'NUL please'));
  await helpdesk.waitFor(() => sentTo('n-1').length === 1);
  t.equal(sentTo('n-1')[0].text, 'ab answer', 'the model answer without its NUL');

  // A signed webhook whose text carries \u0000 and a lone surrogate: answered, made storable at the door.
  const raw = `{"message_id":91,"type":"from_client","text":"NUL\\u0000 in a \\ud800webhook","client_id":"n-2","channel_id":"ch","transport":"telegram"}`;
  const res = await deliver(svc.api, integration.id, raw, { secret: integration.webhookSecret! });
  t.equal(res.status, 200);
  await helpdesk.waitFor(() => sentTo('n-2').length === 1);
  t.equal(llm.lastUserText(llm.requests.at(-1)!), 'NUL in a \ufffdwebhook');

  // An envelope that reached the queue with a NUL anyway (an older gateway, another publisher):
  // set aside as rejected, and the conversation's next message is answered.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'n-3', 'poison\u0000pill'));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'n-3', 'and then a normal one'));
  await helpdesk.waitFor(() => sentTo('n-3').length === 1, 15_000);
  t.equal(sentTo('n-3')[0].text, 'Model says: and then a normal one');
  const rejected = await sql(svc.orm, `select outcome from inbound_receipts where integration_id = ? and outcome like 'rejected%'`, [integration.id]);
  t.match(rejected, [{ outcome: /rejected \(SQLSTATE 22P05\)/ }], 'recorded as rejected');
});

t.test('daily spend caps: past the company\'s or the agent\'s cap, conversations go to a human without a model call', async (t) => {
  // gpt-4o at the stand-in's usage (1,234 in / 567 out) costs 0.008755 USD a call.
  const { user, integration } = await setup('Capped Co');
  const badCap = await svc.api('PATCH', '/api/billing', { token: user.token, body: { spendCapUsdPerDay: '-1' } });
  t.equal(badCap.status, 400, 'a negative cap is refused');
  const cap = await svc.api('PATCH', '/api/billing', { token: user.token, body: { spendCapUsdPerDay: '0.015' } });
  t.equal(cap.status, 200);
  t.match(cap.body.billing, { spendCapUsdPerDay: '0.015', spentTodayUsd: '0.00' });
  for (const [i, text] of ['first question', 'second question', 'third question'].entries()) {
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, `cap-${i}`, text));
    await helpdesk.waitFor(() => sentTo(`cap-${i}`).length === 1);
  }
  t.equal(modelCallsFor('first question') + modelCallsFor('second question') + modelCallsFor('third question'), 2, 'the third call was not made');
  const [third] = await agentOutputs(integration.id, 'cap-2');
  t.match(third, { kind: 'handoff', reason: 'spend_cap', detail: /company's daily model spend cap/ });
  t.match((await svc.api('GET', '/api/billing', { token: user.token })).body.billing, { spentTodayUsd: '0.01751' });
  await svc.api('PATCH', '/api/billing', { token: user.token, body: { spendCapUsdPerDay: null } });

  const { user: other, agent, integration: otherDesk } = await setup('Agent Cap Co', { spendCapUsdPerDay: '0.001' });
  t.equal(agent.spendCapUsdPerDay, '0.001');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(otherDesk, 'a-1', 'agent one'));
  await helpdesk.waitFor(() => sentTo('a-1').length === 1);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(otherDesk, 'a-2', 'agent two'));
  await helpdesk.waitFor(() => sentTo('a-2').length === 1);
  t.equal(modelCallsFor('agent two'), 0, 'the agent\'s own cap stops it');
  t.match((await agentOutputs(otherDesk.id, 'a-2'))[0], { reason: 'spend_cap', detail: /agent's daily model spend cap/ });
  t.match((await usage(other.companyId))[0], { amount_usd: '-0.008755' });
});
