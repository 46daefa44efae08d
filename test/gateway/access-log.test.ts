import { connect } from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { ACCESS_LOG_MESSAGE } from '../../gateway/http/request-observer.js';
import { createLogger } from '../../lib/logger.js';
import { installTracing } from '../../lib/tracing.js';
import { signUp, startTestService } from '../support/service.js';
import { createWebchatIntegration, openChat, UpgradeRefused } from '../support/webchat.js';
import { createAgent, createIntegration, deliver } from '../support/webhooks.js';
import { eventually } from '../support/worker.js';

/**
 * The access log: one `info` line per request (express routes, webhook POSTs on the fast
 * path, webchat upgrades) with method, route pattern, status, durationMs and traceId, and
 * nothing of the raw path or the query.
 */
type Line = Record<string, any>;
const lines: Line[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    lines.push(JSON.parse(String(chunk)));
    done();
  },
});
const svc = await startTestService(t, 'access_log', { logger: createLogger('info', sink) });
const user = await signUp(svc.api, 'Access Co');
const agentId = await createAgent(svc.api, user.token);
// At the (default, trusted) global helpdesk instance: creating it asks nobody.
const desk = await createIntegration(svc.api, user.token, { agentId, apiUrl: svc.config.helpdeskGlobalUrl, apiToken: 'chat2desk-api-token' });

const TRACE_ID = /^[0-9a-f]{32}$/;
const accessLines = () => lines.filter((l) => l.msg === ACCESS_LOG_MESSAGE);
/** The access line of an express request, found by its X-Request-Id (the trace id spelled as a UUID). */
const lineOf = (requestId: string | null): Promise<Line> => eventually(async () => accessLines().find((l) => l.traceId === requestId?.replaceAll('-', '')), 3_000, `the access line of ${requestId}`);
/** The next access line matching `match` written after `from` lines. */
const nextLine = (from: number, match: (l: Line) => boolean): Promise<Line> => eventually(async () => accessLines().slice(from).find(match), 3_000, 'an access line');
/** Sends `request` as raw bytes; resolves with all the gateway answered once it closes the connection. */
const rawAnswer = (request: string): Promise<string> =>
  new Promise((resolve) => {
    const socket = connect(svc.gateway.port, '127.0.0.1');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('close', () => resolve(text));
    socket.write(request);
  });
const payload = (messageId: number) => ({ hook_type: 'inbox', type: 'from_client', message_id: messageId, text: 'hi', client_id: 'c-1' });

t.test('an express route: its pattern, status, duration and trace id at info', async (t) => {
  const res = await svc.api('GET', `/api/agents/${agentId}?access_token=s3cret-query`, { token: user.token });
  t.equal(res.status, 200);
  const line = await lineOf(res.headers.get('x-request-id'));
  t.match(line, { level: 30, method: 'GET', route: '/api/agents/:id', status: 200, durationMs: Number, traceId: TRACE_ID });
  t.ok(line.durationMs >= 0, `durationMs ${line.durationMs}`);
  t.same(Object.keys(line).sort(), ['durationMs', 'level', 'method', 'msg', 'pid', 'route', 'status', 'time', 'traceId'], 'nothing else');
  t.notMatch(JSON.stringify(line), new RegExp(`/api/agents/${agentId}|s3cret`), 'neither the raw path nor the query');
});

t.test('two requests, two trace ids', async (t) => {
  const [a, b] = await Promise.all([svc.api('GET', '/healthz'), svc.api('GET', '/healthz')]);
  const [la, lb] = await Promise.all([lineOf(a.headers.get('x-request-id')), lineOf(b.headers.get('x-request-id'))]);
  t.match(la, { route: '/healthz', status: 200 });
  t.not(la.traceId, lb.traceId);
});

t.test('a path that matches no route: a null route, never the path', async (t) => {
  const res = await svc.api('GET', '/api/no-such-thing/private-path-123?q=secret-query-456', { token: user.token });
  t.equal(res.status, 404);
  t.match(await lineOf(res.headers.get('x-request-id')), { method: 'GET', route: null, status: 404, traceId: TRACE_ID });
  t.notMatch(JSON.stringify(lines), /private-path-123|secret-query-456/, 'no line holds the path or the query');
});

