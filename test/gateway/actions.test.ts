import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startActionApiStub } from '../support/action-api-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { join } from '../support/team.js';
import { sql } from '../support/worker.js';

/**
 * Agent actions (contract.md § Agent actions; .scratch/actions-api.md § API): an admin gives an
 * agent HTTP tools of the company's own API. Header values are sealed and never shown again
 * ("********", which sent back keeps the stored value); every field is checked with a 400
 * naming it; names are unique per agent (409); a quota per agent; `try` makes the request the
 * model would make, against a stand-in of the company's API, and shows what the model would get.
 */
const QUOTA = 3;
const svc = await startTestService(t, 'actions', { env: { QUOTA_ACTIONS_PER_AGENT: String(QUOTA) } });
const { api } = svc;
const owner = await signUp(api, 'Action Co');
const operator = await join(api, owner.token, 'operator');
const shop = await startActionApiStub(t);

const SECRET = `sk-shop-${randomBytes(12).toString('hex')}`;
const newAgent = async (name: string, token = owner.token): Promise<number> => {
  const res = await api('POST', '/api/agents', { token, body: { name } });
  if (res.status !== 201) throw new Error(`agent: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.agent.id;
};
const agentId = await newAgent('Shop bot');
const actions = (agent = agentId) => `/api/agents/${agent}/actions`;
const orderStatus = () => ({
  name: 'order_status',
  description: 'The shipping status of an order.',
  parameters: { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string', minLength: 1 } } },
  request: { method: 'GET', url: `${shop.url}/orders/{orderId}`, headers: { Authorization: `Bearer ${SECRET}` } },
});
const create = (body: unknown, agent = agentId, token = owner.token) => api('POST', actions(agent), { token, body });
const sealedHeaders = async (id: number): Promise<Record<string, string>> => (await sql(svc.orm, 'select headers_sealed from agent_actions where id = ?', [id]))[0].headers_sealed;

t.test('created, listed, read, changed and deleted; header values are never shown', async (t) => {
  const created = await create(orderStatus());
  t.equal(created.status, 201, JSON.stringify(created.body));
  const action = created.body.action;
  t.match(action, {
    id: Number, agentId, name: 'order_status', description: 'The shipping status of an order.', parameters: orderStatus().parameters,
    request: { method: 'GET', url: `${shop.url}/orders/{orderId}`, body: 'none', idempotent: true }, timeoutMs: 10000, createdAt: /Z$/, updatedAt: /Z$/,
  });
  t.same(action.request.headers, { Authorization: '********' }, 'the header is named, its value masked');
  const sealed = await sealedHeaders(action.id);
  t.match(sealed.Authorization, /^v1\./, 'sealed at rest');
  t.notOk(sealed.Authorization.includes(SECRET));

  const post = await create({ name: 'create-ticket', description: 'Opens a ticket.', parameters: { type: 'object', properties: { subject: { type: 'string' } } }, request: { method: 'POST', url: `${shop.url}/tickets` }, timeoutMs: 2000 });
  t.equal(post.status, 201, JSON.stringify(post.body));
  t.match(post.body.action.request, { method: 'POST', headers: {}, body: 'json', idempotent: false }, 'a POST: a JSON body, and not idempotent, unless told');
  t.equal(post.body.action.timeoutMs, 2000);

  const list = await api('GET', actions(), { token: owner.token });
  t.match(list, { status: 200, body: { total: 2, limit: 50, offset: 0 } });
  t.same(list.body.actions.map((a: any) => a.name), ['order_status', 'create-ticket'], 'oldest first');
  t.same(list.body.actions[0], action);
  t.match(await api('GET', `${actions()}?limit=1&offset=1`, { token: owner.token }), { body: { actions: [{ name: 'create-ticket' }], total: 2, limit: 1, offset: 1 } });
  t.same((await api('GET', `${actions()}/${action.id}`, { token: owner.token })).body.action, action);

  const described = await api('PATCH', `${actions()}/${action.id}`, { token: owner.token, body: { description: 'Where an order is.', request: { body: 'json' } } });
  t.equal(described.status, 200, JSON.stringify(described.body));
  t.match(described.body.action, { description: 'Where an order is.', request: { method: 'GET', url: `${shop.url}/orders/{orderId}`, body: 'json', idempotent: true, headers: { Authorization: '********' } } }, 'request fields merge');
  t.ok(described.body.action.updatedAt >= action.updatedAt);
  t.same(await sealedHeaders(action.id), sealed, 'headers not sent: the stored ones stay');

  const ticketId = post.body.action.id;
  t.equal((await api('DELETE', `${actions()}/${ticketId}`, { token: owner.token })).status, 204);
  t.equal((await api('GET', `${actions()}/${ticketId}`, { token: owner.token })).status, 404);
  t.equal((await api('DELETE', `${actions()}/${ticketId}`, { token: owner.token })).status, 404, 'deleted once');
  t.equal((await api('PATCH', `${actions()}/${ticketId}`, { token: owner.token, body: { description: 'x' } })).status, 404);

  const everything = JSON.stringify([created.body, list.body, described.body]);
  t.notOk(everything.includes(SECRET), 'no answer holds the header value');
});

t.test('"********" keeps a stored header value; the map is replaced; a new origin needs the values again', async (t) => {
  const id = (await create({ ...orderStatus(), name: 'masked' })).body.action.id;
  const before = await sealedHeaders(id);
  const kept = await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { headers: { authorization: '********', 'X-Shop': 'berlin' } } } });
  t.equal(kept.status, 200, JSON.stringify(kept.body));
  t.same(kept.body.action.request.headers, { authorization: '********', 'X-Shop': '********' });
  t.equal((await sealedHeaders(id)).authorization, before.Authorization, 'the stored value is kept (its name in any case)');

  shop.answer('GET', '/orders/K-1', { body: { orderId: 'K-1' } });
  const tried = await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: { orderId: 'K-1' } } });
  t.equal(tried.status, 200, JSON.stringify(tried.body));
  const got = shop.requests.at(-1)!;
  t.equal(got.path, '/orders/K-1');
  t.equal(got.headers.authorization, `Bearer ${SECRET}`, 'the kept value is the one sent');
  t.equal(got.headers['x-shop'], 'berlin');

  const replaced = await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { headers: { 'X-Shop': 'paris' } } } });
  t.same(replaced.body.action.request.headers, { 'X-Shop': '********' }, 'headers sent replace the map');
  t.same(Object.keys(await sealedHeaders(id)), ['X-Shop']);
  t.match(await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { headers: { Authorization: '********' } } } }), { status: 400, body: { error: { code: 'VALIDATION_ERROR', details: [{ field: 'request.headers.Authorization' }] } } }, 'nothing stored to keep');
  t.match(await create({ ...orderStatus(), name: 'masked2', request: { ...orderStatus().request, headers: { Authorization: '********' } } }), { status: 400, body: { error: { details: [{ field: 'request.headers.Authorization' }] } } }, 'nor at create');

  const elsewhere = 'http://127.0.0.2:9/orders/{orderId}';
  t.match(await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { url: elsewhere } } }), { status: 400, body: { error: { details: [{ field: 'request.headers' }] } } }, 'another origin with the stored values: refused');
  t.match(await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { url: elsewhere, headers: { 'X-Shop': '********' } } } }), { status: 400 }, 'nor kept with "********"');
  t.equal((await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { url: `${shop.url}/v2/orders/{orderId}` } } })).status, 200, 'the same origin keeps them');
  const moved = await api('PATCH', `${actions()}/${id}`, { token: owner.token, body: { request: { url: elsewhere, headers: { 'X-Shop': 'hamburg' } } } });
  t.equal(moved.status, 200, 'every value sent again: moved');
  t.equal(moved.body.action.request.url, elsewhere);
  await api('DELETE', `${actions()}/${id}`, { token: owner.token });
});

t.test('try: the request the model would make, and what the model would get', async (t) => {
  const id = (await create({ ...orderStatus(), name: 'try_me' })).body.action.id;
  shop.answer('GET', '/orders/A-1', { body: { orderId: 'A-1', status: 'shipped', note: `called with Bearer ${SECRET}`, key: SECRET } });
  const ok = await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: { orderId: 'A-1' } } });
  t.equal(ok.status, 200, JSON.stringify(ok.body));
  t.match(ok.body.outcome, { status: 'ok', httpStatus: 200, ms: Number, error: null });
  t.ok(ok.body.outcome.ms >= 90, `it took the API's time (${ok.body.outcome.ms} ms)`);
  t.same(ok.body.result, { status: 200, body: { orderId: 'A-1', status: 'shipped', note: 'called with [redacted]', key: '[redacted]' } }, 'the answer, the header value redacted');
  const got = shop.requests.at(-1)!;
  t.match(got, { method: 'GET', path: '/orders/A-1' });
  t.equal(got.headers.authorization, `Bearer ${SECRET}`, 'the API got the real header value');

  await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: { orderId: 'A 1/2?x' } } });
  t.equal(shop.requests.at(-1)!.path, '/orders/A%201%2F2%3Fx', 'a placeholder is filled URL-encoded');

  shop.answer('GET', '/orders/missing', { status: 404, body: { error: 'no such order' } });
  const missing = await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: { orderId: 'missing' } } });
  t.match(missing, { status: 200, body: { outcome: { status: 'error', httpStatus: 404 }, result: { status: 404, body: { error: 'no such order' } } } }, "the API's error status is the outcome, not the route's");

  const before = shop.requests.length;
  t.match(await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: {} } }), { status: 400, body: { error: { code: 'VALIDATION_ERROR', details: [{ field: 'arguments.orderId', message: 'is required' }] } } });
  t.match(await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: { orderId: 7 } } }), { status: 400, body: { error: { details: [{ field: 'arguments.orderId' }] } } });
  t.match(await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { arguments: [] } }), { status: 400, body: { error: { details: [{ field: 'arguments' }] } } });
  t.match(await api('POST', `${actions()}/${id}/try`, { token: owner.token, body: { orderId: 'A-1' } }), { status: 400, body: { error: { details: [{ field: 'orderId' }] } } }, 'arguments go under "arguments"');
  t.equal(shop.requests.length, before, 'invalid arguments: no request made');

  const posted = await create({ name: 'make_note', description: 'Writes a note.', parameters: { type: 'object', properties: { orderId: { type: 'string' }, text: { type: 'string' } } }, request: { method: 'POST', url: `${shop.url}/orders/{orderId}/notes` } });
  const note = await api('POST', `${actions()}/${posted.body.action.id}/try`, { token: owner.token, body: { arguments: { orderId: 'B-2', text: 'ring twice' } } });
  t.match(note.body, { outcome: { status: 'ok' }, result: { status: 200, body: { method: 'POST', path: '/orders/B-2/notes', body: { text: 'ring twice' } } } }, 'the arguments not in the URL are the JSON body');
  t.equal(shop.requests.at(-1)!.headers['content-type'], 'application/json');

  t.same(await sql(svc.orm, 'select id from agent_tool_calls'), [], 'a try is not recorded among the tool calls');
  for (const a of [id, posted.body.action.id]) await api('DELETE', `${actions()}/${a}`, { token: owner.token });
});

