import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { streamNames } from '../../lib/streams.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startOpenAiStub, type ModelAnswer, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions, type TestIntegration } from '../support/worker.js';

/**
 * Replays (contract.md § Replay before publishing) as the worker answers them
 * (actors/replays/runner.ts): started through the API, each customer message of past
 * conversations answered again with the changes, the answer stored as the item's `after`;
 * nothing sent, published or written to a conversation; model calls debited as
 * `replay_usage`; tools that change data not called; a company out of credit stops; two
 * companies' replays go on together, and a customer's model call does not wait behind them.
 *
 * The past conversations are made through the worker (a real helpdesk integration, a real
 * model or knowledge agent), at a model latency of 50 ms: they only set the scene. The
 * replays' model calls take a model's second. Four places for model calls
 * (MODEL_MAX_CONCURRENCY=4: three of them may go to replays) and four replayed messages at
 * once (REPLAY_MAX_CONCURRENCY=4).
 */
const svc = await startTestService(t, 'replays', { env: { PARTITIONS: '2', MODEL_MAX_CONCURRENCY: '4', REPLAY_MAX_CONCURRENCY: '4' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const api = await startActionApiStub(t);
// Replays looked for every 200 ms rather than every second: a test waits less for the claim; nothing else changes.
const worker = await startTestWorker(t, svc, { workerId: 'replays', options: { replay: { pollMs: 200 } } });
await waitForPartitions([worker], 2);

let modelMs = 50;
const keyOf = (r: ModelRequest) => String(r.headers.authorization ?? '').replace(/^Bearer /, '');
const systemOf = (r: ModelRequest) => String((r.body.messages as { role: string; content: string }[]).find((m) => m.role === 'system')?.content ?? '');
const toolResults = (r: ModelRequest) => (r.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
/** A company's own script for its model (by API key); the others' model echoes the question, as a pirate when its system prompt asks. */
const scripts = new Map<string, (r: ModelRequest) => ModelAnswer>();
llm.respond((r) => {
  const script = scripts.get(keyOf(r));
  if (script) return { delayMs: modelMs, ...script(r) };
  return { delayMs: modelMs, content: `${systemOf(r).includes('Talk like a pirate') ? 'Arr!' : 'Model says:'} ${llm.lastUserText(r)}` };
});
const requestsOf = (key: string) => llm.requests.filter((r) => keyOf(r) === key);

interface Company {
  user: { token: string; companyId: number };
  agentId: number;
  integration: TestIntegration;
}

async function company(name: string, agent: Record<string, unknown>): Promise<Company> {
  const user = await signUp(svc.api, name);
  const created = await svc.api('POST', '/api/agents', { token: user.token, body: { name: `${name} agent`, ...agent } });
  if (created.status !== 201) throw new Error(`agent: ${created.status} ${JSON.stringify(created.body)}`);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, name, created.body.agent.id);
  return { user, agentId: created.body.agent.id, integration };
}
const modelCompany = (name: string, apiKey: string, extra: Record<string, unknown> = {}) =>
  company(name, { model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey }, ...extra });

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);

/** A customer's conversation through the worker: each question sent once the previous one was answered. */
async function converse(c: Company, clientId: string, questions: string[]): Promise<void> {
  for (const [i, q] of questions.entries()) {
    await publishEnvelope(svc.nc, svc.config, messageEnvelope(c.integration, clientId, q));
    await helpdesk.waitFor(() => sentTo(clientId).length >= i + 1, 20_000);
  }
  // The last answer is committed (and the conversation idle) before its sends are over.
  await eventually(async () => (await sql(svc.orm, `select count(*)::int as n from conversations where integration_id = ? and state->>'active' = 'answering'`, [c.integration.id]))[0].n === 0);
}

async function startReplay(c: Company, body: Record<string, unknown>): Promise<{ id: number; total: number }> {
  const res = await svc.api('POST', `/api/agents/${c.agentId}/replays`, { token: c.user.token, body });
  if (res.status !== 201) throw new Error(`replay: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.replay;
}
const replayOf = async (c: Company, id: number) => (await svc.api('GET', `/api/agents/${c.agentId}/replays/${id}`, { token: c.user.token })).body.replay;
const finished = (c: Company, id: number, timeoutMs = 30_000) =>
  eventually(async () => {
    const r = await replayOf(c, id);
    return r.status !== 'running' && r;
  }, timeoutMs, `replay ${id} finished`);
const itemRows = (replayId: number) => sql(svc.orm, 'select seq, message_id::text, question, before, after, changed, cost_usd::text, done_at from agent_replay_items where replay_id = ? order by seq', [replayId]);
const ledger = (companyId: number, kind: string) => sql(svc.orm, `select amount_usd::text, conversation_id, message_id, agent_id, model from credit_ledger where company_id = ? and kind = ? order by id`, [companyId, kind]);
const balance = async (companyId: number) => (await sql(svc.orm, 'select balance_usd::text as b, reserved_usd::text as r from companies where id = ?', [companyId]))[0];

/** Every row of the tables a conversation lives in, as one fingerprint per table. */
const CONVERSATION_TABLES = ['conversations', 'conversation_messages', 'conversation_transitions', 'conversation_refs', 'conversation_reads', 'leads', 'lead_stage_moves', 'outbox', 'inbound_receipts'];
async function fingerprint(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const table of CONVERSATION_TABLES) {
    const [r] = await sql(svc.orm, `select count(*)::int as n, md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${table} x`);
    out[table] = `${r.n} rows, ${r.h}`;
  }
  return out;
}

t.test("a built-in agent's replay with a higher relevanceThreshold hands over exactly the messages answered below it", async (t) => {
  const kb = await company('Fruit Co', {});
  const base = await svc.api('POST', '/api/knowledge-bases', { token: kb.user.token, body: { name: 'Fruit' } });
  const baseId = base.body.knowledgeBase.id as number;
  for (const topic of ['apple', 'banana', 'cherry', 'grape']) {
    await addDocument(svc.api, kb.user.token, baseId, { title: `About ${topic}`, content: `The ${topic} is a fruit. Our ${topic} boxes ship on Mondays and cost five euros.` });
  }
  await svc.api('PATCH', `/api/agents/${kb.agentId}`, { token: kb.user.token, body: { knowledgeBaseId: baseId } });
  // One question a conversation (a handoff ends the agent's part in it), matching the documents
  // more or less well; one about the shop that no document answers (no_answer: a handoff) and
  // one not about the shop at all (out_of_scope: the polite line, no handoff).
  const questions = ['When do apple boxes ship?', 'How much is a banana box?', 'cherry', 'Do you sell grape boxes on Mondays for five euros?', 'Can I pay for a fruit box by card?', 'What is the capital of Peru?'];
  for (const [i, q] of questions.entries()) await converse(kb, `fruit-${i}`, [q]);
  const rows = await sql(
    svc.orm,
    `select m.text as question, a.kind as kind, t.payload->'output'->'decision'->>'kind' as decision, t.payload->'output'->>'confidence' as confidence
     from conversation_messages m join conversations c on c.id = m.conversation_id
     join conversation_messages a on a.reply_to_id = m.id and a.role = 'agent'
     join conversation_transitions t on t.conversation_id = c.id and t.event = 'xstate.done.actor.agent'
     where c.integration_id = ? and m.role = 'customer' order by m.id`,
    [kb.integration.id],
  );
  t.comment(JSON.stringify(rows));
  t.same(rows.map((r) => r.decision), ['answer', 'answer', 'answer', 'answer', 'no_answer', 'out_of_scope'], 'the scene: four answers, a no-answer, an out-of-scope question');
  t.same(rows.map((r) => r.kind), ['reply', 'reply', 'reply', 'reply', 'handoff_notice', 'reply'], 'the no-answer handed over, the out-of-scope question got a reply');
  const grounded = (r: { decision: string; confidence: string | null }) => r.decision === 'answer' && r.confidence !== null;
  const distinct = [...new Set(rows.filter(grounded).map((r) => Number(r.confidence)))].sort((a, b) => a - b);
  t.ok(distinct.length >= 2, 'the scene: answers of at least two different confidences');
  // Between the least and the most confident answer: the less confident ones are no longer answers.
  const threshold = Number(((distinct[0]! + distinct.at(-1)!) / 2).toFixed(3));

  const before = await fingerprint();
  const sends = helpdesk.requests.length;
  const { id, total } = await startReplay(kb, { changes: { relevanceThreshold: threshold } });
  t.equal(total, questions.length, 'one item per customer message');
  const replay = await finished(kb, id);
  t.equal(replay.status, 'done');
  t.equal(replay.done, total);
  const items = replay.items as any[];
  t.ok(items.every((i) => i.after !== null), 'every item has its after');
  for (const row of rows) {
    const item = items.find((i) => i.question === row.question)!;
    if (grounded(row)) {
      const stillAnswered = Number(row.confidence) >= threshold;
      t.equal(item.after.kind, stillAnswered ? 'reply' : 'handoff', `${row.question}: ${stillAnswered ? 'still answered' : 'handed over'} (confidence ${row.confidence}, threshold ${threshold})`);
      t.equal(item.changed, !stillAnswered, `${row.question}: changed only if it is no longer answered`);
      if (stillAnswered) t.same(item.after, item.before, 'the same reply, with its sources');
    } else {
      // Neither a no-answer nor an out-of-scope question becomes an answer at a higher threshold.
      const shown = (a: { kind: string; text: string; sources: unknown[] }) => ({ kind: a.kind, text: a.text, sources: a.sources });
      t.equal(item.after.kind, row.kind === 'reply' ? 'reply' : 'handoff', `${row.question}: ${row.decision} again`);
      t.same(shown(item.after), shown(item.before), `${row.question}: unchanged`);
      t.equal(item.changed, false);
    }
  }
  t.match(items.find((i) => i.question === 'What is the capital of Peru?'), { before: { kind: 'reply', text: /^Sorry, I can only help with questions about our products/, sources: [] } }, 'the out-of-scope line, no handoff');
  t.equal(replay.summary.newHandoffs, rows.filter((r) => grounded(r) && Number(r.confidence) < threshold).length);
  t.equal(replay.summary.costUsd, '0.00', 'a built-in agent costs nothing');
  t.same(await ledger(kb.user.companyId, 'replay_usage'), [], 'and is charged nothing');
  t.same(await fingerprint(), before, 'no conversation, message, transition, lead, outbox or receipt row changed');
  t.equal(helpdesk.requests.length, sends, 'the helpdesk received nothing');
});

t.test('a model agent replay with another system prompt: every message answered again by the model, with the conversation as it was; nothing sent or written; each answer debited', async (t) => {
  const m = await modelCompany('Prompt Co', 'sk-prompt');
  await converse(m, 'ann', ['What is the price?', 'And the delivery time?']);
  await converse(m, 'bob', ['Do you ship abroad?']);
  modelMs = 1000;
  const before = await fingerprint();
  const sends = helpdesk.requests.length;
  const names = streamNames(svc.config.natsPrefix);
  const jsm = await jetstreamManager(svc.nc);
  const lastSeq = (await jsm.streams.info(names.inboundStream)).state.last_seq;
  const published: string[] = [];
  const sub = svc.nc.subscribe(`${svc.config.natsPrefix}.>`, { callback: (_err, msg) => void published.push(msg.subject) });
  const calls = requestsOf('sk-prompt').length;
  const startBalance = await balance(m.user.companyId);

  const { id, total } = await startReplay(m, { changes: { systemPrompt: 'Talk like a pirate.' } });
  t.equal(total, 3);
  const replay = await finished(m, id);
  sub.unsubscribe();
  t.equal(replay.status, 'done');
  t.same(
    (replay.items as any[]).map((i) => [i.question, i.before.text, i.after.kind, i.after.text, i.changed]),
    [
      ['What is the price?', 'Model says: What is the price?', 'reply', 'Arr! What is the price?', true],
      ['And the delivery time?', 'Model says: And the delivery time?', 'reply', 'Arr! And the delivery time?', true],
      ['Do you ship abroad?', 'Model says: Do you ship abroad?', 'reply', 'Arr! Do you ship abroad?', true],
    ],
    'each message answered with the new prompt (conversations oldest first)',
  );
  t.same(replay.summary, { same: 0, changed: 3, newHandoffs: 0, resolvedHandoffs: 0, costUsd: replay.summary.costUsd });
  const replayCalls = requestsOf('sk-prompt').slice(calls);
  t.equal(replayCalls.length, 3, 'one model call per message');
  const second = replayCalls.find((r) => llm.lastUserText(r) === 'And the delivery time?')!;
  const history = (second.body.messages as { role: string; content: string }[]).filter((x) => x.role !== 'system').map((x) => x.content);
  t.same(history, ['What is the price?', 'Model says: What is the price?', 'And the delivery time?'], 'the model saw the conversation as it was before the message (the answer the customer got, not the replayed one)');

  t.same(await fingerprint(), before, 'no conversation, message, transition, lead, outbox or receipt row changed');
  t.equal(helpdesk.requests.length, sends, 'the helpdesk received nothing');
  t.equal((await jsm.streams.info(names.inboundStream)).state.last_seq, lastSeq, 'nothing published to the inbound stream');
  t.same(published, [], 'nothing published under the service\'s subjects');

  const charges = await ledger(m.user.companyId, 'replay_usage');
  const items = await itemRows(id);
  t.equal(charges.length, 3, 'one replay_usage entry per model-answered item');
  t.ok(charges.every((c) => c.conversation_id === null && c.message_id === null && c.agent_id === m.agentId && c.model === 'gpt-4o'), 'naming no conversation or message; the agent and model');
  // Amounts in millionths of a dollar (numeric(18,6)): whole numbers, added exactly.
  const micro = (usd: string) => Math.round(Number(usd) * 1e6);
  const sum = items.reduce((s, i) => s + micro(i.cost_usd), 0);
  t.ok(sum > 0, 'the items carry their cost');
  t.equal(-charges.reduce((s, c) => s + micro(c.amount_usd), 0), sum, 'the entries add up to the items\' costs');
  const after = await balance(m.user.companyId);
  t.equal(micro(startBalance.b) - micro(after.b), sum, 'the balance went down by their sum');
  t.equal(Number(after.r), 0, 'no credit left reserved');
  t.same(await ledger(m.user.companyId, 'model_usage').then((l) => l.length), 3, 'the customers\' answers stay the only model_usage entries');
});

t.test('tools in a replay: one that is safe to repeat is called; one that changes data is not, the model gets what the original call got, or that it was not called', async (t) => {
  modelMs = 50;
  const shop = await modelCompany('Tool Co', 'sk-tools');
  const addAction = async (body: Record<string, unknown>) => {
    const res = await svc.api('POST', `/api/agents/${shop.agentId}/actions`, { token: shop.user.token, body });
    if (res.status !== 201) throw new Error(`action: ${res.status} ${JSON.stringify(res.body)}`);
  };
  await addAction({
    name: 'get_order', description: 'Looks an order up', parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
    request: { method: 'GET', url: `${api.url}/orders/{orderId}` },
  });
  await addAction({
    name: 'book_slot', description: 'Books a slot', parameters: { type: 'object', properties: { slot: { type: 'string' } }, required: ['slot'] },
    request: { method: 'POST', url: `${api.url}/bookings` },
  });
  let bookings = 0;
  api.answer('POST', '/bookings', (r) => ({ status: 201, body: { booking: `B-${++bookings}`, slot: JSON.parse(r.body).slot } }));
  api.answer('GET', '/orders/', (r) => ({ body: { order: r.path.split('/').pop(), status: 'shipped' } }));
  const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });
  // The original agent books when asked to and answers anything else itself; the replayed one
  // (its prompt says so) also books for every question and looks order 7 up first.
  scripts.set('sk-tools', (r) => {
    const results = toolResults(r);
    const replay = systemOf(r).includes('Always book');
    const question = llm.lastUserText(r);
    if (results.length === 0) {
      if (replay) return { toolCalls: [call('get_order', { orderId: '7' }), call('book_slot', { slot: '12:00' })] };
      if (question.includes('book')) return { toolCalls: [call('book_slot', { slot: '10:00' })] };
      return { content: 'Happy to help.' };
    }
    return { content: `Done: ${results.map((x) => JSON.stringify(x)).join(' ')}` };
  });
  await converse(shop, 'carl', ['Please book me a slot']);
  await converse(shop, 'dana', ['Is my order on its way?']);
  const posts = api.requests.filter((r) => r.method === 'POST').length;
  const gets = api.requests.filter((r) => r.method === 'GET').length;
  t.equal(posts, 1, 'the scene: one booking made for a customer');
  modelMs = 1000;

  const { id } = await startReplay(shop, { changes: { systemPrompt: 'Always book.' } });
  const replay = await finished(shop, id);
  t.equal(replay.status, 'done');
  t.equal(api.requests.filter((r) => r.method === 'POST').length, posts, 'the booking API got no request');
  t.equal(api.requests.filter((r) => r.method === 'GET').length - gets, 2, 'the order lookup was made for each replayed message');
  const [booked, other] = replay.items as any[];
  t.match(booked.after.text, /"booking":"B-1"/, 'the model got the booking the original answer made');
  t.match(booked.after.text, /"status":"shipped"/, 'and the real lookup');
  t.match(other.after.text, /"error":"not called in a replay: book_slot changes data"/, 'with no booking in the original answer: not called');
  t.same(
    booked.after.toolCalls.map((c: any) => [c.name, c.status, c.reused ?? false]),
    [['get_order', 'ok', false], ['book_slot', 'ok', true]],
    'the answer records its calls: the lookup made, the booking the recorded one',
  );
  const rows = await sql(svc.orm, `select name, status, conversation_id, message_id from agent_tool_calls where agent_id = ? and called_at >= (select created_at from agent_replays where id = ?) order by id`, [shop.agentId, id]);
  t.same(
    rows.map((r) => [r.name, r.status, r.conversation_id, r.message_id]).sort(),
    [['book_slot', 'not_called', null, null], ['get_order', 'ok', null, null], ['get_order', 'ok', null, null]],
    'the tool-call ledger holds the replay\'s calls under no conversation or message',
  );
});

t.test("a replay of a company without credit stops failed, saying why; nothing stored or charged", async (t) => {
  modelMs = 50;
  const broke = await modelCompany('Broke Co', 'sk-broke');
  await converse(broke, 'erin', ['Hello, is anyone there?', 'What are your hours?']);
  modelMs = 1000;
  await sql(svc.orm, 'update companies set balance_usd = 0 where id = ?', [broke.user.companyId]);
  const calls = requestsOf('sk-broke').length;
  const { id } = await startReplay(broke, { changes: { systemPrompt: 'Talk like a pirate.' } });
  const replay = await finished(broke, id);
  t.equal(replay.status, 'failed');
  t.equal(replay.error, "the company's credit ran out");
  t.equal(replay.done, 0, 'no item answered');
  t.equal(requestsOf('sk-broke').length, calls, 'no model call made');
  t.same(await ledger(broke.user.companyId, 'replay_usage'), []);
  t.equal(Number((await balance(broke.user.companyId)).r), 0, 'nothing left reserved');
});

t.test("two companies' replays go on together: neither waits for the other to finish", async (t) => {
  modelMs = 50;
  const a = await modelCompany('Alpha Co', 'sk-alpha');
  const b = await modelCompany('Beta Co', 'sk-beta');
  for (let i = 0; i < 8; i++) await converse(a, `alpha-${i}`, [`alpha question ${i}`]);
  for (let i = 0; i < 8; i++) await converse(b, `beta-${i}`, [`beta question ${i}`]);
  modelMs = 1000;
  const ra = await startReplay(a, { changes: { systemPrompt: 'Talk like a pirate.' } });
  const rb = await startReplay(b, { changes: { systemPrompt: 'Talk like a pirate.' } });
  await Promise.all([finished(a, ra.id), finished(b, rb.id)]);
  const doneAt = async (id: number) => (await itemRows(id)).map((i) => new Date(i.done_at).getTime()).sort((x, y) => x - y);
  const [da, db] = [await doneAt(ra.id), await doneAt(rb.id)];
  t.comment(`Alpha's answers at ${da.map((x) => x - da[0]!).join(', ')} ms; Beta's at ${db.map((x) => x - da[0]!).join(', ')} ms`);
  t.same([da.length, db.length], [8, 8], 'both replays answered every message');
  // Replayed one after the other, the second's first call would be the 9th (the first's eight before it).
  // Together, the first holds at most its four places (three calls in flight, a fourth waiting) when the
  // other comes, and the other has one of the next two that come free: its first call is the 6th at the latest.
  const order = llm.requests.filter((r) => ['sk-alpha', 'sk-beta'].includes(keyOf(r)) && systemOf(r).includes('pirate')).map(keyOf);
  t.comment(order.map((k) => (k === 'sk-alpha' ? 'A' : 'B')).join(''));
  for (const [name, key] of [['Alpha', 'sk-alpha'], ['Beta', 'sk-beta']] as const) {
    const first = order.indexOf(key);
    t.ok(first >= 0 && first < 6, `${name}'s first call went out among the first six (#${first + 1} of ${order.length}), not after the other's eight`);
  }
  t.ok(db[0]! < da.at(-1)! && da[0]! < db.at(-1)!, "each company's first answer was stored before the other's replay ended");
});

t.test("a customer's message answered while a big replay runs: its model call starts at once, before the replay's waiting calls", async (t) => {
  modelMs = 50;
  const big = await modelCompany('Busy Co', 'sk-busy');
  for (let i = 0; i < 6; i++) await converse(big, `busy-${i}`, [`old question ${i}`, `old follow-up ${i}`]);
  modelMs = 1000;
  const start = requestsOf('sk-busy').length;
  const { id, total } = await startReplay(big, { changes: { systemPrompt: 'Talk like a pirate.' } });
  t.equal(total, 12);
  // Three replay calls in flight (the replay's share of the four places), more waiting for theirs.
  await llm.waitFor(() => requestsOf('sk-busy').length - start >= 3, 10_000);
  const replayCalls = () => requestsOf('sk-busy').slice(start).filter((r) => systemOf(r).includes('pirate'));
  t.equal(replayCalls().length, 3, 'the replay holds three places, not the fourth');
  t.equal(worker.modelCalls().running, 3);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(big.integration, 'live-customer', 'I need help now'));
  await llm.waitFor(() => llm.requests.some((r) => llm.lastUserText(r) === 'I need help now'), 10_000);
  const live = llm.requests.find((r) => llm.lastUserText(r) === 'I need help now')!;
  const calls = requestsOf('sk-busy').slice(start);
  t.equal(calls.indexOf(live), 3, "the customer's call was the next one the model saw, before any more of the replay's");
  t.ok(replayCalls().slice(0, 3).every((r) => r.answeredAt === null || r.answeredAt >= live.at), "it went out while the replay's first calls were still in flight (it waited for none of them)");
  await helpdesk.waitFor(() => sentTo('live-customer').length === 1, 10_000);
  t.equal(sentTo('live-customer')[0].text, 'Model says: I need help now');
  const replay = await finished(big, id);
  t.equal(replay.done, 12);
  t.equal(llm.peakInflight(), 4, 'never more calls in flight than MODEL_MAX_CONCURRENCY');
});
