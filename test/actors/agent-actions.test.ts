import { Writable } from 'node:stream';
import t from 'tap';
import { startWorker } from '../../actors/worker.js';
import type { Config } from '../../lib/config.js';
import { openSqlPool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats } from '../../lib/nats.js';
import { SecretBox } from '../../lib/secrets.js';
import { LIMIT_REACHED, loadAgentTools, Toolbox, UNCERTAIN_CALL } from '../../lib/agents/tools/toolbox.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { startOpenAiStub, type ModelAnswer, type ModelRequest } from '../support/openai-stub.js';
import { signUp, startTestService, TEST_NATS_URL } from '../support/service.js';
import { eventually, FAST_WORKER_OPTIONS, messageEnvelope, modelAgentCompany, publishEnvelope, sql, untilIdle, waitForPartitions, type TestIntegration } from '../support/worker.js';

// contract.md § Agent actions, on the message path: a real worker, PostgreSQL and NATS; the
// model, the company's HTTP API and its MCP server are local stand-ins with their latency.
const svc = await startTestService(t, 'agent_actions', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const api = await startActionApiStub(t);
const MCP_SECRET = 'mcp-key-7f3e9a1c55';
const mcp = await startMcpStub(t, { requiredHeaders: { 'x-mcp-key': MCP_SECRET } });
const API_SECRET = 'sk-live-4e1d8b2c9a7f';

// Every line the workers log, to look for secrets in.
const logLines: string[] = [];
const logSink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});

/** A worker as test/support/worker.ts starts one, with a logger whose lines the test reads, and the given config. */
async function startCapturedWorker(workerId: string, config: Config) {
  const nc = await connectNats(config.natsUrl ?? TEST_NATS_URL, `test-worker-${workerId}`);
  const worker = await startWorker({
    config, orm: svc.orm, nc, logger: createLogger('debug', logSink), workerId,
    options: { ...FAST_WORKER_OPTIONS, agentRunner: { cacheTtlMs: 0 } },
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await worker.close().catch(() => {});
    if (!nc.isClosed()) await nc.close();
  };
  t.teardown(close);
  return { ...worker, close };
}

const worker = await startCapturedWorker('actions', svc.config);
await waitForPartitions([worker], 2);

// A model's pace shortened from about a second: every answer here takes two or three turns and
// nothing measures the model's latency; at a second a turn the file would take over a minute.
const MODEL_MS = 300;

/** What the model says in each turn of an answer to a question: it sees the results of the calls so far. */
type Script = (results: any[], req: ModelRequest) => ModelAnswer;
const scripts = new Map<string, Script>();
const toolMessagesOf = (req: ModelRequest) => (req.body.messages as any[]).filter((m) => m.role === 'tool');
llm.respond((req) => {
  const script = scripts.get(llm.lastUserText(req));
  const answer = script ? script(toolMessagesOf(req).map((m) => JSON.parse(m.content)), req) : { content: 'I can help with your orders.' };
  return { delayMs: MODEL_MS, ...answer };
});
const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
const requestsFor = (question: string) => llm.requests.filter((r) => llm.lastUserText(r) === question);
const offeredNames = (req: ModelRequest) => (req.body.tools as any[]).map((d) => d.function.name as string);
const BUILT_IN = ['handoff_to_human', 'close_conversation', 'set_lead_stage'];
const conversationOf = async (integration: TestIntegration, clientId: string) =>
  (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc', [integration.id, clientId]))[0];
const transitionsOf = async (conversationId: number) => sql(svc.orm, 'select * from conversation_transitions where conversation_id = ? order by seq', [conversationId]);
const ledgerOf = async (conversationId: number) => sql(svc.orm, 'select * from agent_tool_calls where conversation_id = ? order by id', [conversationId]);
const toolRows = async (conversationId: number) => (await transitionsOf(conversationId)).filter((r) => r.event === 'tool.called');

/** Sends a customer message; resolves once the customer got `n` messages. */
async function ask(integration: TestIntegration, clientId: string, question: string, script: Script, n = 1) {
  scripts.set(question, script);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, question));
  await helpdesk.waitFor(() => sentTo(clientId).length >= n, 15_000);
  return conversationOf(integration, clientId);
}

