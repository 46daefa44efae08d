import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { sql } from '../support/worker.js';
import { sleep, startWorkerProcess, waitUntil } from './helpers.js';

/**
 * contract.md § Behaviour, debounce: the deadline lives in the conversation's snapshot, so a
 * worker SIGKILLed inside the window neither drops nor doubles the answer. The customer's
 * messages were acked when stored; the worker that takes the partition over re-arms the
 * deadline from the database and answers every collected message, once.
 */
const DEBOUNCE_MS = 4000;
const svc = await startTestService(t, 'debounce_sigkill', { env: { PARTITIONS: '1' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
// Lee's question takes the model 5 s: long enough for a worker to die while it is asked.
llm.respond((req) => ({ delayMs: llm.lastUserText(req).includes('Bergen') ? 5000 : 1000, content: `Model says: ${llm.lastUserText(req).replace(/\n/g, ' | ')}` }));
const user = await signUp(svc.api, 'Sigkill Co');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'LLM', debounceMs: DEBOUNCE_MS, model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test-key' } },
});
const integ = await svc.api('POST', '/api/integrations', {
  token: user.token,
  body: { type: 'helpdesk', name: 'Helpdesk', agentId: agent.body.agent.id, apiUrl: helpdesk.url, apiToken: helpdesk.token },
});
const integrationId = integ.body.integration.id as number;
const secret = integ.body.integration.webhookSecret as string;
const workerEnv = { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl!, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: '1' };
const say = async (n: number, text: string, clientId = 'kim') => {
  const res = await deliver(svc.api, integrationId, { message_id: `m-${n}`, type: 'from_client', text, client_id: clientId, channel_id: 'ch-1', transport: 'telegram' }, { secret });
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
};
const storedMessages = async (clientId: string) =>
  (await sql(svc.orm, `select count(*)::int as n from conversation_messages m join conversations c on c.id = m.conversation_id where m.role = 'customer' and c.client_id = ?`, [clientId]))[0].n as number;
const kimsModelCalls = () => llm.requests.filter((r) => llm.lastUserText(r).includes('Oslo')).length;
const leesModelCalls = () => llm.requests.filter((r) => llm.lastUserText(r).includes('Bergen')).length;
let running: ReturnType<typeof startWorkerProcess> | null = null;
/** The file's own test: a worker started on it lives on into the next test. */
const file = t;
const collecting = async () => (await sql(svc.orm, `select state from conversations where client_id = 'kim'`))[0]?.state?.active === 'collecting';

t.test('SIGKILL inside the debounce window: the next worker answers both messages, once', async (t) => {
  const a = startWorkerProcess(t, workerEnv);
  // The window is counted from the messages' own time: the worker must be consuming first.
  await say(0, 'warming up', 'warm');
  await waitUntil(async () => (await storedMessages('warm')) === 1, 60_000, 'the worker consuming');
  await say(1, 'Hello');
  await say(2, 'do you ship to Oslo?');
  try {
    await waitUntil(async () => (await storedMessages('kim')) === 2 && (await collecting()), 20_000, 'both messages stored, the agent collecting');
  } catch (err) {
    t.comment(a.output().slice(-3000));
    throw err;
  }
  a.signal('SIGKILL');
  const killedAt = Date.now();
  await a.exited;
  t.equal(kimsModelCalls(), 0, 'killed before the window ended: the model was not asked');

  const b = startWorkerProcess(file, workerEnv);
  running = b;
  try {
    await waitUntil(() => helpdesk.sent().some((m) => m.client_id === 'kim'), 30_000, 'the answer');
  } catch (err) {
    t.comment(b.output().slice(-3000));
    throw err;
  }
  t.comment(`answered ${Date.now() - killedAt} ms after the kill (lease TTL 10 s)`);
  await sleep(3000); // room for a second (wrong) answer
  const sent = helpdesk.sent().filter((m) => m.client_id === 'kim');
  t.equal(sent.length, 1, 'exactly one answer');
  t.equal(sent[0]!.text, 'Model says: Hello | do you ship to Oslo?', 'to both messages');
  t.equal(kimsModelCalls(), 1, 'one model call');
});

t.test("SIGKILL while the window's answer is with the model: the next worker asks again and answers once", async (t) => {
  const b = running!;
  await say(11, 'Hi again', 'lee');
  await say(12, 'is Bergen open on Sunday?', 'lee');
  await llm.waitFor((requests) => requests.some((r) => llm.lastUserText(r).includes('Bergen')), 20_000);
  b.signal('SIGKILL');
  const killedAt = Date.now();
  await b.exited;
  t.equal(helpdesk.sent().filter((m) => m.client_id === 'lee').length, 0, 'killed while the model was answering');

  const c = startWorkerProcess(t, workerEnv);
  try {
    await waitUntil(() => helpdesk.sent().some((m) => m.client_id === 'lee'), 40_000, 'the answer');
  } catch (err) {
    t.comment(c.output().slice(-3000));
    throw err;
  }
  t.comment(`answered ${Date.now() - killedAt} ms after the kill (lease TTL 10 s, model 5 s)`);
  await sleep(3000); // room for a second (wrong) answer
  const sent = helpdesk.sent().filter((m) => m.client_id === 'lee');
  t.equal(sent.length, 1, 'exactly one answer');
  t.equal(sent[0]!.text, 'Model says: Hi again | is Bergen open on Sunday?', 'to both messages of the window');
  t.equal(leesModelCalls(), 2, 'the next worker asked the model again');
});
