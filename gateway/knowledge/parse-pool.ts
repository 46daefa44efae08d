import { Worker } from 'node:worker_threads';
import type { Chunk } from '../../lib/knowledge/chunker.js';
import type { Logger } from '../../lib/logger.js';
import type { Deadline } from './deadline.js';
import { ExtractionError, type DocumentFormat, type Extracted } from './extract.js';
import { FairQueue } from './fair-queue.js';

/**
 * The threads that read documents (INGEST_THREADS): parsing, cleaning and chunking run in
 * parse-worker.ts, never on the gateway's event loop, so a hostile document costs its own
 * company time, not everyone's answers. Jobs wait in a queue per company, taken
 * round-robin (fair-queue.ts).
 *
 * Limits of a job, past which its thread is ended (a new one is started for the next job)
 * and the document fails with the reason:
 * - its deadline (deadline.ts), which does not run while the job waits for a thread;
 * - memory (INGEST_MEMORY_MB): the thread's JavaScript heap is capped at the budget plus
 *   READER_HEAP_MB for the reader's own code (resourceLimits), a PDF's streams are measured
 *   against the budget before PDF.js reads them (pdf-budget.ts), and, for what neither sees
 *   (ArrayBuffers outside the heap, filled by code the measure did not foresee), the
 *   thread's memory outside its heap is read every WATCH_MS while it works: past twice the
 *   budget plus twice the input's size (and OUTSIDE_HEAP_BASE_MB) the thread is ended.
 */
/** `vectorsFor`: the document's title, when its chunks get the local model's vectors too (lib/knowledge/local-model.ts). */
export type ParseJob = (
  | { kind: 'extract'; format: DocumentFormat; bytes: Uint8Array; contentType?: string }
  | { kind: 'chunk'; content: string; format: string }
) & { vectorsFor?: string };

export type WorkerAnswer =
  | { ok: true; extracted: Extracted | null; chunks: Chunk[]; vectors: (Float32Array | null)[] | null }
  | { ok: false; reason: 'extraction' | 'internal'; message: string };

export interface ParseResult {
  /** The original's text (null for a `chunk` job). */
  extracted: Extracted | null;
  chunks: Chunk[];
  /** The chunks' local vectors, when the job asked (null: not asked, or the model is off). */
  vectors: (Float32Array | null)[] | null;
}

/** Reading the document took more memory than the budget. */
export class OverMemory extends ExtractionError {
  constructor(memoryMb: number, options?: { cause?: unknown }) {
    super(`reading the document needs more than ${memoryMb} MB of memory`, options);
    this.name = 'OverMemory';
  }
}

/** The thread stopped or failed for a reason of ours, not the document's content. */
export class ReaderFailed extends ExtractionError {
  constructor(options?: { cause?: unknown }) {
    super('the document could not be read', options);
    this.name = 'ReaderFailed';
  }
}

export interface ParsePoolOptions {
  threads: number;
  memoryMb: number;
  logger: Logger;
}

/** How often a working thread's memory outside its heap is read. */
export const WATCH_MS = 25;
/**
 * Heap of the reader's own code, not the document's: a thread that has loaded our modules and
 * PDF.js holds 110–140 MB of heap before its first document (measured with getHeapStatistics).
 * With less room than that, a busy machine's slower collections end healthy threads.
 */
export const READER_HEAP_MB = 256;
/** A thread's own memory outside its heap (its code's buffers, PDF.js loaded), some 25 MB. */
const OUTSIDE_HEAP_BASE_MB = 32;
const WORKER_URL = new URL('./parse-worker.ts', import.meta.url);

interface Job {
  key: unknown;
  job: ParseJob;
  signal: AbortSignal;
  /** Starts the deadline's clock again (stopped while the job waits). */
  resume: (() => void) | undefined;
  resolve: (r: ParseResult) => void;
  reject: (err: unknown) => void;
  onAbort: () => void;
}

interface Slot {
  worker: Worker | null;
  /** Whether the worker has loaded its code (a job's time starts then). */
  ready: boolean;
  job: Job | null;
  /** The job's number, to tell its answer from a late one of an ended job. */
  id: number;
  watch: NodeJS.Timeout | null;
}

export class ParsePool {
  readonly #options: ParsePoolOptions;
  readonly #slots: Slot[];
  readonly #waiting = new FairQueue<unknown, Job>();
  #ids = 0;
  #closed = false;

  constructor(options: ParsePoolOptions) {
    this.#options = options;
    this.#slots = Array.from({ length: Math.max(1, options.threads) }, () => ({ worker: null, ready: false, job: null, id: 0, watch: null }));
  }

