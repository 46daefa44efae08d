/**
 * A task run every `everyMs` after its previous run ended (never two runs at once, so a slow
 * run delays the next instead of piling up), on a timer that does not keep the process alive.
 * A run's failure is reported and the next run comes as usual. `close()` stops the timer and
 * resolves once the run under way (if any) has ended.
 */
export class RepeatingTask {
  readonly #everyMs: number;
  readonly #run: () => Promise<unknown>;
  readonly #onError: (err: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<void> | null = null;
  #closed = false;

  constructor(everyMs: number, run: () => Promise<unknown>, onError: (err: unknown) => void) {
    this.#everyMs = everyMs;
    this.#run = run;
    this.#onError = onError;
  }

  /** Whether close() was called: a run under way may stop early. */
  get closed(): boolean {
    return this.#closed;
  }

  start(): void {
    if (this.#closed || this.#timer) return;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#running = this.#run()
        .then(() => undefined, this.#onError)
        .finally(() => {
          this.#running = null;
          this.#schedule();
        });
    }, this.#everyMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }
}
