import t from 'tap';
import { checkExactlyOnceInOrder, setupBacklog } from './backlog.js';
import { sleep, startWorkerProcess, waitUntil } from './helpers.js';

/**
 * A worker process is killed with SIGKILL in the middle of a 1,000-message backlog (100
 * conversations × 10 messages) shared by two worker processes. The survivor takes over the
 * dead worker's partitions (lease expiry) and its unacknowledged messages; every customer
 * message is answered exactly once, and each conversation's replies reach the helpdesk in
 * the order of its messages.
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
  await sleep(1500); // nothing more arrives
  // A killed dispatcher may have sent rows it had no time to record: at most one per
  // conversation (a conversation's next row waits for the previous one), so at most one
  // per conversation of the backlog is repeated.
  checkExactlyOnceInOrder(t, b, b.conversations);
  t.comment(`total ${Date.now() - started} ms`);
});