async function addAction(token: string, agentId: number, body: Record<string, unknown>) {
  const res = await svc.api('POST', `/api/agents/${agentId}/actions`, { token, body });
  if (res.status !== 201) throw new Error(`action: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.action;
}

const ORDER_ID = { type: 'object', properties: { orderId: { type: 'string', description: 'The order number' } }, required: ['orderId'], additionalProperties: false };

// Company A: a model agent with its own HTTP actions and MCP server.
const a = await modelAgentCompany(svc, helpdesk, llm.baseUrl, 'Shop A');
const auth = { Authorization: `Bearer ${API_SECRET}` };
await addAction(a.user.token, a.agent.id, { name: 'get_order', description: 'Looks an order up by its number', parameters: ORDER_ID, request: { method: 'GET', url: `${api.url}/orders/{orderId}`, headers: auth } });
await addAction(a.user.token, a.agent.id, {
  name: 'find_parcel', description: 'Finds a parcel at the carrier', parameters: { type: 'object', properties: { ref: { type: 'string' } }, required: ['ref'] },
  request: { method: 'GET', url: `${api.url}/hang/{ref}` }, timeoutMs: 500,
});
await addAction(a.user.token, a.agent.id, {
  name: 'check_stock', description: 'Checks the stock of an item', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
  request: { method: 'GET', url: `${api.url}/stock/{sku}` }, timeoutMs: 10_000,
});
await addAction(a.user.token, a.agent.id, {
  name: 'create_refund', description: 'Refunds an order', parameters: { type: 'object', properties: { orderId: { type: 'string' }, amount: { type: 'number' } }, required: ['orderId'] },
  request: { method: 'POST', url: `${api.url}/refunds`, headers: auth },
});
await addAction(a.user.token, a.agent.id, { name: 'ping', description: 'Checks the shop is up', parameters: { type: 'object', properties: {} }, request: { method: 'GET', url: `${api.url}/ping` } });
await addAction(a.user.token, a.agent.id, { name: 'whoami', description: 'Who the shop API thinks we are', parameters: { type: 'object', properties: {} }, request: { method: 'GET', url: `${api.url}/echo`, headers: auth } });
const server = await svc.api('POST', `/api/agents/${a.agent.id}/mcp-servers`, { token: a.user.token, body: { name: 'crm', url: mcp.url, headers: { 'x-mcp-key': MCP_SECRET } } });
if (server.status !== 201 || server.body.mcpServer.status !== 'connected') throw new Error(`mcp server: ${server.status} ${JSON.stringify(server.body)}`);

api.answer('GET', '/orders/42', { body: { id: '42', status: 'shipped', eta: 'tomorrow' } });
api.answer('GET', '/orders/500', { status: 500, body: { error: 'database unavailable' } });
api.answer('GET', '/hang/', { hang: true });
api.answer('GET', '/stock/', { hang: true });
api.answer('GET', '/echo', (r) => ({ body: { youSent: r.headers.authorization } }));
const apiRequests = (prefix: string) => api.requests.filter((r) => r.path.startsWith(prefix));

t.test('"where is order 42?": the model calls get_order, reads the answer, and the customer gets its reply', async (t) => {
  const conv = await ask(a.integration, 'ann', 'Where is order 42?', (results) =>
    results.length === 0
      ? { content: null, toolCalls: [call('get_order', { orderId: '42' })] }
      : { content: `Order ${results[0].body.id} is ${results[0].body.status} and arrives ${results[0].body.eta}.` },
  );
  await untilIdle(svc);
  t.same(sentTo('ann').map((m) => m.text), ['Order 42 is shipped and arrives tomorrow.'], 'exactly the reply of the second turn, once');

  const [first, second, ...more] = requestsFor('Where is order 42?');
  t.equal(more.length, 0, 'two model turns');
  t.same(offeredNames(first!).slice(0, 4), [...BUILT_IN, 'get_order'], 'the built-in tools, then the actions');
  t.same(first!.body.tools[3], { type: 'function', function: { name: 'get_order', description: 'Looks an order up by its number', parameters: ORDER_ID } });
  t.ok(offeredNames(first!).includes('crm__order_status'), 'the MCP server tools too, under <server>__<tool>');
  t.match(first!.body.messages.at(-1), { role: 'user', content: 'Where is order 42?' });
  t.same(second!.body.messages.slice(-2), [
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_order', arguments: '{"orderId":"42"}' } }] },
    { role: 'tool', tool_call_id: 'call_0', content: JSON.stringify({ status: 200, body: { id: '42', status: 'shipped', eta: 'tomorrow' } }) },
  ], 'the second turn sees the call and its result');

  const [request] = apiRequests('/orders/42');
  t.match(request, { method: 'GET', path: '/orders/42' });
  t.equal(request!.headers.authorization, `Bearer ${API_SECRET}`, 'the header, opened to make the call');

  const log = await transitionsOf(conv.id);
  const calledAt = log.findIndex((r) => r.event === 'tool.called');
  const answeredAt = log.findIndex((r) => r.event === 'xstate.done.actor.agent');
  t.ok(calledAt >= 0 && calledAt < answeredAt, 'the call is logged before the answer');
  const called = log[calledAt];
  t.match(called.payload, { name: 'get_order', source: 'action', args: { orderId: '42' }, status: 'ok', httpStatus: 200 });
  t.ok(called.payload.ms >= 100, `the call took the API's 100 ms (${called.payload.ms})`);
  t.same(called.from_state, called.to_state, 'a call changes no state');
  t.same(called.actions, []);
  t.notOk('toolCalls' in log[answeredAt].payload.output, "the answer's output does not repeat the calls");

  const [customer] = await sql(svc.orm, `select id::text from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id]);
  const [row, ...others] = await ledgerOf(conv.id);
  t.equal(others.length, 0);
  t.match(row, { message_id: customer.id, seq: 1, source: 'action', name: 'get_order', args: { orderId: '42' }, idempotent: true, status: 'ok', http_status: 200, result: { status: 200, body: { status: 'shipped' } } });
  t.ok(row.finished_at, 'finished');

  // Both turns are paid for, as one answer.
  const billing = (await svc.api('GET', '/api/billing', { token: a.user.token })).body.billing;
  const usage = billing.ledger.filter((e: any) => e.kind === 'model_usage' && e.conversationId === conv.id);
  t.match(usage, [{ inputTokens: 2 * 1234, outputTokens: 2 * 567 }], 'one debit, the sum of the two turns');
});

t.test('invalid arguments: no request is made, the model is told why and still answers', async (t) => {
  const before = api.requests.length;
  const conv = await ask(a.integration, 'bob', 'Where is my order 77?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('get_order', { orderId: 77 })] } : { content: results[0].error ? 'Sorry, I could not look that order up.' : 'Found it.' },
  );
  t.equal(sentTo('bob')[0].text, 'Sorry, I could not look that order up.');
  t.equal(api.requests.length, before, 'the API got no request');
  const [, second] = requestsFor('Where is my order 77?');
  t.match(JSON.parse(toolMessagesOf(second!)[0].content), { error: /^invalid arguments: arguments\.orderId must be string/ });
  t.match((await toolRows(conv.id)).map((r) => r.payload), [{ name: 'get_order', args: { orderId: 77 }, status: 'invalid_arguments', ms: 0 }]);
  t.match(await ledgerOf(conv.id), [{ status: 'invalid_arguments', http_status: null }]);
});

t.test("a hanging API: the call times out within the action's timeout and the model answers", async (t) => {
  const conv = await ask(a.integration, 'cid', 'Where is parcel P-9?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('find_parcel', { ref: 'P-9' })] } : { content: 'The carrier is not answering right now; please try again later.' },
  );
  t.equal(sentTo('cid')[0].text, 'The carrier is not answering right now; please try again later.');
  const [, second] = requestsFor('Where is parcel P-9?');
  t.match(JSON.parse(toolMessagesOf(second!)[0].content), { error: /no answer within 500 ms/ });
  const [row] = await toolRows(conv.id);
  t.match(row.payload, { name: 'find_parcel', status: 'timeout' });
  t.ok(row.payload.ms >= 450 && row.payload.ms < 2000, `cut off at the action's 500 ms (${row.payload.ms} ms)`);
  t.equal(apiRequests('/hang/P-9').length, 1);
});

t.test('an API answering 500: the model gets the status and the body', async (t) => {
  const conv = await ask(a.integration, 'dan', 'Where is order 500?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('get_order', { orderId: '500' })] } : { content: `The order system answered ${results[0].status}; please try later.` },
  );
  t.equal(sentTo('dan')[0].text, 'The order system answered 500; please try later.');
  const [, second] = requestsFor('Where is order 500?');
  t.same(JSON.parse(toolMessagesOf(second!)[0].content), { status: 500, body: { error: 'database unavailable' } });
  t.match((await toolRows(conv.id))[0].payload, { name: 'get_order', status: 'error', httpStatus: 500, error: 'HTTP 500' });
});

t.test("another company's tools are never offered", async (t) => {
  const b = await modelAgentCompany(svc, helpdesk, llm.baseUrl, 'Shop B');
  await addAction(b.user.token, b.agent.id, { name: 'b_lookup', description: "B's own lookup", parameters: { type: 'object', properties: {} }, request: { method: 'GET', url: `${api.url}/b` } });
  await ask(b.integration, 'b-eve', 'Where is order 42 of shop B?', () => ({ content: 'Let me see: I have no order 42.' }));
  const [req] = requestsFor('Where is order 42 of shop B?');
  t.same(offeredNames(req!), [...BUILT_IN, 'b_lookup'], "only the built-in tools and B's own");
  // B asks for A's tool by name anyway: there is none for B.
  const before = apiRequests('/orders/').length;
  await ask(b.integration, 'b-fay', 'Order 42 please, shop B', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('get_order', { orderId: '42' })] } : { content: `Tool said: ${results[0].error}` },
  );
  t.equal(sentTo('b-fay')[0].text, 'Tool said: there is no tool named "get_order"');
  t.equal(apiRequests('/orders/').length, before, "A's API got nothing");
});

