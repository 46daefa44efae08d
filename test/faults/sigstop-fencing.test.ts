import t from 'tap';
import { deliver } from '../support/webhooks.js';
import { untilIdle } from '../support/worker.js';
import { setupBacklog, TOPICS } from './backlog.js';
import { pool, sleep, startWorkerProcess, waitUntil } from './helpers.js';

/**
 * A worker that stalls (SIGSTOP: a frozen VM, a GC pause of minutes) while its sends are in
 * flight loses its leases; another worker takes its partitions over and answers its
 * conversations. When the stalled worker resumes it must send nothing: its leases are
 * invalid by its own clock before its first renewal even fails, and every write it attempts
 * is fenced by the epoch the rows now carry. Counted after any claim could have expired.
 */
const CUSTOMERS = 100;
const CLAIM_MS = 30_000;
const b = await setupBacklog(t, 'sigstop', { conversations: CUSTOMERS, perConversation: 0, partitions: 4 });
b.stub.setSendLatency(1000);
const clients = Array.from({ length: CUSTOMERS }, (_, c) => `client-${c}`);

const stalled = startWorkerProcess(t, { ...b.workerEnv, LOG_LEVEL: 'info' });
const other = startWorkerProcess(t, { ...b.workerEnv, LOG_LEVEL: 'info' });

t.test('a stalled worker sends nothing after it resumes', async (t) => {
  // Both workers own partitions before the traffic starts.
  await waitUntil(() => /worker started/.test(stalled.output()) && /worker started/.test(other.output()), 30_000, 'both workers started');
  await sleep(3000);
  // Customers keep writing (25 a second) while the worker stalls: it has sends in flight,
  // messages fetched and not yet committed, and messages still queued for its partitions.
  const writing = pool(clients, 1, async (clientId, i) => {
    const res = await deliver(b.svc.api, b.integrationId, { message_id: `${clientId}-1`, type: 'from_client', text: `Tell me about ${TOPICS[i % TOPICS.length]}`, client_id: clientId, channel_id: 'ch-1', transport: 'telegram' }, { secret: b.secret });
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    await sleep(40);
  });
  await waitUntil(() => b.stub.history.length >= 30, 30_000, 'sends under way');
  stalled.signal('SIGSTOP');
  const stoppedAt = Date.now();
  t.comment(`stalled with ${b.stub.history.length} of ${CUSTOMERS} answered`);
  await writing;
  try {
    await waitUntil(() => clients.every((c) => b.stub.delivered(c).length >= 1), 40_000, 'every customer answered by the other worker');
  } catch (err) {
    const missing = clients.filter((c) => b.stub.delivered(c).length === 0);
    t.comment(`missing ${missing.length}: ${missing.slice(0, 10).join(', ')}`);
    const db = b.svc.orm.em.fork().getConnection();
    t.comment(JSON.stringify(await db.execute(`select status, count(*)::int from outbox group by status`)));
    t.comment(JSON.stringify(await db.execute(`select count(*)::int as convs, count(*) filter (where state->>'active' = 'answering')::int as answering from conversations`)));
    t.comment(JSON.stringify(await db.execute(`select c.client_id, c.partition from conversations c where not exists (select 1 from outbox o where o.conversation_id = c.id) limit 5`)));
    t.comment(other.output().split('\n').filter((l) => !/reconciled an uncertain/.test(l)).slice(-40).join('\n'));
    throw err;
  }
  t.comment(`answered ${Date.now() - stoppedAt} ms after the stall`);
  await untilIdle(b.svc, 30_000);

  stalled.signal('SIGCONT');
  const resumedAt = Date.now();
  await sleep(Math.max(5000, stoppedAt + CLAIM_MS + 2000 - Date.now()));
  await untilIdle(b.svc, 30_000);
  const afterResume = b.stub.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.at >= resumedAt);
  t.same(afterResume.map((r) => r.body.client_id), [], 'nothing was sent after the stalled worker resumed');
  const counts = clients.map((c) => b.stub.delivered(c).length);
  t.equal(counts.filter((n) => n === 0).length, 0, 'no customer left without an answer');
  t.equal(counts.filter((n) => n > 1).length, 0, 'no customer answered twice');
  t.equal(stalled.child.exitCode, null, 'the stalled worker is still running (it stepped back on its own)');
});
