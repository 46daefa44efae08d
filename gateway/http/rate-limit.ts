import type { RateLimitRule } from '../../lib/config.js';
import { AppError } from '../../lib/errors.js';

/**
 * Fixed-window counters in process memory. Each gateway process counts on its own, so
 * with N processes behind a balancer the effective limit is at most N times the rule.
 */
export class RateLimiter {
  readonly #rule: RateLimitRule;
  readonly #now: () => number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(rule: RateLimitRule, now: () => number = Date.now) {
    this.#rule = rule;
    this.#now = now;
  }

  /** Counts one hit for `key`; throws 429 RATE_LIMITED with Retry-After when over the rule. */
  hit(key: string): void {
    const now = this.#now();
    const windowMs = this.#rule.windowSeconds * 1000;
    let w = this.#windows.get(key);
    if (!w || now - w.start >= windowMs) {
      if (this.#windows.size > 100_000) this.#sweep(now, windowMs);
      w = { start: now, count: 0 };
      this.#windows.set(key, w);
    }
    w.count += 1;
    if (w.count > this.#rule.limit) {
      const retryAfter = Math.max(1, Math.ceil((w.start + windowMs - now) / 1000));
      throw new AppError('RATE_LIMITED', undefined, { headers: { 'Retry-After': String(retryAfter) } });
    }
  }

  #sweep(now: number, windowMs: number): void {
    for (const [key, w] of this.#windows) if (now - w.start >= windowMs) this.#windows.delete(key);
  }
}
