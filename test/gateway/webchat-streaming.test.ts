import { performance } from 'node:perf_hooks';
import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startOpenAiStub, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration, openChat, type ChatClient, type Frame } from '../support/webchat.js';

// Model replies on webchat stream to the visitor (delta frames) before the stored reply
// arrives once as a message; the stand-in model streams at a model's pace (~1 s a reply).
const svc = await startTestService(t, 'webchat_stream', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, {
  workerId: 'stream-1',
  options: { agentRunner: { cacheTtlMs: 0, model: { timeoutMs: 1500, maxRetries: 1, totalTimeoutMs: 10_000 } } },
});
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Stream Co');
const created = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'Streaming LLM', systemPrompt: 'You are the assistant of Acme.', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-stream' } },
});
const agentId = created.body.agent.id as number;
const chat = await createWebchatIntegration(svc.api, user.token, { agentId });

const answerTo = (text: string) => `Thanks for asking about "${text}". Our shop is open from nine to six, Monday to Saturday, and we deliver within two days.`;
const requestsFor = (text: string) => llm.requests.filter((r) => llm.lastUserText(r) === text);
llm.respond((req) => {
  const text = llm.lastUserText(req);
  // A company action (get_order): asked for in a streamed first turn, its result answered in the second.
  if (text.startsWith('ORDER')) {
    const result = (req.body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool');
    if (!result) return { delayMs: 150, content: null, toolCalls: [{ name: 'get_order', arguments: '{"orderId":"42"}' }] };
    return { delayMs: 150, content: `Order 42 is ${JSON.parse(result.content).body.state}; it arrives on Tuesday.` };
  }
  if (text.startsWith('TOOL')) return { delayMs: 150, content: null, toolCalls: [{ name: 'handoff_to_human', arguments: '{"reason":"refund request"}' }] };
  // The first attempt goes silent after two pieces, longer than the attempt timeout (1.5 s).
  if (text.startsWith('STALL') && requestsFor(text).length === 1) return { delayMs: 150, content: answerTo(text), stallAfter: 2, stallMs: 5000 };
  // A server that knows no streaming refuses the streamed request.
  if (text.startsWith('NOSTREAM')) return req.body.stream ? { status: 400, errorCode: 'invalid_request_error' } : { delayMs: 150, content: answerTo(text) };
  // About 3 MiB of stream: past the answer cap (2 MiB).
  if (text.startsWith('HUGE')) return { content: answerTo(text), chunkDelayMs: 10, padding: 300_000 };
  return { delayMs: 150, content: answerTo(text) };
});

/** A welcomed visitor whose frames are timed on arrival. */
async function visitor(tt: Parameters<typeof openChat>[0], hello: Record<string, unknown> = {}) {
  const c = await openChat(tt, svc.url, chat.id);
  const times: number[] = [];
  c.ws.on('message', () => times.push(performance.now()));
  const welcome = await c.hello(hello);
  return { c, welcome, times };
}

/** Frames up to and including the next `message` frame of the agent. */
async function untilReply(c: ChatClient): Promise<Frame[]> {
  const start = c.frames.length;
  for (;;) {
    const f = await c.next(undefined, 15_000);
    if (f.type === 'message' && f.role === 'agent') return c.frames.slice(start);
  }
}

const only = (frames: Frame[], type: string) => frames.filter((f) => f.type === type);

t.test('a model reply streams as deltas, then arrives once, whole, as the stored message', async (t) => {
  const { c, times } = await visitor(t);
  const sentAt = performance.now();
  c.send({ type: 'message', clientMessageId: 's-1', text: 'When are you open?' });
  await untilReply(c);
  await c.drain(500);
  const all = c.frames;
  const conversationId = only(all, 'ack')[0]!.conversationId as number;

  const deltas = only(all, 'delta');
  const reply = only(all, 'message');
  t.ok(deltas.length >= 5, `the reply came in pieces (${deltas.length})`);
  for (const d of deltas) t.same(Object.keys(d).sort(), ['conversationId', 'text', 'type'], 'delta {conversationId, text}');
  t.ok(deltas.every((d) => d.conversationId === conversationId), 'of the visitor\'s session');
  t.equal(reply.length, 1, 'exactly one message');
  t.match(reply[0], { type: 'message', seq: 2, role: 'agent' });
  t.equal(reply[0]!.text, deltas.map((d) => d.text).join(''), 'the message is the deltas put together');
  t.equal(reply[0]!.text, answerTo('When are you open?'));
  t.ok(all.indexOf(deltas.at(-1)!) < all.indexOf(reply[0]!), 'every delta came before the message');
  const typing = all.findIndex((f) => f.type === 'typing');
  t.same(all[typing], { type: 'typing', role: 'agent' }, 'the agent is typing');
  t.ok(typing < all.indexOf(deltas[0]!), '...before the first piece');

  const stored = await sql(svc.orm, `select role, text from conversation_messages where conversation_id = ? order by seq`, [conversationId]);
  t.same(stored, [{ role: 'customer', text: 'When are you open?' }, { role: 'agent', text: answerTo('When are you open?') }], 'the whole text stored once, no piece stored');

  const [req] = requestsFor('When are you open?');
  t.equal(req!.body.stream, true, 'the model was asked to stream');
  t.same(req!.body.stream_options, { include_usage: true });
  t.match(req!.body.tools, [{ type: 'function', function: { name: 'handoff_to_human' } }], 'with the tools');
  const ledger = (await svc.api('GET', '/api/billing', { token: user.token })).body.billing.ledger;
  t.match(ledger.find((e: any) => e.kind === 'model_usage' && e.conversationId === conversationId), { inputTokens: 1234, outputTokens: 567 }, 'the usage of the stream\'s last chunk is charged');

  const firstDelta = times[all.indexOf(deltas[0]!)]! - sentAt;
  const whole = times[all.indexOf(reply[0]!)]! - sentAt;
  t.ok(whole - firstDelta > 500, 'the visitor reads the start of the reply well before it is whole');
  t.comment(`streaming first-token delay: first delta ${Math.round(firstDelta)} ms after the visitor's message, the whole reply after ${Math.round(whole)} ms (stand-in model: first piece after 150 ms, ${deltas.length} pieces 100 ms apart)`);
});

t.test('a helpdesk conversation is not streamed', async (t) => {
  const helpdesk = await startChat2DeskStub(t);
  const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Helpdesk', agentId);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'hd-1', 'Do you deliver on Sunday?'));
  await helpdesk.waitFor(() => helpdesk.sent().some((b) => b.client_id === 'hd-1'));
  t.equal(helpdesk.sent().find((b) => b.client_id === 'hd-1')!.text, answerTo('Do you deliver on Sunday?'));
  const [req] = requestsFor('Do you deliver on Sunday?') as [ModelRequest];
  t.notOk(req.body.stream, 'stream absent');
  t.equal(req.body.stream_options, undefined);
  t.equal(req.streamed, false);
});

t.test('tool calls still work when streamed: handoff_to_human pauses the conversation', async (t) => {
  const { c } = await visitor(t);
  c.send({ type: 'message', clientMessageId: 'tool-1', text: 'TOOL I want a refund' });
  const frames = await untilReply(c);
  const conversationId = only(frames, 'ack')[0]!.conversationId as number;
  t.ok(requestsFor('TOOL I want a refund')[0]!.streamed, 'the answer was streamed');
  t.same(only(frames, 'delta'), [], 'no text, no delta');
  t.match(only(frames, 'message')[0], { role: 'agent', text: 'A human colleague will take over shortly.' }, 'the handoff notice');
  await eventually(async () => (await sql(svc.orm, 'select status from conversations where id = ?', [conversationId]))[0].status === 'paused');
  const trans = await sql(svc.orm, 'select payload from conversation_transitions where conversation_id = ? order by seq', [conversationId]);
  t.match(trans.at(-1).payload, { output: { kind: 'handoff', detail: 'refund request' } }, 'the tool call and its reason, put together from the pieces');
});

t.test('a reconnect mid-stream gets the stored message, whole, once', async (t) => {
  const first = await visitor(t);
  first.c.send({ type: 'message', clientMessageId: 'rc-1', text: 'Tell me about returns' });
  const ack = await first.c.next('ack');
  await first.c.next('delta');
  await first.c.next('delta');
  first.c.ws.terminate();

  const again = await visitor(t, { visitorToken: first.welcome.visitorToken, lastSeq: ack.seq, conversationId: ack.conversationId });
  t.equal(again.welcome.conversationId, ack.conversationId);
  const frames = await untilReply(again.c);
  frames.push(...(await again.c.drain(600)));
  t.same(only(frames, 'delta'), [], 'no half of the reply: the new socket joined mid-stream');
  t.same(only(frames, 'message').map((f) => [f.seq, f.text]), [[2, answerTo('Tell me about returns')]], 'the whole reply, once');
  const rows = await sql(svc.orm, `select count(*)::int as n from conversation_messages where conversation_id = ? and role = 'agent'`, [ack.conversationId]);
  t.equal(rows[0].n, 1);
});

t.test('an operator takes over mid-stream: the stream is cut, no reply, the preview ends', async (t) => {
  const { c } = await visitor(t);
  c.send({ type: 'message', clientMessageId: 'op-1', text: 'Can I pay by card?' });
  const ack = await c.next('ack');
  await c.next('delta');
  await c.next('delta');
  const paused = await svc.api('POST', `/api/conversations/${ack.conversationId}/pause`, { token: user.token });
  t.equal(paused.status, 200);
  t.same(await c.next('status'), { type: 'status', status: 'paused' });
  const after = await c.drain(1500);
  t.same(after.filter((f) => f.type === 'delta' || f.type === 'message'), [], 'nothing more of the reply');
  const [req] = requestsFor('Can I pay by card?');
  await eventually(async () => req!.aborted || null, 5000, 'the model stream aborted');
  const rows = await sql(svc.orm, `select delivery from conversation_messages where conversation_id = ? and role = 'agent'`, [ack.conversationId]);
  t.same(rows, [], 'no reply stored');
  const ledger = (await svc.api('GET', '/api/billing', { token: user.token })).body.billing.ledger;
  t.equal(ledger.filter((e: any) => e.conversationId === ack.conversationId).length, 0, 'no charge');
});

t.test('a stream that goes silent is cut off and asked again; the visitor gets one whole reply', async (t) => {
  const { c } = await visitor(t);
  c.send({ type: 'message', clientMessageId: 'st-1', text: 'STALL what about gifts?' });
  const frames = await untilReply(c);
  frames.push(...(await c.drain(300)));
  const reqs = requestsFor('STALL what about gifts?');
  t.equal(reqs.length, 2, 'asked twice');
  t.ok(reqs[0]!.aborted, 'the silent stream was given up');
  const deltas = only(frames, 'delta').map((d) => d.text).join('');
  const reply = only(frames, 'message');
  t.equal(reply.length, 1, 'one message');
  t.equal(reply[0]!.text, answerTo('STALL what about gifts?'), 'the retry\'s whole answer');
  t.equal(only(frames, 'delta').length, 2, 'the pieces before the silence, none of the retry');
  t.ok(reply[0]!.text.startsWith(deltas));
});

t.test('a stream past the answer cap is cut off: handed to a human, nothing charged', async (t) => {
  const { c } = await visitor(t);
  c.send({ type: 'message', clientMessageId: 'big-1', text: 'HUGE tell me everything' });
  const frames = await untilReply(c);
  const conversationId = only(frames, 'ack')[0]!.conversationId as number;
  t.match(only(frames, 'message')[0], { role: 'agent', text: 'A human colleague will take over shortly.' });
  t.equal(requestsFor('HUGE tell me everything').length, 1, 'not asked again (it would be as large)');
  await eventually(async () => (await sql(svc.orm, 'select status from conversations where id = ?', [conversationId]))[0].status === 'paused');
  const trans = await sql(svc.orm, 'select payload from conversation_transitions where conversation_id = ? order by seq', [conversationId]);
  t.match(trans.at(-1).payload, { output: { kind: 'handoff', reason: 'model_failed', detail: /larger than/ } });
  const ledger = (await svc.api('GET', '/api/billing', { token: user.token })).body.billing.ledger;
  t.equal(ledger.filter((e: any) => e.conversationId === conversationId).length, 0, 'no charge');
});

t.test('a model server that refuses streaming is asked without it: the visitor gets the whole reply at once', async (t) => {
  const { c } = await visitor(t);
  const text = 'NOSTREAM: when are you open?';
  c.send({ type: 'message', clientMessageId: 'ns-1', text });
  const frames = await untilReply(c);
  await c.drain(300);
  t.equal(only(frames, 'delta').length, 0, 'no pieces');
  t.same(only(c.frames, 'message').map((m) => m.text), [answerTo(text)], 'one whole reply');
  t.same(requestsFor(text).map((r) => Boolean(r.body.stream)), [true, false], 'asked streamed, refused, asked once more without');
});

t.test("the visitor's typing frames: accepted silently, validated, never stored", async (t) => {
  const { c, welcome } = await visitor(t);
  c.send({ type: 'typing' });
  c.send({ type: 'typing', role: 'customer' });
  t.same(await c.drain(300), [], 'no answer to typing');
  c.send({ type: 'typing', role: 'agent' });
  t.match(await c.next(), { type: 'error', code: 'VALIDATION_ERROR', message: /role/ });
  const rows = await sql(svc.orm, `select count(*)::int as n from conversations where integration_id = ? and client_id = ?`, [chat.id, welcome.visitorId]);
  t.equal(rows[0].n, 0, 'typing opens no session');
});

t.test("a streamed answer that calls the company's action: one whole reply, its pieces only the answer's", async (t) => {
  const shop = await startActionApiStub(t);
  shop.answer('GET', '/orders/', { delayMs: 100, body: { id: '42', state: 'shipped' } });
  const action = await svc.api('POST', `/api/agents/${agentId}/actions`, {
    token: user.token,
    body: { name: 'get_order', description: 'An order, by its number.', parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] }, request: { method: 'GET', url: `${shop.url}/orders/{orderId}` } },
  });
  t.equal(action.status, 201);
  t.teardown(() => svc.api('DELETE', `/api/agents/${agentId}/actions/${action.body.action.id}`, { token: user.token }));
  const { c } = await visitor(t);
  const text = 'ORDER: where is order 42?';
  c.send({ type: 'message', clientMessageId: 'o-1', text });
  const frames = await untilReply(c);
  await c.drain(300);
  const answer = 'Order 42 is shipped; it arrives on Tuesday.';
  t.same(only(c.frames, 'message').filter((m) => m.role === 'agent').map((m) => m.text), [answer], 'one reply, from the action\'s answer');
  t.equal(only(frames, 'delta').map((d) => d.text).join(''), answer, 'the pieces streamed are the answer\'s (the turn asking for the action said nothing)');
  t.same(shop.requests.map((r) => r.path), ['/orders/42'], 'the action called once');
  t.same(requestsFor(text).map((r) => Boolean(r.body.stream)), [true, true], 'both turns streamed');
});