t.test('at most 5 calls per answer: the 6th is not made, and the last turn is offered no company tools', async (t) => {
  const before = apiRequests('/ping').length;
  const conv = await ask(a.integration, 'gus', 'Is the shop up?', (results) => {
    if (results.length === 0) return { content: null, toolCalls: [call('ping', {}), call('ping', {}), call('ping', {})] };
    if (results.length === 3) return { content: null, toolCalls: [call('ping', {}), call('ping', {}), call('ping', {})] };
    return { content: `Up. ${results.filter((r) => r.error).length} check(s) skipped.` };
  });
  t.equal(sentTo('gus')[0].text, 'Up. 1 check(s) skipped.');
  t.equal(apiRequests('/ping').length - before, 5, 'five requests, not six');
  const turns = requestsFor('Is the shop up?');
  t.equal(turns.length, 3);
  t.ok(offeredNames(turns[1]!).includes('ping'), 'the second turn is still offered the tools');
  t.same(offeredNames(turns[2]!), BUILT_IN, 'the last one only the built-in ones');
  t.same(JSON.parse(toolMessagesOf(turns[2]!).at(-1).content), { error: LIMIT_REACHED });
  t.same((await toolRows(conv.id)).map((r) => r.payload.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'not_called']);
  t.same((await ledgerOf(conv.id)).map((r) => [r.seq, r.status]), [[1, 'ok'], [2, 'ok'], [3, 'ok'], [4, 'ok'], [5, 'ok'], [6, 'not_called']]);
});

