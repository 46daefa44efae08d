import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService, type ApiClient } from '../support/service.js';
import { readEvents, type SseEvent } from '../support/sse.js';
import { startPeerGateway } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, messageEnvelope, publishEnvelope, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * A live Server-Sent Events stream (`GET /api/conversations/:id/inspect`) lasts no longer
 * than its credential: it ends within 5 s of its API token being revoked, its session being
 * logged out, its user being removed, or its access token expiring, on every gateway (the
 * revocation is written through one gateway, the stream may be held by another). A company
 * holds at most SSE_MAX_PER_COMPANY (50) streams per gateway process; the 51st gets 429,
 * and other companies are not affected.
 *
 * Access tokens live ACCESS_TOKEN_TTL_SECONDS = 10 here (the smallest the configuration
 * takes), so the expiry is seen for real; sessions are fresh logins where it matters.
 */
const ENDS_WITHIN_MS = 5_000;
const TTL_SECONDS = 10;

const svc = await startTestService(t, 'event_streams', { env: { ACCESS_TOKEN_TTL_SECONDS: String(TTL_SECONDS), PARTITIONS: '2' } });
const peer = await startPeerGateway(t, svc);
const stub = await startChat2DeskStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'sse' });
await waitForPartitions([worker], 2);

type User = Awaited<ReturnType<typeof signUp>>;

/** A fresh session of `user` (its access token lives TTL_SECONDS from now). */
async function login(user: User): Promise<{ token: string; expiresAt: number }> {
  const res = await svc.api('POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
  if (res.status !== 200) throw new Error(`login: ${res.status} ${JSON.stringify(res.body)}`);
  return { token: res.body.session.access_token, expiresAt: res.body.session.expires_at };
}

/** A company with one conversation (a customer message answered by the built-in agent). */
async function companyWithConversation(name: string): Promise<{ user: User; integration: { id: number; companyId: number }; conversationId: number }> {
  const user = await signUp(svc.api, name);
  const integration = await createHelpdeskIntegration(svc, user, stub, name);
  const clientId = `${name.replace(/\W/g, '')}-client`;
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, 'hello'));
  const [row] = await eventually(async () => {
    const rows = await sql<{ id: number }>(svc.orm, 'select id from conversations where integration_id = ? and client_id = ?', [integration.id, clientId]);
    return rows.length ? rows : null;
  }, 15_000, 'the conversation');
  return { user, integration, conversationId: row!.id };
}

interface Stream {
  status: number;
  headers: Headers;
  /** The error body when the stream was refused. */
  body: any;
  events: SseEvent[];
  /** When the server ended the body (Date.now()), null while it is open. */
  endedAt: number | null;
  /** Resolves with endedAt once the server ended the body. */
  ended: Promise<number>;
  /** Resolves with the first event matching. */
  waitFor: (match: (e: SseEvent) => boolean, timeoutMs?: number) => Promise<SseEvent>;
  /** The client hangs up. */
  close: () => void;
}

async function openStream(baseUrl: string, token: string, conversationId: number): Promise<Stream> {
  const ac = new AbortController();
  const res = await fetch(`${baseUrl}/api/conversations/${conversationId}/inspect`, { headers: { authorization: `Bearer ${token}` }, signal: ac.signal });
  const stream: Stream = {
    status: res.status,
    headers: res.headers,
    body: null,
    events: [],
    endedAt: null,
    ended: Promise.resolve(0),
    waitFor: (match, timeoutMs = 10_000) => eventually(async () => stream.events.find(match), timeoutMs, 'an event'),
    close: () => ac.abort(),
  };
  if (res.status !== 200) {
    stream.body = await res.json();
    return stream;
  }
  stream.ended = (async () => {
    // The client hung up itself (close()): that is not the server ending it.
    if (!(await readEvents(res.body!, (e) => stream.events.push(e)))) return new Promise<number>(() => {});
    stream.endedAt = Date.now();
    return stream.endedAt;
  })();
  await stream.waitFor((e) => e.event === 'conversation');
  return stream;
}

/** How long after `from` the stream ended (ms); fails the test when it is still open after `limitMs` + 3 s. */
async function endsAfter(stream: Stream, from: number, limitMs = ENDS_WITHIN_MS): Promise<number> {
  const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(Number.POSITIVE_INFINITY), Math.max(0, from + limitMs + 3_000 - Date.now())));
  const at = await Promise.race([stream.ended, timeout]);
  return at - from;
}

const lastEvent = (stream: Stream) => stream.events.at(-1);

const alice = await companyWithConversation('Alice Co');
const bob = await companyWithConversation('Bob Co');

async function createApiToken(api: ApiClient, user: User): Promise<{ id: number; token: string }> {
  const { token } = await login(user);
  const res = await api('POST', '/api/api-tokens', { token, body: { name: `stream-${Math.random()}` } });
  if (res.status !== 201) throw new Error(`api token: ${res.status} ${JSON.stringify(res.body)}`);
  return { id: res.body.apiToken.id, token: res.body.apiToken.token };
}

