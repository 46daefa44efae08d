import { createServer } from 'node:http';
import t from 'tap';
import { publicAddressesOnly, type AddressGuard } from '../../lib/address-guard.js';
import {
  actionRequest,
  callAction,
  MAX_TOOL_RESULT_BYTES,
  modelResult,
  redactArgs,
  secretsOf,
  type ActionCall,
} from '../../lib/agents/tools/action-request.js';
import { checkArguments } from '../../lib/agents/tools/arguments-check.js';
import { checkActionUrl, checkBodyTemplate, checkParameterNames, NO_CALLER, type CallerValues } from '../../lib/agents/tools/placeholders.js';
import { listen } from '../../scripts/sandbox/http.js';
import { startActionApiStub } from '../support/action-api-stub.js';

/**
 * An agent's HTTP action against a company's API (a local stand-in with latency): the request
 * it makes, what the model gets back, and the failures a user would see in the tool-call log.
 * No guard (ALLOW_PRIVATE_URLS) unless a test is about the guard.
 */
const API_KEY = 'k3y-0123456789abcdef';
const TOKEN = 'tok-secret-9876543210';

const ORDER_PARAMETERS = { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] };

const action = (over: Partial<ActionCall>): ActionCall => ({
  name: 'order_status',
  method: 'GET',
  url: 'http://127.0.0.1:1/orders/{orderId}',
  headers: { 'x-api-key': API_KEY, authorization: `Bearer ${TOKEN}` },
  body: 'none',
  bodyTemplate: null,
  timeoutMs: 5000,
  ...over,
});

/** The action called as the toolbox and the try route call it: with arguments its parameters passed. */
async function call(
  a: ActionCall,
  args: Record<string, unknown>,
  o: { guard: AddressGuard | null; caller?: CallerValues },
  parameters: Record<string, unknown> = ORDER_PARAMETERS,
) {
  const checked = checkArguments(parameters, args);
  if (!checked.ok) throw new Error(checked.error);
  return callAction(a, checked.args, { caller: NO_CALLER, ...o });
}

t.test('a GET action: placeholders encoded, the other arguments as query, the sealed headers sent', async (t) => {
  const api = await startActionApiStub(t);
  api.answer('GET', '/orders/', { body: { status: 'shipped' } });
  const parameters = {
    type: 'object',
    properties: { orderId: { type: 'string' }, tags: { type: 'array', items: { type: 'string' } }, filter: { type: 'object' }, n: { type: 'integer' } },
    required: ['orderId'],
  };
  const outcome = await call(action({ url: `${api.url}/orders/{orderId}?lang=en` }), { orderId: 'a/b c', tags: ['x', 'y z'], filter: { a: 1 }, n: 5 }, { guard: null }, parameters);
  t.equal(outcome.status, 'ok');
  t.equal(outcome.httpStatus, 200);
  t.same(outcome.result, { status: 200, body: { status: 'shipped' } }, 'the model gets the status and the parsed body');
  t.ok(outcome.ms >= 90, `the time of the call (${outcome.ms} ms) is measured`);
  t.equal(api.requests.length, 1);
  const req = api.requests[0]!;
  t.equal(req.method, 'GET');
  t.equal(req.path, '/orders/a%2Fb%20c?lang=en&tags=x&tags=y%20z&filter=%7B%22a%22%3A1%7D&n=5', 'placeholder URL-encoded; the rest appended as query (arrays repeated, objects as JSON)');
  t.equal(req.headers['x-api-key'], API_KEY, 'the header value is sent opened');
  t.equal(req.headers.authorization, `Bearer ${TOKEN}`);
  t.equal(req.body, '', 'no body');
});