t.test('a tool that changes data, asked for twice in one answer, is called once', async (t) => {
  const before = apiRequests('/refunds').length;
  const conv = await ask(a.integration, 'hal', 'Refund order 42 please', (results) =>
    results.length === 0
      ? { content: null, toolCalls: [call('create_refund', { orderId: '42', amount: 10 }), call('create_refund', { orderId: '42', amount: 10 })] }
      : { content: `Refund done (${results.map((r) => r.status).join(', ')}).` },
  );
  t.equal(sentTo('hal')[0].text, 'Refund done (200, 200).', 'both calls answered with the one result');
  t.equal(apiRequests('/refunds').length - before, 1, 'one request');
  const [refund] = apiRequests('/refunds').slice(before);
  t.same(JSON.parse(refund!.body), { orderId: '42', amount: 10 }, 'the arguments as a JSON body');
  t.match((await toolRows(conv.id)).map((r) => r.payload), [{ name: 'create_refund', status: 'ok' }, { name: 'create_refund', status: 'not_called' }]);
  t.match(await ledgerOf(conv.id), [{ idempotent: false, status: 'ok' }, { idempotent: false, status: 'not_called', error: /called already/ }]);
});

t.test('MCP tools: called through the server, with its header; a ticket opened is no broken promise', async (t) => {
  const conv = await ask(a.integration, 'ivy', 'Status of order 42 and open a ticket', (results) => {
    if (results.length === 0) return { content: null, toolCalls: [call('crm__order_status', { orderId: '42' }), call('crm__create_ticket', { subject: 'Order 42' })] };
    return { content: `${results[0].result}. I've opened ticket ${results[1].result.ticketId} for you.` };
  });
  t.equal(sentTo('ivy')[0].text, "Order 42 is shipped. I've opened ticket T-1 for you.", 'sent: the ticket was opened by a tool');
  t.match(mcp.calls, [{ tool: 'order_status', args: { orderId: '42' } }, { tool: 'create_ticket', args: { subject: 'Order 42' } }]);
  t.equal(mcp.calls[0]!.headers['x-mcp-key'], MCP_SECRET, 'the server header, opened to call');
  t.match((await toolRows(conv.id)).map((r) => r.payload), [
    { name: 'crm__order_status', source: 'mcp', args: { orderId: '42' }, status: 'ok' },
    { name: 'crm__create_ticket', source: 'mcp', status: 'ok' },
  ]);
  t.match(await ledgerOf(conv.id), [{ source: 'mcp', idempotent: true, mcp_server_id: server.body.mcpServer.id }, { source: 'mcp', idempotent: false, result: { result: { ticketId: 'T-1' } } }]);
});

