import t, { type Test } from 'tap';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import {
  createHelpdeskIntegration,
  messageEnvelope,
  publishEnvelope,
  startTestWorker,
  waitForPartitions,
} from '../support/worker.js';

const P = 8;
const svc = await startTestService(t, 'partitions', { env: { PARTITIONS: String(P) } });
const stub = await startChat2DeskStub(t);
const user = await signUp(svc.api, 'Partitions Co');
// A model's pace (about a second an answer): a worker that stops or dies has answers in flight.
const model = await startRepeatingModel(t, { delayMs: () => 800 + Math.floor(Math.random() * 400) });
const integration = await createHelpdeskIntegration(svc, user, stub, 'Helpdesk', await model.createAgent(svc.api, user.token));

const sentCount = (prefix: string) => {
  const counts = new Map<string, number>();
  for (const b of stub.sent()) if (String(b.client_id).startsWith(prefix)) counts.set(b.text, (counts.get(b.text) ?? 0) + 1);
  return counts;
};

async function publishMany(prefix: string, clients: number, perClient: number, pauseMs = 0): Promise<string[]> {
  const texts: string[] = [];
  for (let i = 0; i < perClient; i++) {
    for (let c = 0; c < clients; c++) {
      const text = `${prefix}${c} #${i}`;
      texts.push(`echo: ${text}`);
      await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, `${prefix}${c}`, text));
    }
    if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
  }
  return texts;
}

async function expectExactlyOnce(t: Test, prefix: string, texts: string[], timeoutMs = 30_000): Promise<void> {
  await stub.waitFor(() => sentCount(prefix).size === texts.length, timeoutMs);
  await new Promise((r) => setTimeout(r, 500));
  const counts = sentCount(prefix);
  t.equal(counts.size, texts.length, `${prefix}: every message answered`);
  t.same([...counts.values()].filter((n) => n !== 1), [], `${prefix}: each exactly once`);
}

const w1 = await startTestWorker(t, svc, { workerId: 'w1' });
await waitForPartitions([w1], P);

t.test('a joining worker gets its fair share; partitions are disjoint', async (t) => {
  const w2 = await startTestWorker(t, svc, { workerId: 'w2' });
  const deadline = Date.now() + 15_000;
  while (!(w1.ownedPartitions().length === P / 2 && w2.ownedPartitions().length === P / 2)) {
    if (Date.now() > deadline) throw new Error(`no rebalance: ${w1.ownedPartitions()} | ${w2.ownedPartitions()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const all = [...w1.ownedPartitions(), ...w2.ownedPartitions()].sort((a, b) => a - b);
  t.same(all, Array.from({ length: P }, (_, i) => i), 'every partition owned once');

  const texts = await publishMany('share-', 12, 3);
  await expectExactlyOnce(t, 'share-', texts);

  // w1 stops cleanly while messages keep coming: w2 takes over its partitions.
  const publishing = publishMany('handover-', 12, 4, 150);
  await new Promise((r) => setTimeout(r, 200));
  await w1.close();
  t.same(w1.ownedPartitions(), [], 'w1 released everything');
  const texts2 = await publishing;
  await waitForPartitions([w2], P, 15_000);
  t.equal(w2.ownedPartitions().length, P, 'w2 took over every partition');
  await expectExactlyOnce(t, 'handover-', texts2);

  // A worker that dies without releasing: its leases expire and w2 takes them back.
  const w3 = await startTestWorker(t, svc, { workerId: 'w3' });
  await waitForPartitions([w3], P / 2, 15_000);
  const started = Date.now();
  await w3.nc.close(); // the process is gone: no release, no renewals
  const texts3 = await publishMany('dead-', 8, 2);
  await waitForPartitions([w2], P, 15_000);
  t.ok(Date.now() - started < 15_000, `taken over within 15 s (${Date.now() - started} ms)`);
  await expectExactlyOnce(t, 'dead-', texts3, 45_000);
});
