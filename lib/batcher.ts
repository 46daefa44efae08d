/**
 * Group commit: callers submit one request each; requests that arrive while a flush is
 * running are flushed together by the next one (up to `maxBatch`), so under load one
 * transaction carries many conversations' steps and at low load a lone request is flushed
 * at once (no timer, no added latency).
 *
 * `flush` gets the batch and returns one result per request, in order. When a batch of
 * several fails, its requests are flushed again one by one, so one bad request (or a
 * deadlock between two batches) costs only itself: the others still commit.
 *
 * With `fairBy` (a company), more waiting requests than a batch holds are taken in turn, one
 * of each key at a time: a company with thousands waiting does not push another company's
 * request back by thousands (the order of one key's requests is kept).
 */
export interface BatcherOptions<Req = unknown> {
  maxBatch?: number;
  /** Flushes running at once (each holds one database connection). */
  concurrency?: number;
  fairBy?: (req: Req) => number | string;
}

export const DEFAULT_MAX_BATCH = 256;
export const DEFAULT_BATCH_CONCURRENCY = 2;

interface Pending<Req, Res> {
  req: Req;
  resolve: (r: Res) => void;
  reject: (err: unknown) => void;
}

export class Batcher<Req, Res> {
  readonly #flush: (reqs: Req[]) => Promise<Res[]>;
  readonly #maxBatch: number;
  readonly #concurrency: number;
  readonly #fairBy: ((req: Req) => number | string) | null;
  #queue: Pending<Req, Res>[] = [];
  /** With `fairBy`: the waiting requests of each key, and the keys in turn. */
  readonly #byKey = new Map<number | string, Pending<Req, Res>[]>();
  readonly #turns: (number | string)[] = [];
  #waiting = 0;
  #running = 0;

  constructor(flush: (reqs: Req[]) => Promise<Res[]>, options: BatcherOptions<Req> = {}) {
    this.#flush = flush;
    this.#maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_BATCH_CONCURRENCY);
    this.#fairBy = options.fairBy ?? null;
  }

  /** Requests waiting for a flush. */
  get waiting(): number {
    return this.#fairBy ? this.#waiting : this.#queue.length;
  }

  submit(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const p = { req, resolve, reject };
      if (this.#fairBy) {
        const key = this.#fairBy(req);
        const q = this.#byKey.get(key);
        if (q) q.push(p);
        else {
          this.#byKey.set(key, [p]);
          this.#turns.push(key);
        }
        this.#waiting++;
      } else this.#queue.push(p);
      this.#pump();
    });
  }

  /** The next batch: the oldest requests, or with `fairBy` one of each key in turn. */
  #take(): Pending<Req, Res>[] {
    if (!this.#fairBy) {
      const batch = this.#queue.length <= this.#maxBatch ? this.#queue : this.#queue.slice(0, this.#maxBatch);
      this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#maxBatch);
      return batch;
    }
    const batch: Pending<Req, Res>[] = [];
    while (batch.length < this.#maxBatch && this.#turns.length > 0) {
      for (let k = 0; k < this.#turns.length && batch.length < this.#maxBatch; ) {
        const key = this.#turns[k]!;
        const q = this.#byKey.get(key)!;
        batch.push(q.shift()!);
        if (q.length > 0) k++;
        else {
          this.#byKey.delete(key);
          this.#turns.splice(k, 1);
        }
      }
    }
    this.#waiting -= batch.length;
    return batch;
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.waiting > 0) {
      const batch = this.#take();
      this.#running++;
      void this.#run(batch).finally(() => {
        this.#running--;
        this.#pump();
      });
    }
  }

  async #run(batch: Pending<Req, Res>[]): Promise<void> {
    try {
      const results = await this.#flush(batch.map((p) => p.req));
      batch.forEach((p, i) => p.resolve(results[i]!));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      for (const p of batch) {
        try {
          const [result] = await this.#flush([p.req]);
          p.resolve(result!);
        } catch (single) {
          p.reject(single);
        }
      }
    }
  }
}
