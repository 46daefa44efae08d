import { createServer } from 'node:net';
import t from 'tap';
import { startGateway } from '../../gateway/server.js';
import { createLogger } from '../../lib/logger.js';
import { startMetricsServer } from '../../lib/metrics-server.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';
import { startWorkerProcess, waitUntil } from '../faults/helpers.js';

/**
 * What an operator scraping a worker sees: model-call durations in buckets that reach a
 * minute, the inbound queue of each owned partition, the outbox by state, model places in
 * use and waiting; nothing that names a company. One place for model calls
 * (MODEL_MAX_CONCURRENCY=1) and a model that takes a second make a backlog to look at.
 */
const svc = await startTestService(t, 'worker_metrics', { env: { PARTITIONS: '2', MODEL_MAX_CONCURRENCY: '1' } });
const helpdesk = await startChat2DeskStub(t);
helpdesk.setSendLatency(150);
const llm = await startOpenAiStub(t);
llm.respond((req) => ({ delayMs: 1000, content: `Model says: ${llm.lastUserText(req)}` }));
const worker = await startTestWorker(t, svc, { workerId: 'metrics' });
await waitForPartitions([worker], 2);
const logger = createLogger('silent');
const TOKEN = 'metrics-token-0123456789';
const served = await startMetricsServer({ registry: worker.registry, token: TOKEN, logger }, { port: 0, host: '127.0.0.1' });
t.teardown(() => served.close());

const scrape = async (url = served.url, token: string | null = TOKEN): Promise<string> => {
  const res = await fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  return res.text();
};
/** Samples of one metric: labels text → value. */
const samples = (text: string, name: string): Map<string, number> => {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}(\\{[^}]*\\})? (\\S+)$`).exec(line);
    if (m) out.set(m[1] ?? '', Number(m[2]));
  }
  return out;
};
const total = (text: string, name: string) => [...samples(text, name).values()].reduce((a, b) => a + b, 0);

const user = await signUp(svc.api, 'Metrics Co');
const agent = (await svc.api('POST', '/api/agents', { token: user.token, body: { name: 'LLM', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: llm.baseUrl, apiKey: 'sk-metrics' } } })).body.agent;
const integration = await createHelpdeskIntegration(svc, user, helpdesk, 'Desk', agent.id);
const customers = ['m-1', 'm-2', 'm-3', 'm-4'];

t.test('a backlog shows in the figures while it lasts, and they settle to zero once every customer is answered', async (t) => {
  for (const c of customers) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, c, `question of ${c}`));
  await llm.waitFor((r) => r.length >= 1);
  let during = '';
  await waitUntil(async () => {
    during = await scrape();
    return total(during, 'model_calls_waiting') >= 1;
  }, 10_000, 'calls waiting for the one place');
  t.equal(total(during, 'model_calls_in_flight'), 1, 'one call holds the one place');
  t.equal(total(during, 'model_call_companies_waiting'), 1, 'one company waits (counted, not named)');
  t.ok(total(during, 'inbound_queue_depth') >= 2, `the messages not yet processed show in the partitions' queue depth (${total(during, 'inbound_queue_depth')})`);
  t.same([...samples(during, 'inbound_queue_depth').keys()].sort(), ['{partition="0"}', '{partition="1"}'], 'one series per owned partition');
  t.equal(total(during, 'partitions_owned'), 2);

  await helpdesk.waitFor(() => customers.every((c) => helpdesk.sent().some((s) => s.client_id === c)), 20_000);
  await untilIdle(svc);
  // The figures read from NATS and PostgreSQL are at most METRICS_READ_EVERY_MS old.
  let after = '';
  await waitUntil(async () => {
    after = await scrape();
    return total(after, 'inbound_queue_depth') === 0 && samples(after, 'outbox_rows').size === 3 && total(after, 'outbox_rows') === 0;
  }, 15_000, 'the figures settle');
  t.equal(samples(after, 'model_call_duration_seconds_count').get('{outcome="reply"}'), customers.length, 'one observation per model answer');
  t.ok((samples(after, 'model_call_duration_seconds_sum').get('{outcome="reply"}') ?? 0) >= customers.length * 0.9, 'each took the model stand-in\'s second');
  const buckets = [...samples(after, 'model_call_duration_seconds_bucket').keys()].map((k) => /le="([^"]+)"/.exec(k)?.[1]);
  t.ok(buckets.includes('60') && buckets.includes('30') && buckets.includes('1'), `buckets fit model calls, up to a minute (${buckets.join(', ')})`);
  t.equal(samples(after, 'model_call_duration_seconds_bucket').get('{le="0.5",outcome="reply"}'), 0, 'no one-second call counted under half a second');
  t.same(Object.fromEntries(samples(after, 'outbox_rows')), { '{state="pending"}': 0, '{state="sending"}': 0, '{state="uncertain"}': 0 }, 'every reply settled');
  t.equal(total(after, 'inbound_queue_depth'), 0, 'nothing left in the queues');
  t.equal(total(after, 'model_calls_waiting'), 0);
  const seriesLines = after.split('\n').filter((l) => !l.startsWith('#'));
  t.notOk(seriesLines.some((l) => /\{[^}]*(compan|integration|client)/i.test(l) || /Metrics Co|sk-metrics/.test(l)), 'no label names a company, an integration or a customer; no key shows');
});

t.test('the worker figures need METRICS_TOKEN when it is set; only /metrics is served', async (t) => {
  t.equal((await fetch(`${served.url}/metrics`)).status, 401, 'no token: 401');
  t.equal((await fetch(`${served.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status, 401, 'a wrong token: 401');
  const other = await fetch(`${served.url}/api/agents`, { headers: { authorization: `Bearer ${TOKEN}` } });
  t.equal(other.status, 404);
  t.equal((await other.json()).error.code, 'NOT_FOUND');
});

t.test('one process running both roles answers the worker figures on the gateway /metrics', async (t) => {
  const gateway = await startGateway({ config: svc.config, orm: svc.orm, nc: svc.nc, logger, registry: worker.registry }, { port: 0, host: '127.0.0.1' });
  t.teardown(() => gateway.close());
  await fetch(`${gateway.url}/healthz`);
  const text = await scrape(gateway.url, null);
  t.ok(samples(text, 'model_call_duration_seconds_count').size > 0, 'the worker histogram is there');
  t.ok([...samples(text, 'http_request_duration_seconds_count').keys()].some((k) => k.includes('route="/healthz"')), 'beside the request durations');
});

t.test('a worker process started with METRICS_PORT serves its figures there', async (t) => {
  await worker.close();
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const child = startWorkerProcess(t, { DATABASE_URL: svc.config.databaseUrl, NATS_URL: svc.config.natsUrl, NATS_PREFIX: svc.config.natsPrefix, PARTITIONS: '2', METRICS_PORT: String(port), LOG_LEVEL: 'info' });
  await waitUntil(() => /worker metrics listening/.test(child.output()), 30_000, 'the worker metrics listener');
  const text = await scrape(`http://127.0.0.1:${port}`, null);
  t.ok(samples(text, 'partitions_owned').size === 1, 'its own figures');
  t.ok(samples(text, 'process_resident_memory_bytes').size === 1, 'and the process figures');
  child.signal('SIGTERM');
  t.equal((await child.exited).code, 0, 'stops cleanly, its listener with it');
});
