import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { AnyEventObject, StateValue } from 'xstate';
import { inTransaction, type SqlClient, type SqlPool } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { partitionOf, type StreamNames } from '../lib/streams.js';
import { statusOf } from '../machines/conversation.js';
import type { AgentOutput, ConversationEvent } from '../schema/conversation.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import type { AgentRunner } from './agents/types.js';
import { Batcher } from './batcher.js';
import { Limiter, sleep } from './limit.js';
import {
  agentOfIntegration,
  chargeModelUsage,
  createConversations,
  findConversation,
  findConversationByRef,
  findMessage,
  findOpenConversation,
  initialSnapshot,
  insertMessages,
  insertReceipts,
  lockConversation,
  lockConversations,
  lockOpenConversations,
  receiptKey,
  setReceiptOutcomes,
  type ConversationRow,
  type OutboxSend,
} from './store.js';
import { rowToView, TxPlan, type CompanyNotice } from './tx-plan.js';

/**
 * The actor host: applies inbound envelopes to conversation machines.
 *
 * - One *lane* per conversation key (integration + client id): its items are applied one at
 *   a time in arrival order; lanes run concurrently and are dropped when idle, so memory
 *   holds only conversations with work in flight.
 * - Group commit: the customer messages of all lanes that are ready go into ONE transaction
 *   (actors/batcher.ts), and so do the agents' answers; each batch holds at most one item
 *   per conversation (a lane has one item in flight). In the transaction the conversations
 *   are locked (`for update`, in id order), their machines are stepped in memory with
 *   xstate's pure `transition()` (actors/tx-plan.ts), and the snapshots, the transition
 *   log, messages, outbox rows and the inbound receipts are written with one bulk statement
 *   per table; only after the commit are the JetStream messages acked. A batch that fails
 *   is retried item by item, so one bad envelope does not hold up the others. Status and
 *   operator events (rare) get a transaction each, through the same plan.
 * - An agent that answers from the database alone (the built-in agent) is asked inside
 *   the message's transaction, so message and answer commit together.
 * - Any other agent (a model call) runs between two transactions: the customer message moves the machine to
 *   `active.answering` (committed), the agent is asked outside any transaction, and its
 *   answer is applied as `xstate.done.actor.agent` only if the machine is still answering
 *   that very message (stored message id). Status and operator events are applied while the
 *   agent thinks (a pause / close / transfer wins: the late answer is stored as cancelled);
 *   the next customer message of the lane waits for the answer. A crash mid-answer leaves
 *   the JetStream message unacked; its redelivery finds the machine answering and asks the
 *   agent again for the same stored message id: at most one reply row per message (unique
 *   index), so never two replies.
 * - Cancellation: each answer gets an AbortController (passed to the runner as
 *   `input.signal`). When a status or operator event applied while the agent thinks leaves
 *   the machine no longer answering that message, the host aborts it: the model's HTTP
 *   call is cancelled, nothing is sent and nothing is charged.
 * - Credit: an answer that carries `usage` (a model call) is debited in the transaction
 *   that commits it (store.ts chargeModelUsage: one `model_usage` ledger entry keyed by the
 *   answered message, and companies.balance_usd lowered atomically). An answer that is
 *   discarded (taken over, cancelled by a pending operator hold, or lost in a crash before
 *   its commit) is never charged; a re-asked answer is charged once, when it commits.
 */
export type ItemResult = 'ack' | 'nak';

interface Item {
  env: InboundEnvelope;
  partition: number;
  resolve: (r: ItemResult) => void;
  /** When its first attempt failed (it is retried in place for RETRY_IN_PLACE_MS). */
  failingSince?: number;
}

/** How long a failing envelope is retried at the head of its lane before it is nak'ed (with the lane's later ones). */
const RETRY_IN_PLACE_MS = 60_000;
/** An integration's agent is looked up at most this often (an edit takes effect within it). */
const AGENT_ID_TTL_MS = 5_000;

