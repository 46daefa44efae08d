import type { SqlPool } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import { claimLeases, releaseLease, removePresence, renewLeases, renewPresence, type LeaseView } from './tables/partition-leases.js';

/**
 * Partition ownership through leases in PostgreSQL (actors/tables/partition-leases.ts):
 * - a row per partition holds its owner, the epoch of the claim and when the lease runs out
 *   (by the database's clock); a claim takes a partition nobody owns or whose lease ran out,
 *   a renewal moves the expiry of the partitions still ours (owner and epoch unchanged);
 * - a row per worker is its presence, renewed the same way; an expired one counts no more;
 * - a partition whose row went missing (someone emptied the table) while other workers were
 *   around is held back for a lease's length before anyone claims it: its last owner may use
 *   it until its next renewal finds the row gone. A worker that has seen no other claims
 *   missing rows at once (a new deployment).
 * Every worker aims at its fair share ceil(partitions / live workers): below it, it claims
 * free partitions; above it (a worker joined), it releases the surplus after draining it.
 * A worker that could not renew for longer than ttlMs - renewMs stops using the partition on
 * its own, before anyone else can claim it.
 *
 * Fencing: each acquisition has an epoch from a PostgreSQL sequence, so a later owner always
 * has a larger one. (The leases lived in a NATS KV bucket before; a cluster that reset its
 * state emptied the bucket and its revisions, the epochs, started again from 1: two owners at
 * once and orphaned outboxes.) Outbox rows carry the epoch under which they were sent
 * (actors/outbox/sender.ts). A lease counts as valid only until ttlMs - a safety margin after
 * the start of its last successful renewal, by this process's own clock: the database set the
 * expiry later than that start, so a process that was stalled (SIGSTOP, a long GC pause)
 * finds its leases invalid when it resumes, before its first renewal even fails, and sends
 * nothing under them.
 */
export interface LeaseHandlers {
  /** Start consuming partition p (called once per acquisition). */
  acquire: (partition: number) => Promise<void>;
  /** Stop consuming partition p and finish its in-flight work; the lease is held until this resolves. */
  release: (partition: number) => Promise<void>;
}

export interface LeaseOptions {
  ttlMs?: number;
  renewMs?: number;
  /**
   * Whether this worker can do the partitions' work now (its NATS connection is up): leases are
   * renewed only then, so a worker cut off from NATS lets its partitions go to one that is not.
   */
  canWork?: () => boolean;
}

export const DEFAULT_LEASE_TTL_MS = 10_000;
export const DEFAULT_LEASE_RENEW_MS = 1_000;
/** A lease stops being used this long before another worker could claim it (clock drift, slow renewals). */
const VALIDITY_MARGIN_MS = 1_000;

interface Held {
  /** The claim's number from the epoch sequence: the fencing token of this ownership. */
  epoch: number;
  /** When the last successful renewal (or the claim) was sent: the lease lasts ttlMs from then at the latest. */
  renewedAt: number;
  releasing: boolean;
}

/** A partition this worker owns now, with the epoch its work is fenced by. */
export interface OwnedPartition {
  partition: number;
  epoch: number;
}

export class PartitionLeases {
  readonly #sql: SqlPool;
  readonly #partitions: number;
  readonly #workerId: string;
  readonly #logger: Logger;
  readonly #handlers: LeaseHandlers;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #canWork: () => boolean;
  readonly #held = new Map<number, Held>();
  #started = false;
  /** When this worker last saw another live worker (0: never). */
  #sawOthersAt = 0;
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #closed = false;
  /** No new partitions are claimed (an orderly stop has begun); held ones are still renewed. */
  #frozen = false;

  /** `sql`: a pool of the leases' own, so that a renewal never waits behind the message path's statements. */
  constructor(sql: SqlPool, partitions: number, workerId: string, logger: Logger, handlers: LeaseHandlers, options: LeaseOptions = {}) {
    this.#sql = sql;
    this.#partitions = partitions;
    this.#workerId = workerId;
    this.#logger = logger;
    this.#handlers = handlers;
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.#renewMs = options.renewMs ?? DEFAULT_LEASE_RENEW_MS;
    this.#canWork = options.canWork ?? (() => true);
  }

  /** Partitions this worker consumes now (sorted). */
  owned(): number[] {
    return this.ownedWithEpochs().map((o) => o.partition);
  }

