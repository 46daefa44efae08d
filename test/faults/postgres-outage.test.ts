import { randomBytes } from 'node:crypto';
import t from 'tap';
import { dropNatsPrefixAtEnd } from '../support/service.js';
import { startGateway } from '../../gateway/server.js';
import { loadConfig } from '../../lib/config.js';
import { openDatabase } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats } from '../../lib/nats.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { createTestDatabase } from '../support/database.js';
import { apiClient, signUp, TEST_NATS_URL } from '../support/service.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, waitForPartitions } from '../support/worker.js';
import { startTcpProxy } from './helpers.js';

/**
 * PostgreSQL becomes unreachable (the service reaches it through a TCP proxy in this test,
 * which is cut and restored; the machine's PostgreSQL is never touched). Webhooks of known
 * (cached) integrations are still accepted (200: queued in JetStream, no database on that
 * path), /readyz says PostgreSQL is down, and once the database is back every queued message
 * is answered exactly once, by the same processes.
 */
const { url: directUrl } = await createTestDatabase(t, 'pgoutage');
const pgTarget = new URL(directUrl);
const proxy = await startTcpProxy(t, pgTarget.hostname, Number(pgTarget.port || 5432));
const proxiedUrl = new URL(directUrl);
proxiedUrl.hostname = '127.0.0.1';
proxiedUrl.port = String(proxy.port);

const config = loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_URLS: 'true', DATABASE_URL: proxiedUrl.toString(), NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, PARTITIONS: '2' });
dropNatsPrefixAtEnd(t, { config }); // registered first: runs after the workers and gateways stop
const orm = await openDatabase({ url: config.databaseUrl, poolMax: 10 });
const nc = await connectNats(config.natsUrl, 'test-pgoutage');
const gateway = await startGateway({ config, orm, nc, logger: createLogger('silent') }, { port: 0, host: '127.0.0.1' });
t.teardown(async () => {
  await gateway.close();
  await nc.close();
  await orm.close(true);
});
const api = apiClient(gateway.url);
const svc = { api, orm, config };
const stub = await startChat2DeskStub(t);
const user = await signUp(api, 'Outage Co');
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(api, user.token));
const worker = await startTestWorker(t, svc, { workerId: 'pg-outage' });
await waitForPartitions([worker], 2);

const send = (id: string, clientId: string) =>
  deliver(api, integration.id, { message_id: id, text: `text ${id}`, client_id: clientId, channel_id: 'ch', transport: 'telegram' }, { secret: integration.webhookSecret! });
const repliesTo = (id: string) => stub.sent().filter((b) => b.text === `echo: text ${id}`).length;

t.test('PostgreSQL unreachable: webhooks still accepted and all answered once it returns', async (t) => {
  t.equal((await send('warm', 'c-0')).status, 200, 'a first webhook (the integration is now cached)');
  await eventually(async () => repliesTo('warm') === 1, 10_000, 'answered');

  proxy.cut();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) {
    const id = `down-${i}`;
    ids.push(id);
    const started = Date.now();
    const res = await send(id, `c-${i % 6}`);
    t.equal(res.status, 200, `${id} accepted (${Date.now() - started} ms)`);
  }
  const ready = await api('GET', '/readyz');
  t.equal(ready.status, 503, '/readyz 503');
  t.equal(ready.body.checks?.postgres, 'unreachable');
  t.equal(ready.body.checks?.nats, 'ok');
  await new Promise((r) => setTimeout(r, 3000)); // the worker keeps failing meanwhile
  t.equal(ids.reduce((n, id) => n + repliesTo(id), 0), 0, 'nothing answered while the database is away');

  proxy.restore();
  await eventually(async () => ids.every((id) => repliesTo(id) >= 1), 60_000, 'all answered after the database returned');
  await new Promise((r) => setTimeout(r, 1000));
  t.same(ids.filter((id) => repliesTo(id) !== 1), [], 'each answered exactly once');
  t.equal((await api('GET', '/readyz')).status, 200, 'ready again');
  // Conversations kept their order: each client's replies follow its messages.
  for (let c = 0; c < 6; c++) {
    const texts = stub.sent().filter((b) => b.client_id === `c-${c}` && /down-/.test(b.text)).map((b) => Number(/down-(\d+)/.exec(b.text)![1]));
    t.same(texts, [...texts].sort((a, b) => a - b), `c-${c}: replies in message order`);
  }
});
