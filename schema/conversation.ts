// Types of the conversation state machine (machines/conversation.ts).
// Plain TypeScript types only: no runtime code. Everything in the context is
// JSON-serialisable because the snapshot is persisted.

import type { ToolCallStatus } from './action-entities.js';

/** One `dialog_transferred` status event recorded in the shared context. */
export interface ConversationTransfer {
  requestId: number;
  dialogId: number | null;
  /** ISO timestamp */
  at: string;
}

export interface ConversationContext {
  /** Helpdesk request_id values seen by this session (deduplicated, last 50, oldest first). */
  requestIds: number[];
  /** Helpdesk dialog_id values seen by this session (deduplicated, last 50, oldest first). */
  dialogIds: number[];
  transfers: ConversationTransfer[];
  lastCustomerMessageId: string | null;
  /**
   * The customer messages the agent answers next, together: one while answering without
   * debounce, every message that arrived inside the debounce window with it. Cleared when
   * the machine is back in `active.idle` (or `paused.handedOver.idle`: the agent handed the
   * conversation over and still answers until a person acts).
   */
  collected?: { messageId: string; text: string }[];
  /**
   * While collecting (agent debounce): when the answer is due (ISO). A durable deadline in
   * the snapshot, not an `after` timer (those are lost on restore): the host sends
   * `debounce.elapsed` once it has passed, also after a restart.
   */
  answerDueAt?: string | null;
  /**
   * Why the session is (or was last) paused: an agent handoff reason
   * (`asked_for_human`, `no_answer`, `no_credit`, `spend_cap`, `model_failed`),
   * `dialog_transferred` or `operator_pause`. Reset to null on `operator.resume`.
   */
  handoffReason: string | null;
  /** ISO timestamp of the close event. */
  closedAt: string | null;
  /**
   * The options of the agent's last `clarify` reply ("Do you mean: 1. Returns 2. Exchanges?"):
   * the customer's next message ("2", or a title) picks one. Cleared by the next answer.
   */
  pendingOptions?: ClarifyOption[] | null;
}

// ---- events ----------------------------------------------------------------

export interface CustomerMessageEvent {
  type: 'customer.message';
  messageId: string;
  text: string;
  /** ISO timestamp */
  at: string;
  /** Helpdesk request_id / dialog_id carried by the inbox webhook, remembered when present. */
  requestId?: number;
  dialogId?: number;
  /** The agent's debounce window (ms) when it has one: messages within it are answered once, together. */
  debounceMs?: number;
}

/** Sent by the host once a collecting conversation's `answerDueAt` has passed. */
export interface DebounceElapsedEvent {
  type: 'debounce.elapsed';
  /** ISO timestamp of when the host noticed. */
  at: string;
}

/** Payload common to the helpdesk status events. */
export interface HelpdeskStatusPayload {
  /** Guarded at runtime: an event without a numeric requestId does not change the state. */
  requestId: number;
  dialogId?: number;
  /** ISO timestamp */
  at: string;
}

export interface HelpdeskCloseDialogEvent extends HelpdeskStatusPayload {
  type: 'helpdesk.close_dialog';
}
export interface HelpdeskCloseRequestEvent extends HelpdeskStatusPayload {
  type: 'helpdesk.close_request';
}
export interface HelpdeskDialogTransferredEvent extends HelpdeskStatusPayload {
  type: 'helpdesk.dialog_transferred';
}

export type HelpdeskEvent =
  | HelpdeskCloseDialogEvent
  | HelpdeskCloseRequestEvent
  | HelpdeskDialogTransferredEvent;

export interface OperatorPayload {
  /** ISO timestamp */
  at: string;
  /** Operator (user id or name), when known. */
  by?: string;
}

export interface OperatorPauseEvent extends OperatorPayload {
  type: 'operator.pause';
}
export interface OperatorResumeEvent extends OperatorPayload {
  type: 'operator.resume';
}
export interface OperatorCloseEvent extends OperatorPayload {
  type: 'operator.close';
}

export type OperatorEvent = OperatorPauseEvent | OperatorResumeEvent | OperatorCloseEvent;

