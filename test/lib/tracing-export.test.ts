import { createServer } from 'node:http';
import t from 'tap';
import { jetstreamManager } from '@nats-io/jetstream';
import { loadConfig } from '../../lib/config.js';
import { ConfigError } from '../../lib/errors.js';
import { inSpan, installTracing, tracingEnabled } from '../../lib/tracing.js';
import { signUp, startTestService } from '../support/service.js';
import { listenLocal, readBody } from '../support/local-server.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration } from '../support/worker.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { streamNames } from '../../lib/streams.js';

// Tracing off first (no OTEL_EXPORTER_OTLP_ENDPOINT), then on against a local OTLP/HTTP
// collector stand-in: the exporter is an outside service.
const svc = await startTestService(t, 'tracing_export', { env: { PARTITIONS: '1' } });
const helpdesk = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Export Co');
const integration = await createHelpdeskIntegration(svc, user, helpdesk);
const jsm = await jetstreamManager(svc.nc);
const inbound = streamNames(svc.config.natsPrefix).inboundStream;

const lastInbound = async () => {
  const info = await jsm.streams.info(inbound);
  return jsm.streams.getMessage(inbound, { seq: info.state.last_seq });
};

t.test('without OTEL_EXPORTER_OTLP_ENDPOINT: no tracing, no trace headers on the queue', async (t) => {
  t.equal(svc.config.tracing, undefined, 'the configuration has no tracing');
  t.notOk(tracingEnabled());
  let given: unknown = 'unset';
  await inSpan('nothing', {}, async (span) => {
    given = span;
  });
  t.equal(given, undefined, 'no span is made');
  const res = await deliver(svc.api, integration.id, { hook_type: 'inbox', type: 'from_client', message_id: 1, text: 'hi', client_id: 10 }, { secret: integration.webhookSecret });
  t.equal(res.status, 200);
  const stored = await lastInbound();
  t.notOk(stored?.header?.get('traceparent'), 'the envelope carries no traceparent');
});

t.test('OTEL_* variables: validated, headers decoded, secrets never echoed', async (t) => {
  const base = { NODE_ENV: 'test' };
  const c = loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/', OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20s3cret, x-team = ops' });
  t.same(c.tracing, { url: 'http://collector:4318/v1/traces', headers: { authorization: 'Bearer s3cret', 'x-team': 'ops' }, serviceName: 'messaging-automation' });
  const only = loadConfig({ ...base, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example/api/traces', OTEL_SERVICE_NAME: 'support-bot' });
  t.same(only.tracing, { url: 'https://otlp.example/api/traces', headers: {}, serviceName: 'support-bot' });
  t.throws(() => loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }), ConfigError, 'an endpoint must be an http(s) URL');
  try {
    loadConfig({ ...base, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_HEADERS: 'no-equals-sign-s3cret' });
    t.fail('a malformed header list is refused');
  } catch (err) {
    t.type(err, ConfigError);
    t.match((err as Error).message, /^OTEL_EXPORTER_OTLP_HEADERS/);
    t.notMatch((err as Error).message, /s3cret/, 'the value is not repeated');
  }
});

t.test('with an endpoint: spans reach the collector over OTLP/HTTP with its headers, and the queue carries traceparent', async (t) => {
  const posts: { path: string; headers: Record<string, unknown>; body: any }[] = [];
  const collector = createServer(async (req, res) => {
    posts.push({ path: req.url ?? '', headers: req.headers, body: await readBody(req) });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const { url } = await listenLocal(collector, t);
  const config = loadConfig({ NODE_ENV: 'test', OTEL_EXPORTER_OTLP_ENDPOINT: url, OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20collector-key' });
  const tracing = installTracing({ serviceName: `${config.tracing!.serviceName}-gateway`, url: config.tracing!.url, headers: config.tracing!.headers });
  t.teardown(() => tracing.shutdown());

  const res = await deliver(svc.api, integration.id, { hook_type: 'inbox', type: 'from_client', message_id: 2, text: 'traced', client_id: 11 }, { secret: integration.webhookSecret });
  t.equal(res.status, 200);
  const traceparent = (await lastInbound())?.header?.get('traceparent') ?? '';
  t.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'the envelope carries a W3C traceparent');

  await tracing.shutdown(); // flushes the batch
  t.ok(posts.length >= 1, 'the collector was called');
  t.equal(posts[0]!.path, '/v1/traces');
  t.equal(posts[0]!.headers.authorization, 'Bearer collector-key');
  const body = JSON.stringify(posts.map((p) => p.body));
  t.match(body, /POST \/api\/webhook\/helpdesk\/:id/, 'the webhook span was exported');
  t.match(body, /inbound publish/);
  t.match(body, /messaging-automation-gateway/, 'under the service name');
  t.ok(body.includes(traceparent.split('-')[1]!), 'the exported trace is the one in the header');
  t.notOk(tracingEnabled(), 'off again after shutdown');
});
