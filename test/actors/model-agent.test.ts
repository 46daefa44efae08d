import t from 'tap';
import { chargeModelUsage } from '../../lib/credit.js';
import { inTransaction, openSqlPool } from '../../lib/db.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, statusEnvelope, waitForPartitions, type TestIntegration } from '../support/worker.js';

// Agents with provider `openai` answer through a local OpenAI-compatible server; the worker
// uses its default runner (builtin or model, per agent).
const svc = await startTestService(t, 'model_agent', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, {
  workerId: 'model',
  options: { agentRunner: { cacheTtlMs: 0, model: { timeoutMs: 3000, maxRetries: 2, totalTimeoutMs: 4500 } } },
});
await waitForPartitions([worker], 2);

const DEFAULT_NOTICE = 'A human colleague will take over shortly.';

llm.respond((req) => {
  const text = llm.lastUserText(req);
  if (text.startsWith('FAIL')) return { status: 500, headers: { 'retry-after-ms': '10' } };
  if (text.startsWith('SLOW')) return { delayMs: 2500, content: 'a late answer' };
  if (text.startsWith('TIMEOUT')) return { delayMs: 8000, content: 'too late' };
  if (text.startsWith('TOOL')) return { content: null, toolCalls: [{ name: 'handoff_to_human', arguments: '{"reason":"refund request"}' }], usage: { prompt_tokens: 100, completion_tokens: 20 } };
  return { content: `Model says: ${text}` };
});

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const modelRequestsFor = (text: string) => llm.requests.filter((r) => llm.lastUserText(r) === text);
const conversationOf = async (integration: TestIntegration, clientId: string) =>
  (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc', [integration.id, clientId]))[0];
const billing = async (token: string) => (await svc.api('GET', '/api/billing', { token })).body.billing;
const usageEntries = async (token: string) => (await billing(token)).ledger.filter((e: any) => e.kind === 'model_usage');
const settle = (ms = 400) => new Promise((r) => setTimeout(r, ms));

/** A company with an OpenAI-compatible agent on a helpdesk integration. */
async function setup(name: string, model: Record<string, unknown> = {}, agent: Record<string, unknown> = {}) {
  const user = await signUp(svc.api, name);
  const kb = await svc.api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'FAQ' } });
  const kbId = kb.body.knowledgeBase.id as number;
  for (const doc of [
    { title: 'Opening hours', content: 'Our shop is open from 9 am to 6 pm, Monday to Saturday.' },
    { title: 'Delivery', content: 'We deliver within 2 days in the city.' },
  ]) {
    await addDocument(svc.api, user.token, kbId, doc);
  }
  const created = await svc.api('POST', '/api/agents', {
    token: user.token,
    body: {
      name: 'LLM',
      systemPrompt: 'You are the assistant of Acme.',
      knowledgeBaseId: kbId,
      model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test-key', ...model },
      ...agent,
    },
  });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, agent: created.body.agent, integration };
}