/**
 * The customer stayed silent `idleMinutes` (the agent's autoResolveMinutes) after the agent's
 * answer of `answeredAt`: the session closes as resolved by the agent (actors/auto-resolve.ts).
 */
export interface AutoResolveEvent {
  type: 'agent.auto_resolve';
  /** ISO timestamp of when the worker applied it. */
  at: string;
  /** ISO timestamp of the agent's answer the customer left unanswered. */
  answeredAt: string;
  idleMinutes: number;
}

/**
 * What a direct channel refused of a send (actors/outbox/delivery.ts): WhatsApp's 24-hour
 * window is over (`channel.window_closed`: a person must reach the customer) or the customer
 * blocked the Telegram bot (`channel.blocked`: the session ends).
 */
interface ChannelRefusedPayload {
  /** ISO timestamp of when the worker applied it. */
  at: string;
  /** The outbox row whose send was refused. */
  outboxId: string;
}
export interface ChannelWindowClosedEvent extends ChannelRefusedPayload {
  type: 'channel.window_closed';
}
export interface ChannelBlockedEvent extends ChannelRefusedPayload {
  type: 'channel.blocked';
}
export type ChannelRefusedEvent = ChannelWindowClosedEvent | ChannelBlockedEvent;

export type ConversationEvent = CustomerMessageEvent | DebounceElapsedEvent | HelpdeskEvent | OperatorEvent | AutoResolveEvent | ChannelRefusedEvent;

export type ConversationEventType = ConversationEvent['type'];

// ---- agent actor -----------------------------------------------------------

export interface AgentInput {
  messageId: string;
  text: string;
  /** The options the agent offered last (a `clarify` reply); the message may pick one. */
  options?: ClarifyOption[];
  /**
   * The agent handed the conversation over and no person has acted yet: it still answers
   * what it can (`greeting`, `answer`, `clarify`); anything else waits for the person, silently.
   */
  handedOver?: boolean;
}

/** One numbered option of a `clarify` reply: an article the question may be about. */
export interface ClarifyOption {
  documentId: number;
  chunkId: number;
  title: string;
}

export type HandoffReason = 'asked_for_human' | 'no_answer' | 'no_credit' | 'spend_cap' | 'outside_hours' | 'model_failed' | 'unsupported_message';

/**
 * The language-model call that produced an answer: what the host debits from the company's
 * credit (one `model_usage` ledger entry) in the transaction that commits the answer.
 * `costUsd` is an exact decimal string (6 decimals, lib/agents/pricing.ts).
 */
export interface ModelUsage {
  /** The agent that made the call (daily spend caps per agent are summed by it). */
  agentId?: number | null;
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: string;
}

/** A knowledge chunk an agent's reply came from (shown to operators with the reply). */
export interface ReplySource {
  documentId: number;
  chunkId: number;
  title: string;
}

/** The passage an answer decision found best, with how sure the agent is that it answers the question. */
export interface DecisionPassage {
  documentId: number;
  chunkId: number;
  title: string;
  /** 0–1: how well the passage answers the question (lib/knowledge/confidence.ts). */
  confidence: number;
  /** The evidence the confidence was built from: the lexical coverage (0–1) and the semantic similarity (cosine; absent: no vectors). */
  lexical?: number;
  semantic?: number;
}

/**
 * What the agent decided for a customer message (contract.md § Answers that find what the help
 * centre says), recorded in the transition log with the answer (the `output.decision` of its
 * `xstate.done.actor.agent` transition): knowledge gaps are read from the no-answers.
 * - `greeting` / `thanks`: small talk, answered with a short reply (no knowledge, no sources);
 * - `answer`: a passage reached the agent's threshold;
 * - `clarify`: passages of two or three articles are close and none is sure: the customer is
 *   asked which one (`options`);
 * - `out_of_scope`: not about this business: `agent.outOfScopeText`, no handoff;
 * - `no_answer`: about the business, but no passage answers (`best` is the best found, if
 *   any): the agent's `onNoAnswer`, or a model reply that was withheld;
 * - `asked_for_human`: the customer asked for a person.
 * `passages`: the best passages weighed, with their confidences (and evidence).
 */
