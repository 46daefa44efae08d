import { DEFAULT_MODEL_MAX_CONCURRENCY } from '../lib/config.js';
import type { SqlPool } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import type { StreamNames } from '../lib/streams.js';
import type { InboundPublisher } from '../lib/inbound.js';
import { attachActiveTrace, inContext, traceOf } from '../lib/tracing.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import type { AgentRunner } from './agents/types.js';
import { FairSlots } from './fair-slots.js';
import { Answers } from './host/answers.js';
import { Commits, type CommitDeps } from './host/commit.js';
import { DebounceTimers } from './host/debounce.js';
import { Lanes, type Applied, type Item, type ItemResult, type Lane } from './host/lanes.js';
import { CustomerMessages } from './host/messages.js';
import { applyOperator } from './host/operator-events.js';
import { StatusEvents } from './host/status-events.js';
import { WebchatLive } from './host/webchat-live.js';

/**
 * The actor host: applies inbound envelopes to conversation machines. Its parts, each in its
 * own file under actors/host/, can be read one at a time:
 *
 * - lanes.ts: one lane per conversation, its envelopes applied one at a time in arrival
 *   order; a failing envelope retried in place, one the database refuses set aside.
 * - messages.ts: customer messages, group-committed (many conversations' messages in one
 *   transaction); a built-in agent answers inside it.
 * - answers.ts: the agents' answers: the path from the agent's provider, model calls in fair
 *   places (actors/fair-slots.ts), the durable attempt bound, cancellation when a human takes
 *   over, group-committed answers and their credit settlement.
 * - status-events.ts, operator-events.ts: helpdesk status events and operator commands, a
 *   transaction each.
 * - debounce.ts: the agent's debounce window: a timer per collecting conversation, re-armed
 *   from the persisted deadlines when a partition is acquired.
 * - commit.ts: the transaction around a plan (actors/tx-plan.ts) and what follows a commit
 *   (hand-over to the outbox sender, notices, webchat session announcements).
 *
 * This file routes each envelope to its part and, after a status or operator event, cancels
 * an answer the conversation no longer waits for.
 */
export { MAX_ANSWER_ATTEMPTS } from './host/answers.js';
export type { ItemResult } from './host/lanes.js';

export interface HostDeps extends CommitDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  partitions: number;
  logger: Logger;
  agent: AgentRunner;
  /** Publishes a status event to its conversation's partition (lib/inbound.ts). */
  publisher: InboundPublisher;
  /** Where answer attempts are counted: a pool whose commits need not wait for the disk (default: `sql`). */
  quickSql?: SqlPool;
  /** Told which companies' credit reservations a commit settled (actors/credit-gate.ts). */
  credit?: { settled(companyIds: Iterable<number>): void };
  /** The clock of debounce deadlines and business hours (default Date.now; tests inject one). */
  now?: () => number;
}

export interface HostOptions {
  /** Items per group-commit transaction, at most. */
  maxBatch?: number;
  /** Group-commit transactions of each kind (messages, answers) running at once. */
  batchConcurrency?: number;
  /** Status / operator transactions running at once. */
  maxConcurrentSteps?: number;
  /** Model calls (answers asked outside a transaction) in flight at once (MODEL_MAX_CONCURRENCY). */
  maxModelCalls?: number;
  /** Attempts of one status / operator transaction before the item is retried in place. */
  stepAttempts?: number;
}

export class ConversationHost {
  readonly #lanes: Lanes;
  readonly #messages: CustomerMessages;
  readonly #answers: Answers;
  readonly #status: StatusEvents;
  readonly #commits: Commits;
  readonly #slots: FairSlots;
  readonly #debounce: DebounceTimers;
  #closed = false;

  constructor(deps: HostDeps, options: HostOptions = {}) {
    const batch = { maxBatch: options.maxBatch, concurrency: options.batchConcurrency };
    const closed = () => this.#closed;
    this.#commits = new Commits(deps, { maxSingle: options.maxConcurrentSteps ?? 4, attempts: options.stepAttempts ?? 5 });
    this.#slots = new FairSlots(options.maxModelCalls ?? DEFAULT_MODEL_MAX_CONCURRENCY);
    this.#lanes = new Lanes({ sql: deps.sql, logger: deps.logger, closed }, (lane, item) => this.#apply(lane, item));
    this.#answers = new Answers(
      {
        sql: deps.sql, quickSql: deps.quickSql ?? deps.sql, logger: deps.logger, agent: deps.agent, commits: this.#commits, slots: this.#slots, credit: deps.credit,
        evictIfIdle: (lane) => this.#lanes.evictIfIdle(lane), closed, live: new WebchatLive(deps.nc, deps.names, deps.logger),
      },
      batch,
    );
    const now = deps.now ?? Date.now;
    this.#debounce = new DebounceTimers({
      sql: deps.sql, logger: deps.logger, commits: this.#commits, answers: this.#answers, lanes: this.#lanes, now, closed,
      owns: (p) => (deps.epochOf ? deps.epochOf(p) !== null : true),
    });
    this.#messages = new CustomerMessages({ commits: this.#commits, answers: this.#answers, debounce: this.#debounce, partitions: deps.partitions, now }, batch);
    this.#status = new StatusEvents({ sql: deps.sql, publisher: deps.publisher, logger: deps.logger, commits: this.#commits });
  }

  /** Lanes in memory (conversations with queued or running work). */
  get lanes(): number {
    return this.#lanes.size;
  }

  /** Model calls in flight and waiting for a place now, and the most in flight at once so far. */
  get modelCalls(): { running: number; waiting: number; peak: number; companiesWaiting: number } {
    return { running: this.#slots.running, waiting: this.#slots.waiting, peak: this.#slots.peak, companiesWaiting: this.#slots.companiesWaiting };
  }

  close(): void {
    this.#closed = true;
    this.#debounce.close();
  }

  /** A partition this worker now owns: the debounce deadlines of its conversations are armed. */
  acquirePartition(partition: number): Promise<void> {
    return this.#debounce.acquire(partition);
  }

  /** A partition given up: its timers go (its next owner arms them). */
  releasePartition(partition: number): void {
    this.#debounce.release(partition);
  }

  /** Queues an envelope on its conversation's lane; resolves when it may be acked (or must be nak'ed). */
  submit(partition: number, env: InboundEnvelope): Promise<ItemResult> {
    return this.#lanes.submit(partition, env);
  }

  /** Applied in the envelope's trace (lib/tracing.ts), so what it causes is traced under it. */
  #apply(lane: Lane, item: Item): Promise<Applied> {
    if (item.task) return item.task(lane);
    const env = item.env;
    return inContext(traceOf(env), () => this.#applyItem(lane, item, env));
  }

  async #applyItem(lane: Lane, item: Item, env: InboundEnvelope): Promise<Applied> {
    if (env.kind === 'message') return this.#messages.apply(lane, env);
    if (env.kind === 'operator') return this.#thenCancel(lane, await applyOperator(this.#commits, env));
    if (env.status.clientId === null) {
      return this.#status.route(item, env, (p, routed) => {
        attachActiveTrace(routed);
        return this.submit(p, routed);
      });
    }
    return this.#thenCancel(lane, await this.#status.apply(env, env.status.clientId));
  }

  /** After a status or operator event: an answer the machine no longer waits for (a human took over) is aborted. */
  async #thenCancel(lane: Lane, result: ItemResult): Promise<ItemResult> {
    await this.#answers.cancelIfTakenOver(lane);
    return result;
  }
}