t.test('a promise no tool kept is still withheld', async (t) => {
  const conv = await ask(a.integration, 'jon', 'Can you refund me?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('get_order', { orderId: '42' })] } : { content: "I've refunded your payment." },
  );
  t.equal(sentTo('jon')[0].text, 'A human colleague will take over shortly.', 'handed over: a lookup refunds nothing');
  const answer = (await transitionsOf(conv.id)).find((r) => r.event === 'xstate.done.actor.agent');
  t.match(answer.payload.output, { kind: 'handoff', reason: 'no_answer', withheld: "I've refunded your payment." });
});

t.test('a human pauses while a call is in flight: the call is aborted and nothing is sent', async (t) => {
  const question = 'Is item SKU-1 in stock?';
  scripts.set(question, (results) => (results.length === 0 ? { content: null, toolCalls: [call('check_stock', { sku: 'SKU-1' })] } : { content: 'In stock!' }));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(a.integration, 'kim', question));
  await eventually(async () => apiRequests('/stock/SKU-1').length === 1, 10_000, 'the stock request');
  const conv = await conversationOf(a.integration, 'kim');
  const paused = await svc.api('POST', `/api/conversations/${conv.id}/pause`, { token: a.user.token });
  t.equal(paused.status, 200);
  const [row] = await eventually(async () => {
    const rows = await ledgerOf(conv.id);
    // An idempotent call's row is written once, when it has finished: none yet is not finished.
    return rows.length > 0 && rows[0].status !== 'started' && rows;
  }, 5000, 'the call finished');
  t.match(row, { name: 'check_stock', status: 'error', error: /cancelled/ });
  t.ok(row.ms < 5000, `aborted, not waited out (${row.ms} ms of the action's 10 s)`);
  await untilIdle(svc);
  t.equal(requestsFor(question).length, 1, 'the model was not asked again');
  t.same(sentTo('kim'), [], 'no reply');
  t.same((await conversationOf(a.integration, 'kim')).state, { paused: 'operator' });
  const logged = await sql(svc.orm, `select payload from conversation_transitions where conversation_id = ? and event = 'tool.called'`, [conv.id]);
  t.match(logged.map((r) => r.payload), [{ name: 'check_stock', status: 'error', error: /cancelled/ }], 'the cancelled call is in the transition log');
});

