import type { JetStreamManager } from '@nats-io/jetstream';
import type { SqlPool } from '../lib/db.js';
import type { InboundPublisher } from '../lib/inbound.js';
import { checkAcceptedLater, DEFAULT_ACCEPTED_CHECK_MS, takeDueAccepted, type DueAccepted } from '../lib/inbound-journal.js';
import type { Logger } from '../lib/logger.js';
import { RepeatingTask } from '../lib/repeating-task.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import type { StreamNames } from '../lib/streams.js';

/**
 * The owner of a partition makes sure that what a gateway accepted for it is taken
 * (lib/inbound-journal.ts): every `everyMs` it looks at the accepted rows of its partitions
 * whose check is due. A row a worker took is forgotten. A row not taken, or taken by a
 * conversation that is still answering, and not in this worker's hands (fetched and being
 * worked on), is published again (a copy the stream still holds is then stored once:
 * receipts) when the partition's consumer has nothing left to deliver — so nobody will
 * deliver it: JetStream lost it, or left it below a consumer's floor or with a consumer that
 * is gone (nats-server 2.9 after a reset) — or once it has waited `maxWaitMs` whatever the
 * stream says (a backlog that old is not worth trusting). Otherwise it is looked at again
 * later, with backoff once it was published again. A copy published again and still not taken
 * while the consumer says it has nothing to deliver means JetStream keeps what it acknowledged
 * without offering it (nats-server 2.9 after a reset): the row's envelope is then applied here
 * directly, from PostgreSQL, as the consumer would have (receipts make it once), and the
 * partition's consumer is made again (at most every REOFFER_EVERY_MS), so it offers
 * everything the stream holds of it.
 */
export interface AcceptedSweeperOptions {
  everyMs?: number;
  /** A row is looked at again this long after an inconclusive look (and first, by the gateway, after it was accepted). */
  checkMs?: number;
  /** A row not taken for this long is published again even while the partition's consumer has work. */
  maxWaitMs?: number;
  /** Rows per look. */
  batch?: number;
}

export const DEFAULT_SWEEP_EVERY_MS = 2_000;
export const DEFAULT_ACCEPTED_MAX_WAIT_MS = 5 * 60_000;
const MAX_BACKOFF_STEPS = 6;
const REOFFER_EVERY_MS = 30_000;
/** Envelopes applied directly at once at most (they share the worker with its consumers). */
const MAX_DIRECT = 256;

export interface AcceptedSweeperDeps {
  sql: SqlPool;
  jsm: JetStreamManager;
  names: StreamNames;
  publisher: InboundPublisher;
  leases: { owned(): number[] };
  /** Whether this worker has the envelope in hand now (its partition consumer fetched it and has not acked it). */
  inFlight: (partition: number, integrationId: number, idempotencyKey: string) => boolean;
  /** Makes the partition's consumer again, so it offers all the stream holds of the partition. */
  reoffer: (partition: number) => Promise<void>;
  /** Applies an envelope in this worker without JetStream (the host, as its consumer would); resolves when it may be forgotten ('ack') or not. */
  apply: (partition: number, env: InboundEnvelope) => Promise<'ack' | 'nak'>;
  logger: Logger;
}

export class AcceptedSweeper {
  readonly #deps: AcceptedSweeperDeps;
  readonly #o: Required<AcceptedSweeperOptions>;
  readonly #task: RepeatingTask;
  /** When each partition's consumer was last made again by a sweep. */
  readonly #reofferedAt = new Map<number, number>();
  /** Envelopes being applied directly, by `integrationId\nidempotencyKey`. */
  readonly #applying = new Map<string, Promise<void>>();
  /** Envelopes published again since start (a figure for tests and logs). */
  republished = 0;

