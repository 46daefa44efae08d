import t, { type Test } from 'tap';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { sql } from '../support/worker.js';
import { sleep, startWorkerProcess, waitUntil, type WorkerProcess } from './helpers.js';

/**
 * contract.md § Agent actions: a worker SIGKILLed between a tool call and the reply neither
 * sends the reply twice nor calls a tool that changes data twice. The worker that takes the
 * partition over answers the message again (the same stored message id):
 * - killed while the booking request was with the company's API (its outcome unknown): the
 *   booking is not made again and the model is told it is uncertain;
 * - killed after the API answered, while the model wrote the reply: the booking is not made
 *   again and the model gets the recorded answer.
 * Each customer gets exactly one reply.
 */
const svc = await startTestService(t, 'tool_call_sigkill', { env: { PARTITIONS: '1' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const api = await startActionApiStub(t);

const toolResult = (req: ModelRequest): string | null => {
  const messages = req.body.messages as { role: string; content: string }[];
  const tool = messages.filter((m) => m.role === 'tool').at(-1);
  return tool ? tool.content : null;
};
const slotOf = (req: ModelRequest) => /(\d\d:\d\d)/.exec(llm.lastUserText(req))?.[1] ?? '??';
// The model books the slot the customer asks for, then says what the booking API answered.
let onSecondTurn: ((req: ModelRequest) => void) | null = null;
llm.respond((req) => {
  const result = toolResult(req);
  if (result === null) return { delayMs: 1000, toolCalls: [{ name: 'book_slot', arguments: JSON.stringify({ slot: slotOf(req) }) }] };
  onSecondTurn?.(req);
  if (/interrupted/.test(result)) return { delayMs: 1000, content: `I could not confirm the ${slotOf(req)} booking.` };
  return { delayMs: 1000, content: `Booked ${slotOf(req)}: ${JSON.parse(result).body.booking}.` };
});
let bookings = 0;
api.answer('POST', '/bookings', (r) => ({ delayMs: 300, status: 201, body: { booking: `B-${++bookings}`, slot: JSON.parse(r.body).slot } }));

const user = await signUp(svc.api, 'Tool Sigkill Co');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'Booker', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-test-key' } },
});
const agentId = agent.body.agent.id as number;
const action = await svc.api('POST', `/api/agents/${agentId}/actions`, {
  token: user.token,
  body: {
    name: 'book_slot',
    description: 'Book an appointment slot for the customer.',
    parameters: { type: 'object', properties: { slot: { type: 'string' } }, required: ['slot'] },
    request: { method: 'POST', url: `${api.url}/bookings`, headers: { 'X-Api-Key': 'booking-secret-123' } },
    timeoutMs: 5000,
  },
});
if (action.status !== 201) throw new Error(`action: ${action.status} ${JSON.stringify(action.body)}`);
const integ = await svc.api('POST', '/api/integrations', {
  token: user.token,
  body: { type: 'helpdesk', name: 'Helpdesk', agentId, apiUrl: helpdesk.url, apiToken: helpdesk.token },
});
const integrationId = integ.body.integration.id as number;
const secret = integ.body.integration.webhookSecret as string;
const workerEnv = { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl!, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: '1' };
const say = async (clientId: string, text: string) => {
  const res = await deliver(svc.api, integrationId, { message_id: `${clientId}-1`, type: 'from_client', text, client_id: clientId, channel_id: 'ch-1', transport: 'telegram' }, { secret });
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
};
const repliesTo = (clientId: string) => helpdesk.sent().filter((m) => m.client_id === clientId);
const bookingRequests = (slot: string) => api.requests.filter((r) => r.method === 'POST' && r.path === '/bookings' && JSON.parse(r.body).slot === slot);
const ledger = (slot: string) => sql(svc.orm, `select status, args from agent_tool_calls where agent_id = ? and args->>'slot' = ? order by id`, [agentId, slot]);
const loggedCalls = (clientId: string) =>
  sql(svc.orm, `select t.payload from conversation_transitions t join conversations c on c.id = t.conversation_id where c.client_id = ? and t.event = 'tool.called' order by t.seq`, [clientId]);

/** The file's own test: a worker started on it lives on into the next test. */
const file = t;
let running: WorkerProcess = startWorkerProcess(file, workerEnv);

async function killAndReplace(t: Test, what: () => boolean): Promise<number> {
  await waitUntil(what, 30_000, 'the moment of the kill').catch((err) => {
    t.comment(running.output().slice(-3000));
    throw err;
  });
  const killedAt = Date.now();
  await running.exited;
  running = startWorkerProcess(file, workerEnv);
  return killedAt;
}

t.test('killed while the booking request is with the API: not booked again, the model told it is uncertain', async (t) => {
  let killed = false;
  api.onRequest = (r) => {
    if (!killed && r.path === '/bookings') {
      killed = true;
      running.signal('SIGKILL');
    }
  };
  await say('ann', 'Please book me the 10:00 slot');
  const killedAt = await killAndReplace(t, () => killed);
  api.onRequest = null;
  await waitUntil(() => repliesTo('ann').length > 0, 40_000, 'the reply after the restart').catch((err) => {
    t.comment(running.output().slice(-3000));
    throw err;
  });
  t.comment(`answered ${Date.now() - killedAt} ms after the kill`);
  await sleep(3000); // room for a second (wrong) reply or request
  t.equal(bookingRequests('10:00').length, 1, 'the booking API was called once');
  t.same(repliesTo('ann').map((m) => m.text), ['I could not confirm the 10:00 booking.'], 'one reply, saying the booking is uncertain');
  t.same((await ledger('10:00')).map((r) => r.status), ['uncertain'], 'the ledger records the call as uncertain');
  const logged = await loggedCalls('ann');
  t.same(logged.map((r) => [r.payload.name, r.payload.status]), [['book_slot', 'uncertain']], 'the transition log tells the call was uncertain and not repeated');
  t.notOk(JSON.stringify(logged).includes('booking-secret-123'), 'no header secret in the log');
});

t.test('killed after the API answered, while the model writes the reply: not booked again, the reply sent once', async (t) => {
  let killed = false;
  onSecondTurn = (req) => {
    if (!killed && slotOf(req) === '11:00') {
      killed = true;
      running.signal('SIGKILL');
    }
  };
  await say('bob', 'Please book me the 11:00 slot');
  const killedAt = await killAndReplace(t, () => killed);
  onSecondTurn = null;
  await waitUntil(() => repliesTo('bob').length > 0, 40_000, 'the reply after the restart').catch((err) => {
    t.comment(running.output().slice(-3000));
    throw err;
  });
  t.comment(`answered ${Date.now() - killedAt} ms after the kill`);
  await sleep(3000);
  t.equal(bookingRequests('11:00').length, 1, 'the booking API was called once');
  t.same(repliesTo('bob').map((m) => m.text), ['Booked 11:00: B-2.'], 'one reply, with the booking the API made');
  t.same((await ledger('11:00')).map((r) => r.status), ['ok'], 'one call in the ledger');
  const logged = await loggedCalls('bob');
  t.same(logged.map((r) => [r.payload.name, r.payload.status, r.payload.reused ?? false]), [['book_slot', 'ok', true]], 'the log shows the recorded answer was used');
});
