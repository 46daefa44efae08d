import type { AnyEventObject } from 'xstate';
import type { SqlPool } from '../lib/db.js';
import { isDataError, sqlState } from '../lib/pg-errors.js';
import type { Logger } from '../lib/logger.js';
import { attachActiveTrace, tracing } from '../lib/tracing.js';
import { agentInputOf, isAnswering, isHandedOver } from '../machines/conversation.js';
import type { AgentInput } from '../schema/conversation.js';
import { ModelCallCancelled } from '../lib/agents/openai-model.js';
import type { AgentOutput, AgentRunner, AnswerRoute } from './agents/types.js';
import { Batcher } from '../lib/batcher.js';
import type { FairSlots, Slot } from './fair-slots.js';
import type { ItemResult, Lane } from './lanes.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { askAgent } from './agent-asks.js';
import type { Steps } from './steps.js';
import type { ConversationRow } from './tables/conversations.js';
import { countAnswerAttempts, messageText } from './tables/messages.js';
import type { WebchatLive } from './webchat-live.js';

/**
 * The agents' answers that need a call to another server (a model; an embedding server),
 * asked outside any transaction and stepped into the conversation when they come
 * (actors/steps.ts, an `answer` step).
 *
 * - Places: each answer waits for a place among the model calls in flight
 *   (actors/fair-slots.ts): MODEL_MAX_CONCURRENCY in all, taken in turn by company, within an
 *   agent's own `model.maxConcurrency`. A company's backlog waits in its own queue.
 * - Attempts: each model call of a customer message is counted in the database first (a pool
 *   whose commits do not wait for the disk: only a crash of PostgreSQL itself could lose a
 *   count): at most MAX_ANSWER_ATTEMPTS model calls per customer message, crashes and
 *   redeliveries included; past it the conversation is handed to a human.
 * - A crash mid-answer leaves the JetStream message unacked; its redelivery finds the machine
 *   answering and asks again for the same stored message id (`resume`): at most one reply row
 *   per message (unique index), so never two replies.
 * - Cancellation: each answer has an AbortController. When a status or operator step leaves
 *   the machine no longer answering that message, the answer is aborted (`cancelIfTakenOver`),
 *   also while it waits for a place: the model's HTTP call is cancelled, nothing is sent and
 *   nothing is charged.
 * - Credit: the model call reserved its estimated cost (lib/credit.ts); the step that commits
 *   the answer settles it (debit or release).
 * - Webchat: the visitor is told the agent is typing, and a model answer is streamed to the
 *   visitor as it is written (actors/webchat-live.ts); the reply itself is committed and sent
 *   whole, as any other. Not while the agent answers a conversation it handed over: what it
 *   cannot answer then is not sent at all, so nothing of it is previewed.
 */
export const MAX_ANSWER_ATTEMPTS = 3;

/** How many times committing an answer is tried before the message is redelivered. */
const STORE_ATTEMPTS = 5;

const handoffEvent = (detail: string): AnyEventObject => ({ type: 'xstate.done.actor.agent', output: { kind: 'handoff', reason: 'model_failed', detail } satisfies AgentOutput });

export interface AnswersDeps {
  sql: SqlPool;
  /** Answer attempts are counted here (commits that need not wait for the disk). */
  quickSql: SqlPool;
  logger: Logger;
  agent: AgentRunner;
  steps: Steps;
  slots: FairSlots;
  evictIfIdle: (lane: Lane) => void;
  closed: () => boolean;
  /** Previews for webchat visitors (typing, the streamed text). */
  live?: WebchatLive;
}

export class Answers {
  readonly #deps: AnswersDeps;
  /** Attempts of the answers that got their place meanwhile, counted by one statement. */
  readonly #attempts: Batcher<{ companyId: number; messageId: string }, number>;

  constructor(deps: AnswersDeps) {
    this.#deps = deps;
    this.#attempts = new Batcher((reqs) => countAnswerAttempts(deps.quickSql, reqs.map((r) => r.messageId)), { fairBy: (r) => r.companyId });
  }

  /** Starts answering a stored customer message; resolves once its answer is committed (or discarded). */
  start(lane: Lane, conv: ConversationRow, input: AgentInput, route: AnswerRoute): Promise<ItemResult> {
    return this.#track(lane, conv.id, input.messageId, (signal) => this.#answer(conv, input, route, signal));
  }