  /** Partitions this worker may act on now (held, valid, not being released), with their epochs. */
  ownedWithEpochs(): OwnedPartition[] {
    const now = Date.now();
    return [...this.#held.entries()]
      .filter(([, h]) => !h.releasing && this.#valid(h, now))
      .map(([partition, h]) => ({ partition, epoch: h.epoch }))
      .sort((a, b) => a.partition - b.partition);
  }

  /** The epoch under which work of `partition` may be done now, or null (not held, being released, or not renewed in time). */
  epochOf(partition: number): number | null {
    const h = this.#held.get(partition);
    return h && !h.releasing && this.#valid(h, Date.now()) ? h.epoch : null;
  }

  /** True while this worker still holds `partition` under `epoch` (a sender checks it right before sending). */
  holds(partition: number, epoch: number): boolean {
    const h = this.#held.get(partition);
    return h !== undefined && h.epoch === epoch && this.#valid(h, Date.now());
  }

  #valid(h: Held, now: number): boolean {
    return now < h.renewedAt + this.#ttlMs - Math.min(VALIDITY_MARGIN_MS, this.#ttlMs / 4);
  }

  /** Stops claiming partitions (the start of an orderly stop); held ones stay renewed until close(). */
  freeze(): void {
    this.#frozen = true;
  }

  async start(): Promise<void> {
    this.#started = true;
    await this.#tick();
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#ticking = this.#tick().finally(() => {
        this.#ticking = null;
        this.#schedule();
      });
    }, this.#renewMs);
  }

  async #tick(): Promise<void> {
    if (!this.#started || this.#closed) return;
    if (!this.#canWork()) {
      this.#dropStale('cannot work (NATS unreachable)');
      return;
    }
    await this.#renewAll();
    if (this.#closed) return;
    let view: LeaseView;
    try {
      view = await renewPresence(this.#sql, this.#workerId, this.#ttlMs);
    } catch (err) {
      this.#logger.warn({ err }, 'lease: presence renewal failed');
      return;
    }
    if (view.live > 1) this.#sawOthersAt = Date.now();
    if (this.#frozen) return;
    const fair = Math.ceil(this.#partitions / view.live);
    const owned = this.owned();
    if (owned.length > fair) {
      // Release the surplus (highest numbers first) in the background: renewals go on meanwhile.
      for (const p of owned.slice(fair).reverse()) void this.#release(p, 'rebalance');
      return;
    }
    if (owned.length < fair) await this.#claim(view, fair - owned.length);
  }

  async #renewAll(): Promise<void> {
    // Partitions being released too: their work in flight finishes under the lease.
    const held = [...this.#held.entries()];
    if (held.length === 0) return;
    // The database sets the new expiry after this moment.
    const sentAt = Date.now();
    let ours: Set<number>;
    try {
      ours = await renewLeases(this.#sql, this.#workerId, this.#ttlMs, held.map(([partition, h]) => ({ partition, epoch: h.epoch })));
    } catch (err) {
      this.#logger.warn({ err }, 'lease: renewal failed');
      this.#dropStale('renewals failed');
      return;
    }
    for (const [p, h] of held) {
      if (ours.has(p)) h.renewedAt = sentAt;
      else {
        // Someone else claimed it after our lease ran out, or the row is gone: it is not ours.
        this.#logger.warn({ partition: p }, 'lease: lost partition');
        void this.#release(p, 'lost');
      }
    }
  }

  /** Gives up the partitions not renewed for so long that another worker may claim them soon. */
  #dropStale(why: string): void {
    for (const [p, h] of this.#held) {
      if (!h.releasing && Date.now() - h.renewedAt > this.#ttlMs - this.#renewMs) {
        this.#logger.warn({ partition: p, why }, 'lease: lost partition (not renewed in time)');
        void this.#release(p, 'lost');
      }
    }
  }

  async #claim({ taken }: LeaseView, wanted: number): Promise<void> {
    // Start at an offset of our own so workers do not all race for partition 0.
    const start = hashOf(this.#workerId) % this.#partitions;
    const candidates: number[] = [];
    for (let i = 0; i < this.#partitions && candidates.length < wanted; i++) {
      const p = (start + i) % this.#partitions;
      if (!this.#held.has(p) && !taken.has(p)) candidates.push(p);
    }
    if (candidates.length === 0) return;
    const sentAt = Date.now();
    let claimed: { partition: number; epoch: number }[];
    try {
      const alone = this.#sawOthersAt === 0 || Date.now() - this.#sawOthersAt > this.#ttlMs;
      claimed = await claimLeases(this.#sql, this.#workerId, this.#ttlMs, candidates, alone);
    } catch (err) {
      this.#logger.warn({ err }, 'lease: claim failed');
      return;
    }
    for (const { partition: p, epoch } of claimed) {
      if (this.#closed || this.#frozen) {
        await releaseLease(this.#sql, this.#workerId, p, epoch).catch(() => {});
        continue;
      }
      this.#held.set(p, { epoch, renewedAt: sentAt, releasing: false });
      try {
        await this.#handlers.acquire(p);
        this.#logger.info({ partition: p, worker: this.#workerId, epoch }, 'lease: acquired partition');
      } catch (err) {
        this.#logger.error({ err, partition: p }, 'lease: could not start partition; releasing it');
        this.#held.delete(p);
        await releaseLease(this.#sql, this.#workerId, p, epoch).catch(() => {});
      }
    }
  }

  async #release(p: number, why: 'rebalance' | 'lost' | 'close'): Promise<void> {
    const h = this.#held.get(p);
    if (!h || h.releasing) return;
    h.releasing = true;
    try {
      await this.#handlers.release(p);
    } catch (err) {
      this.#logger.error({ err, partition: p }, 'lease: release handler failed');
    }
    this.#held.delete(p);
    if (why !== 'lost') await releaseLease(this.#sql, this.#workerId, p, h.epoch).catch(() => {});
    this.#logger.info({ partition: p, worker: this.#workerId, why }, 'lease: released partition');
  }

  /**
   * Drains and releases every partition (renewals go on meanwhile, so work finishing under a
   * lease still holds it), then stops renewing and removes the presence row.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#frozen = true;
    await Promise.all([...this.#held.keys()].map((p) => this.#release(p, 'close')));
    // Releases started by a rebalance may still be running.
    while (this.#held.size > 0) await new Promise((r) => setTimeout(r, 20));
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#ticking;
    if (this.#started) await removePresence(this.#sql, this.#workerId).catch(() => {});
  }
}

function hashOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
