import { inTransaction, type SqlClient, type SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import { publishWebchatPush } from '../../lib/webchat-pushes.js';
import { activeTrace, attachTrace, recordSharedSpan, spanClock, traceOf, tracingEnabled, type Context } from '../../lib/tracing.js';
import { Limiter, sleep } from '../limit.js';
import type { ConversationRow, OutboxSend } from '../store.js';
import { TxPlan, type CompanyNotice } from '../tx-plan.js';

/**
 * The host's transactions and what follows each commit. A transaction's body reads and locks
 * through its client and plans its writes in a TxPlan (actors/tx-plan.ts), which writes them
 * with a handful of bulk statements before the commit; after the commit:
 * - replies committed already claimed go to the outbox sender at once (`handOver`), and the
 *   sender is kicked when rows wait for its claim;
 * - a webchat visitor's sockets learn of a session the worker opened (the gateway never
 *   creates sessions, and only knows the visitor, not the new id);
 * - the conversations' notices (inspect stream, dashboard, applied operator commands) are
 *   published.
 */
export type PlanWork<T> = (client: SqlClient, plan: TxPlan) => Promise<T>;

export interface CommitDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  logger: Logger;
  /**
   * The outbox sender: rows committed already claimed are handed over to it at once; it is
   * kicked when a commit queued rows for its claim.
   */
  outbox?: { claimMs: number; handOver(rows: OutboxSend[]): void; kick(): void };
  /** The epoch under which this worker may send for a partition now (actors/partitions.ts), or null. */
  epochOf?: (partition: number) => number | null;
}

export class Commits {
  readonly #deps: CommitDeps;
  readonly #steps: Limiter;
  readonly #attempts: number;

  /** `maxSingle`: single transactions (status / operator events) at once; `attempts`: tries of each before the caller retries it. */
  constructor(deps: CommitDeps, o: { maxSingle: number; attempts: number }) {
    this.#deps = deps;
    this.#steps = new Limiter(o.maxSingle);
    this.#attempts = o.attempts;
  }

  /** Attempts of one transaction before it is given up (answers, status and operator events). */
  get attempts(): number {
    return this.#attempts;
  }

  /**
   * One transaction writing a plan, then what follows its commit. `finish` runs last in the
   * transaction, after the plan's writes: rows it locks (the companies whose credit a batch
   * of answers settles) stay locked only until the commit.
   */
  async run<T>(work: PlanWork<T>, finish?: (client: SqlClient, out: T) => Promise<void>, trace?: Context): Promise<T> {
    const { outbox, epochOf } = this.#deps;
    const plan = new TxPlan(outbox && epochOf ? { claimMs: outbox.claimMs, epochOf } : null);
    const started = tracingEnabled() ? spanClock() : 0;
    let result: { out: T; notices: CompanyNotice[] };
    try {
      result = await inTransaction(this.#deps.sql, async (client) => {
        const out = await work(client, plan);
        const notices = await plan.write(client);
        await finish?.(client, out);
        return { out, notices };
      });
    } catch (err) {
      if (started) this.#traceTransaction(plan, trace, started, err);
      throw err;
    }
    const { out, notices } = result;
    if (started) {
      this.#traceTransaction(plan, trace, started);
      for (const row of plan.claimed) if (!traceOf(row)) attachTrace(row, trace);
    }
    if (plan.claimed.length > 0) outbox?.handOver(plan.claimed);
    this.#announceSessions(plan.opened);
    this.#publish(notices, plan.unclaimedOutbox);
    return out;
  }

  /** A status / operator transaction of its own: bounded concurrency, retried a few times before the lane retries it in place. */
  async single(work: PlanWork<void>): Promise<void> {
    // One envelope's transaction: it belongs to the trace the caller runs in.
    const trace = activeTrace();
    let lastErr: unknown;
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      try {
        await this.#steps.run(() => this.run(work, undefined, trace));
        return;
      } catch (err) {
        lastErr = err;
        if (attempt < this.#attempts) await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
    throw lastErr;
  }

  /** The transaction's span in the trace of each envelope it wrote for (one group commit serves many). */
  #traceTransaction(plan: TxPlan, fallback: Context | undefined, started: number, err?: unknown): void {
    const traces = plan.traces();
    if (traces.length === 0 && fallback) traces.push(fallback);
    recordSharedSpan('db transaction', traces, started, spanClock(), { 'db.system': 'postgresql', 'mas.traces_in_transaction': traces.length }, err);
  }

  #announceSessions(opened: ConversationRow[]): void {
    for (const c of opened) {
      if (c.channel !== 'webchat') continue;
      try {
        publishWebchatPush(this.#deps.nc, this.#deps.names, { integrationId: c.integration_id, clientId: c.client_id }, { type: 'session', conversationId: c.id });
      } catch (err) {
        this.#deps.logger.warn({ err, conversationId: c.id }, 'host: could not announce a webchat session (the gateway finds it when it rechecks)');
      }
    }
  }

  #publish(notices: CompanyNotice[], outbox: boolean): void {
    for (const { companyId, notice } of notices) {
      try {
        this.#deps.nc.publish(this.#deps.names.conversationEvents(companyId, notice.conversationId), JSON.stringify(notice));
      } catch (err) {
        this.#deps.logger.warn({ err }, 'host: could not publish a conversation notice');
      }
    }
    if (outbox) this.#deps.outbox?.kick();
  }
}
