import { jetstreamManager } from '@nats-io/jetstream';
import t, { type Test } from 'tap';
import { streamNames } from '../../lib/streams.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, startTestWorker, waitForPartitions } from '../support/worker.js';

/**
 * JetStream that loses what it acknowledged (issue #45: nats-server 2.9 resets a stream's
 * cluster state after a leader is killed, and the messages in it are gone): an accepted
 * webhook is answered anyway, from the gateway's record of the acceptance in PostgreSQL
 * (lib/inbound-journal.ts, actors/accepted-sweeper.ts), and a worker whose stream and
 * consumers vanished makes them again. Each message is answered exactly once.
 */
const P = 4;
const svc = await startTestService(t, 'jetstream_loss', { env: { PARTITIONS: String(P) } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Lossy Queue Co');
const model = await startRepeatingModel(t, { delayMs: () => 300 + Math.floor(Math.random() * 300) });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));
const names = streamNames(svc.config.natsPrefix);
const jsm = await jetstreamManager(svc.nc);
let messageNo = 0;

/** A customer writes through the webhook, retried on 503 as Chat2Desk does (same message id). */
async function write(clientId: string, text: string): Promise<void> {
  const payload = { hook_type: 'inbox', type: 'from_client', message_id: 7_100_000 + ++messageNo, text, client_id: clientId, channel_id: 12, transport: 'telegram' };
  for (let attempt = 0; ; attempt++) {
    const res = await deliver(svc.api, integration.id, payload, { secret: integration.webhookSecret });
    if (res.status === 200) return;
    if (res.status !== 503 || attempt > 60) throw new Error(`webhook answered ${res.status}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Replies the helpdesk received, by text. */
function repliesByText(prefix: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const b of stub.sent()) if (String(b.client_id).startsWith(prefix)) counts.set(String(b.text), (counts.get(String(b.text)) ?? 0) + 1);
  return counts;
}

async function expectEachOnce(t: Test, prefix: string, texts: string[], timeoutMs: number): Promise<void> {
  const expected = texts.map((text) => `echo: ${text}`);
  await stub.waitFor(() => expected.every((e) => repliesByText(prefix).has(e)), timeoutMs).catch(() => {});
  await new Promise((r) => setTimeout(r, 1_000));
  const counts = repliesByText(prefix);
  t.same(expected.filter((e) => !counts.has(e)), [], `${prefix}: every accepted message answered`);
  t.same([...counts.entries()].filter(([, n]) => n !== 1), [], `${prefix}: none answered twice`);
}

t.test('messages JetStream lost after their 200 are answered once a worker runs', async (t) => {
  const texts = Array.from({ length: 6 }, (_, i) => `lost question ${i}`);
  for (const [i, text] of texts.entries()) await write(`lost-${i % 3}`, text);
  t.equal((await jsm.streams.info(names.inboundStream)).state.messages, 6, 'the six webhooks were in JetStream');
  // As a stream whose cluster state was reset: what it had acknowledged is gone.
  await jsm.streams.purge(names.inboundStream);
  t.equal((await jsm.streams.info(names.inboundStream)).state.messages, 0, 'and now they are not');
  const started = Date.now();
  const w = await startTestWorker(t, svc, { workerId: 'loss-w1' });
  await waitForPartitions([w], P);
  await expectEachOnce(t, 'lost-', texts, 30_000);
  t.comment(`answered ${Date.now() - started} ms after the worker started`);
  await w.close();
});

t.test('the inbound stream is deleted under traffic: the worker makes it again, nothing is lost or doubled', async (t) => {
  const w1 = await startTestWorker(t, svc, { workerId: 'reset-w1' });
  const w2 = await startTestWorker(t, svc, { workerId: 'reset-w2' });
  await waitForPartitions([w1, w2], P);
  const texts: string[] = [];
  const writes: Promise<void>[] = [];
  const customers = 12;
  for (let round = 0; round < 8; round++) {
    for (let c = 0; c < customers; c++) {
      const text = `reset question ${round}.${c}`;
      texts.push(text);
      writes.push(write(`reset-${c}`, text));
    }
    // The stream goes (with every message in it and every consumer) while answers are in flight.
    if (round === 3) {
      await new Promise((r) => setTimeout(r, 400));
      await jsm.streams.delete(names.inboundStream);
      t.comment('deleted the inbound stream');
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await Promise.all(writes);
  t.ok((await jsm.streams.info(names.inboundStream)).config.name, 'the stream exists again');
  await expectEachOnce(t, 'reset-', texts, 60_000);
});
