import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { ensureKvBucket, type StreamNames } from '../lib/streams.js';

/**
 * Partition ownership through leases in a NATS KV bucket (works on nats-server 2.9):
 * - key `p.<n>` holds the owner's worker id: `create` = claim (fails when someone holds it),
 *   `update(key, value, revision)` = renew (fails when someone else took it meanwhile);
 * - key `w.<workerId>` is the worker's presence, renewed the same way;
 * - the bucket's TTL (max_age) removes the keys of a worker that stopped renewing, so its
 *   partitions become claimable within `ttlMs`.
 * Every worker aims at its fair share ceil(partitions / live workers): below it, it claims
 * free partitions; above it (a worker joined), it releases the surplus after draining it.
 * A worker that could not renew for longer than ttlMs - renewMs stops using the partition on
 * its own, before anyone else can claim it.
 *
 * Fencing: each acquisition has an epoch, the KV revision of the claim. Revisions only grow,
 * so a later owner always has a larger epoch; outbox rows carry the epoch under which they
 * were sent (actors/outbox/sender.ts). A lease counts as valid only until ttlMs - a safety
 * margin after the start of its last successful renewal, by this process's own clock: a
 * process that was stalled (SIGSTOP, a long GC pause) finds its leases invalid when it
 * resumes, before its first renewal even fails, and sends nothing under them.
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
  /** Replicas of the lease bucket (NATS_REPLICAS). */
  replicas?: number;
}

export const DEFAULT_LEASE_TTL_MS = 10_000;
export const DEFAULT_LEASE_RENEW_MS = 1_000;
/** A lease stops being used this long before the KV bucket could expire it (clock drift, slow renewals). */
const VALIDITY_MARGIN_MS = 1_000;

interface Held {
  /** The revision of the claim: the fencing token of this ownership. */
  epoch: number;
  revision: number;
  /** When the last successful renewal (or the claim) was sent: the KV key lives ttlMs from then at the latest. */
  renewedAt: number;
  releasing: boolean;
}

/** A partition this worker owns now, with the epoch its work is fenced by. */
export interface OwnedPartition {
  partition: number;
  epoch: number;
}

export class PartitionLeases {
  readonly #names: StreamNames;
  readonly #partitions: number;
  readonly #workerId: string;
  readonly #logger: Logger;
  readonly #handlers: LeaseHandlers;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #replicas: number;
  readonly #nc: NatsConnection;
  #kv: KV | null = null;
  readonly #held = new Map<number, Held>();
  #presenceRev = 0;
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #closed = false;
  /** No new partitions are claimed (an orderly stop has begun); held ones are still renewed. */
  #frozen = false;

  constructor(nc: NatsConnection, names: StreamNames, partitions: number, workerId: string, logger: Logger, handlers: LeaseHandlers, options: LeaseOptions = {}) {
    this.#nc = nc;
    this.#names = names;
    this.#partitions = partitions;
    this.#workerId = workerId;
    this.#logger = logger;
    this.#handlers = handlers;
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.#renewMs = options.renewMs ?? DEFAULT_LEASE_RENEW_MS;
    this.#replicas = options.replicas ?? 1;
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
    this.#kv = await ensureKvBucket(this.#nc, this.#names.leaseBucket, { ttlMs: this.#ttlMs, history: 1, replicas: this.#replicas });
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
    const kv = this.#kv;
    if (!kv || this.#closed) return;
    try {
      await this.#renewPresence(kv);
    } catch (err) {
      this.#logger.warn({ err }, 'lease: presence renewal failed');
    }
    await this.#renewAll(kv);
    if (this.#closed) return;
    let workers: number;
    try {
      workers = await this.#liveWorkers(kv);
    } catch (err) {
      this.#logger.warn({ err }, 'lease: cannot list workers');
      return;
    }
    if (this.#frozen) return;
    const fair = Math.ceil(this.#partitions / Math.max(1, workers));
    const owned = this.owned();
    if (owned.length > fair) {
      // Release the surplus (highest numbers first) in the background: renewals go on meanwhile.
      for (const p of owned.slice(fair).reverse()) void this.#release(p, 'rebalance');
      return;
    }
    if (owned.length < fair) await this.#claim(kv, fair - owned.length);
  }

  async #renewPresence(kv: KV): Promise<void> {
    const key = `w.${this.#workerId}`;
    if (this.#presenceRev > 0) {
      try {
        this.#presenceRev = await kv.update(key, this.#workerId, this.#presenceRev);
        return;
      } catch {
        /* expired or lost: create again */
      }
    }
    try {
      this.#presenceRev = await kv.create(key, this.#workerId);
    } catch {
      const e = await kv.get(key);
      if (e && e.operation === 'PUT') this.#presenceRev = await kv.update(key, this.#workerId, e.revision);
    }
  }

  async #renewAll(kv: KV): Promise<void> {
    await Promise.all(
      [...this.#held.entries()].map(async ([p, h]) => {
        // The key lives ttlMs from the server's write, which is after this moment.
        const sentAt = Date.now();
        try {
          h.revision = await kv.update(`p.${p}`, this.#workerId, h.revision);
          h.renewedAt = sentAt;
        } catch (err) {
          const stale = Date.now() - h.renewedAt > this.#ttlMs - this.#renewMs;
          // Someone else wrote the key since our renewal: it is theirs now.
          const lost = err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence;
          if (lost || stale) {
            this.#logger.warn({ partition: p, err: (err as Error).message }, 'lease: lost partition');
            void this.#release(p, 'lost');
          }
        }
      }),
    );
  }

  async #liveWorkers(kv: KV): Promise<number> {
    let n = 0;
    for await (const _k of await kv.keys('w.*')) n++;
    return n;
  }

  async #claim(kv: KV, wanted: number): Promise<void> {
    // Start at an offset of our own so workers do not all race for partition 0.
    const start = hashOf(this.#workerId) % this.#partitions;
    for (let i = 0; i < this.#partitions && wanted > 0 && !this.#closed && !this.#frozen; i++) {
      const p = (start + i) % this.#partitions;
      if (this.#held.has(p)) continue;
      let revision: number;
      const sentAt = Date.now();
      try {
        revision = await kv.create(`p.${p}`, this.#workerId);
      } catch {
        continue; // held by someone else
      }
      if (this.#closed || this.#frozen) {
        await kv.delete(`p.${p}`, { previousSeq: revision }).catch(() => {});
        return;
      }
      this.#held.set(p, { epoch: revision, revision, renewedAt: sentAt, releasing: false });
      wanted--;
      try {
        await this.#handlers.acquire(p);
        this.#logger.info({ partition: p, worker: this.#workerId }, 'lease: acquired partition');
      } catch (err) {
        this.#logger.error({ err, partition: p }, 'lease: could not start partition; releasing it');
        this.#held.delete(p);
        await kv.delete(`p.${p}`, { previousSeq: revision }).catch(() => {});
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
    if (why !== 'lost' && this.#kv) {
      await this.#kv.delete(`p.${p}`, { previousSeq: h.revision }).catch(() => {});
    }
    this.#logger.info({ partition: p, worker: this.#workerId, why }, 'lease: released partition');
  }

  /**
   * Drains and releases every partition (renewals go on meanwhile, so work finishing under a
   * lease still holds it), then stops renewing and removes the presence key.
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
    if (this.#kv && this.#presenceRev > 0) await this.#kv.delete(`w.${this.#workerId}`, { previousSeq: this.#presenceRev }).catch(() => {});
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
