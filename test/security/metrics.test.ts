import { randomBytes } from 'node:crypto';
import t from 'tap';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-node';
import { createGatewayApp } from '../../gateway/app.js';
import { listAppRoutes } from '../../gateway/http/route-table.js';
import { createLogger } from '../../lib/logger.js';
import { installTracing } from '../../lib/tracing.js';
import { signUp, startTestService } from '../support/service.js';
import { createAgent, createIntegration, deliver } from '../support/webhooks.js';

/**
 * /metrics labels requests by route pattern, never by raw path: clients inventing paths
 * (junk under an authenticated router answering 401 before any route runs, unknown paths
 * answering 404, bodies refused with 400 before routing) cannot grow the label set, which is
 * bounded by the app's route table. The same holds for span names (the webhook fast path
 * names its span by the connector's pattern, or "unmatched"). METRICS_TOKEN, when set,
 * closes /metrics to anyone without it, and only it shows /readyz's details.
 */
const svc = await startTestService(t, 'metrics');
const user = await signUp(svc.api, 'Metrics Co');
const JUNK = `zq${randomBytes(3).toString('hex')}`;
const metrics = async () => {
  const res = await svc.api('GET', '/metrics');
  t.equal(res.status, 200);
  return res.body as string;
};

/** One junk request of each kind; `n` makes its path unique. Answers 401, 404 or 400. */
const JUNK_KINDS: [string, (n: number) => Promise<number>][] = [
  ['401 under an authenticated router, no route matches', async (n) => (await svc.api('GET', `/api/api-tokens/${JUNK}${n}/deeper`)).status],
  ['401 on a route with a junk id', async (n) => (await svc.api('GET', `/api/agents/${JUNK}${n}`)).status],
  ['404 on a route with a junk id, authenticated', async (n) => (await svc.api('GET', `/api/agents/${JUNK}${n}`, { token: user.token })).status],
  ['404 on no route at all', async (n) => (await svc.api('GET', `/api/${JUNK}${n}/x`)).status],
  ['404 outside the API', async (n) => (await svc.api('GET', `/${JUNK}${n}.php`)).status],
  ['400: malformed JSON refused before routing', async (n) => (await svc.api('POST', `/api/${JUNK}${n}`, { rawBody: '{"x":', headers: { 'content-type': 'application/json' } })).status],
  ['404 on the webhook fast path, an invented connector', async (n) => (await deliver(svc.api, n, { hook_type: 'inbox' }, { type: `${JUNK}${n}` })).status],
  ['404 on the webhook fast path, a junk integration id', async (n) => (await deliver(svc.api, `${JUNK}${n}`, { hook_type: 'inbox' })).status],
];

t.test('300 junk paths do not grow /metrics, and none of them appears in it', async (t) => {
  // The label sets each kind produces exist after one request: from then on only counts change.
  const statuses = new Set<number>();
  for (const [, send] of JUNK_KINDS) statuses.add(await send(0));
  t.same([...statuses].sort(), [400, 401, 404], 'the junk answers 400, 401 and 404');
  await metrics(); // and the series of GET /metrics itself
  const before = await metrics();
  for (let n = 1; n <= 300; n++) await JUNK_KINDS[n % JUNK_KINDS.length]![1](n);
  const after = await metrics();
  t.notOk(after.includes(JUNK), 'no junk path appears in /metrics');
  // Request series: the same label sets as before, only their counts and sums changed.
  const requestSeries = (text: string) => text.split('\n').filter((l) => l.startsWith('http_request_duration_seconds'));
  const seriesOf = (text: string) => requestSeries(text).map((l) => l.replace(/ \S+$/, ''));
  t.same(seriesOf(after), seriesOf(before), 'no new request series');
  const requestGrowth = Buffer.byteLength(requestSeries(after).join('\n')) - Buffer.byteLength(requestSeries(before).join('\n'));
  t.ok(requestGrowth <= 1024, `the request series grew by ${requestGrowth} bytes (a few more digits per count)`);
  // The whole page may also gain the runtime's own bounded series (a GC kind seen for the first time: ~1 KB each).
  const growth = Buffer.byteLength(after) - Buffer.byteLength(before);
  t.ok(growth <= 8 * 1024, `/metrics grew by ${growth} bytes after 300 junk requests (was ${Buffer.byteLength(before)})`);
});

t.test('every route label is a route pattern of the app, or "unmatched"', async (t) => {
  const { app, close } = createGatewayApp({ config: svc.config, orm: svc.orm, nc: svc.nc, logger: createLogger('silent') });
  t.teardown(close);
  const patterns = new Set(listAppRoutes(app).map((r) => r.path));
  t.ok(patterns.has('/api/agents/:id') && patterns.has('/metrics'), `the route table has the app's routes (${patterns.size})`);
  // Real routes keep their pattern label.
  await svc.api('GET', `/api/agents/${JUNK}`, { token: user.token });
  await svc.api('GET', '/api/billing', { token: user.token });
  const text = await metrics();
  const labels = new Set([...text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]!));
  const webhookFastPath = /^\/api\/webhook\/helpdesk\/:id$/;
  const stray = [...labels].filter((l) => l !== 'unmatched' && !patterns.has(l) && !webhookFastPath.test(l));
  t.same(stray, [], 'no label outside the route table');
  t.match(text, /http_request_duration_seconds_count\{method="GET",route="\/api\/agents\/:id",status="404"\} [1-9]/, 'a junk id on a real route is counted under its pattern');
  t.match(text, /http_request_duration_seconds_count\{method="GET",route="\/api\/billing",status="200"\} [1-9]/);
  t.match(text, /http_request_duration_seconds_count\{method="GET",route="unmatched",status="404"\} [1-9]/, 'paths that match no route are "unmatched"');
});

