import type { JetStreamManager } from '@nats-io/jetstream';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { query, type SqlPool } from '../lib/db.js';
import { withinDeadline } from '../lib/deadline.js';
import type { Logger } from '../lib/logger.js';
import type { ModelCallOutcome } from '../lib/agents/openai-model.js';
import type { StreamNames } from '../lib/streams.js';

/** Model answers take from a fraction of a second to the overall deadline (45 s by default): buckets up to 60 s. */
export const MODEL_CALL_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60];

/** A scrape never waits longer than this on NATS or PostgreSQL: a figure it cannot read is left out. */
export const METRICS_READ_DEADLINE_MS = 2_000;

/**
 * Figures read from NATS and PostgreSQL are read at most this often, whoever scrapes (an
 * all-in-one process serves /metrics on its public port): concurrent scrapes share a read.
 */
export const METRICS_READ_EVERY_MS = 5_000;

/** `read`'s last result while it is younger than `everyMs`; one read in flight at a time. */
function reusedFor<T>(everyMs: number, read: () => Promise<T>): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (!last || now - last.at >= everyMs) last = { at: now, value: read() };
    return last.value;
  };
}

export interface WorkerMetricSources {
  jsm: JetStreamManager;
  names: StreamNames;
  sql: SqlPool;
  logger: Logger;
  ownedPartitions: () => number[];
  modelCalls: () => { running: number; waiting: number; companiesWaiting: number };
  conversationsInMemory: () => number;
}

/** A replayed message: answered the same, answered differently, or not answered (the replay failed or was taken over). */
export type ReplayItemOutcome = 'same' | 'changed' | 'failed';

export interface WorkerMetrics {
  observeModelCall: (seconds: number, outcome: ModelCallOutcome) => void;
  countReplayItem: (outcome: ReplayItemOutcome) => void;
}

const OUTBOX_BY_STATE = `
select case when status = 'pending' then 'pending'
            when claimed_until is null or claimed_until < now() then 'uncertain'
            else 'sending' end as state,
       count(*)::int as n
  from outbox
 where status in ('pending', 'sending') and partition = any($1::int[])
 group by 1`;

/**
 * The worker's figures, each about the partitions this worker owns now (summed over workers,
 * they describe the whole service). Nothing is labelled by company: a tenant's activity is
 * never in a label, only in counts (`model_call_companies_waiting`).
 */
export function registerWorkerMetrics(registry: Registry, sources: WorkerMetricSources): WorkerMetrics {
  const { jsm, names, sql, logger } = sources;
  const readDepths = reusedFor(METRICS_READ_EVERY_MS, async () => {
    const depths = new Map<number, number>();
    await Promise.all(
      sources.ownedPartitions().map(async (p) => {
        try {
          const info = await withinDeadline(jsm.consumers.info(names.inboundStream, names.partitionConsumer(p)), METRICS_READ_DEADLINE_MS);
          depths.set(p, info.num_pending + info.num_ack_pending);
        } catch (err) {
          logger.debug({ err: (err as Error).message, partition: p }, 'metrics: queue depth not read');
        }
      }),
    );
    return depths;
  });
  const readOutbox = reusedFor(METRICS_READ_EVERY_MS, async (): Promise<Record<string, number> | null> => {
    const owned = sources.ownedPartitions();
    const counts: Record<string, number> = { pending: 0, sending: 0, uncertain: 0 };
    try {
      if (owned.length > 0) {
        const rows = await withinDeadline(query<{ state: string; n: number }>(sql, 'metrics_outbox_by_state', OUTBOX_BY_STATE, [owned]), METRICS_READ_DEADLINE_MS);
        for (const r of rows) counts[r.state] = r.n;
      }
      return counts;
    } catch (err) {
      logger.debug({ err: (err as Error).message }, 'metrics: outbox counts not read');
      return null;
    }
  });
  const duration = new Histogram({
    name: 'model_call_duration_seconds',
    help: 'Model calls from the first attempt to the answer (retries and slow-down waits included), by outcome',
    labelNames: ['outcome'] as const,
    buckets: MODEL_CALL_BUCKETS,
    registers: [registry],
  });
  new Gauge({
    name: 'inbound_queue_depth',
    help: "Inbound messages of each owned partition not yet processed (waiting in the stream plus taken and not yet acknowledged)",
    labelNames: ['partition'] as const,
    registers: [registry],
    async collect() {
      const depths = await readDepths();
      this.reset();
      for (const [p, depth] of depths) this.set({ partition: String(p) }, depth);
    },
  });
  new Gauge({
    name: 'outbox_rows',
    help: "Replies and helpdesk calls of the owned partitions not yet settled: pending, sending (claimed now), uncertain (outcome unknown, reconciled before any resend)",
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const counts = await readOutbox();
      this.reset();
      if (counts) for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge('model_calls_in_flight', 'Model calls holding a place now (MODEL_MAX_CONCURRENCY bounds them)', () => sources.modelCalls().running);
  gauge('model_calls_waiting', 'Model calls waiting for a place', () => sources.modelCalls().waiting);
  gauge('model_call_companies_waiting', 'Companies with model calls waiting for a place (a count; no company is named)', () => sources.modelCalls().companiesWaiting);
  gauge('partitions_owned', 'Partitions this worker consumes now', () => sources.ownedPartitions().length);
  gauge('conversations_in_memory', 'Conversations with work in memory', () => sources.conversationsInMemory());
  const replayItems = new Counter({
    name: 'replay_items_total',
    help: 'Past customer messages answered again for replays (actors/replays), by outcome: same, changed, failed',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  return { observeModelCall: (seconds, outcome) => duration.observe({ outcome }, seconds), countReplayItem: (outcome) => replayItems.inc({ outcome }) };
}