  /** The conversation is answering a message (a crash or another process left it so): asks again for it. */
  resume(lane: Lane, conv: ConversationRow): void {
    const messageId = conv.snapshot.context.lastCustomerMessageId;
    if (!messageId || lane.inflight) return;
    this.#deps.logger.info({ conversationId: conv.id, messageId }, 'host: resuming an answer that was in flight');
    // Every message of a debounce window, as the machine collected them (older snapshots: the message alone).
    const input = agentInputOf(conv.snapshot.context, isHandedOver(conv.state));
    void this.#track(lane, conv.id, messageId, async (signal) => {
      const text = input.text || ((await messageText(this.#deps.sql, messageId)) ?? '');
      const route = await this.#deps.agent.routeOf(conv.company_id, conv.integration_id);
      return this.#answer(conv, { ...input, messageId, text }, route, signal);
    });
  }

  /**
   * After a status or operator step: if the lane's agent is still thinking about a message the
   * machine no longer waits for (a human took over), abort it.
   */
  cancelIfTakenOver(lane: Lane, conv: ConversationRow | null): void {
    const inflight = lane.inflight;
    if (!inflight || inflight.controller.signal.aborted || !conv || conv.id !== inflight.conversationId) return;
    if (isAnswering(conv.state) && conv.snapshot.context.lastCustomerMessageId === inflight.messageId) return;
    this.#deps.logger.info({ conversationId: conv.id, messageId: inflight.messageId }, 'host: a human took over while the agent was thinking; cancelling it');
    inflight.controller.abort(new Error('taken over'));
  }

  #track(lane: Lane, conversationId: number, messageId: string, work: (signal: AbortSignal) => Promise<ItemResult>): Promise<ItemResult> {
    const controller = new AbortController();
    const task = work(controller.signal)
      .catch((err: unknown) => {
        this.#deps.logger.warn({ err, conversationId, messageId }, 'host: the answer could not be worked out now; the message is redelivered');
        return 'nak' as const;
      })
      .finally(() => {
        lane.inflight = null;
        this.#deps.evictIfIdle(lane);
      });
    lane.inflight = { conversationId, messageId, controller, task };
    return task;
  }

  async #answer(conv: ConversationRow, input: AgentInput, route: AnswerRoute, signal: AbortSignal): Promise<ItemResult> {
    const { messageId } = input;
    let event: AnyEventObject;
    let slot: Slot | null = null;
    // Handed over, the agent says only what it can answer and the rest waits for the person: nothing it may leave unsaid is previewed.
    const live = conv.channel === 'webchat' && !input.handedOver ? this.#deps.live : undefined;
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
            : await this.#ask(conv, input, route.agentId, { signal, slot, onDelta: live?.deltas(conv) });
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
  async #ask(conv: ConversationRow, input: AgentInput, agentId: number | null, how: { signal: AbortSignal; slot: Slot; onDelta?: (text: string) => void }): Promise<AnyEventObject> {
    const { signal } = how;
    try {
      return await askAgent(this.#deps.agent, { conv, input, agentId }, { signal, slot: how.slot, ...(how.onDelta ? { onDelta: how.onDelta } : {}) });
    } catch (err) {
      if (!signal.aborted) throw err;
      return this.#cancelled(conv.id, input.messageId, err);
    }
  }

  #cancelled(conversationId: number, messageId: string, err: unknown): AnyEventObject {
    this.#deps.logger.info({ conversationId, messageId }, 'host: the agent was cancelled (taken over)');
    const toolCalls = err instanceof ModelCallCancelled && err.toolCalls.length ? { toolCalls: err.toolCalls } : {};
    return { type: 'xstate.error.actor.agent', error: err instanceof Error ? err : new Error(String(err)), ...toolCalls };
  }

  /** Commits an answer (an `answer` step), retrying a few times; null when stored, else the last error. */
  async #store(conv: ConversationRow, messageId: string, event: AnyEventObject): Promise<unknown> {
    for (let attempt = 1; ; attempt++) {
      try {
        const step = { kind: 'answer' as const, companyId: conv.company_id, conversationId: conv.id, messageId, event };
        if (tracing.enabled) attachActiveTrace(step);
        await this.#deps.steps.submit(step);
        return null;
      } catch (err) {
        if (this.#deps.closed() || attempt >= STORE_ATTEMPTS || isDataError(err)) {
          this.#deps.logger.error({ err, conversationId: conv.id }, 'host: could not store the answer');
          return err;
        }
        await sleep(Math.min(2000, 50 * 2 ** attempt));
      }
    }
  }
}
