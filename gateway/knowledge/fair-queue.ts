/**
 * A queue per key (a company) taken round-robin: each take serves the next key after the
 * one served last, so a key with a thousand items waiting delays another key's first item
 * by one turn, not by a thousand. `take` may skip keys that are not eligible now (a
 * company already at its limit of jobs at a time).
 */
export class FairQueue<K, T> {
  readonly #queues = new Map<K, T[]>();
  /** Keys with items, in turn order; `#next` is the index of the key whose turn it is. */
  #ring: K[] = [];
  #next = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(key: K, item: T): void {
    let queue = this.#queues.get(key);
    if (!queue) {
      queue = [];
      this.#queues.set(key, queue);
      // A new key waits a full turn: it goes just before the key whose turn it is.
      this.#ring.splice(this.#next, 0, key);
      this.#next++;
      if (this.#next >= this.#ring.length) this.#next = 0;
    }
    queue.push(item);
    this.#size++;
  }

  /** The next item of the first eligible key in turn, or undefined. */
  take(eligible: (key: K) => boolean = () => true): { key: K; item: T } | undefined {
    for (let tried = 0; tried < this.#ring.length; tried++) {
      const at = (this.#next + tried) % this.#ring.length;
      const key = this.#ring[at]!;
      if (!eligible(key)) continue;
      const queue = this.#queues.get(key)!;
      const item = queue.shift()!;
      this.#size--;
      if (queue.length === 0) {
        this.#queues.delete(key);
        this.#ring.splice(at, 1);
        this.#next = this.#ring.length === 0 ? 0 : at % this.#ring.length;
      } else this.#next = (at + 1) % this.#ring.length;
      return { key, item };
    }
    return undefined;
  }

  /** Removes an item (a job given up while it waited); false when it is not queued. */
  remove(key: K, item: T): boolean {
    const queue = this.#queues.get(key);
    const at = queue?.indexOf(item) ?? -1;
    if (!queue || at < 0) return false;
    queue.splice(at, 1);
    this.#size--;
    if (queue.length === 0) {
      this.#queues.delete(key);
      const ringAt = this.#ring.indexOf(key);
      this.#ring.splice(ringAt, 1);
      if (ringAt < this.#next) this.#next--;
      if (this.#next >= this.#ring.length) this.#next = 0;
    }
    return true;
  }

  clear(): T[] {
    const all = [...this.#queues.values()].flat();
    this.#queues.clear();
    this.#ring = [];
    this.#next = 0;
    this.#size = 0;
    return all;
  }
}
