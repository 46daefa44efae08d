import { isIPv6 } from 'node:net';

/**
 * The webchat's abuse limits, in process memory (contract.md § Webchat limits): socket
 * slots (all sockets, and per client address) and message rates (per client address and
 * per visitor). Each gateway process counts on its own: behind N processes a client gets at
 * most N times a limit.
 */

/** A refused slot says which cap was full. */
export type SlotRefusal = { ok: false; cap: 'total' | 'perIp' };
export type SlotGrant = { ok: true; release: () => void };

/** Concurrent sockets: at most `maxTotal` in all, `maxPerKey` per client address. */
export class SocketSlots {
  readonly #maxTotal: number;
  readonly #maxPerKey: number;
  readonly #perKey = new Map<string, number>();
  #total = 0;

  constructor(maxTotal: number, maxPerKey: number) {
    this.#maxTotal = maxTotal;
    this.#maxPerKey = maxPerKey;
  }

  get total(): number {
    return this.#total;
  }

  /** Reserves a slot; its `release` (idempotent) gives it back. A key's entry lives only while it holds slots. */
  take(key: string): SlotGrant | SlotRefusal {
    if (this.#total >= this.#maxTotal) return { ok: false, cap: 'total' };
    const held = this.#perKey.get(key) ?? 0;
    if (held >= this.#maxPerKey) return { ok: false, cap: 'perIp' };
    this.#perKey.set(key, held + 1);
    this.#total += 1;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.#total -= 1;
        const n = (this.#perKey.get(key) ?? 1) - 1;
        if (n > 0) this.#perKey.set(key, n);
        else this.#perKey.delete(key);
      },
    };
  }
}

/**
 * Token buckets per key: a burst of `perMinute`, refilled at `perMinute` a minute. A bucket
 * that has refilled completely says nothing a missing one would not, so such buckets are
 * dropped by a sweep at most once per refill period: memory holds only the keys used within
 * about the last two minutes.
 */
export class TokenBuckets {
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #refillMs: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  #sweptAt: number;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.#capacity = perMinute;
    this.#perMs = perMinute / 60_000;
    this.#refillMs = 60_000;
    this.#now = now;
    this.#sweptAt = now();
  }

  /** Keys held in memory. */
  get size(): number {
    return this.#buckets.size;
  }

  /** Milliseconds until `key` has a token (0: it has one now). */
  waitMs(key: string): number {
    const b = this.#buckets.get(key);
    if (!b) return 0;
    const tokens = this.#level(b, this.#now());
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.#perMs);
  }

  /** Spends one token of `key` (call after waitMs said 0). */
  take(key: string): void {
    const now = this.#now();
    if (now - this.#sweptAt >= this.#refillMs) this.#sweep(now);
    const b = this.#buckets.get(key);
    if (!b) {
      this.#buckets.set(key, { tokens: this.#capacity - 1, at: now });
      return;
    }
    b.tokens = Math.max(0, this.#level(b, now) - 1);
    b.at = now;
  }

  #level(b: { tokens: number; at: number }, now: number): number {
    return Math.min(this.#capacity, b.tokens + Math.max(0, now - b.at) * this.#perMs);
  }

  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [key, b] of this.#buckets) if (this.#level(b, now) >= this.#capacity) this.#buckets.delete(key);
  }
}

/**
 * The key a client address is counted under: an IPv4 address as it is (also when written as
 * IPv4-mapped IPv6), an IPv6 address by its /64 (the block one subscriber or host is given,
 * so rotating addresses inside it does not escape the limits).
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const bare = address.split('%', 1)[0]!.toLowerCase();
  const [head = '', tail] = bare.split('::', 2) as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  // An embedded IPv4 tail stands for two groups; only the first four groups matter here.
  const width = (gs: string[]) => gs.reduce((n, g) => n + (g.includes('.') ? 2 : 1), 0);
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - width(left) - width(right))).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => (g.includes('.') ? g : g.replace(/^0+(?=.)/, ''))).join(':')}::/64`;
}
