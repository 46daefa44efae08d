// One judgement of every outbound failure (lib/outbound-errors.ts): whether retrying can help,
// whether the request may have been carried out, how long the server asked us to wait. The
// helpdesk's outbox, model calls and embeddings all decide from these fields.
import t from 'tap';
import { BlockedAddressError } from '../../lib/address-guard.js';
import { HelpdeskError } from '../../lib/helpdesk-client.js';
import { OutboundError, outboundErrorIn, statusFailure } from '../../lib/outbound-errors.js';
import { outboundRequest } from '../../lib/outbound-http.js';
import { freePort } from '../support/local-server.js';

const judged = (e: OutboundError) => ({ permanent: e.permanent, retryable: e.retryable, maybeDelivered: e.maybeDelivered });

t.test('transport failures', async (t) => {
  t.same(judged(new OutboundError('TIMEOUT', 'x')), { permanent: false, retryable: true, maybeDelivered: true }, 'a timeout: retried, and it may have arrived');
  t.same(judged(new OutboundError('NETWORK', 'x', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) })), { permanent: false, retryable: true, maybeDelivered: true }, 'a connection cut after connecting');
  for (const code of ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']) {
    t.same(judged(new OutboundError('NETWORK', 'x', { cause: Object.assign(new Error(code), { code }) })), { permanent: false, retryable: true, maybeDelivered: false }, `${code}: never reached the server`);
  }
  t.same(judged(new OutboundError('BODY_TOO_LARGE', 'x')), { permanent: true, retryable: false, maybeDelivered: true }, 'an oversized answer: it arrived, retrying gets the same');
  t.same(judged(new OutboundError('ABORTED', 'x')), { permanent: true, retryable: false, maybeDelivered: true }, 'a call we gave up');
  for (const code of ['BLOCKED_ADDRESS', 'BAD_URL', 'TOO_MANY_REDIRECTS'] as const) {
    t.same(judged(new OutboundError(code, 'x')), { permanent: true, retryable: false, maybeDelivered: false }, code);
  }
  const blocked = new BlockedAddressError('10.0.0.1');
  t.type(blocked, OutboundError, 'the address guard refuses with one of the family');
  t.match(blocked, { code: 'BLOCKED_ADDRESS', permanent: true, maybeDelivered: false });
});

t.test('answers', async (t) => {
  for (const status of [408, 409, 429, 500, 502, 503, 504]) t.equal(statusFailure('x', status, undefined).permanent, false, `${status}: not now`);
  for (const status of [400, 401, 403, 404, 410, 413, 422]) t.equal(statusFailure('x', status, undefined).permanent, true, `${status}: no`);
  for (const status of [408, 500, 503]) t.equal(statusFailure('x', status, undefined).maybeDelivered, true, `${status}: it may have been carried out`);
  for (const status of [400, 409, 429]) t.equal(statusFailure('x', status, undefined).maybeDelivered, false, `${status}: it was not`);
  t.match(statusFailure('x', 429, '7'), { code: 'HTTP_STATUS', status: 429, retryAfterMs: 7000 }, 'Retry-After read once');
  t.equal(statusFailure('x', 503, undefined).retryAfterMs, null);
  t.same(judged(new OutboundError('REFUSED', 'x', { status: 200 })), { permanent: true, retryable: false, maybeDelivered: false }, 'an answer that refuses');
});

t.test('a helpdesk error is judged by the same rules', async (t) => {
  t.match(new HelpdeskError('x', 503, null), { code: 'HTTP_STATUS', permanent: false, maybeDelivered: true, refused: false });
  t.match(new HelpdeskError('x', 200, null), { code: 'BAD_ANSWER', permanent: true, maybeDelivered: false }, 'a 2xx we cannot use');
  t.match(new HelpdeskError('x', null, null), { code: 'NETWORK', retryable: true, maybeDelivered: true }, 'nothing known: it may have arrived');
  t.match(new HelpdeskError('x', null, null, { cause: new OutboundError('BAD_URL', 'y') }), { code: 'BAD_URL', permanent: true }, 'the transport failure underneath');
});

t.test('from a real exchange', async (t) => {
  // A port nothing listens on: refused before anything was sent.
  const port = await freePort();
  const refused = await outboundRequest({ method: 'POST', url: `http://127.0.0.1:${port}/`, timeoutMs: 2000, maxBodyBytes: 1024 }).catch((err: unknown) => err);
  t.match(refused, { code: 'NETWORK', retryable: true, maybeDelivered: false });
  t.equal(outboundErrorIn(new Error('wrapped', { cause: refused })), refused, 'found under a library error');
});
