import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { transition, type AnyEventObject, type StateValue } from 'xstate';
import type { Orm, EntityManager } from '../lib/db.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import { partitionOf, type StreamNames } from '../lib/streams.js';
import { conversationView, messageView, DEFAULT_HANDOFF_TEXT, type ConversationNotice, type ConversationView } from '../lib/conversations.js';
import { conversationMachine } from '../machines/conversation.js';
import type { AgentOutput, ConversationEvent, SessionTransferExternalParams } from '../schema/conversation.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import type { AgentRunner } from './agents/types.js';
import { Limiter, sleep } from './limit.js';
import {
  chargeModelUsage,
  createConversation,
  findConversationByRef,
  findMessage,
  findOpenConversation,
  insertMessage,
  insertOutbox,
  insertReceipt,
  insertTransition,
  lockConversation,
  one,
  rememberRefs,
  saveConversation,
  setReceiptOutcome,
  type ConversationRow,
  type MessageRow,
} from './store.js';

/**
 * The actor host: applies inbound envelopes to conversation machines.
 *
 * - One *lane* per conversation key (integration + client id): its items are applied one at
 *   a time in arrival order; lanes run concurrently (bounded by `maxConcurrentSteps`) and
 *   are dropped when idle, so memory holds only conversations with work in flight.
 * - A machine is hydrated from its persisted snapshot inside the step's transaction (row
 *   lock `for update`) and stepped with xstate's pure `transition()`; the new snapshot,
 *   the transition log, message rows, outbox rows and the inbound receipt are written in
 *   ONE transaction; only then is the JetStream message acked.
 * - The agent runs between two transactions: the customer message moves the machine to
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

interface Lane {
  key: string;
  queue: Item[];
  running: boolean;
  agentTask: Promise<ItemResult> | null;
  /** The answer being computed, with the switch that cancels it. */
  inflight: { conversationId: number; messageId: string; controller: AbortController } | null;
}

export interface HostDeps {
  orm: Orm;
  nc: NatsConnection;
  names: StreamNames;
  partitions: number;
  logger: Logger;
  agent: AgentRunner;
  /** Called after a commit that queued outbox rows. */
  onOutbox?: () => void;
}

export interface HostOptions {
  maxConcurrentSteps?: number;
  maxConcurrentAgents?: number;
  /** Attempts of one transaction before the item is nak'ed for redelivery. */
  stepAttempts?: number;
}

class Busy extends Error {}

/** An item's outcome now, or (a customer message being answered) once its answer is committed. */
type Applied = ItemResult | { wait: Promise<ItemResult> };

const isAnswering = (state: StateValue): boolean => typeof state === 'object' && state !== null && (state as Record<string, unknown>).active === 'answering';

function rowToView(c: ConversationRow): ConversationView {
  return conversationView({
    id: c.id,
    integrationId: c.integration_id,
    channel: c.channel,
    clientId: c.client_id,
    status: c.status,
    state: c.state,
    snapshot: c.snapshot,
    createdAt: c.created_at,
    updatedAt: c.updated_at,
    lastMessageAt: c.last_message_at,
    closedAt: c.closed_at,
  });
}

function messageRowView(m: MessageRow) {
  return messageView({
    id: m.id, seq: m.seq, role: m.role, kind: m.kind, text: m.text, externalId: m.external_id,
    replyToId: m.reply_to_id, delivery: m.delivery, createdAt: m.created_at,
  });
}

/** The event without its type, JSON-safe (errors become their message). */
function payloadOf(event: AnyEventObject): Record<string, unknown> {
  const { type: _type, ...rest } = event as Record<string, unknown>;
  if (rest.error instanceof Error) rest.error = rest.error.message;
  return JSON.parse(JSON.stringify(rest)) as Record<string, unknown>;
}

interface StepOutput {
  notices: { companyId: number; notice: ConversationNotice }[];
  outbox: boolean;
}