t.test('a revoked API token: its streams end within 5 s on every gateway', async (t) => {
  const apiToken = await createApiToken(svc.api, alice.user);
  const here = await openStream(svc.url, apiToken.token, alice.conversationId);
  const there = await openStream(peer.url, apiToken.token, alice.conversationId);
  t.equal(here.status, 200);
  t.equal(there.status, 200);
  t.teardown(() => [here, there].forEach((s) => s.close()));

  // Both streams are live: a new customer message reaches them.
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(alice.integration, 'AliceCo-client', 'still there?'));
  for (const s of [here, there]) await s.waitFor((e) => e.event === 'message' && e.data.message?.text === 'still there?');

  const { token: session } = await login(alice.user);
  const revokedAt = Date.now();
  t.equal((await svc.api('DELETE', `/api/api-tokens/${apiToken.id}`, { token: session })).status, 204);
  const [hereMs, thereMs] = await Promise.all([endsAfter(here, revokedAt), endsAfter(there, revokedAt)]);
  t.ok(hereMs <= ENDS_WITHIN_MS, `the stream on the gateway that revoked it ended ${hereMs} ms after the revocation`);
  t.ok(thereMs <= ENDS_WITHIN_MS, `the stream on another gateway ended ${thereMs} ms after the revocation`);
  for (const s of [here, there]) t.same(lastEvent(s), { event: 'end', data: { reason: 'credential_revoked' } }, 'its last event says why');
  const again = await openStream(peer.url, apiToken.token, alice.conversationId);
  t.equal(again.status, 401, 'and it cannot open another');
});

t.test('logout: the session\'s streams end within 5 s; another session of the same user streams on', async (t) => {
  const first = await login(alice.user);
  const second = await login(alice.user);
  const loggedOut = await openStream(peer.url, first.token, alice.conversationId);
  const other = await openStream(svc.url, second.token, alice.conversationId);
  t.teardown(() => [loggedOut, other].forEach((s) => s.close()));

  const at = Date.now();
  t.equal((await svc.api('POST', '/api/auth/logout', { token: first.token })).status, 204);
  const ms = await endsAfter(loggedOut, at);
  t.ok(ms <= ENDS_WITHIN_MS, `the logged-out session's stream ended ${ms} ms after the logout`);
  t.same(lastEvent(loggedOut), { event: 'end', data: { reason: 'credential_revoked' } }, 'revoked, not expired');
  t.ok(Date.now() < second.expiresAt * 1000, 'the other session\'s token has not expired yet');
  t.equal(other.endedAt, null, 'the other session\'s stream is still open');
});

t.test('a user removed: their streams end within 5 s', async (t) => {
  const carol = await companyWithConversation('Carol Co');
  const { token } = await login(carol.user);
  const stream = await openStream(peer.url, token, carol.conversationId);
  t.teardown(() => stream.close());
  const at = Date.now();
  await sql(svc.orm, 'delete from users where id = ?', [carol.user.userId]);
  const ms = await endsAfter(stream, at);
  t.ok(ms <= ENDS_WITHIN_MS, `the stream ended ${ms} ms after the user was removed`);
  t.same(lastEvent(stream), { event: 'end', data: { reason: 'credential_revoked' } });
});

t.test('an access token that expires: its stream ends within 5 s of its exp, not before', async (t) => {
  const { token, expiresAt } = await login(alice.user);
  const stream = await openStream(svc.url, token, alice.conversationId);
  t.teardown(() => stream.close());
  t.ok(expiresAt * 1000 - Date.now() > 5_000, 'opened well before the token expires');
  const ms = await endsAfter(stream, expiresAt * 1000);
  t.ok(ms >= 0, `not before the token expired (${ms} ms after)`);
  t.ok(ms <= ENDS_WITHIN_MS, `the stream ended ${ms} ms after the token's exp`);
  t.same(lastEvent(stream), { event: 'end', data: { reason: 'credential_expired' } });
});

t.test('at most SSE_MAX_PER_COMPANY (50) streams per company: the 51st → 429, others unaffected', async (t) => {
  t.equal(svc.config.sseMaxPerCompany, 50, 'the default');
  const aliceToken = await createApiToken(svc.api, alice.user);
  const bobToken = await createApiToken(svc.api, bob.user);
  const open: Stream[] = [];
  t.teardown(() => open.forEach((s) => s.close()));
  for (let i = 0; i < 50; i++) {
    const s = await openStream(svc.url, aliceToken.token, alice.conversationId);
    if (s.status !== 200) t.fail(`stream ${i + 1} answered ${s.status}`);
    open.push(s);
  }
  const over = await openStream(svc.url, aliceToken.token, alice.conversationId);
  open.push(over);
  t.equal(over.status, 429, 'the 51st → 429');
  t.equal(over.body.error.code, 'RATE_LIMITED');
  t.match(over.headers.get('retry-after'), /^[1-9]\d*$/, 'with Retry-After');
  const session = await login(alice.user);
  const bySession = await openStream(svc.url, session.token, alice.conversationId);
  open.push(bySession);
  t.equal(bySession.status, 429, 'counted per company, whatever the credential');

  const bobs = await openStream(svc.url, bobToken.token, bob.conversationId);
  t.equal(bobs.status, 200, 'another company opens its own');
  open.push(bobs);
  t.equal((await svc.api('GET', '/api/agents', { token: aliceToken.token })).status, 200, 'the company\'s other requests are served');

  // A stream the client closes gives its place back.
  open.shift()!.close();
  const next = await eventually(async () => {
    const s = await openStream(svc.url, aliceToken.token, alice.conversationId);
    if (s.status === 200) return s;
    return null;
  }, 5_000, 'a place freed by a closed stream');
  open.push(next);
  t.pass('a closed stream frees its place');
});
