import t from 'tap';
import { checkExactlyOnceInOrder, setupBacklog } from './backlog.js';
import { untilIdle } from '../support/worker.js';
import { startWorkerProcess, waitUntil } from './helpers.js';

/**
 * SIGTERM during load: a worker process stops in an orderly way in the middle of a backlog
 * (2,000 messages, 200 conversations) it shares with another worker. It finishes or returns its
 * in-flight work and releases its partitions; the other worker finishes the backlog. Every
 * customer message is answered exactly once (no repeat allowed here: nothing was cut
 * mid-send), in order. Then a restarted worker joins and takes its share without a repeat.
 */
const b = await setupBacklog(t, 'sigterm', { conversations: 200, perConversation: 10, partitions: 4 });
const TOTAL = 2000;
const started = Date.now();
await b.publish();

const a = startWorkerProcess(t, b.workerEnv);
const other = startWorkerProcess(t, b.workerEnv);

t.test('SIGTERM mid-backlog: nothing lost, nothing doubled, in order', async (t) => {
  await waitUntil(() => b.total() >= 150, 60_000, 'first 150 replies');
  a.signal('SIGTERM');
  const atSignal = b.total();
  t.ok(atSignal < TOTAL, `signalled mid-backlog (${atSignal} replies sent)`);
  const exit = await a.exited;
  t.equal(exit.code, 0, `the worker stopped cleanly (${Date.now() - started} ms, ${b.total()} replies sent by then)`);
  const restarted = startWorkerProcess(t, b.workerEnv);
  try {
    await waitUntil(() => b.answered() >= TOTAL, 60_000, `all ${TOTAL} messages answered`);
  } catch (err) {
    t.comment(other.output().slice(-3000));
    t.comment(restarted.output().slice(-3000));
    throw err;
  }
  await untilIdle(b.svc);
  checkExactlyOnceInOrder(t, b);
  t.comment(`total ${Date.now() - started} ms`);
});
