import { ExtractionError } from './extract.js';

/** The document's work went past INGEST_TIMEOUT_MS: it fails with this reason. */
export class DeadlineExceeded extends ExtractionError {
  constructor(ms: number) {
    super(`processing the document took longer than ${Math.round(ms / 100) / 10} s`);
    this.name = 'DeadlineExceeded';
  }
}

/**
 * The time a document's processing may take (INGEST_TIMEOUT_MS), as an AbortSignal that
 * fires when it is spent. The clock stops while the document waits for a thread (`pause`):
 * that time is other companies' turn, not this document's work.
 */
export class Deadline {
  readonly #controller = new AbortController();
  readonly #ms: number;
  #at: number;
  #timer: NodeJS.Timeout | null = null;

  constructor(ms: number) {
    this.#ms = ms;
    this.#at = Date.now() + ms;
    this.#arm();
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get expired(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Milliseconds left (as if the clock ran, when it is stopped). */
  remaining(): number {
    return Math.max(0, this.#at - Date.now());
  }

  #arm(): void {
    this.#timer = setTimeout(() => this.#controller.abort(new DeadlineExceeded(this.#ms)), Math.max(0, this.#at - Date.now()));
    this.#timer.unref();
  }

  /** Stops the clock; the function returned starts it again. */
  pause(): () => void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const from = Date.now();
    return () => {
      if (this.expired || this.#timer) return;
      this.#at += Date.now() - from;
      this.#arm();
    };
  }

  clear(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