export class ConversationHost {
  readonly #deps: HostDeps;
  readonly #js: JetStreamClient;
  readonly #lanes = new Map<string, Lane>();
  readonly #steps: Limiter;
  readonly #agents: Limiter;
  readonly #attempts: number;
  #closed = false;

  constructor(deps: HostDeps, options: HostOptions = {}) {
    this.#deps = deps;
    this.#js = jetstream(deps.nc);
    this.#steps = new Limiter(options.maxConcurrentSteps ?? 16);
    this.#agents = new Limiter(options.maxConcurrentAgents ?? 32);
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
      const row = await one<{ state: StateValue; message_id: string | null }>(
        this.#deps.orm.em.fork(),
        `select state, snapshot->'context'->>'lastCustomerMessageId' as message_id from conversations where id = ?`,
        [inflight.conversationId],
      );
      if (!row || !isAnswering(row.state) || row.message_id !== inflight.messageId) {
        this.#deps.logger.info({ conversationId: inflight.conversationId, messageId: inflight.messageId }, 'host: a human took over while the agent was thinking; cancelling it');
        inflight.controller.abort(new Error('taken over'));
      }
    } catch (err) {
      this.#deps.logger.warn({ err }, 'host: could not check whether to cancel the agent (its answer is still checked before it is applied)');
    }
    return result;
  }

  /** Runs one transaction with retries; publishes its notices after the commit. */
  async #tx<T extends StepOutput>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    let lastErr: unknown;
    for (let attempt = 1; attempt <= this.#attempts; attempt++) {
      try {
        const out = await this.#steps.run(() => this.#deps.orm.em.fork().transactional((em) => work(em)));
        this.#publishNotices(out);
        return out;
      } catch (err) {
        if (err instanceof Busy) throw err;
        lastErr = err;
        if (attempt < this.#attempts) await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
    throw lastErr;
  }

  #publishNotices(out: StepOutput): void {
    for (const { companyId, notice } of out.notices) {
      try {
        this.#deps.nc.publish(this.#deps.names.conversationEvents(companyId, notice.conversationId), JSON.stringify(notice));
      } catch (err) {
        this.#deps.logger.warn({ err }, 'host: could not publish a conversation notice');
      }
    }
    if (out.outbox) this.#deps.onOutbox?.();
  }

  // ---- customer messages ---------------------------------------------------------------

  async #applyMessage(lane: Lane, env: Extract<InboundEnvelope, { kind: 'message' }>): Promise<Applied> {
    const m = env.message;
    for (;;) {
      // A machine answering an earlier message of this lane gets its answer first.
      while (lane.agentTask) await lane.agentTask;
      if (!lane.agentTask) {
        const open = await findOpenConversation(this.#deps.orm.em.fork(), env.integrationId, m.clientId, false);
        if (open && isAnswering(open.state)) {
          this.#resumeAnswer(lane, open);
          continue;
        }
      }
      try {
        const out = await this.#tx(async (em) => {
          const step: StepOutput & { answer: { conv: ConversationRow; messageId: string; text: string } | null } = { notices: [], outbox: false, answer: null };
          if (!(await insertReceipt(em, { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'message', outcome: 'applied', conversationId: null }))) {
            return step; // a redelivery or a late helpdesk retry: already applied
          }
          let conv = await findOpenConversation(em, env.integrationId, m.clientId, true);
          if (conv && isAnswering(conv.state)) throw new Busy();
          if (!conv) {
            conv = await createConversation(em, {
              companyId: env.companyId, integrationId: env.integrationId, channel: env.channel, clientId: m.clientId,
              partition: partitionOf(env.integrationId, m.clientId, this.#deps.partitions), channelId: m.channelId, transport: m.transport,
            });
          }
          const stored = await insertMessage(em, conv, { role: 'customer', text: m.text, externalId: m.messageId, attachments: m.attachments });
          step.notices.push({ companyId: conv.company_id, notice: { type: 'message', conversationId: conv.id, message: messageRowView(stored!) } });
          const event: ConversationEvent = {
            type: 'customer.message', messageId: stored!.id, text: m.text, at: m.sentAt,
            ...(m.requestId !== null ? { requestId: m.requestId } : {}),
            ...(m.dialogId !== null ? { dialogId: m.dialogId } : {}),
          };
          await this.#step(em, conv, event, step, { lastMessageAt: new Date(), channelId: m.channelId, transport: m.transport });
          await rememberRefs(em, conv, m.requestId, m.dialogId);
          await setReceiptOutcome(em, env.integrationId, env.idempotencyKey, 'applied', conv.id);
          if (isAnswering(conv.state)) step.answer = { conv, messageId: stored!.id, text: m.text };
          return step;
        });
        if (!out.answer) return 'ack';
        // The JetStream message is acked once the answer is committed (or discarded).
        return { wait: this.#startAnswer(lane, out.answer.conv, out.answer.messageId, out.answer.text) };
      } catch (err) {
        if (err instanceof Busy) continue; // another process moved it to answering: wait, then retry
        throw err;
      }
    }
  }

  #resumeAnswer(lane: Lane, conv: ConversationRow): void {
    const messageId = conv.snapshot.context.lastCustomerMessageId;
    if (!messageId) return;
    this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: resuming an answer that was in flight');
    const controller = new AbortController();
    lane.inflight = { conversationId: conv.id, messageId, controller };
    lane.agentTask = (async () => {
      const msg = await findMessage(this.#deps.orm.em.fork(), messageId);
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

  async #answer(conv: ConversationRow, messageId: string, text: string, signal: AbortSignal): Promise<ItemResult> {
    let event: AnyEventObject;
    try {
      const agentId = (await one<{ agent_id: number | null }>(this.#deps.orm.em.fork(), 'select agent_id from integrations where id = ?', [conv.integration_id]))?.agent_id ?? null;
      const output = await this.#agents.run(() =>
        this.#deps.agent.answer({ companyId: conv.company_id, conversationId: conv.id, agentId, text, messageId, signal }),
      );
      event = { type: 'xstate.done.actor.agent', output };
    } catch (err) {
      if (signal.aborted) this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: the agent was cancelled (taken over)');
      else this.#deps.logger.warn({ err, conversationId: conv.id, messageId }, 'host: the agent failed; handing off');
      event = { type: 'xstate.error.actor.agent', error: err instanceof Error ? err : new Error(String(err)) };
    }
    try {
      await this.#tx(async (em) => {
        const step: StepOutput = { notices: [], outbox: false };
        const locked = await lockConversation(em, conv.id);
        if (!locked) return step;
        if (!isAnswering(locked.state) || locked.snapshot.context.lastCustomerMessageId !== messageId) {
          // A human took over (pause, transfer, close) while the agent was thinking: keep the
          // answer for the record, never send it.
          const output = (event as { output?: AgentOutput }).output;
          if (output?.kind === 'reply') {
            const row = await insertMessage(em, locked, { role: 'agent', kind: 'reply', text: output.text, replyToId: messageId, delivery: 'cancelled' });
            if (row) {
              await saveConversation(em, locked, {});
              step.notices.push({ companyId: locked.company_id, notice: { type: 'message', conversationId: locked.id, message: messageRowView(row) } });
            }
          }
          return step;
        }
        // A reply committed while an operator's pause / close is pending is cancelled, not sent
        // (#perform): it is not charged either.
        const hold = locked.hold_requested_at !== null;
        const applied = await this.#step(em, locked, event, step, {});
        const usage = (event as { output?: AgentOutput }).output?.usage;
        if (applied && usage && !hold) {
          await chargeModelUsage(em, { companyId: locked.company_id, conversationId: locked.id, messageId, ...usage });
        }
        return step;
      });
      return 'ack';
    } catch (err) {
      this.#deps.logger.error({ err, conversationId: conv.id }, 'host: could not store the answer');
      return 'nak';
    }
  }

  // ---- status events -------------------------------------------------------------------

  async #applyStatus(env: Extract<InboundEnvelope, { kind: 'status' }>, clientId: string): Promise<ItemResult> {
    const s = env.status;
    await this.#tx(async (em) => {
      const step: StepOutput = { notices: [], outbox: false };
      if (!(await insertReceipt(em, { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'applied', conversationId: null }))) return step;
      const conv = (await findConversationByRef(em, env.integrationId, s.requestId, s.dialogId, clientId, true)) ?? (await findOpenConversation(em, env.integrationId, clientId, true));
      if (!conv) {
        await setReceiptOutcome(em, env.integrationId, env.idempotencyKey, 'unknown_session', null);
        this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for no known session (recorded, ignored)');
        return step;
      }
      const event = {
        type: `helpdesk.${s.hookType}`, requestId: s.requestId, ...(s.dialogId !== null ? { dialogId: s.dialogId } : {}), at: env.receivedAt,
      } as ConversationEvent;
      await this.#step(em, conv, event, step, {});
      await rememberRefs(em, conv, s.requestId, s.dialogId);
      await setReceiptOutcome(em, env.integrationId, env.idempotencyKey, 'applied', conv.id);
      return step;
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
    const em = this.#deps.orm.em.fork();
    const conv = await findConversationByRef(em, env.integrationId, s.requestId, s.dialogId, null, false);
    if (!conv) {
      await this.#tx(async (tem) => {
        await insertReceipt(tem, { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'status', outcome: 'unknown_session', conversationId: null });
        return { notices: [], outbox: false };
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
    await this.#tx(async (em) => {
      const step: StepOutput = { notices: [], outbox: false };
      const fresh = await insertReceipt(em, { integrationId: env.integrationId, key: env.idempotencyKey, companyId: env.companyId, kind: 'operator', outcome: 'applied', conversationId: env.conversationId });
      const conv = await lockConversation(em, env.conversationId);
      if (!conv || conv.company_id !== env.companyId || conv.integration_id !== env.integrationId) {
        step.notices.push({ companyId: env.companyId, notice: { type: 'applied', conversationId: env.conversationId, idempotencyKey: env.idempotencyKey, outcome: 'not_found', conversation: null } });
        return step;
      }
      let outcome: 'applied' | 'duplicate' | 'ignored' = fresh ? 'applied' : 'duplicate';
      if (fresh) {
        const cmd = env.command;
        if (cmd.action === 'reply') {
          if (conv.status === 'closed') outcome = 'ignored';
          else {
            const row = await insertMessage(em, conv, { role: 'operator', kind: 'message', text: cmd.text, delivery: 'pending' });
            await insertOutbox(em, conv, row!.id, 'operator_reply');
            await saveConversation(em, conv, { lastMessageAt: new Date() });
            step.outbox = true;
            step.notices.push({ companyId: conv.company_id, notice: { type: 'message', conversationId: conv.id, message: messageRowView(row!) } });
          }
        } else {
          const event = { type: `operator.${cmd.action}`, at: env.receivedAt, ...(cmd.by ? { by: cmd.by } : {}) } as ConversationEvent;
          const clearHold = cmd.action === 'pause' || cmd.action === 'close';
          const changed = await this.#step(em, conv, event, step, { clearHold });
          if (!changed && clearHold && conv.hold_requested_at) await saveConversation(em, conv, { clearHold });
        }
      }
      step.notices.push({ companyId: conv.company_id, notice: { type: 'applied', conversationId: conv.id, idempotencyKey: env.idempotencyKey, outcome, conversation: rowToView(conv) } });
      return step;
    });
    return 'ack';
  }

  // ---- the machine step ----------------------------------------------------------------

  /**
   * Applies one event to the conversation's machine inside the transaction: new snapshot,
   * transition log entry, and the host actions' rows (replies and notices go to the outbox).
   * Returns false when the machine ignored the event (nothing recorded).
   */
  async #step(
    em: EntityManager,
    conv: ConversationRow,
    event: AnyEventObject,
    step: StepOutput,
    changes: { lastMessageAt?: Date; clearHold?: boolean; channelId?: string | null; transport?: string | null },
  ): Promise<boolean> {
    const current = conversationMachine.resolveState({ value: conv.snapshot.value, context: conv.snapshot.context });
    const [next, actions] = transition(conversationMachine, current, event as ConversationEvent);
    const persisted = JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(next))) as ConversationRow['snapshot'];
    const named = actions.filter((a) => !a.type.startsWith('xstate.')).map((a) => ({ type: a.type, params: a.params as unknown }));
    const changed =
      named.length > 0 ||
      JSON.stringify(persisted.value) !== JSON.stringify(conv.snapshot.value) ||
      JSON.stringify(persisted.context) !== JSON.stringify(conv.snapshot.context);
    if (!changed) {
      if (changes.lastMessageAt || changes.channelId || changes.transport) await saveConversation(em, conv, changes);
      return false;
    }
    const hold = conv.hold_requested_at !== null;
    const recorded: { type: string; params?: unknown; effect?: string }[] = [];
    for (const a of named) recorded.push({ ...a, effect: await this.#perform(em, conv, a, hold, step) });
    const from = conv.state;
    const t = await insertTransition(em, conv, { event: event.type, payload: payloadOf(event), from, to: persisted.value, actions: recorded });
    await saveConversation(em, conv, { ...changes, snapshot: persisted });
    step.notices.push({
      companyId: conv.company_id,
      notice: {
        type: 'transition',
        conversationId: conv.id,
        transition: { seq: t.seq, at: new Date(t.at).toISOString(), event: t.event, payload: t.payload, from: t.from, to: t.to, actions: t.actions },
        conversation: rowToView(conv),
      },
    });
    return true;
  }

  /** The host side of the machine's named actions. Returns what was done, for the log. */
  async #perform(em: EntityManager, conv: ConversationRow, action: { type: string; params: unknown }, hold: boolean, step: StepOutput): Promise<string> {
    const pushMessage = (row: MessageRow | null) => {
      if (row) step.notices.push({ companyId: conv.company_id, notice: { type: 'message', conversationId: conv.id, message: messageRowView(row) } });
    };
    switch (action.type) {
      case 'agent_reply': {
        const p = action.params as { messageId: string | null; text: string };
        // An operator asked for a pause / close that is not applied yet: the human wins.
        const row = await insertMessage(em, conv, { role: 'agent', kind: 'reply', text: p.text, replyToId: p.messageId, delivery: hold ? 'cancelled' : 'pending' });
        pushMessage(row);
        if (!row) return 'duplicate reply ignored';
        if (hold) return 'cancelled: an operator took over';
        await insertOutbox(em, conv, row.id, 'agent_reply');
        step.outbox = true;
        return 'queued';
      }
      case 'session_transfer_external': {
        const p = action.params as SessionTransferExternalParams;
        if (p.origin === 'helpdesk') return 'recorded: a human operator has the dialog';
        const row = await insertMessage(em, conv, { role: 'agent', kind: 'handoff_notice', text: p.text ?? DEFAULT_HANDOFF_TEXT, replyToId: p.messageId, delivery: 'pending' });
        pushMessage(row);
        if (row) {
          await insertOutbox(em, conv, row.id, 'handoff_notice');
          step.outbox = true;
        }
        return 'handoff notice queued; transfer recorded (no helpdesk group configured: no transfer call)';
      }
      case 'session_close':
        return 'recorded';
      default:
        return 'ignored';
    }
  }
}