t.test('span names: route patterns only, whatever connector and id a webhook names', async (t) => {
  const exporter = new InMemorySpanExporter();
  const tracing = installTracing({ serviceName: 'mas-metrics-test', exporter });
  t.teardown(() => tracing.shutdown());
  const agentId = await createAgent(svc.api, user.token);
  const desk = await createIntegration(svc.api, user.token, { agentId, apiUrl: svc.config.helpdeskGlobalUrl, apiToken: 'chat2desk-api-token' });
  const statuses = new Set<number>();
  for (let n = 1; n <= 60; n++) {
    const type = n % 3 === 0 ? 'helpdesk' : `${JUNK}c${n}`;
    const id = n % 2 === 0 ? desk.id : `${JUNK}i${n}`;
    statuses.add((await deliver(svc.api, id, { hook_type: 'outbox' }, { type, secret: desk.webhookSecret })).status);
  }
  t.same([...statuses].sort(), [200, 404], 'known and invented connectors and ids were sent');
  const spans = exporter.getFinishedSpans().filter((s) => s.kind === 1 /* SERVER */);
  t.ok(spans.length >= 60, `${spans.length} server spans`);
  const names = new Set(spans.map((s) => s.name));
  t.same([...names].sort(), ['POST /api/webhook/helpdesk/:id', 'POST unmatched'], 'two span names for 60 different paths');
  t.notOk(JSON.stringify([...names, ...spans.map((s) => s.attributes['http.route'] ?? '')]).includes(JUNK), 'no invented segment in a span name or route');
});

t.test('/readyz answers whether it is ready, and nothing internal without the metrics token', async (t) => {
  const open = await svc.api('GET', '/readyz');
  t.equal(open.status, 200);
  t.same(open.body, { ok: true, checks: { postgres: 'ok', nats: 'ok' } }, 'without METRICS_TOKEN set: only what the contract says');
  t.notOk(JSON.stringify(open.body).includes(svc.config.natsPrefix), 'no stream names');

  const token = randomBytes(24).toString('hex');
  const closed = await startTestService(t, 'readyztok', { env: { METRICS_TOKEN: token } });
  for (const authorization of [undefined, `Bearer ${token.slice(1)}`]) {
    const anonymous = await closed.api('GET', '/readyz', { headers: authorization ? { authorization } : {} });
    t.same(anonymous.body, { ok: true, checks: { postgres: 'ok', nats: 'ok' } }, authorization ? 'a wrong token: no details' : 'no token: no details');
  }
  const detailed = await closed.api('GET', '/readyz', { token });
  t.equal(detailed.status, 200);
  // A server outside any cluster names no leader (2.9) or itself (2.10): either is the one replica.
  const inbound = `${closed.config.natsPrefix}_INBOUND`;
  const leader = detailed.body.checks?.natsReplicas?.streams?.[inbound]?.leader;
  t.ok(leader === null || typeof leader === 'string', `the stream's leader: ${leader}`);
  t.same(detailed.body.checks, {
    postgres: 'ok',
    nats: 'ok',
    natsReplicas: { status: 'ok', expected: 1, streams: { [inbound]: { replicas: 1, current: 1, leader } } },
  }, 'the metrics token sees how the streams are replicated');
});

t.test('METRICS_TOKEN: /metrics needs the bearer token when it is set', async (t) => {
  const token = randomBytes(24).toString('hex');
  const closed = await startTestService(t, 'metricstok', { env: { METRICS_TOKEN: token } });
  const anonymous = await closed.api('GET', '/metrics');
  t.equal(anonymous.status, 401, 'no token → 401');
  t.equal(anonymous.body.error.code, 'UNAUTHORIZED');
  t.notMatch(JSON.stringify(anonymous.body), /http_request_duration/, 'and no metrics');
  const wrong = await closed.api('GET', '/metrics', { token: token.slice(0, -1) + (token.endsWith('0') ? '1' : '0') });
  t.equal(wrong.status, 401, 'a wrong token → 401');
  t.equal((await closed.api('GET', '/metrics', { headers: { authorization: token } })).status, 401, 'not as a Bearer token → 401');
  const ok = await closed.api('GET', '/metrics', { token });
  t.equal(ok.status, 200, 'the right token → 200');
  t.match(ok.body, /http_request_duration_seconds_count\{method="GET",route="\/metrics",status="401"\} 3/, 'the refusals are counted');
  t.equal((await closed.api('GET', '/healthz')).status, 200, '/healthz stays open');
  t.equal((await svc.api('GET', '/metrics')).status, 200, 'without METRICS_TOKEN /metrics is open');
});