t.test('the model answers: request, reply through the helpdesk, exact debit', async (t) => {
  const { user, integration } = await setup('Model Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'ann', 'Hi, I am Ann'));
  await helpdesk.waitFor(() => sentTo('ann').length === 1);
  t.match(sentTo('ann')[0], { client_id: 'ann', text: 'Model says: Hi, I am Ann', transport: 'telegram', channel_id: 'ch-1', type: 'to_client', external_id: /^\d+$/ }, 'the reply went out through the helpdesk');

  const [first] = modelRequestsFor('Hi, I am Ann');
  t.ok(first, 'the model was asked');
  t.equal(first!.path, '/v1/chat/completions');
  t.equal(first!.headers.authorization, 'Bearer sk-test-key', 'the agent key, as a Bearer token');
  t.equal(first!.body.model, 'gpt-4o');
  t.match(first!.body.tools, [{ type: 'function', function: { name: 'handoff_to_human' } }]);
  t.equal(first!.body.messages[0].role, 'system');
  t.match(first!.body.messages[0].content, /The company's instructions:\n"""\nYou are the assistant of Acme\.\n"""/, "the agent's prompt, as the company's instructions");

  // 1,234 input + 567 output tokens at 2.50 / 10.00 USD per million = 0.008755 USD
  let b = await billing(user.token);
  t.equal(b.balanceUsd, '4.991245');
  t.match(b.ledger[0], { kind: 'model_usage', amountUsd: '-0.008755', balanceAfterUsd: '4.991245', inputTokens: 1234, outputTokens: 567, model: 'gpt-4o', conversationId: (await conversationOf(integration, 'ann')).id });
  t.match(b.ledger[1], { kind: 'signup_bonus', amountUsd: '5.00' });

  // The second question carries the knowledge passages and the history.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'ann', 'What are your opening hours?'));
  await helpdesk.waitFor(() => sentTo('ann').length === 2);
  const [second] = modelRequestsFor('What are your opening hours?');
  const system = second!.body.messages[0].content as string;
  t.match(system, /You are the assistant of Acme\./);
  t.match(system, /\[1\] Opening hours \(match \d{1,3} %\)\n.*9 am to 6 pm/, 'the best knowledge passage, with how well it matches');
  t.notMatch(system, /Delivery/, 'a passage below the floor stays out');
  t.same(second!.body.messages.slice(1), [
    { role: 'user', content: 'Hi, I am Ann' },
    { role: 'assistant', content: 'Model says: Hi, I am Ann' },
    { role: 'user', content: 'What are your opening hours?' },
  ], 'history, then the new message');
  t.equal(sentTo('ann')[1].text, 'Model says: What are your opening hours?');

  b = await billing(user.token);
  t.equal(b.balanceUsd, '4.98249');
  t.same(b.ledger.filter((e: any) => e.kind === 'model_usage').map((e: any) => [e.amountUsd, e.balanceAfterUsd]), [['-0.008755', '4.98249'], ['-0.008755', '4.991245']], 'one entry per answered message');
  const conv = await conversationOf(integration, 'ann');
  t.same(conv.state, { active: 'idle' });
});

t.test("retrieval is for recall: a passage below the agent's relevanceThreshold but above the floor goes to the model with its match; knowledgePassages 0 gives none", async (t) => {
  // The Delivery passage answers "Do you deliver to the suburbs on weekends?" only in part
  // (well below 0.9): the model, not the threshold, decides whether it answers.
  const strict = await setup('Recall Co', {}, { relevanceThreshold: 0.9 });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(strict.integration, 'recall', 'Do you deliver to the suburbs on weekends?'));
  await helpdesk.waitFor(() => sentTo('recall').length === 1);
  const [asked] = modelRequestsFor('Do you deliver to the suburbs on weekends?');
  const system = asked!.body.messages[0].content as string;
  const match = /\[1\] Delivery \(match (\d{1,3}) %\)\nWe deliver within 2 days in the city\./.exec(system);
  t.ok(match, 'the Delivery passage is in the prompt, with its match');
  t.ok(match && Number(match[1]) >= 10 && Number(match[1]) < 90, `its match (${match?.[1]} %) is above the floor and below the agent's threshold`);
  t.notMatch(system, /Opening hours/, 'a passage that shares nothing with the question stays out');
  t.equal(sentTo('recall')[0].text, 'Model says: Do you deliver to the suburbs on weekends?', "the model's reply is sent");
  t.same((await conversationOf(strict.integration, 'recall')).state, { active: 'idle' });

  const none = await setup('No Passages Co', {}, { knowledgePassages: 0 });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(none.integration, 'none', 'How long does delivery take?'));
  await helpdesk.waitFor(() => sentTo('none').length === 1);
  const [plain] = modelRequestsFor('How long does delivery take?');
  t.notMatch(plain!.body.messages[0].content as string, /\[1\]/, 'knowledgePassages 0: no passage in the prompt');
});

t.test("the agent's pricing override wins; an unknown model is free", async (t) => {
  const cheap = await setup('Override Co', { pricing: { inputUsdPerMTok: '0.50', outputUsdPerMTok: '1.50' } });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(cheap.integration, 'o-1', 'price me'));
  await helpdesk.waitFor(() => sentTo('o-1').length === 1);
  // 1,234 × 0.50 + 567 × 1.50 = 1,467.5 per million → 0.0014675 → rounded half up 0.001468
  const b = await billing(cheap.user.token);
  t.match(b.ledger[0], { kind: 'model_usage', amountUsd: '-0.001468', balanceAfterUsd: '4.998532', model: 'gpt-4o' });
  t.equal(b.balanceUsd, '4.998532');

  const local = await setup('Local Co', { name: 'llama3:8b' });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(local.integration, 'o-2', 'price me too'));
  await helpdesk.waitFor(() => sentTo('o-2').length === 1);
  const lb = await billing(local.user.token);
  t.equal(lb.balanceUsd, '5.00', 'nothing debited');
  t.match(lb.ledger[0], { kind: 'model_usage', amountUsd: '0.00', balanceAfterUsd: '5.00', inputTokens: 1234, outputTokens: 567, model: 'llama3:8b' }, 'the tokens are still recorded');
});