t.test('a POST action with a JSON body: the arguments not in the URL', async (t) => {
  const api = await startActionApiStub(t);
  const parameters = { type: 'object', properties: { customerId: { type: 'integer' }, text: { type: 'string' }, urgent: { type: 'boolean', default: false } }, required: ['customerId', 'text'] };
  const outcome = await call(action({ method: 'POST', body: 'json', url: `${api.url}/customers/{customerId}/notes` }), { customerId: 7, text: 'call back' }, { guard: null }, parameters);
  t.equal(outcome.status, 'ok');
  const req = api.requests[0]!;
  t.equal(req.path, '/customers/7/notes');
  t.match(req.headers['content-type'], /^application\/json/);
  t.same(JSON.parse(req.body), { text: 'call back', urgent: false }, 'the rest of the arguments, defaults filled in');
  t.same(outcome.result, { status: 200, body: { ok: true, method: 'POST', path: '/customers/7/notes', body: { text: 'call back', urgent: false } } });
});

t.test('invalid arguments: checkArguments names the field and says what is wrong', async (t) => {
  t.same(checkArguments(ORDER_PARAMETERS, { order: 'A1' }), { ok: false, error: 'arguments.orderId is required', field: 'arguments.orderId' });
  t.same(checkArguments(ORDER_PARAMETERS, { orderId: 42 }), { ok: false, error: 'arguments.orderId must be string', field: 'arguments.orderId' });
  t.match(checkArguments(ORDER_PARAMETERS, ['A1']), { ok: false, field: 'arguments' });
  t.same(checkArguments({ type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'integer' } } } } }, { a: { b: 'x' } }), {
    ok: false,
    error: 'arguments.a.b must be integer',
    field: 'arguments.a.b',
  });
});

t.test('an API that never answers: timeout at the action deadline', async (t) => {
  const api = await startActionApiStub(t);
  api.answer('GET', '/orders/', { hang: true });
  const outcome = await call(action({ url: `${api.url}/orders/{orderId}`, timeoutMs: 600 }), { orderId: 'A1' }, { guard: null });
  t.equal(outcome.status, 'timeout');
  t.equal(outcome.httpStatus, null);
  t.ok(outcome.ms >= 550 && outcome.ms < 600 + 1000, `given up at the deadline (${outcome.ms} ms)`);
  t.same(outcome.result, { error: 'no answer within 600 ms' });
  t.equal(api.requests.length, 1, 'the request was made once, not repeated');
});