  constructor(deps: AcceptedSweeperDeps, options: AcceptedSweeperOptions = {}) {
    this.#deps = deps;
    this.#o = {
      everyMs: options.everyMs ?? DEFAULT_SWEEP_EVERY_MS,
      checkMs: options.checkMs ?? DEFAULT_ACCEPTED_CHECK_MS,
      maxWaitMs: options.maxWaitMs ?? DEFAULT_ACCEPTED_MAX_WAIT_MS,
      batch: options.batch ?? 500,
    };
    this.#task = new RepeatingTask(this.#o.everyMs, () => this.sweep(), (err) => deps.logger.warn({ err }, 'accepted sweep failed'));
  }

  start(): void {
    this.#task.start();
  }

  async close(): Promise<void> {
    await this.#task.close();
    await Promise.all(this.#applying.values());
  }

  /** One look at the owned partitions' due rows; resolves with how many were published again. */
  async sweep(): Promise<number> {
    const owned = this.#deps.leases.owned();
    if (owned.length === 0) return 0;
    const due = await takeDueAccepted(this.#deps.sql, owned, this.#o.batch);
    if (due.length === 0) return 0;
    const idle = await this.#idlePartitions(new Set(due.map((r) => r.partition)));
    const blind = new Set(due.filter((r) => r.republished > 0 && idle.has(r.partition)).map((r) => r.partition));
    for (const p of blind) await this.#reoffer(p);
    const later: Parameters<typeof checkAcceptedLater>[1] = [];
    let again = 0;
    await Promise.all(
      due.map(async (row) => {
        const key = { row_id: row.row_id };
        const waiting = !idle.has(row.partition) && row.age_ms < this.#o.maxWaitMs;
        if (waiting || this.#deps.inFlight(row.partition, row.integration_id, row.idempotency_key)) {
          later.push({ ...key, delay_ms: this.#o.checkMs, republished: 0 });
          return;
        }
        // Published again before and still not taken: JetStream does not deliver it.
        if (row.republished > 0 ? !this.#applyDirectly(row) : !(await this.#publishAgain(row))) {
          later.push({ ...key, delay_ms: this.#o.checkMs, republished: 0 });
          return;
        }
        again++;
        later.push({ ...key, delay_ms: this.#o.checkMs * 2 ** Math.min(row.republished + 1, MAX_BACKOFF_STEPS), republished: 1 });
      }),
    );
    await checkAcceptedLater(this.#deps.sql, later);
    this.republished += again;
    if (again > 0) this.#deps.logger.warn({ republished: again, partitions: [...idle] }, 'accepted webhooks that no worker took were published again (or, published once already, applied here)');
    return again;
  }

  /**
   * Partitions whose consumer has nothing left to deliver (or is gone). Its messages delivered
   * and not acked do not count: those of this worker are known one by one (`inFlight`), and
   * any other's (a worker that died, a consumer state a reset left behind) may never come back.
   */
  async #idlePartitions(partitions: Set<number>): Promise<Set<number>> {
    const { jsm, names } = this.#deps;
    const idle = new Set<number>();
    await Promise.all(
      [...partitions].map(async (p) => {
        try {
          const info = await jsm.consumers.info(names.inboundStream, names.partitionConsumer(p));
          if (info.num_pending === 0) idle.add(p);
        } catch {
          // No consumer (a stream that was reset, or NATS away): nothing is delivered from it now.
          idle.add(p);
        }
      }),
    );
    return idle;
  }

  async #reoffer(partition: number): Promise<void> {
    const now = Date.now();
    if (now - (this.#reofferedAt.get(partition) ?? 0) < REOFFER_EVERY_MS) return;
    this.#reofferedAt.set(partition, now);
    this.#deps.logger.warn({ partition }, 'a copy published again was not delivered by a consumer that says it has nothing left; making the consumer again');
    await this.#deps.reoffer(partition).catch((err: unknown) => this.#deps.logger.warn({ err, partition }, 'could not make the partition consumer again'));
  }

  /** Starts applying a row's envelope here; false when it cannot start now (already under way, or too many are). */
  #applyDirectly(row: DueAccepted): boolean {
    const key = `${row.integration_id}\n${row.idempotency_key}`;
    if (this.#applying.has(key) || this.#applying.size >= MAX_DIRECT || this.#task.closed) return false;
    const done = this.#deps
      .apply(row.partition, row.envelope)
      .then(
        () => undefined,
        (err: unknown) => this.#deps.logger.warn({ err, integrationId: row.integration_id }, 'could not apply an accepted webhook directly; looking again later'),
      )
      .finally(() => this.#applying.delete(key));
    this.#applying.set(key, done);
    return true;
  }

  async #publishAgain(row: DueAccepted): Promise<boolean> {
    try {
      // A new message id: the lost copy's id may still be in JetStream's duplicate window.
      await this.#deps.publisher.publish(row.envelope, { dedupSuffix: `:again${row.republished + 1}` });
      return true;
    } catch (err) {
      this.#deps.logger.warn({ err, integrationId: row.integration_id }, 'could not publish an accepted webhook again; retrying at the next look');
      return false;
    }
  }
}
