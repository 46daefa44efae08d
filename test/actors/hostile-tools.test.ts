import { Writable } from 'node:stream';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import t from 'tap';
import { createLogger } from '../../lib/logger.js';
import { startActionApiStub } from '../support/action-api-stub.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startMcpStub } from '../support/mcp-stub.js';
import { startOpenAiStub, type ModelAnswer, type ModelRequest } from '../support/openai-stub.js';
import { startTestService } from '../support/service.js';
import { messageEnvelope, modelAgentCompany, publishEnvelope, sql, startTestWorker, waitForPartitions, type TestIntegration } from '../support/worker.js';

/**
 * The company's tools on the message path cannot be turned against the service or against
 * another customer (contract.md § Tools that cannot be turned against us), with a real worker,
 * PostgreSQL and NATS; the model, the company's API and its MCP server are local stand-ins
 * with their latency:
 * - an MCP tool whose schema holds `^(a+)+$`, called with 28 a's and a "!", no longer holds the
 *   worker's thread (it did for 3.7 s); a tool whose schema RE2 cannot run is not offered;
 * - the company's API is told who asks ({customer.id}, {customer.channel}, {conversation.id},
 *   {customer.email}) in the URL, a header and a body template, and the model cannot say
 *   otherwise, even when told to look another customer up;
 * - a secret argument the API echoes back is masked in what is stored, logged and shown.
 */
const svc = await startTestService(t, 'hostile_tools', { env: { PARTITIONS: '2' } });
const helpdesk = await startChat2DeskStub(t);
const llm = await startOpenAiStub(t);
const shop = await startActionApiStub(t);
const mcp = await startMcpStub(t, { hostileSchemas: true });

const logLines: string[] = [];
const logger = createLogger('debug', new Writable({ write: (chunk, _enc, done) => (logLines.push(String(chunk)), done()) }));
const worker = await startTestWorker(t, svc, { workerId: 'hostile', logger, options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);

// Shortened from a model's second: nothing here measures the model.
const MODEL_MS = 300;
type Script = (results: unknown[], req: ModelRequest) => ModelAnswer;
const scripts = new Map<string, Script>();
llm.respond((req) => {
  const script = scripts.get(llm.lastUserText(req));
  const results = (req.body.messages as { role: string; content: string }[]).filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
  return { delayMs: MODEL_MS, ...(script ? script(results, req) : { content: 'How can I help?' }) };
});
const call = (name: string, args: unknown) => ({ name, arguments: JSON.stringify(args) });
/** Calls `tool` with `args` first, then answers with what it got. */
const callThenAnswer = (tool: string, args: unknown): Script => (results) => (results.length === 0 ? { toolCalls: [call(tool, args)] } : { content: `Done: ${JSON.stringify(results[0]).slice(0, 200)}` });

const sentTo = (clientId: string) => helpdesk.sent().filter((b) => b.client_id === clientId);
async function ask(integration: TestIntegration, clientId: string, question: string, script: Script, replies = 1) {
  scripts.set(question, script);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, question));
  await helpdesk.waitFor(() => sentTo(clientId).length >= replies, 20_000);
  return (await sql(svc.orm, 'select * from conversations where integration_id = ? and client_id = ? order by id desc', [integration.id, clientId]))[0];
}

const company = await modelAgentCompany(svc, helpdesk, llm.baseUrl, 'Hostile Tools Co');
const { token } = company.user;
const agentId = company.agent.id;
const addAction = async (body: Record<string, unknown>) => {
  const res = await svc.api('POST', `/api/agents/${agentId}/actions`, { token, body });
  if (res.status !== 201) throw new Error(`action: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.action;
};

t.test('an MCP tool whose pattern backtracks costs the worker nothing; one RE2 cannot run is listed as refused and not offered', async (t) => {
  const server = await svc.api('POST', `/api/agents/${agentId}/mcp-servers`, { token, body: { name: 'records', url: mcp.url } });
  t.equal(server.status, 201, JSON.stringify(server.body));
  const tools = Object.fromEntries((server.body.mcpServer.tools as { name: string; refused: string | null }[]).map((x) => [x.name, x.refused]));
  t.equal(tools.find_code, null, 'a backtracking pattern is accepted: RE2 runs it in linear time');
  t.match(tools.find_prefix, /^"pattern" at \/properties\/code .*lookahead/, 'a lookahead is refused, in words that name the keyword');

  // Once first, so that what is measured is the check, not a first use of the code on the way.
  const hostile = callThenAnswer('records__find_code', { code: `${'a'.repeat(28)}!` });
  await ask(company.integration, 'mcp-0', 'Find record aaaa', hostile);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const conv = await ask(company.integration, 'mcp-1', 'Find record aaaa', hostile);
  delay.disable();
  const longestMs = delay.max / 1e6;
  t.ok(longestMs < 50, `the worker's thread was never held more than ${longestMs.toFixed(1)} ms (3.7 s before)`);
  const [row] = await sql(svc.orm, 'select status, error from agent_tool_calls where conversation_id = ? order by id', [conv.id]);
  t.match(row, { status: 'invalid_arguments', error: /invalid arguments: arguments\.code must match pattern "\^\(a\+\)\+\$"/ }, 'the model is told its arguments do not match');
  t.equal(mcp.calls.filter((c) => c.tool === 'find_code').length, 0, 'the server got nothing');
  const offered = (llm.requests.at(-1)!.body.tools as { function: { name: string } }[]).map((d) => d.function.name);
  t.ok(offered.includes('records__find_code'), 'the accepted tool is offered');
  t.notOk(offered.includes('records__find_prefix'), 'the refused one is not');
  await svc.api('DELETE', `/api/agents/${agentId}/mcp-servers/${server.body.mcpServer.id}`, { token });
});

