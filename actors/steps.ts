import type { AnyEventObject } from 'xstate';
import { settleAnswers, type AnswerSettlement } from '../lib/credit.js';
import { inTransaction, query, type SqlClient, type SqlPool } from '../lib/db.js';
import { conversationKey, partitionOfEnvelope } from '../lib/inbound.js';
import type { Logger } from '../lib/logger.js';
import type { NatsConnection } from '../lib/nats.js';
import type { StreamNames } from '../lib/streams.js';
import { attachTrace, recordSharedSpan, spanClock, traceOf, tracing, type Context } from '../lib/tracing.js';
import { publishWebchatPush } from '../lib/webchat-pushes.js';
import { isOpen, outsideHoursOutput } from '../lib/agents/hours.js';
import { CONTACT_COLUMNS, contactRow, fillLeadContacts } from '../lib/leads.js';
import { agentInputOf, isAnswering, isCollecting, isHandedOver } from '../machines/conversation.js';
import type { AgentInput, AgentOutput, ConversationEvent } from '../schema/conversation.js';
import type { InboundEnvelope } from '../schema/envelope.js';
import { applyAnswer, askAgent, type AgentAsk } from './agent-asks.js';
import type { AgentRunner, AnswerRoute } from './agents/types.js';
import { Batcher } from '../lib/batcher.js';
import { applyOperatorCommand } from './operator-commands.js';
import { Plan } from './plan.js';
import { conversations, lockedConversations, openConversations, type ConversationRow } from './tables/conversations.js';
import { reserveMessageIds } from './tables/messages.js';
import type { OutboxSend } from './tables/outbox.js';
import { insertReceipts, type NewReceipt } from './tables/receipts.js';

/**
 * The step pipeline: every change to a conversation goes through here, in one place.
 *
 *   load  → the steps' conversations locked (in id order), their envelopes' receipts written
 *           (a redelivery or a helpdesk's late retry is recognised), ids reserved for the
 *           customer messages, in ONE statement; missing sessions opened;
 *   step  → each event applied to its machine (machines/conversation.ts) and the machine's
 *           actions performed through the effect table (actors/plan.ts);
 *   store → the plan written in ONE statement, the answers' credit settled; commit;
 *   after → replies inserted already claimed handed to the outbox sender, the conversations'
 *           notices published, new webchat sessions announced.
 *
 * Steps of many conversations are group-committed (lib/batcher.ts): those that arrive while
 * a transaction runs go into the next one, taken in turn by company. What a step leaves to do
 * is decided once, from the state the machine is in after it (`next`): answer (the agent is
 * asked outside any transaction), collect (a debounce deadline to wait for), or resume (the
 * conversation is answering a message nobody here answers: a crash left it so). A `local`
 * agent (the built-in one; actors/agents/types.ts) answers inside the transaction instead.
 * The agent answers in `active` and, after it handed the conversation over, in
 * `paused.handedOver` until a person acts (machines/states.ts): the same steps serve both.
 */
type MessageEnvelope = Extract<InboundEnvelope, { kind: 'message' }>;
type StatusEnvelope = Extract<InboundEnvelope, { kind: 'status' }>;
type OperatorEnvelope = Extract<InboundEnvelope, { kind: 'operator' }>;

export type Step =
  | { kind: 'message'; env: MessageEnvelope; route: AnswerRoute }
  /** A status event of the client's session: the one that saw its helpdesk ids (`refConversationId`), else the client's open one. */
  | { kind: 'status'; env: StatusEnvelope; clientId: string; refConversationId: number | null }
  | { kind: 'operator'; env: OperatorEnvelope }
  /** The agent's answer to `messageId` (or its failure), as the machine's event. */
  | { kind: 'answer'; companyId: number; conversationId: number; messageId: string; event: AnyEventObject }
  /** A debounce deadline passed. */
  | { kind: 'debounce'; companyId: number; conversationId: number; route: AnswerRoute };