t.test('no credit: no model call, the customer gets the handoff message, the conversation pauses', async (t) => {
  const { user, integration } = await setup('Broke Co', {}, { handoffMessage: 'Un collègue humain arrive.' });
  // A positive balance that does not cover the call's reservation (its estimated cost): no call,
  // so the balance cannot go below zero (contract.md § Balance).
  await sql(svc.orm, `update companies set balance_usd = 0.000001 where id = ?`, [user.companyId]);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'broke', 'last cent question'));
  await helpdesk.waitFor(() => sentTo('broke').length === 1);
  t.equal(sentTo('broke')[0].text, 'Un collègue humain arrive.', "the agent's handoff message");
  t.equal(modelRequestsFor('last cent question').length, 0, 'the model server received no request');
  const conv = await conversationOf(integration, 'broke');
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'no_credit');
  let b = await billing(user.token);
  t.equal(b.balanceUsd, '0.000001', 'nothing debited');
  t.same(await usageEntries(user.token), []);
  t.equal(b.reservedUsd, '0.00', 'nothing held');

  // Exactly zero is no credit too.
  await sql(svc.orm, `update companies set balance_usd = 0 where id = ?`, [user.companyId]);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'broke-2', 'zero balance question'));
  await helpdesk.waitFor(() => sentTo('broke-2').length === 1);
  t.equal(sentTo('broke-2')[0].text, 'Un collègue humain arrive.');
  t.equal(modelRequestsFor('zero balance question').length, 0);
  b = await billing(user.token);
  t.equal(b.balanceUsd, '0.00');
});

t.test('a failing model: bounded retries, then a handoff that costs nothing', async (t) => {
  const { user, integration } = await setup('Failing Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'fail', 'FAIL please'));
  await helpdesk.waitFor(() => sentTo('fail').length === 1);
  t.equal(sentTo('fail')[0].text, DEFAULT_NOTICE, 'the customer is told, never silence');
  t.equal(modelRequestsFor('FAIL please').length, 3, 'one attempt and two retries');
  const conv = await conversationOf(integration, 'fail');
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'model_failed');
  await settle();
  t.equal(modelRequestsFor('FAIL please').length, 3, 'no more attempts');
  t.same(await usageEntries(user.token), [], 'no ledger entry');
  t.equal((await billing(user.token)).balanceUsd, '5.00');
});

t.test('a model that does not answer in time: handed off after the overall deadline, no charge', async (t) => {
  const { user, integration } = await setup('Slow Model Co');
  const started = Date.now();
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'timeout', 'TIMEOUT please'));
  await helpdesk.waitFor(() => sentTo('timeout').length === 1, 15_000);
  const took = Date.now() - started;
  t.equal(sentTo('timeout')[0].text, DEFAULT_NOTICE);
  t.ok(took >= 4000 && took < 8000, `handed off at the 4.5 s deadline (${took} ms)`);
  const reqs = modelRequestsFor('TIMEOUT please');
  t.ok(reqs.length >= 1 && reqs.length <= 2, `one timed-out attempt and at most one retry (${reqs.length})`);
  await eventually(async () => reqs.every((r) => r.aborted), 2000, 'the requests were abandoned');
  t.equal((await conversationOf(integration, 'timeout')).snapshot.context.handoffReason, 'model_failed');
  t.same(await usageEntries(user.token), []);
});

t.test('the model asks for a human (tool call): handoff, and its tokens are charged', async (t) => {
  const { user, integration } = await setup('Tool Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'tool', 'TOOL I want my money back'));
  await helpdesk.waitFor(() => sentTo('tool').length === 1);
  t.equal(sentTo('tool')[0].text, DEFAULT_NOTICE);
  const conv = await conversationOf(integration, 'tool');
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'no_answer');
  const trans = await sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conv.id]);
  t.match(trans.at(-1).payload, { output: { kind: 'handoff', detail: 'refund request' } }, "the model's reason is in the transition log");
  // 100 × 2.50 + 20 × 10.00 = 450 per million = 0.00045 USD
  const b = await billing(user.token);
  t.match(b.ledger[0], { kind: 'model_usage', amountUsd: '-0.00045', balanceAfterUsd: '4.99955', inputTokens: 100, outputTokens: 20 });
  t.equal(b.balanceUsd, '4.99955');
});

t.test('the customer asks for a human: no model call, no cost', async (t) => {
  const { user, integration } = await setup('Human Co', {}, { handoffMessage: 'Connecting you to Maria.' });
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'asker', 'I want to talk to a human please'));
  await helpdesk.waitFor(() => sentTo('asker').length === 1);
  t.equal(sentTo('asker')[0].text, 'Connecting you to Maria.');
  t.equal(modelRequestsFor('I want to talk to a human please').length, 0);
  const conv = await conversationOf(integration, 'asker');
  t.same(conv.state, { paused: { handedOver: 'idle' } });
  t.equal(conv.snapshot.context.handoffReason, 'asked_for_human');
  t.same(await usageEntries(user.token), []);
});

