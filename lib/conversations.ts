import type { StateValue } from 'xstate';
import type { ConversationContext, ConversationStatus } from '../schema/conversation.js';
import type { DeliveryStatus } from '../schema/conversation-entities.js';
import type { Channel } from '../schema/envelope.js';

/**
 * The JSON shapes of conversations, shared by the worker (which publishes them on
 * names.conversationEvents after each commit) and the gateway (which serves and relays
 * them). No runtime dependencies: the gateway never imports actors/.
 */
export interface ConversationView {
  id: number;
  integrationId: number;
  channel: Channel;
  /** The messenger behind a helpdesk conversation (`telegram`, `whatsapp`, …, as Chat2Desk names it); null for webchat or when unknown. */
  transport: string | null;
  clientId: string;
  status: ConversationStatus;
  state: StateValue;
  context: ConversationContext | null;
  createdAt: string;
  updatedAt: string;
  lastMessageAt: string | null;
  closedAt: string | null;
  /**
   * The last message of the customer or of whoever answered them (its first 200 characters; not a note, a system record,
   * the bot's handoff notice, nor what the bot answers while the conversation waits for a person: `needsHuman` stays), null before any.
   */
  lastMessage: LastMessageView | null;
  /** The teammate who has it, null when unassigned. */
  assigneeId: string | null;
  labels: string[];
  /** Customer messages in the session (a user's `unread` is this less what they had seen). */
  customerMessages: number;
}

export interface LastMessageView {
  role: string;
  text: string;
  at: string;
}

export interface MessageView {
  id: number;
  seq: number;
  role: string;
  kind: string;
  text: string;
  externalId: string | null;
  replyToId: number | null;
  delivery: string | null;
  /**
   * How far a sent message got, as its channel reports it (contract.md § Direct channels):
   * `sent`, `delivered`, `read` (WhatsApp statuses, never moving back) or `failed`; null for
   * customer messages, notes and messages not sent (yet).
   */
  deliveryStatus: DeliveryStatus | null;
  /** Why a message was not delivered (delivery "failed" or "cancelled", or a channel's `failed` status), else null. */
  deliveryError: { code: string; message: string } | null;
  /** An agent reply's knowledge sources (`[{documentId, chunkId, title}]`, empty when none); null for other messages. */
  sources: { documentId: number; chunkId: number; title: string }[] | null;
  /** An agent reply grounded in the knowledge: how sure the agent was that its sources answer the question (0–1); else null. */
  confidence: number | null;
  /** A `clarify` reply's numbered options (`[{documentId, chunkId, title}]`, in the order offered); null for other messages. */
  options: { documentId: number; chunkId: number; title: string }[] | null;
  /** The teammate who wrote an operator reply or note (null otherwise). */
  authorId: string | null;
  /** An agent reply or handoff notice: the agent's version that gave it (null otherwise, and for answers from before versions). */
  agentVersion: number | null;
  createdAt: string;
}

export interface TransitionView {
  seq: number;
  at: string;
  event: string;
  payload: Record<string, unknown>;
  from: StateValue | null;
  to: StateValue;
  actions: { type: string; params?: unknown; effect?: string }[];
}

/**
 * What changed in a conversation, as the worker tells it on
 * names.conversationEvents(companyId, conversationId): each publish carries a JSON array of
 * notices (`ConversationNotices`), in order, all of one conversation and one commit.
 * `updated` is the API's (gateway/conversations/team-columns.ts): the columns the worker never
 * writes changed (assignee, labels), or a user read it (`reader`: who, and how many customer
 * messages they have now seen). A reader of these notices ignores types it does not know.
 */
export type ConversationNotice =
  | { type: 'transition'; conversationId: number; transition: TransitionView; conversation: ConversationView }
  | { type: 'message'; conversationId: number; message: MessageView }
  | { type: 'applied'; conversationId: number; idempotencyKey: string; outcome: 'applied' | 'duplicate' | 'not_found' | 'ignored'; conversation: ConversationView | null }
  | { type: 'updated'; conversationId: number; conversation: ConversationView; reader?: ReadMark };

/** A user's read of a conversation: the customer messages they had seen then (their unread is the rest). */
export interface ReadMark {
  userId: string;
  customerMessagesRead: number;
}

