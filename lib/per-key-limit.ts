/**
 * At most `max` holders per key at once (a company's searches, streams, …), in this process;
 * another key is never affected. Taking never waits: the caller refuses what does not fit
 * (429 with Retry-After), so nothing queues up in memory behind a busy key.
 */
export class PerKeyLimit<K = number> {
  readonly #held = new Map<K, number>();

  constructor(readonly max: number) {}

  /** How many `key` holds now. */
  heldBy(key: K): number {
    return this.#held.get(key) ?? 0;
  }

  /** A place for `key` and the function that gives it back (once; later calls do nothing), or null when `key` holds `max`. */
  take(key: K): (() => void) | null {
    const held = this.heldBy(key);
    if (held >= this.max) return null;
    this.#held.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.heldBy(key) - 1;
      if (left > 0) this.#held.set(key, left);
      else this.#held.delete(key);
    };
  }
}