t.test('every field is checked: 400 naming it, nothing stored', async (t) => {
  const base = orderStatus();
  const withRequest = (r: Record<string, unknown>) => ({ ...base, request: { ...base.request, ...r } });
  const headers = (h: Record<string, string>) => withRequest({ headers: h });
  const cases: [string, unknown, string][] = [
    ['a name starting with a digit', { ...base, name: '1order' }, 'name'],
    ['a name with a space', { ...base, name: 'order status' }, 'name'],
    ['a name of 65 characters', { ...base, name: 'a'.repeat(65) }, 'name'],
    ["a built-in tool's name", { ...base, name: 'handoff_to_human' }, 'name'],
    ['no description', { ...base, description: '' }, 'description'],
    ['a description of 1001 characters', { ...base, description: 'x'.repeat(1001) }, 'description'],
    ['parameters of another type', { ...base, parameters: { type: 'string' } }, 'parameters'],
    ['parameters that are no JSON Schema', { ...base, parameters: { type: 'object', properties: { orderId: { type: 'nonsense' } } } }, 'parameters'],
    ['parameters that are an array', { ...base, parameters: [] }, 'parameters'],
    ['a placeholder that is not a parameter', withRequest({ url: `${shop.url}/orders/{order}` }), 'request.url'],
    ['a placeholder in the host', { ...base, request: { method: 'GET', url: 'https://{orderId}.example.com/orders' } }, 'request.url'],
    ['a URL that is not http', withRequest({ url: 'ftp://example.com/x' }), 'request.url'],
    ['a URL of 2049 characters', withRequest({ url: `${shop.url}/${'x'.repeat(2049)}` }), 'request.url'],
    ['no URL', { ...base, request: { method: 'GET' } }, 'request.url'],
    ['an unknown method', withRequest({ method: 'TRACE' }), 'request.method'],
    ['an unknown body', withRequest({ body: 'form' }), 'request.body'],
    ['a header name with a space', headers({ 'X Shop': 'a' }), 'request.headers.X Shop'],
    ['a header name with a colon', headers({ 'X-Shop:': 'a' }), 'request.headers.X-Shop:'],
    ['Host', headers({ Host: 'example.com' }), 'request.headers.Host'],
    ['Content-Length', headers({ 'content-length': '5' }), 'request.headers.content-length'],
    ['a CR LF in a value', headers({ 'X-Shop': 'a\r\nX-Injected: 1' }), 'request.headers.X-Shop'],
    ['an LF in a value', headers({ 'X-Shop': 'a\nb' }), 'request.headers.X-Shop'],
    ['a value of 4097 characters', headers({ 'X-Shop': 'x'.repeat(4097) }), 'request.headers.X-Shop'],
    ['a value that is not a string', headers({ 'X-Shop': 5 as unknown as string }), 'request.headers.X-Shop'],
    ['a name given twice', headers({ 'X-Shop': 'a', 'x-shop': 'b' }), 'request.headers.x-shop'],
    ['21 headers', headers(Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v']))), 'request.headers'],
    ['timeoutMs over 15000', { ...base, timeoutMs: 15001 }, 'timeoutMs'],
    ['timeoutMs under 100', { ...base, timeoutMs: 99 }, 'timeoutMs'],
    ['timeoutMs not an integer', { ...base, timeoutMs: 1000.5 }, 'timeoutMs'],
    ['an unknown field', { ...base, extra: 1 }, 'extra'],
    ['an unknown request field', withRequest({ retries: 3 }), 'request.retries'],
    ['a NUL byte in the description', { ...base, description: 'a\u0000b' }, 'description'],
    ['a NUL byte in a header value', headers({ 'X-Shop': 'a\u0000b' }), 'request.headers.X-Shop'],
    ['a lone surrogate in the parameters', { ...base, parameters: { type: 'object', description: '\ud800' } }, 'parameters.description'],
  ];
  for (const [what, body, field] of cases) {
    const res = await create(body);
    t.equal(res.status, 400, `${what}: ${JSON.stringify(res.body).slice(0, 200)}`);
    t.equal(res.body.error?.code, 'VALIDATION_ERROR', what);
    const fields = (res.body.error?.details ?? []).map((d: { field: string }) => d.field);
    t.ok(fields.includes(field), `${what}: names ${field} (${fields.join(', ')})`);
    t.notOk(JSON.stringify(res.body).includes('must match pattern'), `${what}: said in words`);
  }
  t.equal((await api('GET', actions(), { token: owner.token })).body.total, 1, 'nothing was stored');

  const [{ id }] = (await api('GET', actions(), { token: owner.token })).body.actions;
  const patched = (body: unknown) => api('PATCH', `${actions()}/${id}`, { token: owner.token, body });
  t.match(await patched({ name: 'bad name' }), { status: 400, body: { error: { details: [{ field: 'name' }] } } });
  t.match(await patched({ parameters: { type: 'object', properties: { other: { type: 'string' } } } }), { status: 400, body: { error: { details: [{ field: 'request.url' }] } } }, 'parameters that drop a placeholder of the URL');
  t.match(await patched({ request: { timeoutMs: 100 } }), { status: 400, body: { error: { details: [{ field: 'request.timeoutMs' }] } } });
  t.match(await patched({ request: { headers: { 'X-A': 'line\r\nbreak' } } }), { status: 400, body: { error: { details: [{ field: 'request.headers.X-A' }] } } });
  t.match((await api('GET', `${actions()}/${id}`, { token: owner.token })).body.action, { name: 'order_status', request: { url: `${shop.url}/orders/{orderId}`, headers: { Authorization: '********' } } }, 'unchanged');
});

t.test('a name is taken once per agent (409); the quota is per agent', async (t) => {
  t.match(await create(orderStatus()), { status: 409, body: { error: { code: 'CONFLICT' } } }, 'the same name again');
  const second = await create({ ...orderStatus(), name: 'second' });
  t.equal(second.status, 201);
  t.match(await api('PATCH', `${actions()}/${second.body.action.id}`, { token: owner.token, body: { name: 'order_status' } }), { status: 409 }, 'renamed onto a taken one');

  const other = await newAgent('Other bot');
  t.equal((await create(orderStatus(), other)).status, 201, 'the same name on another agent');
  t.equal((await create({ ...orderStatus(), name: 'third' })).status, 201);
  t.match(await create({ ...orderStatus(), name: 'fourth' }), { status: 403, body: { error: { code: 'QUOTA_EXCEEDED', details: [{ field: 'actions', message: `limit ${QUOTA}` }] } } });
  t.equal((await api('GET', actions(), { token: owner.token })).body.total, QUOTA);
  t.equal((await create({ ...orderStatus(), name: 'fourth' }, other)).status, 201, 'the quota counts per agent');
});

t.test('operators may not; another company sees nothing', async (t) => {
  const [mine] = (await api('GET', actions(), { token: owner.token })).body.actions;
  const one = `${actions()}/${mine.id}`;
  const calls = [['GET', actions(), undefined], ['POST', actions(), { ...orderStatus(), name: 'op' }], ['GET', one, undefined], ['PATCH', one, { description: 'x' }], ['DELETE', one, undefined], ['POST', `${one}/try`, { arguments: { orderId: 'A-1' } }]] as const;
  const requestsBefore = shop.requests.length;
  for (const [method, path, body] of calls) {
    t.match(await api(method, path, { token: operator.token, body }), { status: 403, body: { error: { code: 'FORBIDDEN' } } }, `${method} ${path.replace(/\d+/g, ':n')} by an operator`);
  }
  const stranger = await signUp(api, 'Other Co');
  for (const [method, path, body] of calls) {
    t.match(await api(method, path, { token: stranger.token, body }), { status: 404, body: { error: { code: 'NOT_FOUND' } } }, `${method} ${path.replace(/\d+/g, ':n')} by another company`);
  }
  const theirs = await newAgent('Their bot', stranger.token);
  t.equal((await api('GET', `${actions(theirs)}/${mine.id}`, { token: stranger.token })).status, 404, "another company's action under its own agent");
  const sibling = await newAgent('Sibling bot');
  t.equal((await api('GET', `${actions(sibling)}/${mine.id}`, { token: owner.token })).status, 404, 'an action is found only under its own agent');
  t.equal((await api('DELETE', `${actions(sibling)}/${mine.id}`, { token: owner.token })).status, 404);
  t.equal(shop.requests.length, requestsBefore, 'no request was made');
  t.same((await api('GET', one, { token: owner.token })).body.action, mine, 'nothing changed');
});

t.test('private addresses: refused at create, and blocked at the call, unless ALLOW_PRIVATE_URLS', async (t) => {
  const strict = await startTestService(t, 'actions_strict', { env: { ALLOW_PRIVATE_URLS: 'false' } });
  const admin = await signUp(strict.api, 'Strict Co');
  const bot = (await strict.api('POST', '/api/agents', { token: admin.token, body: { name: 'Bot' } })).body.agent.id;
  const refused = await strict.api('POST', `/api/agents/${bot}/actions`, { token: admin.token, body: orderStatus() });
  t.match(refused, { status: 400, body: { error: { code: 'VALIDATION_ERROR', details: [{ field: 'request.url' }] } } }, 'a loopback URL');
  t.equal((await strict.api('POST', `/api/agents/${bot}/actions`, { token: admin.token, body: { ...orderStatus(), request: { method: 'GET', url: 'https://203.0.113.9/orders/{orderId}' } } })).status, 400, 'a documentation range');

  // A row stored before the rules were tightened (ALLOW_PRIVATE_URLS was on then).
  const [row] = await sql(strict.orm, `insert into agent_actions (company_id, agent_id, name, description, parameters, method, url, body, idempotent, timeout_ms)
    values (?, ?, 'old', 'x', '{"type":"object","properties":{"orderId":{"type":"string"}}}', 'GET', ?, 'none', true, 2000) returning id`, [admin.companyId, bot, `${shop.url}/orders/{orderId}`]);
  const before = shop.requests.length;
  const tried = await strict.api('POST', `/api/agents/${bot}/actions/${row.id}/try`, { token: admin.token, body: { arguments: { orderId: 'A-1' } } });
  t.match(tried, { status: 200, body: { outcome: { status: 'blocked', httpStatus: null }, result: { error: String } } });
  t.equal(shop.requests.length, before, 'no request reached the address');
});

t.test('a body template: stored and shown as written, its placeholders checked, filled when tried as a given customer', async (t) => {
  const agent = await newAgent('Template bot');
  const template = { customer: '{customer.id}', orderId: '{orderId}', note: 'asked in {customer.channel}' };
  const bad = await create({ ...orderStatus(), request: { method: 'POST', url: `${shop.url}/lookup`, body: { who: '{customerId}' } } }, agent);
  t.match(bad, { status: 400, body: { error: { details: [{ field: 'request.body', message: /\{customerId\}, which is not one of the parameters nor one the service fills/ }] } } });
  const made = await create({ ...orderStatus(), request: { method: 'POST', url: `${shop.url}/lookup?conv={conversation.id}`, body: template } }, agent);
  t.equal(made.status, 201, JSON.stringify(made.body));
  t.same(made.body.action.request.body, template, 'shown as written');
  const tried = await api('POST', `${actions(agent)}/${made.body.action.id}/try`, {
    token: owner.token, body: { arguments: { orderId: 'A-9' }, context: { customer: { id: 'cust-7', channel: 'webchat' }, conversation: { id: '31' } } },
  });
  t.equal(tried.status, 200, JSON.stringify(tried.body));
  const got = shop.requests.at(-1)!;
  t.equal(got.path, '/lookup?conv=31');
  t.same(JSON.parse(got.body), { customer: 'cust-7', orderId: 'A-9', note: 'asked in webchat' }, 'filled as the given customer');
  const renamed = await api('PATCH', `${actions(agent)}/${made.body.action.id}`, { token: owner.token, body: { parameters: { type: 'object', properties: { id: { type: 'string' } } } } });
  t.match(renamed, { status: 400, body: { error: { details: [{ field: 'request.body', message: /\{orderId\}/ }] } } }, 'parameters that no longer fit the template are refused');
  const plain = await api('PATCH', `${actions(agent)}/${made.body.action.id}`, { token: owner.token, body: { request: { body: 'json' } } });
  t.equal(plain.body.action.request.body, 'json', 'back to the arguments as the body: the template is gone');
  t.match(await create({ ...orderStatus(), name: 'spoof', parameters: { type: 'object', properties: { 'customer.email': { type: 'string' } } } }, agent), { status: 400, body: { error: { details: [{ field: 'parameters', message: /filled by the service/ }] } } });
});
