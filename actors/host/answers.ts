import type { AnyEventObject, StateValue } from 'xstate';
import { settleAnswers, type AnswerSettlement } from '../../lib/credit.js';
import type { SqlClient, SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { sqlState } from '../../lib/pg-errors.js';
import { attachActiveTrace, attachTrace, traceOf } from '../../lib/tracing.js';
import { collectedText } from '../../machines/conversation.js';
import type { AgentOutput } from '../../schema/conversation.js';
import { NO_BEHAVIOUR, type AgentBehaviour, type AgentRunner, type AnswerPath } from '../agents/types.js';
import { Batcher } from '../batcher.js';
import type { FairSlots, Slot } from '../fair-slots.js';
import { sleep } from '../limit.js';
import { agentOfIntegration, countAnswerAttempts, findConversation, findMessage, isDataError, lockConversations, type ConversationRow } from '../store.js';
import type { TxPlan } from '../tx-plan.js';
import type { Commits } from './commit.js';
import type { ItemResult, Lane } from './lanes.js';
import type { WebchatLive } from './webchat-live.js';

/**
 * The agents' answers: how each is asked, and how it is committed.
 *
 * - The path comes from the agent (actors/agents/types.ts AnswerPath), looked up before the
 *   customer message is stored. A `local` agent (the built-in one) is asked inside the
 *   message's transaction (`askLocally`): message and answer commit together.
 * - A `call` agent (a model) is asked between two transactions (`start`): the customer
 *   message moves the machine to `active.answering` (committed), the agent is asked outside
 *   any transaction, keyed to the stored message id, and its answer is applied as
 *   `xstate.done.actor.agent` only if the machine is still answering that very message.
 *   Status and operator events are applied meanwhile (a pause / close / transfer wins: the
 *   late answer is stored as cancelled); the lane's next customer message waits for it.
 * - Places: such an answer first takes a place among the model calls in flight
 *   (actors/fair-slots.ts: MODEL_MAX_CONCURRENCY, fair between companies, the agent's own
 *   `model.maxConcurrency`). Only then is the attempt counted in the database
 *   (conversation_messages.answer_attempts, group-committed on a pool whose commits do not
 *   wait for the disk: only a crash of PostgreSQL itself could lose a count): at most
 *   MAX_ANSWER_ATTEMPTS model calls per customer message, crashes and redeliveries included,
 *   so a message that waited in a queue when its worker died has not used one up.
 * - A crash mid-answer leaves the JetStream message unacked; its redelivery finds the machine
 *   answering and asks again for the same stored message id (`resume`): at most one reply row
 *   per message (unique index), so never two replies.
 * - Cancellation: each answer has an AbortController (`input.signal`). When a status or
 *   operator event leaves the machine no longer answering that message, the answer is
 *   aborted (`cancelIfTakenOver`), also while it waits for a place: the model's HTTP call is
 *   cancelled, nothing is sent and nothing is charged.
 * - Credit: the model call reserved its estimated cost (lib/credit.ts). The transaction that
 *   commits the answer settles it: the exact debit (one `model_usage` ledger entry keyed by
 *   the answered message) replaces the reservation; an answer that is discarded (taken over,
 *   cancelled by a pending operator hold) releases it. An answer lost in a crash before its
 *   commit is never charged; its reservation is replaced when the message is asked again, or
 *   released when it expires.
 * - Webchat: when such an answer starts, the visitor is told the agent is typing, and a model
 *   answer is streamed to the visitor as it is written (`live`, actors/host/webchat-live.ts);
 *   the reply itself is committed and sent whole, as any other.
 */
export const MAX_ANSWER_ATTEMPTS = 3;
/** An integration's agent is looked up at most this often (an edit takes effect within it). */
const AGENT_ID_TTL_MS = 5_000;

const isActive = (state: StateValue, child: string): boolean => typeof state === 'object' && state !== null && (state as Record<string, unknown>).active === child;
export const isAnswering = (state: StateValue): boolean => isActive(state, 'answering');
/** Waiting out the agent's debounce window (answerDueAt in the context). */
export const isCollecting = (state: StateValue): boolean => isActive(state, 'collecting');

const handoffEvent = (detail: string): AnyEventObject => ({ type: 'xstate.done.actor.agent', output: { kind: 'handoff', reason: 'model_failed', detail } satisfies AgentOutput });

/** The integration's agent and how it answers. */
export interface AnswerRoute {
  agentId: number | null;
  path: AnswerPath;
  /** Its debounce window and business hours. */
  behaviour: AgentBehaviour;
}

interface AnswerRequest {
  companyId: number;
  conversationId: number;
  messageId: string;
  event: AnyEventObject;
}

export interface AnswersDeps {
  sql: SqlPool;
  /** Answer attempts are counted here (commits that need not wait for the disk). */
  quickSql: SqlPool;
  logger: Logger;
  agent: AgentRunner;
  commits: Commits;
  slots: FairSlots;
  /** Told which companies' reservations a commit settled (actors/credit-gate.ts wakes calls waiting for credit). */
  credit?: { settled(companyIds: Iterable<number>): void };
  evictIfIdle: (lane: Lane) => void;
  closed: () => boolean;
  /** Previews for webchat visitors (typing, the streamed text). */
  live?: WebchatLive;
}

const CALL: AnswerPath = { kind: 'call', maxConcurrency: null };

export class Answers {
  readonly #deps: AnswersDeps;
  readonly #batch: Batcher<AnswerRequest, void>;
  /** Attempts of the answers that got their place meanwhile, counted by one statement. */
  readonly #attempts: Batcher<{ companyId: number; messageId: string }, number>;
  readonly #agentIds = new Map<number, { agentId: number | null; expires: number }>();

  constructor(deps: AnswersDeps, batch: { maxBatch?: number; concurrency?: number }) {
    this.#deps = deps;
    this.#batch = new Batcher<AnswerRequest, void>(async (answers) => {
      const settle = await deps.commits.run((client, plan) => this.#applyAnswers(client, plan, answers), settleAnswers);
      deps.credit?.settled(new Set(settle.map((s) => s.companyId)));
      return answers.map(() => undefined);
    }, { ...batch, fairBy: (a) => a.companyId });
    this.#attempts = new Batcher((reqs) => countAnswerAttempts(deps.quickSql, reqs.map((r) => r.messageId)), { fairBy: (r) => r.companyId });
  }

  /** How the integration's agent answers (both lookups cached). */
  async routeOf(companyId: number, integrationId: number): Promise<AnswerRoute> {
    const agentId = await this.#agentOf(integrationId);
    const path = this.#deps.agent.answerPath ? await this.#deps.agent.answerPath(companyId, agentId) : CALL;
    const behaviour = this.#deps.agent.behaviourOf ? await this.#deps.agent.behaviourOf(companyId, agentId) : NO_BEHAVIOUR;
    return { agentId, path, behaviour };
  }

  async #agentOf(integrationId: number): Promise<number | null> {
    const hit = this.#agentIds.get(integrationId);
    if (hit && hit.expires > Date.now()) return hit.agentId;
    const agentId = await agentOfIntegration(this.#deps.sql, integrationId);
    this.#agentIds.set(integrationId, { agentId, expires: Date.now() + AGENT_ID_TTL_MS });
    return agentId;
  }

  /**
   * Inside a message transaction: asks `local` agents and applies their answers to the locked
   * conversations; returns what their answers cost, for the transaction's end (settleAnswers).
   * A local agent makes no model call: nothing, as a rule.
   */
  async askLocally(plan: TxPlan, asks: { conv: ConversationRow; messageId: string; text: string; agentId: number | null }[]): Promise<AnswerSettlement[]> {
    const events = await Promise.all(asks.map((a) => this.#ask(a.conv, a.messageId, a.text, a.agentId)));
    const settle: AnswerSettlement[] = [];
    for (const [n, a] of asks.entries()) this.#applyAnswer(plan, a.conv, a.messageId, events[n]!, settle);
    return settle.filter((s) => s.usage);
  }

  /** Starts answering a stored customer message outside any transaction; resolves once its answer is committed (or discarded). */
  start(lane: Lane, conv: ConversationRow, messageId: string, text: string, route: AnswerRoute): Promise<ItemResult> {
    return this.#track(lane, conv.id, messageId, (signal) => this.#answer(conv, messageId, text, route, signal));
  }

  /** The conversation is answering a message (a crash or another process left it so): asks again for it. */
  resume(lane: Lane, conv: ConversationRow): void {
    const messageId = conv.snapshot.context.lastCustomerMessageId;
    if (!messageId || lane.agentTask) return;
    this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: resuming an answer that was in flight');
    // Every message of a debounce window, as the machine collected them (older snapshots: the message alone).
    const collected = collectedText(conv.snapshot.context);
    void this.#track(lane, conv.id, messageId, async (signal) => {
      const text = collected || ((await findMessage(this.#deps.sql, messageId))?.text ?? '');
      const route = await this.routeOf(conv.company_id, conv.integration_id);
      return this.#answer(conv, messageId, text, route, signal);
    });
  }

  #track(lane: Lane, conversationId: number, messageId: string, work: (signal: AbortSignal) => Promise<ItemResult>): Promise<ItemResult> {
    const controller = new AbortController();
    lane.inflight = { conversationId, messageId, controller };
    const task = work(controller.signal)
      .catch((err: unknown) => {
        this.#deps.logger.warn({ err, conversationId, messageId }, 'host: the answer could not be worked out now; the message is redelivered');
        return 'nak' as const;
      })
      .finally(() => {
        lane.agentTask = null;
        lane.inflight = null;
        this.#deps.evictIfIdle(lane);
      });
    lane.agentTask = task;
    return task;
  }

  /**
   * After a status or operator event was committed: if the lane's agent is still thinking
   * about a message the machine no longer waits for (a human took over), abort it.
   */
  async cancelIfTakenOver(lane: Lane): Promise<void> {
    const inflight = lane.inflight;
    if (!inflight || inflight.controller.signal.aborted) return;
    try {
      const conv = await findConversation(this.#deps.sql, inflight.conversationId);
      if (!conv || !isAnswering(conv.state) || conv.snapshot.context.lastCustomerMessageId !== inflight.messageId) {
        this.#deps.logger.info({ conversationId: inflight.conversationId, messageId: inflight.messageId }, 'host: a human took over while the agent was thinking; cancelling it');
        inflight.controller.abort(new Error('taken over'));
      }
    } catch (err) {
      this.#deps.logger.warn({ err }, 'host: could not check whether to cancel the agent (its answer is still checked before it is applied)');
    }
  }

  async #answer(conv: ConversationRow, messageId: string, text: string, route: AnswerRoute, signal: AbortSignal): Promise<ItemResult> {
    let event: AnyEventObject;
    let slot: Slot | null = null;
    const live = conv.channel === 'webchat' ? this.#deps.live : undefined;
    live?.typing(conv);
    try {
      slot = await this.#deps.slots.acquire(
        {
          tenant: conv.company_id,
          group: route.agentId === null ? `company:${conv.company_id}` : `agent:${route.agentId}`,
          groupLimit: route.path.kind === 'call' ? route.path.maxConcurrency : null,
        },
        signal,
      );
      let attempt: number;
      try {
        attempt = await this.#attempts.submit({ companyId: conv.company_id, messageId });
      } catch (err) {
        this.#deps.logger.warn({ err, conversationId: conv.id, messageId }, 'host: cannot count the answer attempt; the message is redelivered');
        return 'nak';
      }
      try {
        event =
          attempt > MAX_ANSWER_ATTEMPTS
            ? handoffEvent(`no answer could be stored after ${MAX_ANSWER_ATTEMPTS} attempts`)
            : await this.#ask(conv, messageId, text, route.agentId, { signal, slot, onDelta: live?.deltas(conv) });
      } catch (err) {
        // Not the model's failure (that is an answer): the answer could not be worked out now.
        this.#deps.logger.warn({ err, conversationId: conv.id, messageId }, 'host: the agent could not answer now; the message is redelivered');
        return 'nak';
      }
    } catch (err) {
      // Cancelled while waiting for a place: the machine no longer waits for this answer.
      if (!signal.aborted) throw err;
      event = this.#cancelled(conv.id, messageId, err);
    } finally {
      slot?.release();
    }
    const failure = await this.#store(conv, messageId, event);
    if (failure === null) return 'ack';
    if (!isDataError(failure)) return 'nak';
    // The database refuses the answer itself (not a passing outage): asking the model again
    // would give the same refusal, so a human takes over, told why.
    const code = sqlState(failure);
    this.#deps.logger.error({ err: failure, conversationId: conv.id, messageId }, 'host: the answer cannot be stored; handing off');
    return (await this.#store(conv, messageId, handoffEvent(`the answer could not be stored (SQLSTATE ${code})`))) === null ? 'ack' : 'nak';
  }

  /** Asks the agent; its answer or its failure, as the machine's event. */
  async #ask(conv: ConversationRow, messageId: string, text: string, agentId: number | null, how: { signal?: AbortSignal; slot?: Slot; onDelta?: (text: string) => void } = {}): Promise<AnyEventObject> {
    const { signal } = how;
    try {
      const output = await this.#deps.agent.answer({
        companyId: conv.company_id, conversationId: conv.id, agentId, text, messageId, firstMessage: conv.message_seq <= 1,
        ...(signal ? { signal } : {}), ...(how.slot ? { slot: how.slot } : {}), ...(how.onDelta ? { onDelta: how.onDelta } : {}),
      });
      return { type: 'xstate.done.actor.agent', output };
    } catch (err) {
      if (!signal?.aborted) throw err;
      return this.#cancelled(conv.id, messageId, err);
    }
  }

  #cancelled(conversationId: number, messageId: string, err: unknown): AnyEventObject {
    this.#deps.logger.info({ conversationId, messageId }, 'host: the agent was cancelled (taken over)');
    return { type: 'xstate.error.actor.agent', error: err instanceof Error ? err : new Error(String(err)) };
  }

  /** Commits an answer, retrying a few times; null when stored, else the last error. */
  async #store(conv: ConversationRow, messageId: string, event: AnyEventObject): Promise<unknown> {
    const conversationId = conv.id;
    for (let attempt = 1; ; attempt++) {
      try {
        const request = { companyId: conv.company_id, conversationId, messageId, event };
        attachActiveTrace(request);
        await this.#batch.submit(request);
        return null;
      } catch (err) {
        if (this.#deps.closed() || attempt >= this.#deps.commits.attempts || isDataError(err)) {
          this.#deps.logger.error({ err, conversationId }, 'host: could not store the answer');
          return err;
        }
        await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
  }

  /** The group-commit transaction of answers (one per conversation at most); what their model calls cost or free, settled at its end. */
  async #applyAnswers(client: SqlClient, plan: TxPlan, answers: AnswerRequest[]): Promise<AnswerSettlement[]> {
    const locked = new Map((await lockConversations(client, answers.map((a) => a.conversationId))).map((c) => [c.id, c]));
    const settle: AnswerSettlement[] = [];
    for (const a of answers) {
      const conv = locked.get(a.conversationId);
      if (!conv) continue;
      attachTrace(conv, traceOf(a));
      this.#applyAnswer(plan, conv, a.messageId, a.event, settle);
    }
    return settle;
  }

  /** Applies an answer to a locked conversation, if its machine still waits for it; notes what its model call costs or frees. */
  #applyAnswer(plan: TxPlan, conv: ConversationRow, messageId: string, event: AnyEventObject, settle: AnswerSettlement[]): void {
    const output = (event as { output?: AgentOutput }).output;
    const release = { companyId: conv.company_id, conversationId: conv.id, messageId, usage: null };
    if (!isAnswering(conv.state) || conv.snapshot.context.lastCustomerMessageId !== messageId) {
      // A human took over (pause, transfer, close) while the agent was thinking: keep the
      // answer for the record, never send it.
      if (output?.kind === 'reply') plan.addMessage(conv, { role: 'agent', kind: 'reply', text: output.text, replyToId: messageId, delivery: 'cancelled' });
      settle.push(release);
      return;
    }
    // A reply committed while an operator's pause / close is pending is cancelled, not sent
    // (tx-plan.ts): it is not charged either.
    const hold = conv.hold_requested_at !== null;
    const applied = plan.step(conv, event);
    settle.push(applied && output?.usage && !hold ? { ...release, usage: output.usage } : release);
  }
}
