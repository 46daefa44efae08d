import t from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, startTestWorker, waitForPartitions } from '../support/worker.js';
import { startRestartableNats } from './helpers.js';

/**
 * NATS goes away and comes back (a private nats-server on its own port and store directory,
 * stopped and started by the test). While it is away webhooks answer 503 QUEUE_UNAVAILABLE
 * within 5 s (the helpdesk retries) and /readyz answers 503 naming NATS; once it is back the
 * same gateway and worker processes recover without a restart, and a retried webhook is
 * answered exactly once.
 */
const nats = await startRestartableNats(t);
const svc = await startTestService(t, 'natsoutage', { env: { NATS_URL: nats.url, PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Outage Co');
const model = await startRepeatingModel(t);
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const worker = await startTestWorker(t, svc, { workerId: 'nats-outage' });
await waitForPartitions([worker], 2);

const payload = (id: string, clientId = 'c-1') => ({ message_id: id, text: `text ${id}`, client_id: clientId, channel_id: 'ch', transport: 'telegram' });
const send = (id: string, clientId?: string) => deliver(svc.api, integration.id, payload(id, clientId), { secret: integration.webhookSecret! });
const repliesTo = (id: string) => stub.sent().filter((b) => b.text === `echo: text ${id}`).length;

t.test('NATS down: 503 within 5 s, /readyz 503; back: recovery without restart', async (t) => {
  t.equal((await send('before')).status, 200, 'accepted while NATS is up');
  await eventually(async () => repliesTo('before') === 1, 10_000, 'answered');

  await nats.stop();
  for (const id of ['during-1', 'during-2']) {
    const started = Date.now();
    const res = await send(id);
    const took = Date.now() - started;
    t.equal(res.status, 503, `${id}: 503`);
    t.equal(res.body.error?.code, 'QUEUE_UNAVAILABLE');
    t.ok(res.headers.get('retry-after'), 'with Retry-After');
    t.ok(took < 5000, `${id}: answered in ${took} ms`);
  }
  const ready = await svc.api('GET', '/readyz');
  t.equal(ready.status, 503, '/readyz 503');
  t.equal(ready.body.checks?.nats, 'unreachable');
  t.equal(ready.body.checks?.postgres, 'ok');
  t.equal((await svc.api('GET', '/healthz')).status, 200, 'the process is alive');

  await nats.start();
  // The helpdesk retries the refused webhooks; the same processes take them.
  t.ok(await eventually(async () => (await svc.api('GET', '/readyz')).status === 200, 15_000, 'ready again'), '/readyz 200 again');
  t.ok(await eventually(async () => (await send('during-1')).status === 200, 15_000, 'webhooks accepted again'), 'accepted again');
  t.equal((await send('during-2')).status, 200);
  t.equal((await send('during-2')).status, 200, 'a duplicate retry is accepted too');
  t.equal((await send('after', 'c-2')).status, 200);
  await eventually(async () => repliesTo('during-1') >= 1 && repliesTo('during-2') >= 1 && repliesTo('after') >= 1, 30_000, 'answered after recovery');
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(repliesTo('during-1'), 1, 'answered once');
  t.equal(repliesTo('during-2'), 1, 'answered once despite the duplicate');
  t.equal(repliesTo('after'), 1);
  t.equal(repliesTo('before'), 1, 'nothing from before the outage was repeated');
});
