import t from 'tap';
import { startChat2DeskStub, type RecordedRequest } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * The helpdesk misbehaves when replies go out: 503s, timeouts, a permanent 4xx. Replies are
 * retried with growing backoff, none is lost, none is delivered twice; a permanent refusal is
 * recorded on the conversation's message (delivery "failed" with its reason, through the API).
 */
const svc = await startTestService(t, 'helpdeskfail', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Flaky Desk Co');
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const worker = await startTestWorker(t, svc, {
  workerId: 'helpdeskfail',
  options: { outbox: { pollMs: 100, baseBackoffMs: 100, maxBackoffMs: 800, helpdeskTimeoutMs: 400 } },
});
await waitForPartitions([worker], 2);

let n = 0;
const send = (clientId: string, text: string) =>
  deliver(svc.api, integration.id, { message_id: `hf-${n++}`, text, client_id: clientId, channel_id: 'ch', transport: 'telegram' }, { secret: integration.webhookSecret! });
const postsTo = (clientId: string) => stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.body?.client_id === clientId);
const conversationOf = async (clientId: string) => (await svc.api('GET', '/api/conversations', { token: user.token })).body.conversations.find((c: any) => c.clientId === clientId);
const agentMessages = async (clientId: string) => {
  const conv = await conversationOf(clientId);
  if (!conv) return [];
  return (await svc.api('GET', `/api/conversations/${conv.id}/messages`, { token: user.token })).body.messages.filter((m: any) => m.role === 'agent');
};

t.test('503 four times, then 200: delivered once, with growing pauses between attempts', async (t) => {
  let failures = 0;
  stub.handle((r) => (r.path === '/v1/messages' && r.body?.client_id === 'c-503' && failures++ < 4 ? { status: 503, body: { status: 'error' } } : undefined));
  t.teardown(() => stub.handle(null));
  t.equal((await send('c-503', 'hello')).status, 200);
  await eventually(async () => (await agentMessages('c-503'))[0]?.delivery === 'sent', 15_000, 'sent');
  await new Promise((r) => setTimeout(r, 500));
  const attempts = postsTo('c-503');
  t.equal(attempts.length, 5, 'four 503s, then one success, nothing after');
  const gaps = attempts.slice(1).map((r, i) => r.at - attempts[i]!.at);
  t.comment(`gaps between attempts: ${gaps.join(', ')} ms`);
  t.ok(gaps[2]! > gaps[0]! && gaps[3]! >= gaps[1]!, 'backoff grows');
  const [m] = await agentMessages('c-503');
  t.equal(m.delivery, 'sent');
  t.equal(m.deliveryError, null);
  t.ok(m.externalId, 'the helpdesk message id is kept');
});

t.test('the helpdesk times out twice: retried, delivered once', async (t) => {
  let slow = 0;
  const slowOnes: RecordedRequest[] = [];
  stub.handle((r) => {
    if (r.path === '/v1/messages' && r.body?.client_id === 'c-slow' && slow++ < 2) {
      slowOnes.push(r);
      return { status: 200, body: { status: 'success', data: { message_id: 1 } }, delayMs: 1500 };
    }
    return undefined;
  });
  t.teardown(() => stub.handle(null));
  await send('c-slow', 'are you there');
  await eventually(async () => (await agentMessages('c-slow'))[0]?.delivery === 'sent', 15_000, 'sent');
  await new Promise((r) => setTimeout(r, 1700));
  const completed = postsTo('c-slow').filter((r) => !slowOnes.includes(r));
  t.equal(slowOnes.length, 2, 'two attempts timed out (the client gave up before any answer)');
  t.equal(completed.length, 1, 'exactly one attempt was answered: delivered once');
});

t.test('many replies through a flapping helpdesk: none lost, none doubled, in order', async (t) => {
  let i = 0;
  stub.handle((r) => (r.path === '/v1/messages' && String(r.body?.client_id).startsWith('flap-') && i++ % 3 === 0 ? { status: pickStatus(i), body: {} } : undefined));
  t.teardown(() => stub.handle(null));
  const clients = ['flap-1', 'flap-2', 'flap-3', 'flap-4'];
  for (let k = 0; k < 5; k++) for (const c of clients) await send(c, `msg ${k}`);
  const ok = (r: RecordedRequest, idx: number) => !(String(r.body?.client_id).startsWith('flap-') && idx % 3 === 0);
  await eventually(async () => {
    for (const c of clients) if ((await agentMessages(c)).filter((m: any) => m.delivery === 'sent').length < 5) return false;
    return true;
  }, 30_000, 'all sent');
  await new Promise((r) => setTimeout(r, 500));
  // Successful POSTs, in arrival order, per client.
  let seen = 0;
  const delivered = new Map<string, string[]>();
  for (const r of stub.requests) {
    if (r.method !== 'POST' || r.path !== '/v1/messages' || !String(r.body?.client_id).startsWith('flap-')) continue;
    if (ok(r, seen++)) delivered.set(r.body.client_id, [...(delivered.get(r.body.client_id) ?? []), r.body.text]);
  }
  for (const c of clients) t.same(delivered.get(c), [0, 1, 2, 3, 4].map((k) => `echo: msg ${k}`), `${c}: each reply delivered once, in order`);
});
const pickStatus = (i: number) => [500, 502, 503, 429][i % 4]!;

t.test('a permanent 4xx: not retried, recorded on the conversation through the API', async (t) => {
  stub.handle((r) => (r.path === '/v1/messages' && r.body?.client_id === 'c-400' ? { status: 400, body: { status: 'error', message: 'Client is blocked' } } : undefined));
  t.teardown(() => stub.handle(null));
  await send('c-400', 'hello');
  const [m] = await eventually(async () => {
    const ms = await agentMessages('c-400');
    return ms[0]?.delivery === 'failed' ? ms : null;
  }, 10_000, 'failed');
  await new Promise((r) => setTimeout(r, 600));
  t.equal(postsTo('c-400').length, 1, 'tried once');
  t.match(m.deliveryError, { code: 'http_400', message: /HTTP 400/ }, 'the reason is shown with the message, with its code');
  // The conversation itself goes on: the next reply (helpdesk fine again) is delivered.
  stub.handle(null);
  await send('c-400', 'again');
  await eventually(async () => (await agentMessages('c-400')).some((x: any) => x.delivery === 'sent'), 10_000, 'next reply sent');
});
