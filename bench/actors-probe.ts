import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createActor, transition, type AnyActorRef } from 'xstate';
import { lockedConversations } from '../actors/tables/conversations.js';
import { inTransaction, openSqlPool } from '../lib/db.js';
import { conversationMachine } from '../machines/conversation.js';
import type { ConversationEvent } from '../schema/conversation.js';

/**
 * Child process of the actor section (run with --expose-gc): measures, on the conversations
 * the section seeded, what holding conversation machines in memory would cost and what
 * hydrating one costs.
 *
 * MODE=event     per-event cold hydration the way the worker's steps do it (actors/steps.ts), one
 *                event per transaction: a transaction, the row locked with the worker's statement
 *                (lockedConversations of actors/tables/conversations.ts: the open session of the
 *                client), resolveState, transition() with a customer message, the persisted
 *                snapshot serialised; for SAMPLE random conversations, one after the other;
 *                timings split.
 * MODE=snapshot  every conversation's machine snapshot resolved (resolveState) and held in a
 *                Map, as a host with an in-memory actor cache using pure transition() would;
 *                RSS / heap delta per held snapshot; time to load + hydrate; one step each.
 * MODE=actor     every conversation as a live XState actor (createActor({snapshot}).start()),
 *                held in a Map; RSS / heap delta per actor; time to hydrate + start; one send each.
 *
 * Env: DATABASE_URL, INTEGRATION_ID, MODE, SAMPLE. Prints one JSON line (msg "probe result").
 */
const gc = (globalThis as { gc?: () => void }).gc;
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
};
const mem = () => {
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
};

const url = process.env.DATABASE_URL!;
const integrationId = Number(process.env.INTEGRATION_ID);
const mode = process.env.MODE ?? 'snapshot';
/** A stored snapshot (`{status, value, context}`, machines/conversation.ts) as the machine's own state. */
const restored = (stored: Row['snapshot']) => conversationMachine.resolveState({ value: stored.value as never, context: stored.context as never });
const sample = Number(process.env.SAMPLE ?? 2000);
const PAGE = 5000;

const event = (i: number): ConversationEvent => ({ type: 'customer.message', messageId: String(10_000_000 + i), text: 'What are your opening hours?', at: new Date().toISOString() });

interface Row {
  id: number;
  client_id: string;
  snapshot: { value: unknown; context: Record<string, unknown> } & Record<string, unknown>;
}

async function* pages(client: pg.Client): AsyncGenerator<Row[]> {
  let after = 0;
  for (;;) {
    const { rows } = await client.query<Row>('select id, client_id, snapshot from conversations where integration_id = $1 and id > $2 order by id limit $3', [integrationId, after, PAGE]);
    if (rows.length === 0) return;
    yield rows;
    after = rows[rows.length - 1]!.id;
  }
}

const result: Record<string, unknown> = { msg: 'probe result', mode };

if (mode === 'event') {
  const pool = openSqlPool({ url, poolMax: 2 });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ client_id: string }>('select client_id from conversations where integration_id = $1 order by random() limit $2', [integrationId, sample]);
  await client.end();
  const fetchMs: number[] = [];
  const hydrateUs: number[] = [];
  const stepUs: number[] = [];
  const serialiseUs: number[] = [];
  const totalMs: number[] = [];
  // A few untimed rounds warm the JIT and the pool.
  for (let i = 0; i < rows.length + 50; i++) {
    const clientId = rows[i % rows.length]!.client_id;
    const t0 = performance.now();
    let t1 = 0;
    let t2 = 0;
    let t3 = 0;
    let t4 = 0;
    await inTransaction(pool, async (client) => {
      const conv = (await client.query(lockedConversations('$1', '$2', '$3'), [[], [integrationId], [clientId]])).rows[0];
      t1 = performance.now();
      const current = conversationMachine.resolveState({ value: conv!.snapshot.value, context: conv!.snapshot.context });
      t2 = performance.now();
      const [next] = transition(conversationMachine, current, event(i));
      t3 = performance.now();
      JSON.stringify(conversationMachine.getPersistedSnapshot(next));
      t4 = performance.now();
    });
    const t5 = performance.now();
    if (i < 50) continue;
    fetchMs.push(t1 - t0 + (t5 - t4));
    hydrateUs.push((t2 - t1) * 1000);
    stepUs.push((t3 - t2) * 1000);
    serialiseUs.push((t4 - t3) * 1000);
    totalMs.push(t5 - t0);
  }
  await pool.end();
  const q = (v: number[], p: number) => {
    const s = [...v].sort((a, b) => a - b);
    return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
  };
  Object.assign(result, {
    events: totalMs.length,
    totalMs: { p50: q(totalMs, 50), p99: q(totalMs, 99) },
    dbMs: { p50: q(fetchMs, 50), p99: q(fetchMs, 99) },
    hydrateUs: { p50: q(hydrateUs, 50), p99: q(hydrateUs, 99) },
    stepUs: { p50: q(stepUs, 50), p99: q(stepUs, 99) },
    serialiseUs: { p50: q(serialiseUs, 50), p99: q(serialiseUs, 99) },
  });
} else {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  // Warm the code paths (and pg's parser) before the baseline.
  for await (const page of pages(client)) {
    for (const r of page.slice(0, 200)) {
      const s = restored(r.snapshot);
      transition(conversationMachine, s, event(0));
      if (mode === 'actor') createActor(conversationMachine, { snapshot: restored(r.snapshot) }).start().stop();
    }
    break;
  }
  await settle();
  const before = mem();
  const held = new Map<string, unknown>();
  let loadMs = 0;
  let hydrateMs = 0;
  let n = 0;
  const t0 = performance.now();
  let tl = performance.now();
  for await (const page of pages(client)) {
    const t1 = performance.now();
    loadMs += t1 - tl;
    for (const r of page) {
      if (mode === 'actor') {
        const actor = createActor(conversationMachine, { snapshot: restored(r.snapshot) });
        actor.start();
        held.set(r.client_id, actor);
      } else {
        held.set(r.client_id, restored(r.snapshot));
      }
      n++;
    }
    tl = performance.now();
    hydrateMs += tl - t1;
  }
  const wallMs = performance.now() - t0;
  await client.end();
  await settle();
  const after = mem();
  // One event through every held machine (not kept: the cost of a step on a warm actor).
  let i = 0;
  const s0 = performance.now();
  for (const v of held.values()) {
    if (mode === 'actor') {
      // operator.pause: a transition without invoking the agent (customer.message would start it).
      (v as AnyActorRef).send({ type: 'operator.pause', at: new Date().toISOString() });
    } else {
      transition(conversationMachine, v as never, event(i++));
    }
  }
  const stepMs = performance.now() - s0;
  Object.assign(result, {
    count: n,
    rssBeforeMiB: before.rss / 2 ** 20,
    rssAfterMiB: after.rss / 2 ** 20,
    rssBytesPerActor: (after.rss - before.rss) / n,
    heapBytesPerActor: (after.heapUsed - before.heapUsed) / n,
    loadMs,
    hydrateMs,
    wallMs,
    hydrateUsPerActor: (hydrateMs * 1000) / n,
    stepUsPerActor: (stepMs * 1000) / n,
  });
  if (mode === 'actor') for (const v of held.values()) (v as AnyActorRef).stop();
}

process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