interface Lane {
  key: string;
  queue: Item[];
  running: boolean;
  agentTask: Promise<ItemResult> | null;
  /** The answer being computed, with the switch that cancels it. */
  inflight: { conversationId: number; messageId: string; controller: AbortController } | null;
}

export interface HostDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  partitions: number;
  logger: Logger;
  agent: AgentRunner;
  /**
   * The outbox sender: rows committed already claimed are handed over to it at once; it is
   * kicked when a commit queued rows for its claim.
   */
  outbox?: { claimMs: number; handOver(rows: OutboxSend[]): void; kick(): void };
}

export interface HostOptions {
  /** Items per group-commit transaction, at most. */
  maxBatch?: number;
  /** Group-commit transactions of each kind (messages, answers) running at once. */
  batchConcurrency?: number;
  /** Status / operator transactions running at once. */
  maxConcurrentSteps?: number;
  maxConcurrentAgents?: number;
  /** Attempts of one status / operator transaction before the item is retried in place. */
  stepAttempts?: number;
}

type MessageEnvelope = Extract<InboundEnvelope, { kind: 'message' }>;

/** What became of a customer message: applied (or a duplicate), or the machine waits for an answer. */
type MessageOutcome =
  | { kind: 'done' }
  | { kind: 'answer'; conv: ConversationRow; messageId: string; text: string }
  /** The conversation is answering an earlier message (a crash or another process left it so). */
  | { kind: 'busy'; conv: ConversationRow };

interface AnswerRequest {
  conversationId: number;
  messageId: string;
  event: AnyEventObject;
}

/** The body of one transaction: reads and locks through `client`, plans its writes in `plan`. */
type PlanWork<T> = (client: SqlClient, plan: TxPlan) => Promise<T>;

/** An item's outcome now, or (a customer message being answered) once its answer is committed. */
type Applied = ItemResult | { wait: Promise<ItemResult> };

const isAnswering = (state: StateValue): boolean => typeof state === 'object' && state !== null && (state as Record<string, unknown>).active === 'answering';

export class ConversationHost {
  readonly #deps: HostDeps;
  readonly #js: JetStreamClient;
  readonly #lanes = new Map<string, Lane>();
  readonly #messages: Batcher<MessageEnvelope, MessageOutcome>;
  readonly #answers: Batcher<AnswerRequest, void>;
  readonly #steps: Limiter;
  readonly #agents: Limiter;
  readonly #attempts: number;
  readonly #agentIds = new Map<number, { agentId: number | null; expires: number }>();
  #closed = false;

  constructor(deps: HostDeps, options: HostOptions = {}) {
    this.#deps = deps;
    this.#js = jetstream(deps.nc);
    const batch = { maxBatch: options.maxBatch, concurrency: options.batchConcurrency };
    this.#messages = new Batcher((envs) => this.#commit((client, plan) => this.#applyMessages(client, plan, envs)), batch);
    this.#answers = new Batcher((answers) => this.#commit((client, plan) => this.#applyAnswers(client, plan, answers)), batch);
    this.#steps = new Limiter(options.maxConcurrentSteps ?? 4);
    this.#agents = new Limiter(options.maxConcurrentAgents ?? 64);
    this.#attempts = options.stepAttempts ?? 5;
  }

  /** Lanes in memory (conversations with queued or running work). */
  get lanes(): number {
    return this.#lanes.size;
  }

  close(): void {
    this.#closed = true;
  }

  /** Queues an envelope on its conversation's lane; resolves when it may be acked (or must be nak'ed). */
  submit(partition: number, env: InboundEnvelope): Promise<ItemResult> {
    return new Promise<ItemResult>((resolve) => {
      const key = this.#laneKey(env);
      let lane = this.#lanes.get(key);
      if (!lane) {
        lane = { key, queue: [], running: false, agentTask: null, inflight: null };
        this.#lanes.set(key, lane);
      }
      lane.queue.push({ env, partition, resolve });
      if (!lane.running) {
        lane.running = true;
        void this.#runLane(lane);
      }
    });
  }