t.test('a webhook on the fast path: the route its metrics use, 200, a trace id', async (t) => {
  const from = accessLines().length;
  const res = await deliver(svc.api, desk.id, payload(1), { secret: desk.webhookSecret });
  t.equal(res.status, 200);
  t.match(await nextLine(from, (l) => l.method === 'POST'), { route: '/api/webhook/helpdesk/:id', status: 200, durationMs: Number, traceId: TRACE_ID });
  const metrics = (await svc.api('GET', '/metrics')).body as string;
  t.match(metrics, /http_request_duration_seconds_count\{method="POST",route="\/api\/webhook\/helpdesk\/:id",status="200"\} 1/, 'the same route in the metrics');

  const refused = await deliver(svc.api, desk.id, payload(2), { secret: 'not-the-secret-at-all-0123456789' });
  t.equal(refused.status, 401);
  t.match(await nextLine(from, (l) => l.status === 401), { route: '/api/webhook/helpdesk/:id' });

  const queried = await svc.api('POST', `/api/webhook/helpdesk/${desk.id}?token=s3cret-hook`, { rawBody: JSON.stringify(payload(3)), headers: { 'content-type': 'application/json' } });
  t.equal(queried.status, 401);
  const unknown = await deliver(svc.api, 2147483646, payload(4), { secret: desk.webhookSecret });
  t.equal(unknown.status, 404);
  t.match(await nextLine(from, (l) => l.status === 404), { method: 'POST', route: null }, 'an unknown integration names no route');
  t.notMatch(JSON.stringify(lines), /s3cret-hook|2147483646/, 'neither the query nor the raw path');
});

t.test('a webhook whose sender hangs up mid-body: a line marked aborted', async (t) => {
  const from = accessLines().length;
  const socket = connect(svc.gateway.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`POST /api/webhook/helpdesk/${desk.id} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"text":`);
  await new Promise((r) => setTimeout(r, 100));
  socket.destroy();
  t.match(await nextLine(from, (l) => l.method === 'POST'), { route: '/api/webhook/helpdesk/:id', aborted: true, traceId: TRACE_ID });
});

t.test('webchat upgrades: 101 or the refusal, under the socket route pattern', async (t) => {
  const chat = await createWebchatIntegration(svc.api, user.token, { agentId });
  const from = accessLines().length;
  const client = await openChat(t, svc.url, chat.id);
  t.match(await nextLine(from, (l) => l.status === 101), { method: 'GET', route: '/api/webchat/:integrationId/ws', durationMs: Number, traceId: TRACE_ID });
  await client.close();

  const missing = await openChat(t, svc.url, 2147483646).catch((err: unknown) => err);
  t.equal((missing as UpgradeRefused).status, 404);
  t.match(await nextLine(from, (l) => l.status === 404), { route: '/api/webchat/:integrationId/ws' }, 'an unknown integration on the socket route');

  // A malformed handshake (no Sec-WebSocket-Key) is refused by the gateway in the catalog's shape.
  const answer = await rawAnswer(`GET /api/webchat/${chat.id}/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
  t.match(answer, /^HTTP\/1\.1 400 /);
  t.match(answer, /"code":"VALIDATION_ERROR"/);
  t.match(await nextLine(from, (l) => l.status === 400), { route: '/api/webchat/:integrationId/ws' });

  const elsewhere = await rawAnswer('GET /api/elsewhere-777/ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n');
  t.match(elsewhere, /^HTTP\/1\.1 404 /);
  t.match(await nextLine(from, (l) => l.status === 404 && l.route === null), { method: 'GET' }, 'an upgrade elsewhere names no route');
  t.notMatch(JSON.stringify(lines), /elsewhere-777/);
});

t.test('with tracing on, a webhook\'s access line carries its span\'s trace id', async (t) => {
  const exporter = new InMemorySpanExporter();
  const tracing = installTracing({ serviceName: 'mas-access-log-test', exporter });
  t.teardown(() => tracing.shutdown());
  const from = accessLines().length;
  const res = await deliver(svc.api, desk.id, payload(5), { secret: desk.webhookSecret });
  t.equal(res.status, 200);
  const line = await nextLine(from, (l) => l.method === 'POST');
  const span = await eventually(async () => exporter.getFinishedSpans().find((s) => s.name === 'POST /api/webhook/helpdesk/:id'), 3_000, 'the webhook span');
  t.equal(line.traceId, span.spanContext().traceId, 'the span\'s trace id');
});

t.test('an INTERNAL_ERROR: its requestId is the access line\'s traceId as a UUID, and the error line carries both', async (t) => {
  // An unexpected database failure: the table the route reads is gone (put back afterwards).
  await svc.orm.em.getConnection().execute('alter table agents rename to agents_away');
  t.teardown(() => svc.orm.em.getConnection().execute('alter table agents_away rename to agents'));
  const res = await svc.api('GET', '/api/agents', { token: user.token });
  t.equal(res.status, 500);
  const requestId: string = res.body.error.requestId;
  t.match(requestId, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, 'still a UUID');
  t.match(await lineOf(requestId), { route: '/api/agents', status: 500 });
  t.match(lines.find((l) => l.msg === 'unhandled error'), { level: 50, requestId, traceId: requestId.replaceAll('-', '') });
});
