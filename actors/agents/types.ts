import type { CallSlot } from '../../lib/agents/slots.js';
import type { BusinessHours } from '../../lib/agents/hours.js';
import type { AgentOutput, ClarifyOption } from '../../schema/conversation.js';

export type { AgentOutput };

export interface AgentInputForRunner {
  companyId: number;
  conversationId: number;
  /** The integration's agent (integrations.agent_id), null when none is configured. */
  agentId: number | null;
  /** The customer's message text. */
  text: string;
  /**
   * The stored customer message id (conversation_messages.id, as a string). Stable across
   * crashes and redeliveries: a restarted step asks again with the same id, so a runner
   * that bills or caches should key on it.
   */
  messageId: string;
  /** The message is the first of its conversation: there is no history to read. */
  firstMessage?: boolean;
  /** The options of the agent's last `clarify` reply: the message may pick one ("2", a title). */
  options?: ClarifyOption[];
  /**
   * The agent handed the conversation over and no person has acted yet: it answers only what
   * it can (a greeting, an answer, a clarify); for anything else its handoff sends nothing.
   */
  handedOver?: boolean;
  /**
   * Aborted by the host when a human takes the conversation over (operator pause / close,
   * helpdesk transfer / close) while the agent is still thinking. A runner stops its work
   * (e.g. aborts the model's HTTP call) and throws; its answer would be discarded anyway.
   */
  signal?: AbortSignal;
  /**
   * The answer's place among the model calls in flight (actors/fair-slots.ts), given when it
   * is asked outside a transaction: a runner waiting for something other than the model gives
   * it back meanwhile (`slot.away`).
   */
  slot?: CallSlot;
  /**
   * Given for webchat conversations: a runner that calls a model streams its answer and hands
   * each piece of text here as it arrives (the visitor sees it grow). A preview only: the
   * answer is still the output, stored and sent whole.
   */
  onDelta?: (text: string) => void;
}

/** How an agent paces its answers: its debounce window and business hours. */
export interface AgentBehaviour {
  debounceMs: number;
  hours: BusinessHours | null;
  /** The agent's version these come from (recorded on the message told outside the hours); none without an agent. */
  version?: number;
}

export const NO_BEHAVIOUR: AgentBehaviour = { debounceMs: 0, hours: null };

/**
 * How an agent answers, known before the customer message is stored (from the agent's
 * provider, never from what happens to be cached, so the same message always commits the
 * same way):
 * - `local`: from the database alone, in about a millisecond (the built-in agent on a base
 *   without an embedding model; no agent at all): asked inside the transaction that stores
 *   the message, which commits message and answer together;
 * - `call`: needs a call to another server (a model; an embedding server): asked between two
 *   transactions, in a place among the calls in flight; `maxConcurrency` is the agent's own
 *   cap on its calls (`model.maxConcurrency`).
 */
export type AnswerPath = { kind: 'local' } | { kind: 'call'; maxConcurrency: number | null };

/** An integration's agent and how it answers: the route a customer message of it takes. */
export interface AnswerRoute {
  agentId: number | null;
  path: AnswerPath;
  /** Its debounce window and business hours. */
  behaviour: AgentBehaviour;
}

/**
 * What answers a customer message. `{kind:'reply'}` is sent to the customer;
 * `{kind:'handoff', reason}` pauses the conversation for a human (the host sends
 * `text`, or a default notice, to the customer). A model that fails is an output (a handoff
 * with `model_failed`); throwing means the answer could not be worked out right now (the
 * database is unreachable, say): the host tries the message again later, with at most
 * MAX_ANSWER_ATTEMPTS model calls in all (actors/answers.ts), so a passing outage never hands a
 * conversation to a human.
 * `usage` (a model call) is debited from the company's credit when, and only when, the
 * answer is committed (actors/steps.ts).
 */
export interface AgentRunner {
  answer(input: AgentInputForRunner): Promise<AgentOutput>;
  /**
   * The route of an integration's customer messages: its agent, how it answers and paces its
   * answers (looked up and cached). Throws when it cannot be looked up now (the message is
   * retried).
   */
  routeOf(companyId: number, integrationId: number): Promise<AnswerRoute>;
}
