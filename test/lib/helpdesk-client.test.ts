// The Chat2Desk client against the stand-in that behaves like Chat2Desk (issue #18): integer
// ids as numbers, no explicit nulls, `{"status":"error"}` with HTTP 200 a certain failure,
// `Retry-After` read from a 429.
import t from 'tap';
import { HelpdeskClient, HelpdeskError } from '../../lib/helpdesk-client.js';
import { MAX_RETRY_AFTER_MS, retryAfterMs } from '../../lib/outbound-errors.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';

const desk = await startChat2DeskStub(t);
const client = new HelpdeskClient(desk.url, desk.token);
const failure = async (p: Promise<unknown>): Promise<HelpdeskError> => {
  try {
    await p;
  } catch (err) {
    if (err instanceof HelpdeskError) return err;
    throw err;
  }
  throw new Error('expected a HelpdeskError');
};

t.test('a send goes out with numeric ids as numbers and without null fields', async (t) => {
  const res = await client.sendMessage({ client_id: '4242', channel_id: '17', transport: null, text: 'hello', type: 'to_client', external_id: '9' });
  t.match(res, { status: 'success', data: { message_id: Number } });
  t.same(desk.sent().at(-1), { client_id: 4242, channel_id: 17, text: 'hello', type: 'to_client', external_id: '9' });
  await client.sendMessage({ client_id: 'visitor-7', channel_id: null, text: 'hi', type: 'to_client' });
  t.same(desk.sent().at(-1), { client_id: 'visitor-7', text: 'hi', type: 'to_client' }, 'other ids as they are');
  t.equal(desk.history.at(-2)!.client_id, 4242, 'the stand-in lists client ids as integers, like Chat2Desk');
});

t.test('HTTP 200 with {"status":"error"} throws: refused, not retryable, certainly not delivered', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.path === '/v1/messages' ? { status: 200, body: { status: 'error', message: 'Client not found' } } : undefined));
  const err = await failure(client.sendMessage({ client_id: 1, text: 'x', type: 'to_client' }));
  t.equal(err.status, 200);
  t.equal(err.refused, true);
  t.equal(err.retryable, false);
  t.equal(err.maybeDelivered, false, 'the outbox does not reconcile it');
  t.match(err.message, /status "error" \(HTTP 200\)/);
  t.notMatch(err.message, /Client not found/, 'the helpdesk text stays in err.body');
  desk.handle(null);
  // What the stand-in itself refuses, as Chat2Desk would: a string where an integer id goes.
  const raw = await failure(client.request('POST', '/v1/messages', { client_id: '4242', text: 'x' }));
  t.equal(raw.refused, true);
});

t.test('429 with Retry-After: retryable, not delivered, and how long to wait', async (t) => {
  t.teardown(() => desk.handle(null));
  desk.handle((r) => (r.path === '/v1/messages' ? { status: 429, body: { status: 'error' }, headers: { 'Retry-After': '7' } } : undefined));
  const err = await failure(client.sendMessage({ client_id: 1, text: 'x', type: 'to_client' }));
  t.match(err, { status: 429, retryable: true, maybeDelivered: false, retryAfterMs: 7000, refused: false });
  desk.handle((r) => (r.path === '/v1/messages' ? { status: 503, body: {} } : undefined));
  t.equal((await failure(client.sendMessage({ client_id: 1, text: 'x', type: 'to_client' }))).retryAfterMs, null, 'none said');
});

t.test('Retry-After: seconds or an HTTP date, capped; nonsense is ignored', async (t) => {
  const now = Date.parse('2026-03-01T10:00:00Z');
  t.equal(retryAfterMs('2', now), 2000);
  t.equal(retryAfterMs('0.5', now), 500);
  t.equal(retryAfterMs('Sun, 01 Mar 2026 10:00:30 GMT', now), 30_000);
  t.equal(retryAfterMs('Sun, 01 Mar 2026 09:00:00 GMT', now), 0, 'a past date: now');
  t.equal(retryAfterMs('999999', now), MAX_RETRY_AFTER_MS, 'at most an hour');
  t.equal(retryAfterMs('soon', now), null);
  t.equal(retryAfterMs(undefined, now), null);
});