t.test('a header secret appears in no log line, transition, ledger row, model request or API answer', async (t) => {
  const conv = await ask(a.integration, 'leo', 'Who am I to the shop?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('whoami', {})] } : { content: `The shop API saw: ${results[0].body.youSent}` },
  );
  t.equal(sentTo('leo')[0].text, 'The shop API saw: [redacted]', 'the echoed secret was replaced before the model saw it');
  const token = a.user.token;
  const answers = [
    await svc.api('GET', `/api/agents/${a.agent.id}/actions`, { token }),
    await svc.api('GET', `/api/agents/${a.agent.id}/mcp-servers`, { token }),
    await svc.api('GET', `/api/agents/${a.agent.id}/tool-calls`, { token }),
    await svc.api('GET', `/api/conversations/${conv.id}/transitions`, { token }),
    await svc.api('GET', `/api/conversations/${conv.id}`, { token }),
  ];
  t.match(answers[2]!.body.toolCalls.find((c: any) => c.name === 'whoami'), { result: { body: { youSent: '[redacted]' } } });
  t.ok(logLines.some((l) => l.includes('"tool":"whoami"')), 'the call is in the log');
  const stored = JSON.stringify([await sql(svc.orm, 'select * from conversation_transitions'), await sql(svc.orm, 'select * from agent_tool_calls')]);
  const seenByModel = JSON.stringify(llm.requests.map((r) => r.body));
  for (const secret of [API_SECRET, MCP_SECRET]) {
    t.notOk(logLines.some((l) => l.includes(secret)), `not in the worker's ${logLines.length} log lines`);
    t.notOk(stored.includes(secret), 'not in the transition log or the ledger');
    t.notOk(seenByModel.includes(secret), 'not in what the model was sent');
    for (const res of answers) t.notOk(JSON.stringify(res.body).includes(secret), `not in GET ${res.status}`);
  }
});

t.test('an evaluation calls the tools that only read, never one that changes data', async (t) => {
  const refunds = apiRequests('/refunds').length;
  const orders = apiRequests('/orders/42').length;
  scripts.set('Refund order 42 if it shipped', (results) =>
    results.length === 0
      ? { content: null, toolCalls: [call('get_order', { orderId: '42' }), call('create_refund', { orderId: '42' })] }
      : { content: `Order is ${results[0].body.status}; refund: ${results[1].error}` },
  );
  const res = await svc.api('POST', `/api/agents/${a.agent.id}/evaluations`, { token: a.user.token, body: { cases: [{ question: 'Refund order 42 if it shipped', expect: ['shipped'] }] } });
  t.equal(res.status, 201);
  t.equal(res.body.evaluation.cases[0].answer, 'Order is shipped; refund: not called: this is a test and create_refund changes data');
  t.equal(apiRequests('/orders/42').length - orders, 1, 'the lookup was made');
  t.equal(apiRequests('/refunds').length - refunds, 0, 'the refund was not');
  const rows = await sql(svc.orm, `select * from agent_tool_calls where agent_id = ? and message_id is null order by id`, [a.agent.id]);
  t.match(rows, [{ name: 'get_order', status: 'ok', conversation_id: null }, { name: 'create_refund', status: 'not_called', conversation_id: null }]);
});