/** One publish on names.conversationEvents: the notices of one conversation and one commit, in order. */
export type ConversationNotices = ConversationNotice[];

/**
 * The notices of one publish (a malformed one has none). A single notice, as workers before
 * the arrays published, is read too: gateways upgraded first keep hearing older workers.
 */
export function noticesOf(data: Uint8Array): ConversationNotices {
  try {
    const parsed = JSON.parse(Buffer.from(data).toString('utf8')) as unknown;
    if (Array.isArray(parsed)) return parsed as ConversationNotices;
    return parsed !== null && typeof parsed === 'object' && typeof (parsed as { type?: unknown }).type === 'string' ? [parsed as ConversationNotice] : [];
  } catch {
    return [];
  }
}

const iso = (d: Date | string | null | undefined): string | null => (d === null || d === undefined ? null : new Date(d).toISOString());

export interface ConversationLike {
  id: number;
  integrationId: number;
  channel: Channel;
  transport: string | null;
  clientId: string;
  status: ConversationStatus;
  state: StateValue;
  snapshot?: { context?: ConversationContext } | null;
  createdAt: Date | string;
  updatedAt: Date | string;
  lastMessageAt: Date | string | null;
  closedAt: Date | string | null;
  assigneeId: string | null;
  labels: string[];
  lastMessageRole: string | null;
  lastMessageText: string | null;
  customerMessages: number;
}

export function conversationView(c: ConversationLike): ConversationView {
  const lastMessageAt = iso(c.lastMessageAt);
  return {
    id: c.id,
    integrationId: c.integrationId,
    channel: c.channel,
    transport: c.transport,
    clientId: c.clientId,
    status: c.status,
    state: c.state,
    context: c.snapshot?.context ?? null,
    createdAt: iso(c.createdAt)!,
    updatedAt: iso(c.updatedAt)!,
    lastMessageAt,
    closedAt: iso(c.closedAt),
    lastMessage: c.lastMessageRole !== null && lastMessageAt !== null ? { role: c.lastMessageRole, text: c.lastMessageText ?? '', at: lastMessageAt } : null,
    assigneeId: c.assigneeId,
    labels: c.labels,
    customerMessages: c.customerMessages,
  };
}

export interface MessageLike {
  id: string | number;
  seq: number;
  role: string;
  kind: string;
  text: string;
  externalId: string | null;
  replyToId: string | number | null;
  delivery: string | null;
  deliveryError?: string | null;
  deliveryStatus?: string | null;
  deliveryErrorCode?: string | null;
  sources?: { documentId: number; chunkId: number; title: string }[] | null;
  confidence?: number | null;
  options?: { documentId: number; chunkId: number; title: string }[] | null;
  authorId?: string | null;
  agentVersion?: number | null;
  createdAt: Date | string;
}

/** The channel's report when there is one, else what our own send knows (sent or failed). */
function deliveryStatusOf(m: MessageLike): DeliveryStatus | null {
  if (m.deliveryStatus) return m.deliveryStatus as DeliveryStatus;
  return m.delivery === 'sent' || m.delivery === 'failed' ? m.delivery : null;
}

export function messageView(m: MessageLike): MessageView {
  return {
    id: Number(m.id),
    seq: m.seq,
    role: m.role,
    kind: m.kind,
    text: m.text,
    externalId: m.externalId,
    replyToId: m.replyToId === null ? null : Number(m.replyToId),
    delivery: m.delivery,
    deliveryStatus: deliveryStatusOf(m),
    deliveryError: m.deliveryError ? { code: m.deliveryErrorCode ?? (m.delivery === 'cancelled' ? 'not_sent' : 'send_failed'), message: m.deliveryError } : null,
    sources: m.sources ?? (m.role === 'agent' && m.kind === 'reply' ? [] : null),
    confidence: m.confidence ?? null,
    options: m.options?.length ? m.options : null,
    authorId: m.authorId ?? null,
    agentVersion: m.agentVersion ?? null,
    createdAt: iso(m.createdAt)!,
  };
}

export const DEFAULT_HANDOFF_TEXT = 'A human colleague will take over shortly.';