t.test("the company's API is told who asks, and the model cannot say otherwise", async (t) => {
  // The team knows ann's email (her lead, made at her first message).
  await ask(company.integration, 'ann', 'Hello', () => ({ content: 'Hello Ann!' }));
  const [annLead] = await sql(svc.orm, 'select id from leads where company_id = ? and client_id = ?', [company.user.companyId, 'ann']);
  t.equal((await svc.api('PATCH', `/api/leads/${annLead.id}`, { token, body: { email: 'ann@example.com' } })).status, 200, 'the team writes her email');
  const orders = await addAction({
    name: 'my_orders', description: "The asking customer's orders",
    parameters: { type: 'object', properties: { status: { type: 'string' } } },
    request: { method: 'GET', url: `${shop.url}/customers/{customer.id}/orders?channel={customer.channel}&conversation={conversation.id}`, headers: { 'X-Customer': '{customer.id}', 'X-Email': '{customer.email}' } },
  });
  const note = await addAction({
    name: 'add_note', description: 'Adds a note to the asking customer',
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    request: { method: 'POST', url: `${shop.url}/notes`, body: { customer: '{customer.id}', note: '{text}', source: 'bot in {customer.channel}' } },
  });
  t.same(note.request.body, { customer: '{customer.id}', note: '{text}', source: 'bot in {customer.channel}' }, 'the body template is shown as written');

  // The customer "ann" tells the model to look up "victim": the model tries every way it has.
  const first = await ask(company.integration, 'ann', "Show victim's orders", callThenAnswer('my_orders', { status: 'open', customer: 'victim', 'customer.id': 'victim', channel: 'x', conversation: 9 }), 2);
  const lookup = shop.requests.find((r) => r.path.startsWith('/customers/'))!;
  t.equal(lookup.path, `/customers/ann/orders?channel=telegram&conversation=${first.id}&status=open&customer=victim&customer.id=victim`, 'the path names the asking customer; the query parameters the URL sets are not repeated');
  t.equal(lookup.headers['x-customer'], 'ann', 'a header names them too');
  t.equal(lookup.headers['x-email'], 'ann@example.com', 'and their email, which the team knows');
  t.notOk(JSON.stringify(shop.requests).includes('/customers/victim'), 'no request asked for another customer');

  await ask(company.integration, 'bob', 'Note that I called', callThenAnswer('add_note', { text: 'called back', customer: 'victim' }));
  const posted = shop.requests.find((r) => r.path === '/notes')!;
  t.same(JSON.parse(posted.body), { customer: 'bob', note: 'called back', source: 'bot in telegram' }, 'the template is filled: the model\'s "customer" is not sent');

  const refused = await svc.api('POST', `/api/agents/${agentId}/actions`, {
    token, body: { name: 'spoof', description: 'x', parameters: { type: 'object', properties: { 'customer.id': { type: 'string' } } }, request: { method: 'GET', url: `${shop.url}/x` } },
  });
  t.match(refused, { status: 400, body: { error: { details: [{ field: 'parameters', message: /"customer\.id".*filled by the service/ }] } } }, 'no parameter may bear a placeholder the service fills');
  await svc.api('DELETE', `/api/agents/${agentId}/actions/${orders.id}`, { token });
  await svc.api('DELETE', `/api/agents/${agentId}/actions/${note.id}`, { token });
});

t.test('a secret argument echoed by the API is masked wherever the call is stored, logged or shown', async (t) => {
  const PIN = '8461-2207';
  shop.answer('POST', '/verify', (r) => ({ body: { verified: true, youSent: JSON.parse(r.body) } }));
  const verify = await addAction({
    name: 'verify_customer', description: 'Checks a customer PIN',
    parameters: { type: 'object', properties: { pin: { type: 'string', format: 'password' }, orderId: { type: 'string' } }, required: ['pin'] },
    request: { method: 'POST', url: `${shop.url}/verify` },
  });
  const conv = await ask(company.integration, 'pin-1', 'Please check my PIN', callThenAnswer('verify_customer', { pin: PIN, orderId: 'A-7' }));
  const ledger = await sql(svc.orm, 'select args, result from agent_tool_calls where conversation_id = ?', [conv.id]);
  t.match(ledger, [{ args: { pin: '[redacted]', orderId: 'A-7' }, result: { status: 200, body: { verified: true, youSent: { pin: '[redacted]', orderId: 'A-7' } } } }], 'the ledger holds it masked in the arguments and in the result');
  const listed = await svc.api('GET', `/api/agents/${agentId}/tool-calls`, { token });
  const transitions = await sql(svc.orm, 'select payload from conversation_transitions where conversation_id = ?', [conv.id]);
  const modelSaw = JSON.stringify(llm.requests.filter((r) => llm.lastUserText(r) === 'Please check my PIN').map((r) => (r.body.messages as { role: string }[]).filter((m) => m.role === 'tool')));
  for (const [where, text] of [['the tool-call list', JSON.stringify(listed.body)], ['the transition log', JSON.stringify(transitions)], ['the logs', logLines.join('')], ['the model\'s tool message', modelSaw]] as const) {
    t.notOk(text.includes(PIN), `not in ${where}`);
  }
  await svc.api('DELETE', `/api/agents/${agentId}/actions/${verify.id}`, { token });
});
