import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import t from 'tap';
import { startGateway } from '../../gateway/server.js';
import { loadConfig } from '../../lib/config.js';
import { ensureDatabase, migrate, openDatabase } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import { connectNats } from '../../lib/nats.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { apiClient, signUp, TEST_NATS_URL } from '../support/service.js';
import { deliver, dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { untilIdle } from '../support/worker.js';
import { TOPICS } from './backlog.js';
import { pool, sleep, startPrivatePostgres, startWorkerProcess, waitUntil } from './helpers.js';

/**
 * PostgreSQL restarted under traffic (a real restart of a private instance, not a cut
 * proxy): webhooks of known integrations are still accepted meanwhile (the gateway's cache
 * needs no query), and once PostgreSQL is back every message is answered exactly once, with
 * no process restarted by hand.
 */
const pg = await startPrivatePostgres(t);
const databaseUrl = `${pg.baseUrl}/mas_pg_restart`;
await ensureDatabase(databaseUrl);
const orm = await openDatabase({ url: databaseUrl, poolMax: 5 });
await migrate(orm);
const config = loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_URLS: 'true', DATABASE_URL: databaseUrl, NATS_URL: TEST_NATS_URL, NATS_PREFIX: `t${randomBytes(4).toString('hex')}`, PARTITIONS: '4' });
const nc = await connectNats(config.natsUrl, 'test-pg-restart');
const gateway = await startGateway({ config, orm, nc, logger: createLogger(process.env.TEST_LOG_LEVEL ?? 'silent') }, { port: 0, host: '127.0.0.1' });
t.teardown(async () => {
  await gateway.close();
  await nc.close();
  await orm.close(true);
});
dropNatsPrefixAtEnd(t, { config });
const api = apiClient(gateway.url);
const stub = await startChat2DeskStub(t);
stub.setSendLatency(150);

const user = await signUp(api, 'Restart Co');
const kb = (await api('POST', '/api/knowledge-bases', { token: user.token, body: { name: 'Fruit' } })).body.knowledgeBase;
for (const [k, topic] of TOPICS.entries()) await addDocument(api, user.token, kb.id, { title: `About ${topic}`, content: `The ${topic} answer is here [k${k}].` });
const agent = (await api('POST', '/api/agents', { token: user.token, body: { name: 'Fruit bot', knowledgeBaseId: kb.id } })).body.agent;
const integration = (await api('POST', '/api/integrations', { token: user.token, body: { type: 'helpdesk', name: 'Desk', agentId: agent.id, apiUrl: stub.url, apiToken: stub.token } })).body.integration;
const worker = startWorkerProcess(t, { DATABASE_URL: databaseUrl, NATS_URL: config.natsUrl, NATS_PREFIX: config.natsPrefix, PARTITIONS: '4', LOG_LEVEL: 'info' });

const CUSTOMERS = 50;
const ROUNDS = 4;
const clients = Array.from({ length: CUSTOMERS }, (_, c) => `client-${c}`);

t.test('PostgreSQL restarted under traffic: webhooks accepted throughout, every message answered once', async (t) => {
  await waitUntil(() => /worker started/.test(worker.output()), 30_000, 'the worker started');
  // The integration is in the gateway's cache from the first webhook on.
  const statuses: number[] = [];
  const send = (round: number) =>
    pool(clients, 8, async (clientId, i) => {
      const res = await deliver(api, integration.id, { message_id: `${clientId}-${round}`, type: 'from_client', text: `Tell me about ${TOPICS[(i + round) % TOPICS.length]}`, client_id: clientId, channel_id: 'ch-1', transport: 'telegram' }, { secret: integration.webhookSecret });
      statuses.push(res.status);
    });
  await send(0);
  await waitUntil(() => stub.history.length >= CUSTOMERS / 2, 30_000, 'traffic flowing');

  const restart = (async () => {
    await pg.stop();
    await sleep(4000);
    await pg.start();
  })();
  for (let round = 1; round < ROUNDS; round++) {
    await send(round);
    await sleep(1000);
  }
  await restart;
  t.same([...new Set(statuses)], [200], `all ${statuses.length} webhooks were accepted, during the restart too`);

  try {
    await waitUntil(() => clients.every((c) => stub.delivered(c).length >= ROUNDS), 120_000, 'every message answered');
  } catch (err) {
    const short = clients.filter((c) => stub.delivered(c).length < ROUNDS);
    t.comment(`${short.length} customers short: ${short.slice(0, 5).map((c) => `${c}=${stub.delivered(c).length}`).join(', ')}`);
    const db = orm.em.fork().getConnection();
    t.comment(JSON.stringify(await db.execute(`select status, count(*)::int from outbox group by status`)));
    t.comment(JSON.stringify(await db.execute(`select count(*)::int as customer_messages from conversation_messages where role = 'customer'`)));
    t.comment(worker.output().split('\n').filter((l) => !/retrying it in place/.test(l)).slice(-30).join('\n'));
    if (process.env.FAULT_LOG_DIR) await writeFile(`${process.env.FAULT_LOG_DIR}/postgres-restart-worker.log`, worker.output());
    throw err;
  }
  await untilIdle({ orm, nc, config }, 60_000);
  const counts = clients.map((c) => stub.delivered(c).length);
  t.equal(counts.filter((n) => n > ROUNDS).length, 0, 'no message answered twice');
  t.equal(counts.filter((n) => n < ROUNDS).length, 0, 'none left unanswered');
  t.equal(worker.child.exitCode, null, 'the worker was never restarted');
});
