/**
 * Group commit: callers submit one request each; requests that arrive while a flush is
 * running are flushed together by the next one (up to `maxBatch`), so under load one
 * transaction carries many conversations' steps and at low load a lone request is flushed
 * at once (no timer, no added latency).
 *
 * `flush` gets the batch and returns one result per request, in order. When a batch of
 * several fails, its requests are flushed again one by one, so one bad request (or a
 * deadlock between two batches) costs only itself: the others still commit.
 */
export interface BatcherOptions {
  maxBatch?: number;
  /** Flushes running at once (each holds one database connection). */
  concurrency?: number;
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
  #queue: Pending<Req, Res>[] = [];
  #running = 0;

  constructor(flush: (reqs: Req[]) => Promise<Res[]>, options: BatcherOptions = {}) {
    this.#flush = flush;
    this.#maxBatch = Math.max(1, options.maxBatch ?? DEFAULT_MAX_BATCH);
    this.#concurrency = Math.max(1, options.concurrency ?? DEFAULT_BATCH_CONCURRENCY);
  }

  /** Requests waiting for a flush. */
  get waiting(): number {
    return this.#queue.length;
  }

  submit(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      this.#queue.push({ req, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#running < this.#concurrency && this.#queue.length > 0) {
      const batch = this.#queue.length <= this.#maxBatch ? this.#queue : this.#queue.slice(0, this.#maxBatch);
      this.#queue = batch === this.#queue ? [] : this.#queue.slice(this.#maxBatch);
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
