// What the conversation machine hands the host and its agent: the params of its named
// actions and the agent's input, built from its context and events. Pure (schema types only).
import type {
  AgentInput,
  AgentOutput,
  AgentReplyParams,
  ClarifyOption,
  ConversationContext,
  ConversationEvent,
  HandoffReason,
  SessionCloseParams,
  SessionTransferExternalParams,
} from '../schema/conversation.js';

/** How many request / dialog ids a session remembers (each). */
export const MAX_REMEMBERED_IDS = 50;

export function rememberId(list: readonly number[], id: unknown): number[] {
  if (typeof id !== 'number' || !Number.isFinite(id)) return [...list];
  // Move to the end when already present, so the most recently seen ids survive the cap.
  return [...list.filter((x) => x !== id), id].slice(-MAX_REMEMBERED_IDS);
}

export function hasRequestId(event: ConversationEvent): boolean {
  return 'requestId' in event && typeof event.requestId === 'number' && Number.isFinite(event.requestId);
}

const HANDOFF_REASONS: readonly HandoffReason[] = ['asked_for_human', 'no_answer', 'no_credit', 'spend_cap', 'outside_hours', 'model_failed', 'unsupported_message'];

export function handoffReasonOf(output: AgentOutput | undefined): HandoffReason {
  if (output && output.kind === 'handoff' && HANDOFF_REASONS.includes(output.reason)) return output.reason;
  return 'model_failed';
}

export type EventOf<T extends ConversationEvent['type']> = Extract<ConversationEvent, { type: T }>;
export type HelpdeskCloseEvent = EventOf<'helpdesk.close_dialog' | 'helpdesk.close_request'>;

export function helpdeskCloseParams(event: HelpdeskCloseEvent): SessionCloseParams {
  return {
    origin: 'helpdesk',
    event: event.type,
    at: event.at,
    requestId: event.requestId,
    ...(event.dialogId !== undefined ? { dialogId: event.dialogId } : {}),
  };
}

export function helpdeskTransferParams(event: EventOf<'helpdesk.dialog_transferred'>): SessionTransferExternalParams {
  return { origin: 'helpdesk', requestId: event.requestId, dialogId: event.dialogId ?? null, at: event.at };
}

export function operatorCloseParams(event: EventOf<'operator.close'>): SessionCloseParams {
  return { origin: 'operator', event: event.type, at: event.at, ...(event.by !== undefined ? { by: event.by } : {}) };
}

/** The customer stayed silent after the agent's answer: the session ends resolved by the agent. */
export function autoResolveParams(event: EventOf<'agent.auto_resolve'>): SessionCloseParams {
  return { origin: 'agent', event: event.type, at: event.at, reason: 'auto_resolved' };
}

/** The customer blocked the channel's bot: the session ends, closed by the channel. */
export function channelBlockedParams(event: EventOf<'channel.blocked'>): SessionCloseParams {
  return { origin: 'channel', event: event.type, at: event.at, reason: 'blocked' };
}

/** The version of the agent that gave the output, when it says (recorded with the message it becomes). */
const versionOf = (output: AgentOutput | undefined) => (typeof output?.agentVersion === 'number' ? { agentVersion: output.agentVersion } : {});

/** The numbered options of a `clarify` reply (none: null). */
export function clarifyOptionsOf(output: AgentOutput | undefined): ClarifyOption[] | null {
  return output?.kind === 'reply' && Array.isArray(output.options) && output.options.length > 0 ? output.options : null;
}

/** What the agent says: its reply, or its last words when its close_conversation tool ends the session. */
export function agentReplyParams(messageId: string | null, output: AgentOutput): AgentReplyParams {
  if (output.kind !== 'reply') return { messageId, text: output.kind === 'close' ? (output.text ?? '') : '', ...versionOf(output) };
  const options = clarifyOptionsOf(output);
  return {
    messageId,
    text: output.text,
    ...(Array.isArray(output.sources) ? { sources: output.sources } : {}),
    ...(typeof output.confidence === 'number' ? { confidence: output.confidence } : {}),
    ...versionOf(output),
    ...(options ? { options } : {}),
  };
}

/** The agent handed off, or failed (no output): the host transfers the dialog and may send `text`. */
export function agentHandoffParams(messageId: string | null, output: AgentOutput | undefined): SessionTransferExternalParams {
  return {
    origin: 'agent',
    reason: handoffReasonOf(output),
    messageId,
    ...(output?.kind === 'handoff' && typeof output.text === 'string' ? { text: output.text } : {}),
    ...versionOf(output),
  };
}

export function initialContext(): ConversationContext {
  return {
    requestIds: [],
    dialogIds: [],
    transfers: [],
    lastCustomerMessageId: null,
    collected: [],
    answerDueAt: null,
    handoffReason: null,
    closedAt: null,
  };
}

/** The text the agent answers: every collected message, in order. */
export function collectedText(context: ConversationContext): string {
  return (context.collected ?? []).map((m) => m.text).join('\n');
}

/**
 * What the agent is asked: the collected messages, answering the last one; the options it
 * offered last (the message may pick one); and whether it handed the conversation over
 * (then it answers only what it can, and the rest waits for the person).
 */
export function agentInputOf(context: ConversationContext, handedOver: boolean): AgentInput {
  const options = context.pendingOptions;
  return {
    messageId: context.lastCustomerMessageId ?? '',
    text: collectedText(context),
    ...(handedOver ? { handedOver: true } : {}),
    ...(options && options.length > 0 ? { options } : {}),
  };
}
