// Types of the conversation state machine (machines/conversation.ts).
// Plain TypeScript types only: no runtime code. Everything in the context is
// JSON-serialisable because the snapshot is persisted.

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
   * Why the session is (or was last) paused: an agent handoff reason
   * (`asked_for_human`, `no_answer`, `no_credit`, `model_failed`),
   * `dialog_transferred` or `operator_pause`. Reset to null on `operator.resume`.
   */
  handoffReason: string | null;
  /** ISO timestamp of the close event. */
  closedAt: string | null;
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

export type ConversationEvent = CustomerMessageEvent | HelpdeskEvent | OperatorEvent;

export type ConversationEventType = ConversationEvent['type'];

// ---- agent actor -----------------------------------------------------------

export interface AgentInput {
  messageId: string;
  text: string;
}

export type HandoffReason = 'asked_for_human' | 'no_answer' | 'no_credit' | 'model_failed';

/**
 * The language-model call that produced an answer: what the host debits from the company's
 * credit (one `model_usage` ledger entry) in the transaction that commits the answer.
 * `costUsd` is an exact decimal string (6 decimals, actors/agents/pricing.ts).
 */
export interface ModelUsage {
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: string;
}

export type AgentOutput =
  | { kind: 'reply'; text: string; usage?: ModelUsage }
  | { kind: 'handoff'; reason: HandoffReason; text?: string; usage?: ModelUsage; detail?: string };

// ---- status / named action params -----------------------------------------

export type ConversationStatus = 'active' | 'paused' | 'closed';

/** Params of the `agent_reply` action: send `text` as the answer to `messageId`. */
export interface AgentReplyParams {
  messageId: string | null;
  text: string;
}

/**
 * Params of the `session_transfer_external` action.
 * - `origin: 'agent'`: the agent handed off (or failed); the host calls the helpdesk
 *   transfer API and may send `text` to the customer.
 * - `origin: 'helpdesk'`: the helpdesk reported `dialog_transferred`; a human already
 *   has it, the host only records it (no transfer call needed).
 */
export type SessionTransferExternalParams =
  | { origin: 'agent'; reason: HandoffReason; messageId: string | null; text?: string }
  | { origin: 'helpdesk'; requestId: number; dialogId: number | null; at: string };

/** Params of the `session_close` action. */
export interface SessionCloseParams {
  origin: 'helpdesk' | 'operator';
  event: 'helpdesk.close_dialog' | 'helpdesk.close_request' | 'operator.close';
  at: string;
  requestId?: number;
  dialogId?: number;
  by?: string;
}
