import type { SqlPool } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ItemResult } from './lanes.js';
import { isAnswering, isCollecting } from '../machines/conversation.js';
import { conversationsWithDeadlines, type ConversationRow } from './tables/conversations.js';

/**
 * The agent's debounce window (contract.md § Behaviour): a conversation in `active.collecting`
 * (or `paused.handedOver.collecting`: the agent handed it over and still answers meanwhile)
 * has its deadline, `answerDueAt`, in its stored snapshot; this keeps one timer per such
 * conversation of the partitions this worker owns. When one fires, `onDue` applies a
 * `debounce` step on the conversation's lane (in order with its envelopes, so a message
 * arriving at the deadline is either collected before or answered after, never both) and the
 * agent answers every collected message together. The customer messages themselves were acked
 * when stored: what keeps the answer from being lost is the deadline in the snapshot, which a
 * worker that acquires a partition (a restart, a takeover after a SIGKILL) re-arms from the
 * database (`acquire`; an overdue one fires at once).
 */
const RETRY_MS = 1_000;
/** Longer than any debounce window (60 s at most). */
const MAX_TIMER_MS = 65_000;

export interface DueDeadline {
  conversationId: number;
  companyId: number;
  integrationId: number;
  clientId: string;
  partition: number;
}

interface Timer extends DueDeadline {
  dueAt: number;
  handle: NodeJS.Timeout;
}

const deadlineOf = (conv: ConversationRow): DueDeadline => ({
  conversationId: conv.id, companyId: conv.company_id, integrationId: conv.integration_id, clientId: conv.client_id, partition: conv.partition,
});

export interface DebounceDeps {
  sql: SqlPool;
  logger: Logger;
  now: () => number;
  /** Whether this worker may work the partition now (its lease). */
  owns: (partition: number) => boolean;
  closed: () => boolean;
  /** Applies the deadline's step; 'nak': it could not be applied now, and is tried again. */
  onDue: (due: DueDeadline) => Promise<ItemResult>;
}

export class DebounceTimers {
  readonly #deps: DebounceDeps;
  readonly #timers = new Map<number, Timer>();

  constructor(deps: DebounceDeps) {
    this.#deps = deps;
  }

  /** Arms (or moves) the conversation's timer to its answerDueAt; a conversation without one has none. */
  arm(conv: ConversationRow): void {
    const due = isCollecting(conv.state) ? conv.snapshot.context.answerDueAt : null;
    if (!due) return this.#drop(conv.id);
    const dueAt = Date.parse(due);
    if (this.#timers.get(conv.id)?.dueAt === dueAt) return;
    this.#schedule(deadlineOf(conv), dueAt);
  }

  /**
   * A partition this worker acquired: the deadlines its conversations are waiting for, from
   * their snapshots. Never rejects: while the database cannot be read it is tried again (the
   * partition's envelopes are consumed meanwhile).
   */
  async acquire(partition: number): Promise<void> {
    while (!this.#deps.closed() && this.#deps.owns(partition)) {
      try {
        const rows = await conversationsWithDeadlines(this.#deps.sql, partition);
        // An answer of a window that was under way when the previous owner stopped: asked again at once.
        for (const conv of rows) isAnswering(conv.state) ? this.#schedule(deadlineOf(conv), this.#deps.now()) : this.arm(conv);
        if (rows.length > 0) this.#deps.logger.info({ partition, conversations: rows.length }, 'host: debounce deadlines re-armed');
        return;
      } catch (err) {
        this.#deps.logger.warn({ err, partition }, 'host: cannot read the debounce deadlines now; trying again');
        await sleep(RETRY_MS);
      }
    }
  }

  /** A partition given up: its next owner arms its deadlines. */
  release(partition: number): void {
    for (const t of [...this.#timers.values()]) if (t.partition === partition) this.#drop(t.conversationId);
  }

  close(): void {
    for (const t of this.#timers.values()) clearTimeout(t.handle);
    this.#timers.clear();
  }

  #drop(conversationId: number): void {
    const t = this.#timers.get(conversationId);
    if (t) clearTimeout(t.handle);
    this.#timers.delete(conversationId);
  }

  #schedule(due: DueDeadline, dueAt: number): void {
    this.#drop(due.conversationId);
    // A deadline further out than any window (a clock moved back) is looked at again, never overflowing the timer.
    const handle = setTimeout(() => this.#fire(timer), Math.min(Math.max(0, dueAt - this.#deps.now()), MAX_TIMER_MS));
    const timer: Timer = { ...due, dueAt, handle };
    this.#timers.set(due.conversationId, timer);
  }

  #fire(timer: Timer): void {
    if (this.#timers.get(timer.conversationId) !== timer) return;
    this.#timers.delete(timer.conversationId);
    if (this.#deps.closed() || !this.#deps.owns(timer.partition)) return;
    void this.#deps.onDue(timer).then((result) => {
      // The database could not be reached for a while: the deadline stays, tried again.
      if (result === 'nak' && !this.#timers.has(timer.conversationId) && !this.#deps.closed()) this.#schedule(timer, this.#deps.now() + RETRY_MS);
    });
  }
}