t.test('a 500: error with its status; the model gets the status and the body', async (t) => {
  const api = await startActionApiStub(t);
  api.answer('GET', '/orders/', { status: 500, body: { message: 'database unavailable' } });
  const outcome = await call(action({ url: `${api.url}/orders/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.equal(outcome.status, 'error');
  t.equal(outcome.httpStatus, 500);
  t.equal(outcome.error, 'HTTP 500');
  t.same(outcome.result, { status: 500, body: { message: 'database unavailable' } });

  api.answer('GET', '/text/', { status: 404, body: 'no such order' });
  const text = await call(action({ url: `${api.url}/text/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.same(text.result, { status: 404, body: 'no such order' }, 'a body that is not JSON is given as text');
});

t.test('answers too large: over 256 KiB fails; over 8 KiB reaches the model cut and marked', async (t) => {
  const api = await startActionApiStub(t);
  api.answer('GET', '/huge/', { bytes: 300 * 1024 });
  const huge = await call(action({ url: `${api.url}/huge/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.equal(huge.status, 'error');
  t.equal(huge.error, 'the answer is larger than 256 KiB');
  t.same(huge.result, { error: 'the answer is larger than 256 KiB' });

  api.answer('GET', '/long/', { bytes: 20_000 });
  const long = await call(action({ url: `${api.url}/long/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.equal(long.status, 'ok', 'a long answer is still a success');
  t.equal(long.result.truncated, true);
  t.equal(long.result.status, 200);
  const size = Buffer.byteLength(JSON.stringify(long.result));
  t.ok(size <= MAX_TOOL_RESULT_BYTES && size > MAX_TOOL_RESULT_BYTES - 100, `the result is at most 8 KiB serialised (${size} bytes)`);
  t.match(long.result.body, /^xxxx/, 'the beginning of the body is kept');

  const items = Array.from({ length: 400 }, (_, i) => ({ id: i, name: `item ${i} é😀` }));
  api.answer('GET', '/items/', { body: { items } });
  const list = await call(action({ url: `${api.url}/items/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.equal(list.result.truncated, true);
  t.ok(Buffer.byteLength(JSON.stringify(list.result)) <= MAX_TOOL_RESULT_BYTES, 'a JSON body too: cut as text');
  t.ok(JSON.stringify({ items }).startsWith(list.result.body as string), 'the cut is the start of the JSON text');
  t.notOk(/[\uD800-\uDBFF]$/.test(list.result.body as string), 'no half character at the cut');
});

t.test('a header secret echoed by the API never reaches the result', async (t) => {
  const api = await startActionApiStub(t);
  api.answer('GET', '/echo/', (r) => ({ body: { youSent: r.headers.authorization, token: TOKEN, key: r.headers['x-api-key'], note: `key=${r.headers['x-api-key']}` } }));
  const outcome = await call(action({ url: `${api.url}/echo/{orderId}` }), { orderId: 'A1' }, { guard: null });
  t.equal(outcome.status, 'ok');
  const text = JSON.stringify(outcome.result);
  t.notOk(text.includes(API_KEY), 'the API key is not in the result');
  t.notOk(text.includes(TOKEN), 'the bearer token is not in the result, not even alone');
  t.same(outcome.result.body, { youSent: '[redacted]', token: '[redacted]', key: '[redacted]', note: 'key=[redacted]' });

  // A cut right inside where a secret was does not show its beginning.
  const cut = modelResult({ status: 200, body: `${'y'.repeat(MAX_TOOL_RESULT_BYTES - 48)}${API_KEY}${'z'.repeat(100)}` }, secretsOf({ k: API_KEY }));
  t.notOk(JSON.stringify(cut).includes(API_KEY.slice(0, 6)), 'no piece of a secret at the cut');
});

t.test('redactArgs: secret properties by schema or name, nested ones, and header secrets in strings', async (t) => {
  const parameters = {
    type: 'object',
    properties: {
      email: { type: 'string' },
      pin: { type: 'string', writeOnly: true },
      code: { type: 'string', format: 'password' },
      card: { type: 'object', properties: { holder: { type: 'string' }, cardNumber: { type: 'string' }, cvv: { type: 'string' } } },
      people: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, secretAnswer: { type: 'string' } } } },
    },
  };
  const args = {
    email: 'ann@example.com',
    password: 'hunter22',
    pin: '1234',
    code: 'abcd',
    apiKey: 'zzz',
    card: { holder: 'Ann', cardNumber: '4111111111111111', cvv: '123' },
    people: [{ name: 'Bob', secretAnswer: 'blue' }],
    note: `use ${API_KEY} please`,
  };
  t.same(redactArgs(args, parameters, secretsOf({ 'x-api-key': API_KEY })), {
    email: 'ann@example.com',
    password: '[redacted]',
    pin: '[redacted]',
    code: '[redacted]',
    apiKey: '[redacted]',
    card: { holder: 'Ann', cardNumber: '[redacted]', cvv: '[redacted]' },
    people: [{ name: 'Bob', secretAnswer: '[redacted]' }],
    note: 'use [redacted] please',
  });
  t.equal(args.password, 'hunter22', 'the arguments themselves are left as they are');
});

t.test('the guard: public addresses only refuses the loopback API, which gets nothing', async (t) => {
  const api = await startActionApiStub(t);
  const outcome = await call(action({ url: `${api.url}/orders/{orderId}` }), { orderId: 'A1' }, { guard: publicAddressesOnly });
  t.equal(outcome.status, 'blocked');
  t.equal(outcome.httpStatus, null);
  t.match(outcome.result, { error: /blocked/ });
  await new Promise((r) => setTimeout(r, 200));
  t.equal(api.requests.length, 0, 'no request reached the API');
});

t.test('the guard at every redirect: a redirect to an internal address is blocked', async (t) => {
  const api = await startActionApiStub(t);
  // The guard of this test: 127.0.0.2 stands for a public address, 127.0.0.1 for an internal one.
  const onlyPublic: AddressGuard = (address) => address === '127.0.0.2';
  const hops: string[] = [];
  const redirector = await listen(
    createServer((req, res) => {
      hops.push(req.url ?? '');
      res.writeHead(302, { location: `${api.url}/internal` }).end();
    }),
    0,
    '127.0.0.2',
  );
  t.teardown(redirector.close);
  const outcome = await call(action({ url: `${redirector.url}/orders/{orderId}` }), { orderId: 'A1' }, { guard: onlyPublic });
  t.equal(hops.length, 1, 'the public hop was asked');
  t.equal(outcome.status, 'blocked');
  await new Promise((r) => setTimeout(r, 200));
  t.equal(api.requests.length, 0, 'the internal API got nothing');
});

t.test('checkActionUrl: where an action may send its placeholders', async (t) => {
  t.equal(checkActionUrl('https://api.example.com/orders/{orderId}?lang={lang}', ['orderId', 'lang']), null);
  t.match(checkActionUrl('https://{host}/orders', ['host']), /only in its path or query/);
  t.match(checkActionUrl('https://api.example.com:{port}/orders', ['port']), /only in its path or query/);
  t.match(checkActionUrl('{scheme}://api.example.com/', ['scheme']), /absolute http or https URL/);
  t.match(checkActionUrl('https://api.example.com/orders/{id}', ['orderId']), /\{id\}, which is not one of the parameters/);
  t.match(checkActionUrl('ftp://api.example.com/x', []), /http or https/);
  t.match(checkActionUrl('https://user:pw@api.example.com/x', []), /credentials/);
  t.match(checkActionUrl('https://api.example.com/x/{', []), /unclosed or empty/);
  t.match(checkActionUrl('not a url', []), /absolute/);
});

t.test('who asks: caller placeholders in the URL, a header and a body template are the service\'s to fill', async (t) => {
  const caller = { 'customer.id': 'c/42 é', 'customer.channel': 'whatsapp', 'conversation.id': '7', 'customer.email': null };
  const get = actionRequest(
    { ...action({ url: 'https://api.example.com/c/{customer.id}/orders/{orderId}?via={customer.channel}&lang=en' }), headers: { 'X-Customer': '{customer.id}', 'X-Conv': 'conv-{conversation.id}', 'X-Mail': '{customer.email}' } },
    { orderId: 'A 1', lang: 'fr', via: 'x', extra: 1 },
    caller,
  );
  t.equal(get.url, 'https://api.example.com/c/c%2F42%20%C3%A9/orders/A%201?via=whatsapp&lang=en&extra=1', 'URL-encoded; the query parameters the URL sets are not repeated by arguments');
  t.same(get.headers, { 'X-Customer': 'c%2F42%20%C3%A9', 'X-Conv': 'conv-7', 'X-Mail': '', accept: 'application/json' }, 'in a header as it is when HTTP can carry it, else URL-encoded; unknown: empty');
  const post = actionRequest(
    { ...action({ method: 'POST', url: 'https://api.example.com/notes' }), body: 'json', bodyTemplate: { who: '{customer.id}', text: '{text}', count: '{n}', missing: '{absent}', list: ['{n}', '{absent}'], line: 'n={n} via {customer.channel}', email: '{customer.email}' } },
    { text: 'hi', n: 3, ignored: 'x' },
    caller,
  );
  t.same(JSON.parse(post.body!.toString()), { who: 'c/42 é', text: 'hi', count: 3, list: [3, null], line: 'n=3 via whatsapp', email: null }, 'a whole placeholder keeps its type; an absent argument leaves its property out; arguments not placed are not sent');
  t.equal(checkBodyTemplate({ a: '{nope}' }, ['text']), 'has the placeholder {nope}, which is not one of the parameters nor one the service fills ({customer.id}, {customer.channel}, {conversation.id}, {customer.email})');
  t.equal(checkBodyTemplate({ a: ['{text}', { b: 'x {customer.email}' }] }, ['text']), null);
  t.match(checkBodyTemplate({ a: 'x'.repeat(5000) }, []), /at most 4 KiB/);
  t.match(checkActionUrl('https://api.example.com/c/{customer.id}', []), null);
  t.match(checkParameterNames(['orderId', 'customer.id']), /"customer\.id".*filled by the service/);
});
