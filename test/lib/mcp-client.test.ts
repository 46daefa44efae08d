import t, { type Test } from 'tap';
import { publicAddressesOnly } from '../../lib/address-guard.js';
import { MAX_TOOL_RESULT_BYTES } from '../../lib/agents/tools/action-request.js';
import { listMcpTools, McpConnections, McpServerError, type McpServerCall } from '../../lib/agents/tools/mcp-client.js';
import { startMcpStub } from '../support/mcp-stub.js';

/**
 * A company's MCP server (the SDK's own server, local, with latency per tool answer) as the
 * worker and the API reach it: listing its tools, calling them through one reused session,
 * and the failures a user would see in the tool-call log. No guard unless a test is about it.
 */
const KEY = 'mcp-key-0123456789';

const server = (url: string, over: Partial<McpServerCall> = {}): McpServerCall => ({ id: 1, url, headers: { 'x-key': KEY }, timeoutMs: 3000, version: 'v1', ...over });

function connections(t: Test, guard: typeof publicAddressesOnly | null = null): McpConnections {
  const c = new McpConnections({ guardFor: () => guard });
  t.teardown(() => c.close());
  return c;
}

t.test('listing: every tool, idempotent when its annotations say it only reads', async (t) => {
  const stub = await startMcpStub(t, { requiredHeaders: { 'x-key': KEY } });
  const tools = await listMcpTools(server(stub.url), { guard: null });
  t.same(
    tools.map((tool) => [tool.name, tool.idempotent, tool.description]),
    [
      ['order_status', true, 'The shipping status of an order'],
      ['create_ticket', false, 'Opens a support ticket'],
      ['crm_down', true, 'Looks the customer up in the CRM'],
    ],
  );
  t.match(tools[0]!.inputSchema, { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] });
  t.equal(stub.calls.length, 0, 'listing calls no tool');
});

t.test('a server that needs a header it was not given: a clear error, without the secret', async (t) => {
  const stub = await startMcpStub(t, { requiredHeaders: { 'x-key': KEY } });
  const err = await listMcpTools(server(stub.url, { headers: { 'x-key': 'wrong-key-value' } }), { guard: null }).catch((e: unknown) => e);
  t.type(err, McpServerError);
  t.equal((err as Error).message, 'the server refused the request (HTTP 401): check the headers it needs');
  t.notOk((err as Error).message.includes('wrong-key-value'));
});

t.test('calls: a text result, a structured result, an error result, through one session', async (t) => {
  const stub = await startMcpStub(t, { requiredHeaders: { 'x-key': KEY } });
  const mcp = connections(t);
  const status = await mcp.call(server(stub.url), 'order_status', { orderId: 'A1' }, { secrets: [] });
  t.same(status, { status: 'ok', httpStatus: null, ms: status.ms, error: null, result: { result: 'Order A1 is shipped' } });
  t.ok(status.ms >= 90, `the call's time includes the server's (${status.ms} ms)`);

  const ticket = await mcp.call(server(stub.url), 'create_ticket', { subject: 'Broken zipper' }, { secrets: [] });
  t.equal(ticket.status, 'ok');
  t.same(ticket.result, { result: { ticketId: 'T-1' } }, 'structuredContent is what the model gets');

  const down = await mcp.call(server(stub.url), 'crm_down', {}, { secrets: [] });
  t.equal(down.status, 'error');
  t.same(down.result, { error: 'the CRM is down' });

  t.same(
    stub.calls.map((c) => [c.tool, c.args]),
    [
      ['order_status', { orderId: 'A1' }],
      ['create_ticket', { subject: 'Broken zipper' }],
      ['crm_down', {}],
    ],
    'each called once',
  );
  t.equal(stub.calls[0]!.headers['x-key'], KEY, 'the header is sent opened');
  const sessions = new Set(stub.calls.map((c) => c.headers['mcp-session-id']));
  t.equal(sessions.size, 1, 'one session for all the calls');
});

