import t from 'tap';
import { deliver } from '../support/webhooks.js';
import { setupBacklog } from './backlog.js';
import { startRestartableNats, startWorkerProcess, waitUntil } from './helpers.js';

/**
 * An orderly stop is bounded whatever NATS does (contract.md § Delivery): a worker given
 * SIGTERM while NATS is unreachable exits within SHUTDOWN_TIMEOUT_MS (it once never exited).
 */
const SHUTDOWN_TIMEOUT_MS = 3000;
const nats = await startRestartableNats(t);
const b = await setupBacklog(t, 'sigterm_nats', { conversations: 5, perConversation: 0, partitions: 2, natsUrl: nats.url });
const worker = startWorkerProcess(t, { ...b.workerEnv, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), LOG_LEVEL: 'info' });

t.test('SIGTERM with NATS gone: the worker exits within SHUTDOWN_TIMEOUT_MS', async (t) => {
  await waitUntil(() => /worker started/.test(worker.output()), 30_000, 'the worker started');
  const res = await deliver(b.svc.api, b.integrationId, { message_id: 'n-1', type: 'from_client', text: 'Tell me about apple', client_id: 'client-0', channel_id: 'ch-1', transport: 'telegram' }, { secret: b.secret });
  t.equal(res.status, 200);
  await waitUntil(() => b.stub.history.length === 1, 20_000, 'the worker answers');

  await nats.stop();
  await new Promise((r) => setTimeout(r, 500));
  const signalledAt = Date.now();
  worker.signal('SIGTERM');
  const { code } = await Promise.race([worker.exited, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the worker did not exit')), 15_000))]);
  const took = Date.now() - signalledAt;
  t.ok(took <= SHUTDOWN_TIMEOUT_MS + 500, `exited ${took} ms after SIGTERM (deadline ${SHUTDOWN_TIMEOUT_MS} ms)`);
  t.ok(code === 0 || code === 1, `exit code ${code} (1: the deadline cut the stop short)`);
});