export interface AnswerDecision {
  kind: 'greeting' | 'thanks' | 'answer' | 'clarify' | 'out_of_scope' | 'no_answer' | 'asked_for_human';
  /** The base searched (null: the agent has none). */
  knowledgeBaseId: number | null;
  /** The customer's question as answered (bounded). */
  question: string;
  /** The agent's relevanceThreshold at the time. */
  threshold: number;
  best: DecisionPassage | null;
  passages?: DecisionPassage[];
  /** A `clarify` decision's options, in the order offered. */
  options?: ClarifyOption[];
  /** The decision was taken while the conversation waited for a person (the agent had handed it over). */
  handedOver?: boolean;
}

/**
 * One call of a company tool (an HTTP action or an MCP tool) an answer made, as the
 * transition log shows it (a `tool.called` row; contract.md § Agent actions): `args` with
 * secrets redacted; `reused`: an earlier attempt at the same answer made it, its outcome given again.
 */
export interface ToolCallRecord {
  name: string;
  source: 'action' | 'mcp';
  args: Record<string, unknown>;
  status: Exclude<ToolCallStatus, 'started'>;
  httpStatus?: number;
  ms: number;
  error?: string;
  reused?: boolean;
}

/**
 * What every answer may carry besides its text: the lead stage the agent moved the customer to (its set_lead_stage tool), the decision behind it,
 * the company tools it called (logged as rows of their own when the answer is committed, not with it).
 */
interface AgentOutputExtras {
  leadStage?: string;
  decision?: AnswerDecision;
  toolCalls?: ToolCallRecord[];
  /** The version of the agent's settings that gave the answer (absent: no agent configured). */
  agentVersion?: number;
}

export type AgentOutput = AgentOutputExtras &
  (
    /** `withheld` (with `onNoAnswer: "fallback"`): the model reply that the fallback `text` replaced, kept for the log. */
    | { kind: 'reply'; text: string; usage?: ModelUsage; sources?: ReplySource[]; confidence?: number; withheld?: string; options?: ClarifyOption[] }
    /** `withheld`: a model reply that was not sent (it promised what no tool did), kept for the log. */
    | { kind: 'handoff'; reason: HandoffReason; text?: string; usage?: ModelUsage; detail?: string; withheld?: string }
    /** The agent closed the conversation (its close_conversation tool), after saying `text` if any. */
    | { kind: 'close'; reason: string; text?: string; usage?: ModelUsage }
  );

/** Params of the `lead_stage` action: move the customer's lead to this stage (by name or id). */
export interface LeadStageParams {
  stage: string;
}

// ---- status / named action params -----------------------------------------

export type ConversationStatus = 'active' | 'paused' | 'closed';

/** Params of the `agent_reply` action: send `text` as the answer to `messageId`; `sources` are recorded with it. */
export interface AgentReplyParams {
  messageId: string | null;
  text: string;
  sources?: ReplySource[];
  /** 0–1: how sure the agent was that its sources answer the question (grounded replies only). */
  confidence?: number;
  /** The agent's version that gave the reply. */
  agentVersion?: number;
  /** A `clarify` reply's numbered options (webchat: the message frame's `options`). */
  options?: ClarifyOption[];
}

/**
 * Params of the `session_transfer_external` action.
 * - `origin: 'agent'`: the agent handed off (or failed); the host calls the helpdesk
 *   transfer API and may send `text` to the customer.
 * - `origin: 'helpdesk'`: the helpdesk reported `dialog_transferred`; a human already
 *   has it, the host only records it (no transfer call needed).
 */
export type SessionTransferExternalParams =
  | { origin: 'agent'; reason: HandoffReason; messageId: string | null; text?: string; agentVersion?: number }
  | { origin: 'helpdesk'; requestId: number; dialogId: number | null; at: string };

/** Params of the `session_close` action. */
export interface SessionCloseParams {
  origin: 'helpdesk' | 'operator' | 'agent' | 'channel';
  event: 'helpdesk.close_dialog' | 'helpdesk.close_request' | 'operator.close' | 'agent.close' | 'agent.auto_resolve' | 'channel.blocked';
  /** Why the agent closed it (its close_conversation tool; `auto_resolved`: its customer stayed silent after its answer). */
  reason?: string;
  at: string;
  requestId?: number;
  dialogId?: number;
  by?: string;
}
