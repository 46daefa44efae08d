import t from 'tap';
import { checkExactlyOnceInOrder, setupBacklog } from './backlog.js';
import { untilIdle } from '../support/worker.js';
import { sleep, startWorkerProcess, waitUntil } from './helpers.js';

const CLAIM_MS = 30_000;

/**
 * A worker process is killed with SIGKILL in the middle of a 1,000-message backlog (100
 * conversations × 10 messages) shared by two worker processes. The survivor takes over the
 * dead worker's partitions (lease expiry), its unacknowledged messages and its uncertain
 * sends (reconciled against the helpdesk's history); every customer message is answered
 * exactly once, not one repeated, and each conversation's replies reach the helpdesk in the
 * order of its messages.
 */
const b = await setupBacklog(t, 'sigkill', { conversations: 100, perConversation: 10, partitions: 2 });
const started = Date.now();
await b.publish();
t.comment(`backlog of 1000 published in ${Date.now() - started} ms`);

const a = startWorkerProcess(t, b.workerEnv);
const survivor = startWorkerProcess(t, b.workerEnv);

t.test('SIGKILL mid-backlog: all answered exactly once, in order', async (t) => {
  await waitUntil(() => b.total() >= 250, 60_000, 'first 250 replies');
  a.signal('SIGKILL');
  const killedAt = Date.now();
  const atKill = b.total();
  t.ok(atKill < 1000, `killed mid-backlog (${atKill} replies sent)`);
  const { signal } = await a.exited;
  t.equal(signal, 'SIGKILL', 'the worker died at once');
  try {
    await waitUntil(() => b.answered() >= 1000, 90_000, 'all 1000 messages answered');
  } catch (err) {
    t.comment(survivor.output().slice(-3000));
    throw err;
  }
  // Counted once nothing is left to do and any claim of the killed worker could have expired.
  await sleep(Math.max(0, killedAt + CLAIM_MS + 2000 - Date.now()));
  await untilIdle(b.svc, 30_000);
  checkExactlyOnceInOrder(t, b);
  t.comment(`total ${Date.now() - started} ms`);
});