t.test('crashes: a call of a tool that changes data left started is not made again; a finished one is reused', async (t) => {
  // What a worker killed mid-call leaves (the row written before the request; never finished),
  // found by the next attempt at the same answer, which runs the answer path's own toolbox.
  const pool = openSqlPool({ url: svc.config.databaseUrl, poolMax: 2 });
  t.teardown(() => pool.end());
  const conv = await conversationOf(a.integration, 'ann');
  const [message] = await sql(svc.orm, `select id::text from conversation_messages where conversation_id = ? and role = 'customer'`, [conv.id]);
  const crashed = String(BigInt(message.id) + 1_000_000n);
  const finished = String(BigInt(message.id) + 1_000_001n);
  const row = (messageId: string, status: string, result: unknown) =>
    sql(
      svc.orm,
      `insert into agent_tool_calls (company_id, agent_id, conversation_id, message_id, seq, source, name, args, idempotent, status, result) values (?, ?, ?, ?, 1, 'action', 'create_refund', '{}', false, ?, ?::jsonb)`,
      [a.user.companyId, a.agent.id, conv.id, messageId, status, JSON.stringify(result)],
    );
  await row(crashed, 'started', null);
  await row(finished, 'ok', { status: 201, body: { refund: 'R-1' } });
  const tools = await loadAgentTools(pool, a.user.companyId, a.agent.id);
  const deps = { sql: pool, secrets: new SecretBox(svc.config.secretsKeys), guardFor: () => null, mcp: null };
  const before = apiRequests('/refunds').length;

  const again = new Toolbox(tools, deps, { companyId: a.user.companyId, agentId: a.agent.id, conversationId: conv.id, messageId: crashed });
  t.same(JSON.parse(await again.run({ id: 'call_0', name: 'create_refund', arguments: '{"orderId":"42"}' })), { error: UNCERTAIN_CALL }, 'the model is told it is uncertain');
  t.match(again.records, [{ name: 'create_refund', status: 'uncertain' }]);
  t.match(await sql(svc.orm, 'select status from agent_tool_calls where message_id = ?', [crashed]), [{ status: 'uncertain' }], 'the row says so');
  t.same(JSON.parse(await again.run({ id: 'call_1', name: 'create_refund', arguments: '{"orderId":"42"}' })), { error: UNCERTAIN_CALL }, 'and again within the answer');

  const reused = new Toolbox(tools, deps, { companyId: a.user.companyId, agentId: a.agent.id, conversationId: conv.id, messageId: finished });
  t.same(JSON.parse(await reused.run({ id: 'call_0', name: 'create_refund', arguments: '{"orderId":"42"}' })), { status: 201, body: { refund: 'R-1' } }, 'the recorded result');
  t.match(reused.records, [{ status: 'ok', reused: true }]);
  t.equal(apiRequests('/refunds').length, before, 'no request either time');

  // An idempotent tool is simply called again.
  const lookups = apiRequests('/orders/42').length;
  await reused.run({ id: 'call_1', name: 'get_order', arguments: '{"orderId":"42"}' });
  t.equal(apiRequests('/orders/42').length, lookups + 1);
});

t.test('a blocked address: no request, the model is told, and answers', async (t) => {
  // A worker whose rules allow public addresses only; the model and the helpdesk stand-ins are
  // the operator's trusted origins, the company's API on loopback is not.
  await worker.close();
  const strict = await startCapturedWorker('strict', { ...svc.config, allowPrivateUrls: false, helpdeskGlobalUrl: helpdesk.url, helpdeskEuropeUrl: new URL(llm.baseUrl).origin });
  await waitForPartitions([strict], 2);
  const before = api.requests.length;
  const conv = await ask(a.integration, 'max', 'Where is order 42, strictly?', (results) =>
    results.length === 0 ? { content: null, toolCalls: [call('get_order', { orderId: '42' })] } : { content: `Lookup failed: ${results[0].error}` },
  );
  t.match(sentTo('max')[0].text, /^Lookup failed: blocked/);
  t.equal(api.requests.length, before, 'no request reached the API');
  t.match((await toolRows(conv.id))[0].payload, { name: 'get_order', status: 'blocked' });
});