  #laneKey(env: InboundEnvelope): string {
    if (env.kind === 'message') return `c:${env.integrationId}:${env.message.clientId}`;
    if (env.kind === 'operator') return `c:${env.integrationId}:${env.clientId}`;
    if (env.status.clientId !== null) return `c:${env.integrationId}:${env.status.clientId}`;
    return `r:${env.integrationId}:${env.status.requestId}:${env.status.dialogId ?? ''}`;
  }

  async #runLane(lane: Lane): Promise<void> {
    try {
      while (lane.queue.length > 0) {
        const item = lane.queue[0]!;
        let result: Applied;
        try {
          result = await this.#apply(lane, item);
          lane.queue.shift();
        } catch (err) {
          // Retried in place (the consumer keeps its JetStream message alive), so the
          // conversation's later envelopes cannot overtake it (e.g. during a database outage).
          item.failingSince ??= Date.now();
          if (!this.#closed && Date.now() - item.failingSince < RETRY_IN_PLACE_MS) {
            this.#deps.logger.warn({ err, key: lane.key, idempotencyKey: item.env.idempotencyKey }, 'host: an envelope failed; retrying it in place');
            await sleep(1000);
            continue;
          }
          this.#deps.logger.error({ err, key: lane.key, idempotencyKey: item.env.idempotencyKey }, 'host: giving up on an envelope for now (will be redelivered)');
          result = 'nak';
          lane.queue.shift();
          for (const later of lane.queue.splice(0)) later.resolve('nak');
        }
        if (typeof result === 'string') item.resolve(result);
        else void result.wait.then(item.resolve, () => item.resolve('nak'));
      }
    } finally {
      lane.running = false;
      this.#maybeEvict(lane);
    }
  }

  #maybeEvict(lane: Lane): void {
    if (!lane.running && lane.queue.length === 0 && !lane.agentTask && this.#lanes.get(lane.key) === lane) this.#lanes.delete(lane.key);
  }

  async #apply(lane: Lane, item: Item): Promise<Applied> {
    const env = item.env;
    if (env.kind === 'message') return this.#applyMessage(lane, env);
    if (env.kind === 'operator') return this.#cancelIfTakenOver(lane, await this.#applyOperator(env));
    if (env.status.clientId === null) return this.#routeStatus(item, env);
    return this.#cancelIfTakenOver(lane, await this.#applyStatus(env, env.status.clientId));
  }

  /**
   * After a status or operator event was committed: if the lane's agent is still thinking
   * about a message the machine no longer waits for (a human took over), abort it.
   */
  async #cancelIfTakenOver(lane: Lane, result: ItemResult): Promise<ItemResult> {
    const inflight = lane.inflight;
    if (!inflight || inflight.controller.signal.aborted) return result;
    try {
      const conv = await findConversation(this.#deps.sql, inflight.conversationId);
      if (!conv || !isAnswering(conv.state) || conv.snapshot.context.lastCustomerMessageId !== inflight.messageId) {
        this.#deps.logger.info({ conversationId: inflight.conversationId, messageId: inflight.messageId }, 'host: a human took over while the agent was thinking; cancelling it');
        inflight.controller.abort(new Error('taken over'));
      }
    } catch (err) {
      this.#deps.logger.warn({ err }, 'host: could not check whether to cancel the agent (its answer is still checked before it is applied)');
    }
    return result;
  }

  /** One transaction writing a plan; its notices are published (and the dispatcher kicked) after the commit. */
  async #commit<T>(work: PlanWork<T>): Promise<T> {
    const plan = new TxPlan(this.#deps.outbox?.claimMs ?? null);
    const { out, notices } = await inTransaction(this.#deps.sql, async (client) => {
      const out = await work(client, plan);
      return { out, notices: await plan.write(client) };
    });
    if (plan.claimed.length > 0) this.#deps.outbox?.handOver(plan.claimed);
    this.#publish(notices, plan.unclaimedOutbox);
    return out;
  }

  /** A status / operator transaction: bounded concurrency, retried a few times before the lane retries it in place. */
  async #single(work: PlanWork<void>): Promise<void> {
    let lastErr: unknown;
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      try {
        await this.#steps.run(() => this.#commit(work));
        return;
      } catch (err) {
        lastErr = err;
        if (attempt < this.#attempts) await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
    throw lastErr;
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

  // ---- customer messages ---------------------------------------------------------------

  async #applyMessage(lane: Lane, env: MessageEnvelope): Promise<Applied> {
    for (;;) {
      // A machine answering an earlier message of this lane gets its answer first.
      while (lane.agentTask) await lane.agentTask;
      const outcome = await this.#messages.submit(env);
      if (outcome.kind === 'done') return 'ack';
      if (outcome.kind === 'busy') {
        this.#resumeAnswer(lane, outcome.conv);
        if (!lane.agentTask) await sleep(200); // answering with no message to answer: another process owns it now
        continue;
      }
      // The JetStream message is acked once the answer is committed (or discarded).
      return { wait: this.#startAnswer(lane, outcome.conv, outcome.messageId, outcome.text) };
    }
  }

  /** The group-commit transaction of customer messages (one per conversation at most). */
  async #applyMessages(client: SqlClient, plan: TxPlan, envs: MessageEnvelope[]): Promise<MessageOutcome[]> {
    const outcomes: MessageOutcome[] = envs.map(() => ({ kind: 'done' }));
    const keyOf = (integrationId: number, clientId: string) => `${integrationId}\n${clientId}`;
    const keys = envs.map((e) => keyOf(e.integrationId, e.message.clientId));
    const open = new Map((await lockOpenConversations(client, envs.map((e) => ({ integrationId: e.integrationId, clientId: e.message.clientId })))).map((c) => [keyOf(c.integration_id, c.client_id), c]));
    const ready: number[] = [];
    envs.forEach((_, i) => {
      const conv = open.get(keys[i]!);
      if (conv && isAnswering(conv.state)) outcomes[i] = { kind: 'busy', conv };
      else ready.push(i);
    });
    const fresh = await insertReceipts(
      client,
      ready.map((i) => {
        const env = envs[i]!;
        return { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'message', outcome: 'applied', conversationId: open.get(keys[i]!)?.id ?? null };
      }),
    );
    // Redeliveries and late helpdesk retries were applied before: acked, nothing written.
    const applying = ready.filter((i) => fresh.has(receiptKey(envs[i]!.integrationId, envs[i]!.idempotencyKey)));
    const missing = applying.filter((i) => !open.has(keys[i]!));
    if (missing.length > 0) {
      const snapshot = initialSnapshot();
      const created = await createConversations(
        client,
        missing.map((i) => {
          const env = envs[i]!;
          const m = env.message;
          return {
            companyId: env.companyId, integrationId: env.integrationId, channel: env.channel, clientId: m.clientId, status: statusOf(snapshot.value), snapshot,
            partition: partitionOf(env.integrationId, m.clientId, this.#deps.partitions), channelId: m.channelId, transport: m.transport,
          };
        }),
      );
      for (const c of created) open.set(keyOf(c.integration_id, c.client_id), c);
      await setReceiptOutcomes(
        client,
        missing.map((i) => ({ integrationId: envs[i]!.integrationId, key: envs[i]!.idempotencyKey, outcome: 'applied', conversationId: open.get(keys[i]!)!.id })),
      );
    }
    const convOf = (i: number) => open.get(keys[i]!)!;
    const stored = await insertMessages(
      client,
      applying.map((i) => {
        const conv = convOf(i);
        const m = envs[i]!.message;
        conv.message_seq += 1;
        return {
          companyId: conv.company_id, conversationId: conv.id, seq: conv.message_seq, role: 'customer', kind: 'message', text: m.text,
          externalId: m.messageId, replyToId: null, delivery: null, attachments: m.attachments,
        };
      }),
    );
    const storedByConv = new Map(stored.map((r) => [r.conversation_id, r]));
    const now = new Date();
    for (const i of applying) {
      const conv = convOf(i);
      const m = envs[i]!.message;
      const row = storedByConv.get(conv.id);
      if (!row) throw new Error(`customer message of conversation ${conv.id} (seq ${conv.message_seq}) was not stored`);
      plan.noticeStored(conv, row);
      const event: ConversationEvent = {
        type: 'customer.message', messageId: row.id, text: m.text, at: m.sentAt,
        ...(m.requestId !== null ? { requestId: m.requestId } : {}),
        ...(m.dialogId !== null ? { dialogId: m.dialogId } : {}),
      };
      plan.remember(conv, m.requestId, m.dialogId);
      plan.step(conv, event, { lastMessageAt: now, channelId: m.channelId, transport: m.transport });
      plan.touch(conv);
      if (isAnswering(conv.state)) outcomes[i] = { kind: 'answer', conv, messageId: row.id, text: m.text };
    }
    await this.#answerLocally(client, plan, outcomes);
    return outcomes;
  }

  /**
   * Agents that answer from the database alone (agents/types.ts `answersLocally`) are asked
   * here, inside the message transaction: message and answer commit together, the lane goes
   * on at once, and the conversation is locked and written once instead of twice.
   */
  async #answerLocally(client: SqlClient, plan: TxPlan, outcomes: MessageOutcome[]): Promise<void> {
    const local: { i: number; conv: ConversationRow; messageId: string; text: string; agentId: number | null }[] = [];
    outcomes.forEach((o, i) => {
      if (o.kind !== 'answer') return;
      const agentId = this.#cachedAgentOf(o.conv.integration_id);
      if (agentId !== undefined && this.#deps.agent.answersLocally?.(o.conv.company_id, agentId)) local.push({ i, conv: o.conv, messageId: o.messageId, text: o.text, agentId });
    });
    const events = await Promise.all(local.map((l) => this.#ask(l.conv, l.messageId, l.text, l.agentId)));
    for (const [n, l] of local.entries()) {
      await this.#applyAnswer(client, plan, l.conv, l.messageId, events[n]!);
      outcomes[l.i] = { kind: 'done' };
    }
  }

  #resumeAnswer(lane: Lane, conv: ConversationRow): void {
    const messageId = conv.snapshot.context.lastCustomerMessageId;
    if (!messageId || lane.agentTask) return;
    this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: resuming an answer that was in flight');
    const controller = new AbortController();
    lane.inflight = { conversationId: conv.id, messageId, controller };
    lane.agentTask = (async () => {
      const msg = await findMessage(this.#deps.sql, messageId);
      return this.#answer(conv, messageId, msg?.text ?? '', controller.signal);
    })().finally(() => {
      lane.agentTask = null;
      lane.inflight = null;
      this.#maybeEvict(lane);
    });
  }

  #startAnswer(lane: Lane, conv: ConversationRow, messageId: string, text: string): Promise<ItemResult> {
    const controller = new AbortController();
    lane.inflight = { conversationId: conv.id, messageId, controller };
    const task = this.#answer(conv, messageId, text, controller.signal).finally(() => {
      lane.agentTask = null;
      lane.inflight = null;
      this.#maybeEvict(lane);
    });
    lane.agentTask = task;
    return task;
  }

  /** The integration's agent if looked up recently, else undefined. */
  #cachedAgentOf(integrationId: number): number | null | undefined {
    const hit = this.#agentIds.get(integrationId);
    return hit && hit.expires > Date.now() ? hit.agentId : undefined;
  }

  async #agentOf(integrationId: number): Promise<number | null> {
    const cached = this.#cachedAgentOf(integrationId);
    if (cached !== undefined) return cached;
    const agentId = await agentOfIntegration(this.#deps.sql, integrationId);
    this.#agentIds.set(integrationId, { agentId, expires: Date.now() + AGENT_ID_TTL_MS });
    return agentId;
  }

  /**
   * Asks the agent; its answer or its failure, as the machine's event. `agentId` undefined:
   * the integration's agent is looked up first (a failed lookup is a failed answer too).
   */
  async #ask(conv: ConversationRow, messageId: string, text: string, agentId: number | null | undefined, signal?: AbortSignal): Promise<AnyEventObject> {
    try {
      const agent = agentId === undefined ? await this.#agentOf(conv.integration_id) : agentId;
      const output = await this.#agents.run(() =>
        this.#deps.agent.answer({ companyId: conv.company_id, conversationId: conv.id, agentId: agent, text, messageId, ...(signal ? { signal } : {}) }),
      );
      return { type: 'xstate.done.actor.agent', output };
    } catch (err) {
      if (signal?.aborted) this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: the agent was cancelled (taken over)');
      else this.#deps.logger.warn({ err, conversationId: conv.id, messageId }, 'host: the agent failed; handing off');
      return { type: 'xstate.error.actor.agent', error: err instanceof Error ? err : new Error(String(err)) };
    }
  }

  async #answer(conv: ConversationRow, messageId: string, text: string, signal: AbortSignal): Promise<ItemResult> {
    const event = await this.#ask(conv, messageId, text, undefined, signal);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#answers.submit({ conversationId: conv.id, messageId, event });
        return 'ack';
      } catch (err) {
        if (this.#closed || attempt >= this.#attempts) {
          this.#deps.logger.error({ err, conversationId: conv.id }, 'host: could not store the answer');
          return 'nak';
        }
        await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
  }

  /** The group-commit transaction of answers (one per conversation at most). */
  async #applyAnswers(client: SqlClient, plan: TxPlan, answers: AnswerRequest[]): Promise<void[]> {
    const locked = new Map((await lockConversations(client, answers.map((a) => a.conversationId))).map((c) => [c.id, c]));
    for (const a of answers) {
      const conv = locked.get(a.conversationId);
      if (conv) await this.#applyAnswer(client, plan, conv, a.messageId, a.event);
    }
    return answers.map(() => undefined);
  }

  /** Applies an answer to a locked conversation, if its machine still waits for it. */
  async #applyAnswer(client: SqlClient, plan: TxPlan, conv: ConversationRow, messageId: string, event: AnyEventObject): Promise<void> {
    const output = (event as { output?: AgentOutput }).output;
    if (!isAnswering(conv.state) || conv.snapshot.context.lastCustomerMessageId !== messageId) {
      // A human took over (pause, transfer, close) while the agent was thinking: keep the
      // answer for the record, never send it.
      if (output?.kind === 'reply') plan.addMessage(conv, { role: 'agent', kind: 'reply', text: output.text, replyToId: messageId, delivery: 'cancelled' });
      return;
    }
    // A reply committed while an operator's pause / close is pending is cancelled, not sent
    // (tx-plan.ts): it is not charged either.
    const hold = conv.hold_requested_at !== null;
    const applied = plan.step(conv, event);
    if (applied && output?.usage && !hold) {
      await chargeModelUsage(client, { companyId: conv.company_id, conversationId: conv.id, messageId, ...output.usage });
    }
  }

  // ---- status events -------------------------------------------------------------------

  async #applyStatus(env: Extract<InboundEnvelope, { kind: 'status' }>, clientId: string): Promise<ItemResult> {
    const s = env.status;
    await this.#single(async (client, plan) => {
      const receipt = { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'applied', conversationId: null };
      if ((await insertReceipts(client, [receipt])).size === 0) return;
      const conv = (await findConversationByRef(client, env.integrationId, s.requestId, s.dialogId, clientId, true)) ?? (await findOpenConversation(client, env.integrationId, clientId, true));
      if (!conv) {
        await setReceiptOutcomes(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, outcome: 'unknown_session', conversationId: null }]);
        this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for no known session (recorded, ignored)');
        return;
      }
      const event = {
        type: `helpdesk.${s.hookType}`, requestId: s.requestId, ...(s.dialogId !== null ? { dialogId: s.dialogId } : {}), at: env.receivedAt,
      } as ConversationEvent;
      plan.remember(conv, s.requestId, s.dialogId);
      plan.step(conv, event);
      await setReceiptOutcomes(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, outcome: 'applied', conversationId: conv.id }]);
    });
    return 'ack';
  }

  /**
   * A status event that carries only request_id / dialog_id arrives on the partition of
   * `request:<id>`: find the session that saw the id and hand the event to its partition
   * (directly when it is this one). Unknown ids are recorded and acked.
   */
  async #routeStatus(item: Item, env: Extract<InboundEnvelope, { kind: 'status' }>): Promise<ItemResult> {
    const s = env.status;
    const conv = await findConversationByRef(this.#deps.sql, env.integrationId, s.requestId, s.dialogId, null, false);
    if (!conv) {
      await this.#single(async (client) => {
        await insertReceipts(client, [{ integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'unknown_session', conversationId: null }]);
      });
      this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for unknown request/dialog id (recorded, ignored)');
      return 'ack';
    }
    const routed: InboundEnvelope = { ...env, status: { ...s, clientId: conv.client_id } };
    if (conv.partition === item.partition) return this.submit(item.partition, routed);
    const subject = this.#deps.names.inboundSubject(conv.partition, env.companyId);
    await this.#js.publish(subject, JSON.stringify(routed), { msgID: `${env.integrationId}:${env.idempotencyKey}:routed` });
    return 'ack';
  }

  // ---- operator commands ---------------------------------------------------------------

  async #applyOperator(env: Extract<InboundEnvelope, { kind: 'operator' }>): Promise<ItemResult> {
    await this.#single(async (client, plan) => {
      const receipt = { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'operator', outcome: 'applied', conversationId: env.conversationId };
      const fresh = (await insertReceipts(client, [receipt])).size > 0;
      const conv = await lockConversation(client, env.conversationId);
      if (!conv || conv.company_id !== env.companyId || conv.integration_id !== env.integrationId) {
        plan.notice(env.companyId, () => ({ type: 'applied', conversationId: env.conversationId, idempotencyKey: env.idempotencyKey, outcome: 'not_found', conversation: null }));
        return;
      }
      let outcome: 'applied' | 'duplicate' | 'ignored' = fresh ? 'applied' : 'duplicate';
      if (fresh) {
        const cmd = env.command;
        if (cmd.action === 'reply') {
          if (conv.status === 'closed') outcome = 'ignored';
          else {
            plan.addMessage(conv, { role: 'operator', kind: 'message', text: cmd.text, delivery: 'pending' }, 'operator_reply');
            plan.touch(conv, { lastMessageAt: new Date() });
          }
        } else {
          const event = { type: `operator.${cmd.action}`, at: env.receivedAt, ...(cmd.by ? { by: cmd.by } : {}) } as ConversationEvent;
          const clearHold = cmd.action === 'pause' || cmd.action === 'close';
          const changed = plan.step(conv, event, { clearHold });
          if (!changed && clearHold && conv.hold_requested_at) plan.touch(conv, { clearHold });
        }
      }
      // Built after the writes, so the view carries the saved row.
      plan.notice(conv.company_id, () => ({ type: 'applied', conversationId: conv.id, idempotencyKey: env.idempotencyKey, outcome, conversation: rowToView(conv) }));
    });
    return 'ack';
  }
}
