import { Kvm, type KV } from '@nats-io/kv';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import type { StreamNames } from '../lib/streams.js';

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
}

export const DEFAULT_LEASE_TTL_MS = 10_000;
export const DEFAULT_LEASE_RENEW_MS = 2_000;

interface Held {
  revision: number;
  renewedAt: number;
  releasing: boolean;
}

export class PartitionLeases {
  readonly #names: StreamNames;
  readonly #partitions: number;
  readonly #workerId: string;
  readonly #logger: Logger;
  readonly #handlers: LeaseHandlers;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #nc: NatsConnection;
  #kv: KV | null = null;
  readonly #held = new Map<number, Held>();
  #presenceRev = 0;
  #timer: NodeJS.Timeout | null = null;
  #ticking: Promise<void> | null = null;
  #closed = false;

  constructor(nc: NatsConnection, names: StreamNames, partitions: number, workerId: string, logger: Logger, handlers: LeaseHandlers, options: LeaseOptions = {}) {
    this.#nc = nc;
    this.#names = names;
    this.#partitions = partitions;
    this.#workerId = workerId;
    this.#logger = logger;
    this.#handlers = handlers;
    this.#ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
    this.#renewMs = options.renewMs ?? DEFAULT_LEASE_RENEW_MS;
  }

  /** Partitions this worker consumes now (sorted). */
  owned(): number[] {
    return [...this.#held.entries()].filter(([, h]) => !h.releasing).map(([p]) => p).sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    this.#kv = await new Kvm(this.#nc).create(this.#names.leaseBucket, { ttl: this.#ttlMs, history: 1 });
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
    const now = Date.now();
    await Promise.all(
      [...this.#held.entries()].map(async ([p, h]) => {
        try {
          h.revision = await kv.update(`p.${p}`, this.#workerId, h.revision);
          h.renewedAt = now;
        } catch (err) {
          const stale = Date.now() - h.renewedAt > this.#ttlMs - this.#renewMs;
          const lost = /wrong last sequence/i.test((err as Error).message);
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
    for (let i = 0; i < this.#partitions && wanted > 0 && !this.#closed; i++) {
      const p = (start + i) % this.#partitions;
      if (this.#held.has(p)) continue;
      let revision: number;
      try {
        revision = await kv.create(`p.${p}`, this.#workerId);
      } catch {
        continue; // held by someone else
      }
      if (this.#closed) {
        await kv.delete(`p.${p}`, { previousSeq: revision }).catch(() => {});
        return;
      }
      this.#held.set(p, { revision, renewedAt: Date.now(), releasing: false });
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

  /** Stops renewing, drains and releases every partition, removes the presence key. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#ticking;
    await Promise.all([...this.#held.keys()].map((p) => this.#release(p, 'close')));
    // Releases started by a rebalance may still be running.
    while (this.#held.size > 0) await new Promise((r) => setTimeout(r, 20));
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
