import { reserveCredits, type CreditAdmission, type Reservation, type ReservationRequest } from '../lib/credit.js';
import type { SqlPool } from '../lib/db.js';
import { Batcher } from '../lib/batcher.js';

/**
 * The worker's admission of model calls by credit (lib/credit.ts reserves):
 *
 * - Reservations are group-committed: the calls that start while a reservation transaction
 *   runs are reserved together by the next one (lib/credit.ts reserveCredits), so a company's
 *   row is updated, and its lock waited for, once per batch rather than once per call (one
 *   company's burst otherwise spends most of PostgreSQL's time on that one row).
 * - When a call's estimate does not fit because other calls of its company hold the credit,
 *   it waits for them to settle instead of handing its customer to a human (its place among
 *   the calls in flight given back meanwhile), and is refused (`no_credit`) only when nothing
 *   in flight holds any credit of its company, or after `deadlineMs`. One waiter per company
 *   asks again at a time: when a commit of this worker settled reservations of the company
 *   (`settled`), or every `pollMs` (reservations held by other workers); when it gets its
 *   reservation, the next waiter tries at once.
 */
export const DEFAULT_CREDIT_POLL_MS = 1_000;

interface Waiter {
  wake: () => void;
}

export interface GateOptions {
  pollMs?: number;
  now?: () => number;
}

/** Short of credit only because calls in flight hold it (the balance itself is positive): they may free it. */
const mayWait = (r: Reservation): boolean => !r.ok && r.reason === 'balance' && Number(r.reservedUsd) > 0 && Number(r.availableUsd) + Number(r.reservedUsd) > 0;

export class CreditGate implements CreditAdmission {
  readonly #batch: Batcher<ReservationRequest, Reservation>;
  readonly #pollMs: number;
  readonly #now: () => number;
  /** Calls waiting for credit, per company, in arrival order; the first one asks. */
  readonly #waiting = new Map<number, Waiter[]>();

  constructor(sql: SqlPool, options: GateOptions = {}) {
    // One statement per batch; one batch at a time, so two never wait for each other's lock on a company's row.
    this.#batch = new Batcher((requests) => reserveCredits(sql, requests), { fairBy: (r) => r.companyId, concurrency: 1, maxBatch: 1024 });
    this.#pollMs = options.pollMs ?? DEFAULT_CREDIT_POLL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Calls waiting for credit now (all companies). */
  get waiting(): number {
    let n = 0;
    for (const q of this.#waiting.values()) n += q.length;
    return n;
  }

  async reserve(r: ReservationRequest, o: { deadlineMs: number; signal?: AbortSignal; away?: <T>(wait: () => Promise<T>) => Promise<T> }): Promise<Reservation> {
    const first = await this.#batch.submit(r);
    if (!mayWait(first)) return first;
    const until = this.#now() + o.deadlineMs;
    const queue = this.#waiting.get(r.companyId) ?? [];
    this.#waiting.set(r.companyId, queue);
    const me: Waiter = { wake: () => {} };
    queue.push(me);
    const away = o.away ?? (<T>(wait: () => Promise<T>) => wait());
    try {
      for (;;) {
        await away(() => this.#turn(queue, me, o.signal));
        const res = await this.#batch.submit(r);
        if (!mayWait(res) || this.#now() >= until || o.signal?.aborted) return res;
      }
    } finally {
      queue.splice(queue.indexOf(me), 1);
      if (queue.length === 0 && this.#waiting.get(r.companyId) === queue) this.#waiting.delete(r.companyId);
      // The next waiter asks at once: what this one did not need (or got) may fit it.
      queue[0]?.wake();
    }
  }

  settled(companyIds: Iterable<number>): void {
    for (const id of companyIds) this.#waiting.get(id)?.[0]?.wake();
  }

  /** Resolves when `me` is first in line and woken (a settlement, or the poll timer), or aborted. */
  #turn(queue: Waiter[], me: Waiter, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        me.wake = () => {};
        resolve();
      };
      me.wake = () => {
        if (queue[0] === me) done();
      };
      signal?.addEventListener('abort', done, { once: true });
      if (signal?.aborted) return done();
      const poll = () => {
        if (queue[0] === me) done();
        else timer = setTimeout(poll, this.#pollMs);
      };
      timer = setTimeout(poll, this.#pollMs);
    });
  }
}
