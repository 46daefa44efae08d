import type { AgentOutput } from '../../schema/conversation.js';

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
  /**
   * Aborted by the host when a human takes the conversation over (operator pause / close,
   * helpdesk transfer / close) while the agent is still thinking. A runner stops its work
   * (e.g. aborts the model's HTTP call) and throws; its answer would be discarded anyway.
   */
  signal?: AbortSignal;
}

/**
 * What answers a customer message. `{kind:'reply'}` is sent to the customer;
 * `{kind:'handoff', reason}` pauses the conversation for a human (the host sends
 * `text`, or a default notice, to the customer). Throwing counts as `model_failed`.
 * `usage` (a model call) is debited from the company's credit when, and only when, the
 * answer is committed (actors/host.ts).
 */
export interface AgentRunner {
  answer(input: AgentInputForRunner): Promise<AgentOutput>;
  /**
   * True when this agent answers from the database alone, in about a millisecond (the
   * built-in agent, its config cached): the host then asks it inside the transaction that
   * stores the customer message and commits message and answer together. Otherwise (a model
   * call, or not known yet) the answer is asked for outside any transaction.
   */
  answersLocally?(companyId: number, agentId: number | null): boolean;
}