t.test('an operator pauses while the model thinks: the call is aborted, nothing sent, nothing charged', async (t) => {
  const { user, integration } = await setup('Pause Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'pauser', 'SLOW question one'));
  await llm.waitFor(() => modelRequestsFor('SLOW question one').length === 1);
  const conv = await conversationOf(integration, 'pauser');
  const paused = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: user.token });
  t.equal(paused.status, 200);
  t.equal(paused.body.conversation.status, 'paused');
  const [req] = modelRequestsFor('SLOW question one');
  await eventually(async () => req!.aborted, 2000, 'the model request was aborted');
  t.notOk(req!.answered, 'aborted before the model answered');
  await settle(3000); // past the model's 2.5 s answer time
  t.equal(sentTo('pauser').length, 0, 'no reply sent');
  t.equal(modelRequestsFor('SLOW question one').length, 1, 'not retried');
  const after = await conversationOf(integration, 'pauser');
  t.same(after.state, { paused: 'operator' });
  t.same(await sql(svc.orm, `select * from conversation_messages where conversation_id = ? and role = 'agent'`, [conv.id]), [], 'no agent message stored');
  t.same(await usageEntries(user.token), [], 'no debit');
  t.equal((await billing(user.token)).balanceUsd, '5.00');
});

t.test('the helpdesk transfers the dialog while the model thinks: aborted, and nothing at all is sent', async (t) => {
  const { user, integration } = await setup('Transfer Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'moved', 'SLOW question two', { requestId: 9001 }));
  await llm.waitFor(() => modelRequestsFor('SLOW question two').length === 1);
  await publishEnvelope(svc.nc, svc.config, statusEnvelope(integration, 'dialog_transferred', 9001, { dialogId: 90010, clientId: 'moved' }));
  const [req] = modelRequestsFor('SLOW question two');
  await eventually(async () => req!.aborted, 2000, 'the model request was aborted');
  await settle(3000);
  t.equal(sentTo('moved').length, 0, 'no reply and no handoff notice: a human already has the dialog');
  const conv = await conversationOf(integration, 'moved');
  t.same(conv.state, { paused: 'transferred' });
  t.same(await usageEntries(user.token), []);
});

t.test('an answer is debited at most once (the ledger is keyed by the answered message)', async (t) => {
  const { user, integration } = await setup('Once Co');
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'once', 'charge me once'));
  await helpdesk.waitFor(() => sentTo('once').length === 1);
  const conv = await conversationOf(integration, 'once');
  const [question] = await sql(svc.orm, `select id from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id]);
  // Paying for the same answer again (as a re-asked answer after a crash would) does nothing.
  const pool = openSqlPool({ url: svc.config.databaseUrl, poolMax: 1 });
  t.teardown(() => pool.end());
  const again = await inTransaction(pool, (client) =>
    chargeModelUsage(client, { companyId: user.companyId, conversationId: conv.id, messageId: String(question.id), model: 'gpt-4o', inputTokens: 1234, outputTokens: 567, costUsd: '0.008755' }),
  );
  t.equal(again, null);
  await t.rejects(
    sql(svc.orm, `insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, message_id) values (?, 'model_usage', -1, 0, ?)`, [user.companyId, question.id]),
    /unique/,
    'the database refuses a second model_usage entry for one message',
  );
  const b = await billing(user.token);
  t.equal(b.balanceUsd, '4.991245');
  t.equal(b.ledger.filter((e: any) => e.kind === 'model_usage').length, 1);
});

t.test('agents API: handoffMessage on create, view and patch', async (t) => {
  const user = await signUp(svc.api, 'Api Co');
  const created = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'A' } });
  t.equal(created.body.agent.handoffMessage, DEFAULT_NOTICE, 'the default');
  const patched = await svc.api('PATCH', `/api/agents/${created.body.agent.id}`, { token: user.token, body: { handoffMessage: '  One moment, a colleague is coming.  ' } });
  t.equal(patched.status, 200);
  t.equal(patched.body.agent.handoffMessage, 'One moment, a colleague is coming.');
  t.equal((await svc.api('GET', `/api/agents/${created.body.agent.id}`, { token: user.token })).body.agent.handoffMessage, 'One moment, a colleague is coming.');
  const reset = await svc.api('PATCH', `/api/agents/${created.body.agent.id}`, { token: user.token, body: { handoffMessage: null } });
  t.equal(reset.body.agent.handoffMessage, DEFAULT_NOTICE, 'null restores the default');
  const bad = await svc.api('PATCH', `/api/agents/${created.body.agent.id}`, { token: user.token, body: { handoffMessage: '   ' } });
  t.equal(bad.status, 400);
  const withIt = await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'B', handoffMessage: 'Hold on.' } });
  t.equal(withIt.body.agent.handoffMessage, 'Hold on.');
});