export type Next =
  | { kind: 'none' }
  /** Ask the agent outside the transaction, then step its answer. */
  | { kind: 'answer'; input: AgentInput }
  /** Waiting for the debounce deadline in the snapshot. */
  | { kind: 'collect' }
  /** Answering a message nobody here answers (a crash or another process left it so): ask again, then try the step again. */
  | { kind: 'resume' };

export interface StepResult {
  /** The conversation after the commit (null: the step found none). */
  conv: ConversationRow | null;
  next: Next;
}

const NONE: Next = { kind: 'none' };
/** A message the agent cannot read (a WhatsApp image, voice note, ...): a short line, and a person takes it (contract.md § Direct channels). */
const UNSUPPORTED_OUTPUT: AgentOutput = { kind: 'handoff', reason: 'unsupported_message', text: 'I can read text only, so a colleague will look at what you sent and get back to you here.' };
const RESUME: Next = { kind: 'resume' };

export interface StepsDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  logger: Logger;
  partitions: number;
  /** Asked inside the transaction when the integration's agent answers `local`ly. */
  agent: AgentRunner;
  /** The outbox sender: rows committed already claimed are handed over at once; it is kicked when rows wait for its claim. */
  outbox?: { claimMs: number; handOver(rows: OutboxSend[]): void; kick(): void };
  /** The epoch under which this worker may send for a partition now (actors/partitions.ts), or null. */
  leases?: { epochOf(partition: number): number | null };
  /** Told which companies' credit reservations a commit settled (actors/credit-gate.ts). */
  credit?: { settled(companyIds: Iterable<number>): void };
  /** The clock of debounce deadlines and business hours. */
  now: () => number;
}

export interface StepsOptions {
  /** Steps per transaction, at most. */
  maxBatch?: number;
  /** Transactions running at once. */
  concurrency?: number;
}

/**
 * The statement that loads a batch: receipts written, conversations locked, message ids
 * reserved, and, when its messages say who their customers are (`$6`), their leads filled in
 * (a new customer's lead is made with it when their session opens: openConversations). A
 * batch that says nothing of them (most webchat ones) runs it without that update.
 */
const loadStatement = (contacts: boolean) => `
  with l as (${lockedConversations('$1', '$2', '$3')}),
  r as (${insertReceipts('$4', `(select id, integration_id, client_id from l where status <> 'closed')`)})${contacts ? `,
  contacts as (${fillLeadContacts(`(select * from json_to_recordset($6::json) as c(integration_id int, client_id text, ${CONTACT_COLUMNS}))`)})` : ''}
  select (select coalesce(json_agg(l), '[]') from l) as conversations,
         (select coalesce(json_agg(r), '[]') from r) as receipts,
         (${reserveMessageIds('$5')}) as ids`;
const LOAD = loadStatement(false);
const LOAD_WITH_CONTACTS = loadStatement(true);

/** A receipt's row as the load statement takes it: the client picks the conversation when the step names none. */
type LoadReceipt = NewReceipt & { client_id: string | null };

interface Loaded {
  conversations: ConversationRow[];
  receipts: { integration_id: number; idempotency_key: string }[];
  ids: string[];
}

const receiptKey = (integrationId: number, key: string) => `${integrationId}\n${key}`;
const envelopeOf = (step: Step): InboundEnvelope | null => (step.kind === 'message' || step.kind === 'status' || step.kind === 'operator' ? step.env : null);

export class Steps {
  readonly #deps: StepsDeps;
  readonly #batch: Batcher<Step, StepResult>;

  constructor(deps: StepsDeps, options: StepsOptions = {}) {
    this.#deps = deps;
    this.#batch = new Batcher((steps) => this.#commit(steps), { maxBatch: options.maxBatch, concurrency: options.concurrency, fairBy: (s) => (s.kind === 'answer' || s.kind === 'debounce' ? s.companyId : s.env.companyId) });
  }

