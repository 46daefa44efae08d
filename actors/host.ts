import { DEFAULT_MODEL_MAX_CONCURRENCY } from '../lib/config.js';
import type { SqlPool } from '../lib/db.js';
import { isDataError, sqlState } from '../lib/pg-errors.js';
import { conversationKey, conversationKeyOf, type InboundPublisher } from '../lib/inbound.js';
import { attachActiveTrace, inContext, traceOf, tracing } from '../lib/tracing.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import { Answers } from './answers.js';
import { DebounceTimers, type DueDeadline } from './debounce.js';
import { FairSlots } from './fair-slots.js';
import { Lanes, type Applied, type ItemResult, type Lane } from './lanes.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Steps, type Step, type StepResult, type StepsDeps } from './steps.js';
import { conversationIdByRef } from './tables/conversations.js';
import { recordReceipt } from './tables/receipts.js';
import { applyDeliveryReport } from './tables/delivery-reports.js';
import { messageRowView } from './plan.js';
import { WebchatLive } from './webchat-live.js';

/**
 * The actor host: what happens to each inbound envelope, in one readable place.
 *
 * An envelope is queued on its conversation's lane (actors/lanes.ts: one at a time, in
 * arrival order) and becomes a step of the step pipeline (actors/steps.ts: load, step,
 * store, group-committed). What the step leaves to do decides what follows:
 * - `answer`: the agent is asked outside any transaction (actors/answers.ts), its answer is
 *   an `answer` step, and the envelope is acked once that is committed;
 * - `collect`: a debounce deadline is armed (actors/debounce.ts); when it passes, a
 *   `debounce` step on the lane;
 * - `resume`: the conversation is answering a message nobody here answers (a crash left it
 *   so): that answer is asked again first, then the step is tried again.
 * A customer message (and a debounce deadline) waits for the answer its conversation is
 * working out; a status event or an operator command does not: it is what a human taking
 * over looks like, and an answer the machine no longer waits for is then aborted.
 * An envelope the database refuses for its own values (SQLSTATE class 22/23) is recorded as
 * a rejected receipt and acked: no retry could store it.
 */
export { MAX_ANSWER_ATTEMPTS } from './answers.js';

/** How long a report of a message not recorded yet is tried again (its send's answer is recorded within seconds). */
const REPORT_PATIENCE_MS = 60_000;

export interface HostDeps extends Omit<StepsDeps, 'now'> {
  /** Publishes a status event to its conversation's partition (lib/inbound.ts). */
  publisher: InboundPublisher;
  /** Where answer attempts are counted: a pool whose commits need not wait for the disk (default: `sql`). */
  quickSql?: SqlPool;
  /** The clock of debounce deadlines and business hours (default Date.now; tests inject one). */
  now?: () => number;
}

export interface HostOptions {
  /** Steps per group-commit transaction, at most. */
  maxBatch?: number;
  /** Group-commit transactions running at once. */
  batchConcurrency?: number;
  /** Model calls (answers asked outside a transaction) in flight at once (MODEL_MAX_CONCURRENCY). */
  maxModelCalls?: number;
}

/** Group-commit transactions running at once, by default. */
export const DEFAULT_STEP_CONCURRENCY = 3;

export class ConversationHost {
  readonly #deps: HostDeps;
  readonly #lanes: Lanes;
  readonly #steps: Steps;
  readonly #answers: Answers;
  readonly #slots: FairSlots;
  readonly #debounce: DebounceTimers;
  #closed = false;