  /**
   * Reads a document in a thread, after the other companies' jobs queued before it in turn.
   * Rejects with an ExtractionError (the document's reason: its content, its deadline, its
   * memory) or with the signal's reason when it fires.
   */
  run(key: unknown, job: ParseJob, options: { signal: AbortSignal; deadline?: Deadline }): Promise<ParseResult> {
    return new Promise((resolve, reject) => {
      if (this.#closed) return reject(new ReaderFailed());
      if (options.signal.aborted) return reject(options.signal.reason);
      const entry: Job = {
        key, job, signal: options.signal, resume: options.deadline?.pause(), resolve, reject,
        onAbort: () => {
          if (this.#waiting.remove(key, entry)) {
            entry.resume?.();
            reject(options.signal.reason);
            return;
          }
          const slot = this.#slots.find((s) => s.job === entry);
          if (slot) this.#end(slot, options.signal.reason);
        },
      };
      options.signal.addEventListener('abort', entry.onAbort, { once: true });
      this.#waiting.push(key, entry);
      this.#pump();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.clear()) this.#settle(job, () => job.reject(new ReaderFailed()));
    await Promise.all(this.#slots.map(async (slot) => {
      if (slot.job) this.#end(slot, new ReaderFailed());
      const worker = slot.worker;
      slot.worker = null;
      await worker?.terminate();
    }));
  }

  #pump(): void {
    for (const slot of this.#slots) {
      if (slot.job || this.#closed) continue;
      const next = this.#waiting.take();
      if (!next) return;
      this.#start(slot, next.item);
    }
  }

  #worker(slot: Slot): Worker {
    if (slot.worker) return slot.worker;
    const worker = new Worker(WORKER_URL, {
      resourceLimits: { maxOldGenerationSizeMb: this.#options.memoryMb + READER_HEAP_MB, maxYoungGenerationSizeMb: 32 },
      // PDF.js writes warnings about fonts it does not need for text; they are not ours to log.
      stdout: true,
      stderr: true,
    });
    worker.stdout.resume();
    worker.stderr.resume();
    worker.unref();
    worker.on('message', (m: (WorkerAnswer & { id: number }) | { ready: true }) => {
      if (slot.worker !== worker) return;
      if ('ready' in m) {
        slot.ready = true;
        if (slot.job) this.#post(slot);
        return;
      }
      const job = slot.job;
      if (!job || m.id !== slot.id || slot.worker !== worker) return;
      this.#finish(slot);
      if (m.ok) this.#settle(job, () => job.resolve({ extracted: m.extracted, chunks: m.chunks, vectors: m.vectors }));
      else if (m.reason === 'extraction') this.#settle(job, () => job.reject(new ExtractionError(m.message)));
      else {
        this.#options.logger.error({ err: { message: m.message } }, 'knowledge: reading a document failed unexpectedly');
        this.#settle(job, () => job.reject(new ReaderFailed()));
      }
    });
    worker.on('error', (err: Error & { code?: string }) => {
      if (slot.worker !== worker) return;
      if (slot.job) this.#end(slot, err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new OverMemory(this.#options.memoryMb, { cause: err }) : new ReaderFailed({ cause: err }));
      else this.#end(slot, null);
      if (err.code !== 'ERR_WORKER_OUT_OF_MEMORY') this.#options.logger.error({ err }, 'knowledge: a document reader thread failed');
    });
    worker.on('exit', () => {
      if (slot.worker === worker) this.#end(slot, new ReaderFailed());
    });
    slot.worker = worker;
    slot.ready = false;
    return worker;
  }

  /** The job takes the slot; it is posted once the slot's thread has loaded (a new one may take a moment). */
  #start(slot: Slot, job: Job): void {
    slot.job = job;
    slot.id = ++this.#ids;
    this.#worker(slot);
    if (slot.ready) this.#post(slot);
  }

  #post(slot: Slot): void {
    const job = slot.job!;
    const worker = slot.worker!;
    // From here on the job's time is its deadline's.
    job.resume?.();
    const budgetBytes = this.#options.memoryMb * 1024 * 1024;
    const inputBytes = job.job.kind === 'extract' ? job.job.bytes.byteLength : job.job.content.length * 2;
    const limit = 2 * budgetBytes + 2 * inputBytes + OUTSIDE_HEAP_BASE_MB * 1024 * 1024;
    const id = slot.id;
    if (slot.watch) clearInterval(slot.watch);
    slot.watch = setInterval(() => {
      worker.getHeapStatistics().then(
        (stats) => {
          if (slot.id === id && slot.job === job && (stats as { external_memory?: number }).external_memory! > limit) this.#end(slot, new OverMemory(this.#options.memoryMb));
        },
        () => {},
      );
    }, WATCH_MS);
    slot.watch.unref();
    worker.postMessage({ id, job: job.job, budgetBytes });
  }

  /** The slot's job is done: its watch stops, the next job may start. */
  #finish(slot: Slot): void {
    if (slot.watch) clearInterval(slot.watch);
    slot.watch = null;
    slot.job = null;
    queueMicrotask(() => this.#pump());
  }

  /** Ends the slot's job and its thread (a fresh thread takes the next job). */
  #end(slot: Slot, reason: unknown): void {
    const job = slot.job;
    const worker = slot.worker;
    slot.worker = null;
    slot.ready = false;
    void worker?.terminate();
    if (!job) return;
    this.#finish(slot);
    this.#settle(job, () => job.reject(reason));
  }

  #settle(job: Job, fn: () => void): void {
    job.signal.removeEventListener('abort', job.onAbort);
    fn();
  }
}