  /** Applies a step (group-committed with others); resolves once it is committed. */
  submit(step: Step): Promise<StepResult> {
    return this.#batch.submit(step);
  }

  async #commit(steps: Step[]): Promise<StepResult[]> {
    const { outbox, leases } = this.#deps;
    const plan = new Plan(this.#deps.names.conversationEvents, outbox && leases ? { claimMs: outbox.claimMs, leases } : null);
    const started = tracing.enabled ? spanClock() : 0;
    let out: { results: StepResult[]; settled: AnswerSettlement[] };
    try {
      out = await inTransaction(this.#deps.sql, (client) => this.#apply(client, plan, steps));
    } catch (err) {
      if (started) this.#trace(plan, steps, started, err);
      throw err;
    }
    if (started) this.#trace(plan, steps, started);
    this.#afterCommit(plan);
    if (out.settled.length > 0) this.#deps.credit?.settled(new Set(out.settled.map((s) => s.companyId)));
    return out.results;
  }

  /** Load, step, store: the transaction's body. */
  async #apply(client: SqlClient, plan: Plan, steps: Step[]): Promise<{ results: StepResult[]; settled: AnswerSettlement[] }> {
    const loaded = await this.#load(client, steps);
    const byId = new Map(loaded.conversations.map((c) => [c.id, conversations.fromJson(c)]));
    const open = new Map<string, ConversationRow>();
    for (const c of byId.values()) if (c.status !== 'closed') open.set(conversationKey(c.integration_id, c.client_id), c);
    const fresh = new Set(loaded.receipts.map((r) => receiptKey(r.integration_id, r.idempotency_key)));
    const isFresh = (env: InboundEnvelope) => fresh.has(receiptKey(env.integrationId, env.idempotencyKey));
    await this.#openSessions(client, plan, steps, open, isFresh);

    const now = new Date(this.#deps.now());
    const told = await this.#toldOutsideHours(client, steps, open, isFresh, now);
    // The answers' model calls, settled at the transaction's end: each answered message's reservation released, a charged one debited.
    const settle: AnswerSettlement[] = [];
    const local: AgentAsk[] = [];
    let reserved = 0;
    const results = steps.map((step): StepResult => {
      const result = this.#stepOne(plan, step, { byId, open, isFresh, now, told, settle, id: () => loaded.ids[reserved++]!, askLocally: (ask) => local.push(ask) });
      if (result.conv && tracing.enabled) attachTrace(result.conv, traceOf(envelopeOf(step) ?? step));
      return result;
    });
    if (local.length > 0) {
      // A local agent makes no model call (nothing to settle unless it reports usage), and answers from the database in about a millisecond.
      const events = await Promise.all(local.map((a) => askAgent(this.#deps.agent, a)));
      const localSettle: AnswerSettlement[] = [];
      local.forEach((a, n) => applyAnswer(plan, a.conv, a.input.messageId, events[n]!, localSettle));
      settle.push(...localSettle.filter((s) => s.usage));
    }
    await plan.write(client);
    if (settle.length > 0) await settleAnswers(client, settle);
    return { results, settled: settle };
  }

  #stepOne(plan: Plan, step: Step, ctx: StepContext): StepResult {
    const { byId, open, isFresh, now, told, settle } = ctx;
    switch (step.kind) {
      case 'message': {
        const conv = open.get(conversationKey(step.env.integrationId, step.env.message.clientId)) ?? null;
        const id = ctx.id();
        // The conversation answers a message (this one redelivered, or an earlier one): that answer
        // is asked again first, and this message is applied (or found applied) after it.
        if (conv && isAnswering(conv.state)) {
          if (isFresh(step.env)) plan.dropReceipt({ integration_id: step.env.integrationId, idempotency_key: step.env.idempotencyKey });
          return { conv, next: RESUME };
        }
        if (!isFresh(step.env) || !conv) return { conv, next: NONE };
        return this.#customerMessage(plan, step, conv, id, now, told.has(conv.id), ctx.askLocally);
      }
      case 'status': {
        if (!isFresh(step.env)) return { conv: null, next: NONE };
        const conv = (step.refConversationId !== null ? byId.get(step.refConversationId) : undefined) ?? open.get(conversationKey(step.env.integrationId, step.clientId)) ?? null;
        return this.#statusEvent(plan, step, conv);
      }
      case 'operator':
        return { conv: applyOperatorCommand(plan, step.env, byId.get(step.env.conversationId) ?? null, isFresh(step.env), new Date(this.#deps.now())), next: NONE };
      case 'answer': {
        const conv = byId.get(step.conversationId) ?? null;
        if (conv) applyAnswer(plan, conv, step.messageId, step.event, settle);
        return { conv, next: NONE };
      }
      case 'debounce': {
        const conv = byId.get(step.conversationId) ?? null;
        if (!conv) return { conv, next: NONE };
        if (isAnswering(conv.state) && conv.snapshot.context.answerDueAt) return { conv, next: RESUME };
        if (!isCollecting(conv.state)) return { conv, next: NONE };
        plan.step(conv, { type: 'debounce.elapsed', at: now.toISOString() });
        return { conv, next: this.#nextOf(conv, step.route, ctx.askLocally) };
      }
    }
  }

  /** Receipts written, conversations locked, message ids reserved: one statement. */
  async #load(client: SqlClient, steps: Step[]): Promise<Loaded> {
    const ids: number[] = [];
    const keys: { integrationId: number; clientId: string }[] = [];
    const toReceipt: LoadReceipt[] = [];
    // One row per customer (the batch's last word on them): an update meets each lead once.
    const contacts = new Map<string, object>();
    let messages = 0;
    for (const step of steps) {
      if (step.kind === 'answer' || step.kind === 'debounce') ids.push(step.conversationId);
      else if (step.kind === 'operator') {
        ids.push(step.env.conversationId);
        toReceipt.push(receiptOf(step.env, 'operator', step.env.conversationId, null));
      } else if (step.kind === 'status') {
        if (step.refConversationId !== null) ids.push(step.refConversationId);
        keys.push({ integrationId: step.env.integrationId, clientId: step.clientId });
        toReceipt.push(receiptOf(step.env, 'status', step.refConversationId, step.clientId));
      } else {
        messages++;
        keys.push({ integrationId: step.env.integrationId, clientId: step.env.message.clientId });
        toReceipt.push(receiptOf(step.env, 'message', null, step.env.message.clientId));
        const { contact, clientId } = step.env.message;
        if (contact) contacts.set(conversationKey(step.env.integrationId, clientId), { integration_id: step.env.integrationId, client_id: clientId, ...contactRow(contact) });
      }
    }
    const params: unknown[] = [ids, keys.map((k) => k.integrationId), keys.map((k) => k.clientId), JSON.stringify(toReceipt), messages];
    const [row] = contacts.size
      ? await query<Loaded>(client, 'steps_load_contacts', LOAD_WITH_CONTACTS, [...params, JSON.stringify([...contacts.values()])])
      : await query<Loaded>(client, 'steps_load', LOAD, params);
    return row!;
  }

  /** Sessions for the fresh customer messages of clients that have none open (each with a lead, lib/leads.ts). */
  async #openSessions(client: SqlClient, plan: Plan, steps: Step[], open: Map<string, ConversationRow>, isFresh: (env: InboundEnvelope) => boolean): Promise<void> {
    const missing = new Map<string, MessageEnvelope>();
    for (const step of steps) {
      if (step.kind !== 'message' || !isFresh(step.env)) continue;
      const key = conversationKey(step.env.integrationId, step.env.message.clientId);
      if (!open.has(key) && !missing.has(key)) missing.set(key, step.env);
    }
    if (missing.size === 0) return;
    const opened = await openConversations(
      client,
      [...missing.values()].map((env) => ({
        company_id: env.companyId, integration_id: env.integrationId, channel: env.channel, client_id: env.message.clientId,
        partition: partitionOfEnvelope(env, this.#deps.partitions), channel_id: env.message.channelId, transport: env.message.transport,
        ...contactRow(env.message.contact),
      })),
    );
    for (const c of opened) {
      open.set(conversationKey(c.integration_id, c.client_id), c);
      plan.opened.push(c);
      const env = missing.get(conversationKey(c.integration_id, c.client_id))!;
      plan.settleReceipt({ integration_id: env.integrationId, idempotency_key: env.idempotencyKey, outcome: 'applied', conversation_id: c.id });
    }
  }

  /** The conversations whose customer was already told the business hours (read only for customers writing outside the hours of an agent that tells them once). */
  async #toldOutsideHours(client: SqlClient, steps: Step[], open: Map<string, ConversationRow>, isFresh: (env: InboundEnvelope) => boolean, now: Date): Promise<Set<number>> {
    const ids: number[] = [];
    for (const step of steps) {
      if (step.kind !== 'message' || !isFresh(step.env)) continue;
      const hours = step.route.behaviour.hours;
      if (hours?.outside !== 'message' || isOpen(hours, now)) continue;
      const conv = open.get(conversationKey(step.env.integrationId, step.env.message.clientId));
      if (conv) ids.push(conv.id);
    }
    if (ids.length === 0) return new Set();
    const rows = await query<{ conversation_id: number }>(
      client,
      'conv_told_outside_hours',
      `select distinct conversation_id from conversation_transitions where conversation_id = any($1::int[]) and payload->>'outsideHours' = 'true'`,
      [ids],
    );
    return new Set(rows.map((r) => r.conversation_id));
  }

  #customerMessage(plan: Plan, step: Extract<Step, { kind: 'message' }>, conv: ConversationRow, id: string, now: Date, told: boolean, askLocally: (a: AgentAsk) => void): StepResult {
    const m = step.env.message;
    plan.addMessage(conv, { id, role: 'customer', kind: 'message', text: m.text, external_id: m.messageId, attachments: m.attachments });
    const { behaviour } = step.route;
    // A channel's reply window (SendingChannel.replyWindowMs) counts from the platform's time of the customer's last message (never later than now).
    conv.customer_sent_at = new Date(Math.min(Date.parse(m.sentAt) || now.getTime(), now.getTime()));
    // Outside business hours the agent's policy answers at once (no debounce window); so does a message it cannot read.
    const outside = m.unsupported ? UNSUPPORTED_OUTPUT : behaviour.hours ? outsideHoursOutput(behaviour.hours, now, told) : null;
    const event: ConversationEvent = {
      // Our clock, not the sender's: a debounce deadline is `at` + debounceMs, judged by our clock.
      type: 'customer.message', messageId: id, text: m.text, at: now.toISOString(),
      ...(m.requestId !== null ? { requestId: m.requestId } : {}),
      ...(m.dialogId !== null ? { dialogId: m.dialogId } : {}),
      ...(behaviour.debounceMs > 0 && !outside ? { debounceMs: behaviour.debounceMs } : {}),
    };
    plan.remember(conv, m.requestId, m.dialogId);
    plan.step(conv, event, { channelId: m.channelId, transport: m.transport });
    // Marked, so the transition log tells why, and a customer is told the hours once.
    if (outside && isAnswering(conv.state)) {
      const output = behaviour.version === undefined ? outside : { ...outside, agentVersion: behaviour.version };
      plan.step(conv, { type: 'xstate.done.actor.agent', output, ...(m.unsupported ? { unsupported: m.unsupported } : { outsideHours: true }) });
    }
    return { conv, next: this.#nextOf(conv, step.route, askLocally) };
  }

  #statusEvent(plan: Plan, step: Extract<Step, { kind: 'status' }>, conv: ConversationRow | null): StepResult {
    const { env } = step;
    const s = env.status;
    if (conv === null) {
      plan.settleReceipt({ integration_id: env.integrationId, idempotency_key: env.idempotencyKey, outcome: 'unknown_session', conversation_id: null });
      this.#deps.logger.info({ integrationId: env.integrationId, requestId: s.requestId, dialogId: s.dialogId, hook: s.hookType }, 'host: status event for no known session (recorded, ignored)');
      return { conv, next: NONE };
    }
    plan.remember(conv, s.requestId, s.dialogId);
    plan.step(conv, { type: `helpdesk.${s.hookType}`, requestId: s.requestId, ...(s.dialogId !== null ? { dialogId: s.dialogId } : {}), at: env.receivedAt } as ConversationEvent);
    return { conv, next: NONE };
  }

  /** What the step leaves to do, from the state the machine is in now. */
  #nextOf(conv: ConversationRow, route: AnswerRoute, askLocally: (a: AgentAsk) => void): Next {
    if (isCollecting(conv.state)) return { kind: 'collect' };
    if (!isAnswering(conv.state)) return NONE;
    // What the machine's invoke is given: the collected text, the options offered last, whether it handed over.
    const input = agentInputOf(conv.snapshot.context, isHandedOver(conv.state));
    if (route.path.kind !== 'local') return { kind: 'answer', input };
    askLocally({ conv, input, agentId: route.agentId });
    return NONE;
  }

  /** After the commit: replies committed claimed go to the sender; notices; new webchat sessions announced. */
  #afterCommit(plan: Plan): void {
    const { outbox, nc, names, logger } = this.#deps;
    if (plan.claimed.length > 0) outbox?.handOver(plan.claimed);
    for (const c of plan.opened) {
      if (c.channel !== 'webchat') continue;
      try {
        // The gateway never creates sessions and knows only the visitor, not the new id.
        publishWebchatPush(nc, names, { integrationId: c.integration_id, clientId: c.client_id }, { type: 'session', conversationId: c.id });
      } catch (err) {
        logger.warn({ err, conversationId: c.id }, 'host: could not announce a webchat session (the gateway finds it when it rechecks)');
      }
    }
    for (const [subject, notices] of plan.notices) {
      try {
        nc.publish(subject, JSON.stringify(notices));
      } catch (err) {
        logger.warn({ err }, 'host: could not publish conversation notices');
      }
    }
    if (plan.unclaimedOutbox) outbox?.kick();
  }

  /** The transaction's span in the trace of each envelope it wrote for (one group commit serves many). */
  #trace(plan: Plan, steps: Step[], started: number, err?: unknown): void {
    const traces = new Set<Context>(plan.traces());
    for (const step of steps) {
      const ctx = traceOf(envelopeOf(step) ?? step);
      if (ctx) traces.add(ctx);
    }
    recordSharedSpan('db transaction', traces, started, spanClock(), { 'db.system': 'postgresql', 'mas.traces_in_transaction': traces.size }, err);
  }
}

interface StepContext {
  byId: Map<number, ConversationRow>;
  /** The open session of each (integration, client). */
  open: Map<string, ConversationRow>;
  isFresh: (env: InboundEnvelope) => boolean;
  now: Date;
  /** Sessions whose customer was told the business hours already. */
  told: Set<number>;
  settle: AnswerSettlement[];
  /** The next reserved message id (one per message step, in order). */
  id: () => string;
  askLocally: (a: AgentAsk) => void;
}

function receiptOf(env: InboundEnvelope, kind: string, conversationId: number | null, clientId: string | null): LoadReceipt {
  return { integration_id: env.integrationId, idempotency_key: env.idempotencyKey, company_id: env.companyId, kind, outcome: 'applied', conversation_id: conversationId, client_id: clientId };
}
