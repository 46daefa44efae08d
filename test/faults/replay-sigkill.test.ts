import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, sql } from '../support/worker.js';
import { startWorkerProcess, waitUntil } from './helpers.js';

/**
 * A replay (contract.md § Replay before publishing) whose worker process is SIGKILLed half way
 * through: another worker takes it over once its lease (15 s) runs out and answers only what
 * is left. The items answered before the kill keep their answers (not asked of the model
 * again, their `after` and `done_at` untouched) and each item is debited once.
 *
 * The past conversations are made through the first worker at a model latency of 50 ms (they
 * only set the scene); the replay's calls take a model's second, two at a time
 * (REPLAY_MAX_CONCURRENCY=2), so the kill falls with items answered and items in flight.
 */
const CONVERSATIONS = 10;
const svc = await startTestService(t, 'replay_sigkill', { env: { PARTITIONS: '1' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
let modelMs = 50;
const systemOf = (r: ModelRequest) => String((r.body.messages as { role: string; content: string }[]).find((m) => m.role === 'system')?.content ?? '');
const isReplay = (r: ModelRequest) => systemOf(r).includes('Talk like a pirate');
llm.respond((r) => ({ delayMs: modelMs, content: `${isReplay(r) ? 'Arr!' : 'Model says:'} ${llm.lastUserText(r)}` }));

const user = await signUp(svc.api, 'Replay Sigkill Co');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test-key' } },
});
const agentId = agent.body.agent.id as number;
const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Helpdesk', agentId);
const workerEnv = { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: '1', REPLAY_MAX_CONCURRENCY: '2' };

const items = (replayId: number) =>
  sql(svc.orm, 'select id::text, seq, question, after, done_at, cost_usd::text from agent_replay_items where replay_id = ? order by seq', [replayId]);

t.test('SIGKILL mid-replay: another worker finishes it after the lease; nothing answered or debited twice', async (t) => {
  const a = startWorkerProcess(t, workerEnv);
  const questions = Array.from({ length: CONVERSATIONS }, (_, i) => `question number ${i}`);
  for (const [i, q] of questions.entries()) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, `client-${i}`, q));
  await waitUntil(() => helpdesk.sent().length === CONVERSATIONS, 30_000, 'the past conversations answered').catch((err) => {
    t.comment(a.output().slice(-3000));
    throw err;
  });
  await waitUntil(async () => (await sql(svc.orm, `select count(*)::int as n from conversations where state->>'active' = 'answering'`))[0].n === 0, 10_000, 'answers committed');

  modelMs = 1000;
  const started = await svc.api('POST', `/api/agents/${agentId}/replays`, { token: user.token, body: { changes: { systemPrompt: 'Talk like a pirate.' } } });
  t.equal(started.status, 201);
  const replayId = started.body.replay.id as number;
  t.equal(started.body.replay.total, CONVERSATIONS);

  await waitUntil(async () => (await items(replayId)).filter((i) => i.after !== null).length >= 4, 30_000, 'four items answered').catch((err) => {
    t.comment(a.output().slice(-3000));
    throw err;
  });
  a.signal('SIGKILL');
  const killedAt = Date.now();
  await a.exited;
  const answeredBefore = (await items(replayId)).filter((i) => i.after !== null);
  const inFlight = llm.requests.filter((r) => isReplay(r) && r.aborted).length;
  t.ok(answeredBefore.length >= 4 && answeredBefore.length < CONVERSATIONS, `killed mid-replay (${answeredBefore.length} of ${CONVERSATIONS} answered, ${inFlight} calls cut off)`);

  const b = startWorkerProcess(t, workerEnv);
  await waitUntil(
    async () => (await sql(svc.orm, 'select status from agent_replays where id = ?', [replayId]))[0].status !== 'running',
    60_000,
    'the replay finished by the second worker',
  ).catch((err) => {
    t.comment(b.output().slice(-3000));
    throw err;
  });
  const resumedAt = Math.min(...llm.requests.filter((r) => isReplay(r) && r.at > killedAt).map((r) => r.at));
  t.comment(`resumed ${resumedAt - killedAt} ms after the kill`);
  t.ok(resumedAt - killedAt >= 9_000, 'not before the killed worker\'s lease ran out (15 s from its last renewal, renewed every 5 s)');

  const view = (await svc.api('GET', `/api/agents/${agentId}/replays/${replayId}`, { token: user.token })).body.replay;
  t.equal(view.status, 'done');
  t.equal(view.done, CONVERSATIONS);
  const after = await items(replayId);
  t.ok(after.every((i) => i.after !== null && /^Arr! question number \d$/.test(i.after.text)), 'every item answered with the changes');
  for (const before of answeredBefore) {
    const now = after.find((i) => i.id === before.id)!;
    t.same([now.done_at, now.after], [before.done_at, before.after], `item ${before.seq}, answered before the kill, untouched`);
  }
  const asked = (question: string) => llm.requests.filter((r) => isReplay(r) && llm.lastUserText(r) === question).length;
  t.same(answeredBefore.map((i) => asked(i.question)), answeredBefore.map(() => 1), 'the model was asked each of those once');
  t.ok(after.every((i) => asked(i.question) >= 1 && asked(i.question) <= 2), 'and every other at most twice (once more when the kill cut its call off)');

  const charges = await sql(svc.orm, `select amount_usd::text from credit_ledger where company_id = ? and kind = 'replay_usage'`, [user.companyId]);
  t.equal(charges.length, CONVERSATIONS, 'one replay_usage entry per item');
  const micro = (usd: string) => Math.round(Number(usd) * 1e6);
  t.equal(-charges.reduce((s, c) => s + micro(c.amount_usd), 0), after.reduce((s, i) => s + micro(i.cost_usd), 0), 'debited exactly what the items cost');
  t.equal(helpdesk.sent().length, CONVERSATIONS, 'nothing sent to a customer by the replay');
});