  constructor(deps: HostDeps, options: HostOptions = {}) {
    this.#deps = deps;
    const closed = () => this.#closed;
    const now = deps.now ?? Date.now;
    this.#lanes = new Lanes({ logger: deps.logger, closed });
    this.#steps = new Steps({ ...deps, now }, { maxBatch: options.maxBatch, concurrency: options.batchConcurrency ?? DEFAULT_STEP_CONCURRENCY });
    this.#slots = new FairSlots(options.maxModelCalls ?? DEFAULT_MODEL_MAX_CONCURRENCY);
    this.#answers = new Answers({
      sql: deps.sql, quickSql: deps.quickSql ?? deps.sql, logger: deps.logger, agent: deps.agent, steps: this.#steps, slots: this.#slots,
      evictIfIdle: (lane) => this.#lanes.evictIfIdle(lane), closed, live: new WebchatLive(deps.nc, deps.names, deps.logger),
    });
    this.#debounce = new DebounceTimers({
      sql: deps.sql, logger: deps.logger, now, closed,
      owns: (p) => (deps.leases ? deps.leases.epochOf(p) !== null : true),
      onDue: (due) => this.#lanes.run(conversationKey(due.integrationId, due.clientId), (lane) => this.#deadline(lane, due)),
    });
  }

  /** Lanes in memory (conversations with queued or running work). */
  get lanes(): number {
    return this.#lanes.size;
  }

  /** The places for the worker's model calls: replays (actors/replays/runner.ts) take spare ones. */
  get slots(): FairSlots {
    return this.#slots;
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
    // Applied in the envelope's trace (lib/tracing.ts), so what it causes is traced under it.
    const apply = (lane: Lane) => this.#apply(lane, partition, env);
    return this.#lanes.run(conversationKeyOf(env), tracing.enabled ? (lane) => inContext(traceOf(env), () => apply(lane)) : apply);
  }

  async #apply(lane: Lane, partition: number, env: InboundEnvelope): Promise<Applied> {
    try {
      if (env.kind === 'message') return await this.#inTurn(lane, async () => ({ kind: 'message', env, route: await this.#deps.agent.routeOf(env.companyId, env.integrationId) }));
      if (env.kind === 'operator') return this.#takeOver(lane, await this.#steps.submit({ kind: 'operator', env }));
      if (env.kind === 'delivery') return await this.#report(env);
      const s = env.status;
      if (s.clientId === null) return await this.#route(partition, env);
      const ref = await conversationIdByRef(this.#deps.sql, env.integrationId, s.requestId, s.dialogId, s.clientId);
      return this.#takeOver(lane, await this.#steps.submit({ kind: 'status', env, clientId: s.clientId, refConversationId: ref?.id ?? null }));
    } catch (err) {
      if (isDataError(err) && (await this.#reject(env, err))) return 'ack';
      throw err;
    }
  }

  /**
   * A channel's report of one of our sent messages: written on the message (it changes no
   * conversation state: no step), told to the message's watchers. A report of a message not
   * recorded yet (it outran the send's own answer) is tried again for a while. A failed report
   * whose error has an effect by its channel's judgment (WhatsApp's closed 24-hour window,
   * 131047, reported late: `window_closed`) does to the conversation what a refused send does.
   */
  async #report(env: Extract<InboundEnvelope, { kind: 'delivery' }>): Promise<ItemResult> {
    const r = env.delivery;
    const outcome = await applyDeliveryReport(this.#deps.sql, env.integrationId, r);
    if (outcome.kind === 'unknown' && Date.now() - Date.parse(env.receivedAt) < REPORT_PATIENCE_MS) return 'nak';
    // Taken: the acceptance journal forgets it (actors/accepted-sweeper.ts).
    await recordReceipt(this.#deps.sql, env, outcome.kind === 'unknown' ? 'unknown_message' : 'applied');
    if (outcome.kind === 'unknown') {
      this.#deps.logger.info({ integrationId: env.integrationId, status: r.status }, 'host: a delivery report for no message of ours (ignored)');
      return 'ack';
    }
    if (outcome.kind === 'updated') {
      const m = outcome.message;
      try {
        this.#deps.nc.publish(this.#deps.names.conversationEvents(m.company_id, m.conversation_id), JSON.stringify([{ type: 'message', conversationId: m.conversation_id, message: messageRowView(m) }]));
      } catch {
        /* best effort: the row is the record */
      }
    }
    // Told again when the report comes again (a publish that failed the first time): the command's key makes it once.
    if (r.status === 'failed' && r.effect) {
      const [messageId, conversationId] = outcome.kind === 'updated' ? [outcome.message.id, outcome.message.conversation_id] : [outcome.messageId, outcome.conversationId];
      await this.#deps.publisher.publish({
        v: 1, kind: 'operator', idempotencyKey: `channel-refused:m${messageId}`, companyId: env.companyId, integrationId: env.integrationId, channel: env.channel,
        receivedAt: new Date().toISOString(), conversationId, clientId: r.clientId,
        command: { action: 'channel_refused', by: null, reason: r.effect, outboxId: r.outboxId ?? '' },
      });
    }
    return 'ack';
  }

  /** A debounce deadline passed: its step, in turn with the conversation's envelopes. */
  #deadline(lane: Lane, due: DueDeadline): Promise<Applied> {
    return this.#inTurn(lane, async () => ({ kind: 'debounce', companyId: due.companyId, conversationId: due.conversationId, route: await this.#deps.agent.routeOf(due.companyId, due.integrationId) }));
  }

  /** A step that waits for the answer its conversation is working out, then does what the step leaves to do. */
  async #inTurn(lane: Lane, stepOf: () => Promise<Extract<Step, { kind: 'message' | 'debounce' }>>): Promise<Applied> {
    for (;;) {
      while (lane.inflight) await lane.inflight.task;
      const step = await stepOf();
      const { conv, next } = await this.#steps.submit(step);
      switch (next.kind) {
        case 'none':
          return 'ack';
        // Stored with its deadline in the snapshot: acked now, answered when the window ends.
        case 'collect':
          this.#debounce.arm(conv!);
          return 'ack';
        // The JetStream message is acked once the answer is committed (or discarded).
        case 'answer':
          return { wait: this.#answers.start(lane, conv!, next.input, step.route) };
        case 'resume':
          this.#answers.resume(lane, conv!);
          // Answering with no message to answer here: another process owns it now.
          if (!lane.inflight) await sleep(200);
      }
    }
  }

  /** After a status or operator step: an answer the machine no longer waits for (a human took over) is aborted. */
  #takeOver(lane: Lane, result: StepResult): ItemResult {
    this.#answers.cancelIfTakenOver(lane, result.conv);
    return 'ack';
  }

  /**
   * A status event that carries only helpdesk ids: handed to the partition of the session that
   * saw them (queued here when it is this one). Unknown ids are recorded and acked.
   */
  async #route(partition: number, env: Extract<InboundEnvelope, { kind: 'status' }>): Promise<ItemResult> {
    const s = env.status;
    const found = await conversationIdByRef(this.#deps.sql, env.integrationId, s.requestId, s.dialogId, null);
    if (!found) {
      await recordReceipt(this.#deps.sql, env, 'unknown_session');
      this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for unknown request/dialog id (recorded, ignored)');
      return 'ack';
    }
    const routed: InboundEnvelope = { ...env, status: { ...s, clientId: found.client_id } };
    if (found.partition === partition) {
      attachActiveTrace(routed);
      return this.submit(partition, routed);
    }
    await this.#deps.publisher.publish(routed, { dedupSuffix: ':routed' });
    return 'ack';
  }

  /** Records an envelope the database cannot store (receipt outcome `rejected`); false when even that failed. */
  async #reject(env: InboundEnvelope, err: unknown): Promise<boolean> {
    const code = sqlState(err);
    this.#deps.logger.error({ err, integrationId: env.integrationId, idempotencyKey: env.idempotencyKey }, 'host: the database refuses this envelope; recording it as rejected');
    try {
      await recordReceipt(this.#deps.sql, env, `rejected (SQLSTATE ${code})`);
      return true;
    } catch (again) {
      this.#deps.logger.warn({ err: again }, 'host: could not record the rejection');
      return false;
    }
  }
}