t.test('a server slower than its timeout: timeout at the deadline; a cancelled call ends at once', async (t) => {
  const stub = await startMcpStub(t, { delayMs: 3000 });
  const mcp = connections(t);
  const slow = await mcp.call(server(stub.url, { timeoutMs: 800 }), 'order_status', { orderId: 'A1' }, { secrets: [] });
  t.equal(slow.status, 'timeout');
  t.ok(slow.ms >= 750 && slow.ms < 800 + 1000, `given up at the deadline (${slow.ms} ms)`);
  t.same(slow.result, { error: 'no answer within 800 ms' });

  const abort = new AbortController();
  setTimeout(() => abort.abort(new Error('a human took over')), 200);
  const cancelled = await mcp.call(server(stub.url, { timeoutMs: 2500 }), 'create_ticket', { subject: 'x' }, { secrets: [], signal: abort.signal });
  t.equal(cancelled.status, 'error');
  t.equal(cancelled.error, 'cancelled');
  t.ok(cancelled.ms < 1500, `ended when cancelled (${cancelled.ms} ms)`);
  t.equal(stub.calls.filter((c) => c.tool === 'create_ticket').length, 1, 'the call is not repeated');
});

t.test('the guard: public addresses only refuses a loopback server, which gets nothing', async (t) => {
  const stub = await startMcpStub(t);
  const mcp = connections(t, publicAddressesOnly);
  const blocked = await mcp.call(server(stub.url), 'order_status', { orderId: 'A1' }, { secrets: [] });
  t.equal(blocked.status, 'blocked');
  t.match(blocked.result, { error: /blocked/ });
  const err = await listMcpTools(server(stub.url), { guard: publicAddressesOnly }).catch((e: unknown) => e);
  t.type(err, McpServerError);
  t.match((err as Error).message, /blocked/);
  t.equal(stub.calls.length, 0);
});

t.test('a changed server is connected to again; so is one that lost the session', async (t) => {
  const stub = await startMcpStub(t);
  const mcp = connections(t);
  await mcp.call(server(stub.url, { headers: { 'x-key': 'first' } }), 'order_status', { orderId: 'A1' }, { secrets: [] });
  // Same version: the connection made with the first headers is reused.
  await mcp.call(server(stub.url, { headers: { 'x-key': 'second' } }), 'order_status', { orderId: 'A2' }, { secrets: [] });
  await mcp.call(server(stub.url, { headers: { 'x-key': 'second' }, version: 'v2' }), 'order_status', { orderId: 'A3' }, { secrets: [] });
  t.same(
    stub.calls.map((c) => c.headers['x-key']),
    ['first', 'first', 'second'],
    'a new version brings its headers',
  );
  t.not(stub.calls[2]!.headers['mcp-session-id'], stub.calls[1]!.headers['mcp-session-id'], 'in a new session');

  await stub.dropSessions();
  const lost = await mcp.call(server(stub.url, { version: 'v2' }), 'order_status', { orderId: 'A4' }, { secrets: [] });
  t.equal(lost.status, 'error', 'the call in the lost session fails');
  t.equal(lost.httpStatus, 404);
  t.equal(stub.calls.length, 3, 'and is not repeated');
  const next = await mcp.call(server(stub.url, { version: 'v2' }), 'order_status', { orderId: 'A5' }, { secrets: [] });
  t.equal(next.status, 'ok', 'the next call reconnects');
  t.same(next.result, { result: 'Order A5 is shipped' });
});

t.test('large results: over 8 KiB cut for the model, over 256 KiB an error without waiting for the deadline', async (t) => {
  const long = await startMcpStub(t, { largeAnswerBytes: 20_000 });
  const mcp = connections(t);
  const cut = await mcp.call(server(long.url), 'large_answer', {}, { secrets: [] });
  t.equal(cut.status, 'ok');
  t.equal(cut.result.truncated, true);
  t.ok(Buffer.byteLength(JSON.stringify(cut.result)) <= MAX_TOOL_RESULT_BYTES);

  const huge = await startMcpStub(t, { largeAnswerBytes: 300 * 1024 });
  const tooLarge = await mcp.call(server(huge.url, { id: 2, timeoutMs: 5000 }), 'large_answer', {}, { secrets: [] });
  t.equal(tooLarge.status, 'error');
  t.equal(tooLarge.error, 'the answer is larger than 256 KiB');
  t.ok(tooLarge.ms < 2500, `failed as the answer came (${tooLarge.ms} ms), not at the deadline`);
});

t.test('secrets: a header value in a result is replaced', async (t) => {
  const stub = await startMcpStub(t);
  const mcp = connections(t);
  const outcome = await mcp.call(server(stub.url), 'order_status', { orderId: KEY }, { secrets: [] });
  t.same(outcome.result, { result: 'Order [redacted] is shipped' }, "the server's header is a secret");
  const other = await mcp.call(server(stub.url), 'order_status', { orderId: 'PIN-4321' }, { secrets: ['PIN-4321'] });
  t.same(other.result, { result: 'Order [redacted] is shipped' }, 'and so are the secrets given');
});
