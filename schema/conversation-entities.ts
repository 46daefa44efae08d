import { EntitySchema } from '@mikro-orm/core';
import type { StateValue } from 'xstate';
import type { Channel } from './envelope.js';
import type { ClarifyOption, ConversationStatus, ReplySource } from './conversation.js';

/**
 * Entities of the conversation engine (migration 0004). Company-owned like the others:
 * each carries `companyId` and the default-on `tenant` filter. Routes read them through a
 * tenant EntityManager; the worker writes them with plain SQL in its group-commit
 * transactions (actors/steps.ts; each table's SQL in actors/tables/).
 */
const tenantFilter = {
  tenant: {
    name: 'tenant',
    cond: (args: { companyId: number }) => ({ companyId: args.companyId }),
    default: true,
  },
};

export interface Conversation {
  id: number;
  companyId: number;
  integrationId: number;
  channel: Channel;
  clientId: string;
  partition: number;
  status: ConversationStatus;
  /** The full XState state value. */
  state: StateValue;
  /** The persisted XState snapshot (`getPersistedSnapshot()`). */
  snapshot: Record<string, unknown>;
  channelId: string | null;
  transport: string | null;
  messageSeq: number;
  transitionSeq: number;
  /** Set by the operator API the moment a pause / close is requested; cleared when applied. */
  holdRequestedAt: Date | null;
  /** The teammate who has it (written by the API; a removed user leaves it unassigned). */
  assigneeId: string | null;
  /** The company's labels on it (written by the API). */
  labels: string[];
  /** The last message of the customer or of whoever answered them (not notes, transfer records or handoff notices): its role and first 200 characters (written by the worker). */
  lastMessageRole: string | null;
  lastMessageText: string | null;
  /** Customer messages in the session (written by the worker): a user's unread count is this less what they had seen. */
  customerMessages: number;
  /** When the platform says the customer's last message was sent (written by the worker; WhatsApp's 24-hour window counts from it; migration 0034). */
  customerSentAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  /** When the last message of the customer or of whoever answered them was written (the one lastMessageRole and lastMessageText hold). */
  lastMessageAt: Date | null;
  closedAt: Date | null;
}

export const ConversationSchema = new EntitySchema<Conversation>({
  name: 'Conversation',
  tableName: 'conversations',
  filters: tenantFilter,
  properties: {
    id: { type: 'integer', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    integrationId: { type: 'integer' },
    channel: { type: 'text' },
    clientId: { type: 'text' },
    partition: { type: 'integer' },
    status: { type: 'text' },
    state: { type: 'json' },
    snapshot: { type: 'json', lazy: true },
    channelId: { type: 'text', nullable: true },
    transport: { type: 'text', nullable: true },
    messageSeq: { type: 'integer', default: 0 },
    transitionSeq: { type: 'integer', default: 0 },
    holdRequestedAt: { type: 'datetime', nullable: true },
    assigneeId: { type: 'uuid', nullable: true },
    labels: { type: 'text[]', default: '{}' },
    customerSentAt: { type: 'datetime', nullable: true },
    lastMessageRole: { type: 'text', nullable: true },
    lastMessageText: { type: 'text', nullable: true },
    customerMessages: { type: 'integer', default: 0 },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
    lastMessageAt: { type: 'datetime', nullable: true },
    closedAt: { type: 'datetime', nullable: true },
  },
});

export interface ConversationRef {
  integrationId: number;
  kind: 'request' | 'dialog';
  refId: string;
  conversationId: number;
  companyId: number;
  seenAt: Date;
}

export const ConversationRefSchema = new EntitySchema<ConversationRef>({
  name: 'ConversationRef',
  tableName: 'conversation_refs',
  filters: tenantFilter,
  properties: {
    integrationId: { type: 'integer', primary: true },
    kind: { type: 'text', primary: true },
    refId: { type: 'bigint', primary: true },
    conversationId: { type: 'integer', primary: true },
    companyId: { type: 'integer' },
    seenAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export type MessageRole = 'customer' | 'agent' | 'operator' | 'system';
export type MessageDelivery = 'pending' | 'sent' | 'failed' | 'cancelled';
/** A sent message's progress as its channel reports it, in the order it moves (contract.md § Direct channels). */
export const DELIVERY_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface ConversationMessage {
  id: string;
  companyId: number;
  conversationId: number;
  /** 1, 2, 3, ... within the conversation. */
  seq: number;
  role: MessageRole;
  /** `transfer`: a handed-off helpdesk dialog's transfer to the integration's operator group (role system); `note`: an operator's private note, never sent. */
  kind: 'message' | 'reply' | 'handoff_notice' | 'transfer' | 'note';
  text: string;
  /** The platform's id: helpdesk message_id of a customer message, or of our sent reply. */
  externalId: string | null;
  replyToId: string | null;
  /** Outbound messages only. */
  delivery: MessageDelivery | null;
  deliveryError: string | null;
  /** What the channel reported of a sent message (WhatsApp statuses; a send's own answer): never moving back (migration 0034). */
  deliveryStatus: DeliveryStatus | null;
  /** The code of a failed delivery (the platform's error code, or ours: `window_closed`, `delivery_uncertain`, ...). */
  deliveryErrorCode: string | null;
  attachments: unknown[];
  /** An agent reply's knowledge sources (`[{documentId, chunkId, title}]`); null for other messages. */
  sources: ReplySource[] | null;
  /** An agent reply grounded in the knowledge: how sure the agent was that its sources answer the question (0–1); null otherwise. */
  confidence: number | null;
  /** A `clarify` reply's numbered options (`[{documentId, chunkId, title}]`, in the order offered; migration 0029); null for other messages. */
  options: ClarifyOption[] | null;
  /** The teammate who wrote an operator reply or note; null otherwise (and for API tokens). */
  authorId: string | null;
  /** An agent reply or handoff notice: the agent's version that gave it (migration 0023); null otherwise. */
  agentVersion: number | null;
  createdAt: Date;
}

export const ConversationMessageSchema = new EntitySchema<ConversationMessage>({
  name: 'ConversationMessage',
  tableName: 'conversation_messages',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    conversationId: { type: 'integer' },
    seq: { type: 'integer' },
    role: { type: 'text' },
    kind: { type: 'text', default: 'message' },
    text: { type: 'text' },
    externalId: { type: 'text', nullable: true },
    replyToId: { type: 'bigint', nullable: true },
    delivery: { type: 'text', nullable: true },
    deliveryError: { type: 'text', nullable: true },
    deliveryStatus: { type: 'text', nullable: true },
    deliveryErrorCode: { type: 'text', nullable: true },
    attachments: { type: 'json', default: '[]' },
    sources: { type: 'json', nullable: true },
    confidence: { type: 'float', nullable: true },
    options: { type: 'json', nullable: true },
    authorId: { type: 'uuid', nullable: true },
    agentVersion: { type: 'integer', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** How many of a conversation's customer messages a user had seen when they last read it. */
export interface ConversationRead {
  conversationId: number;
  userId: string;
  companyId: number;
  customerMessagesRead: number;
  readAt: Date;
}

export const ConversationReadSchema = new EntitySchema<ConversationRead>({
  name: 'ConversationRead',
  tableName: 'conversation_reads',
  filters: tenantFilter,
  properties: {
    conversationId: { type: 'integer', primary: true },
    userId: { type: 'uuid', primary: true },
    companyId: { type: 'integer' },
    customerMessagesRead: { type: 'integer' },
    readAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

export interface ConversationTransition {
  id: string;
  companyId: number;
  conversationId: number;
  seq: number;
  at: Date;
  /** Event type (`customer.message`, `helpdesk.close_dialog`, `xstate.done.actor.agent`, ...). */
  event: string;
  payload: Record<string, unknown>;
  fromState: StateValue | null;
  toState: StateValue;
  actions: { type: string; params?: unknown; effect?: string }[];
}

export const ConversationTransitionSchema = new EntitySchema<ConversationTransition>({
  name: 'ConversationTransition',
  tableName: 'conversation_transitions',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    conversationId: { type: 'integer' },
    seq: { type: 'integer' },
    at: { type: 'datetime', defaultRaw: 'now()' },
    event: { type: 'text' },
    payload: { type: 'json' },
    fromState: { type: 'json', nullable: true },
    toState: { type: 'json' },
    actions: { type: 'json' },
  },
});

export interface InboundReceipt {
  integrationId: number;
  idempotencyKey: string;
  companyId: number;
  kind: string;
  /** applied | duplicate-free outcome of the first delivery: applied, routed, unknown_session, ignored */
  outcome: string;
  conversationId: number | null;
  receivedAt: Date;
}

export const InboundReceiptSchema = new EntitySchema<InboundReceipt>({
  name: 'InboundReceipt',
  tableName: 'inbound_receipts',
  filters: tenantFilter,
  properties: {
    integrationId: { type: 'integer', primary: true },
    idempotencyKey: { type: 'text', primary: true },
    companyId: { type: 'integer' },
    kind: { type: 'text' },
    outcome: { type: 'text' },
    conversationId: { type: 'integer', nullable: true },
    receivedAt: { type: 'datetime', defaultRaw: 'now()' },
  },
});

/** `closing_reply`: the agent's last words as it closes the conversation; `helpdesk_transfer`: a Chat2Desk transfer_to_group call. */
export type OutboxKind = 'agent_reply' | 'handoff_notice' | 'operator_reply' | 'closing_reply' | 'helpdesk_transfer';
export type OutboxStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'cancelled';

export interface OutboxItem {
  id: string;
  companyId: number;
  conversationId: number;
  messageId: string;
  partition: number;
  kind: OutboxKind;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date;
  claimedUntil: Date | null;
  /** When the (last) send began; set with `sending`. */
  sendingAt: Date | null;
  /** The partition lease epoch the row is being sent under (fencing token). */
  leaseRev: string | null;
  /** Reconciliations that could not read the helpdesk's history. */
  reconcileAttempts: number;
  lastError: string | null;
  externalId: string | null;
  createdAt: Date;
  updatedAt: Date;
  sentAt: Date | null;
}

export const OutboxSchema = new EntitySchema<OutboxItem>({
  name: 'OutboxItem',
  tableName: 'outbox',
  filters: tenantFilter,
  properties: {
    id: { type: 'bigint', primary: true, autoincrement: true },
    companyId: { type: 'integer' },
    conversationId: { type: 'integer' },
    messageId: { type: 'bigint' },
    partition: { type: 'integer' },
    kind: { type: 'text' },
    status: { type: 'text', default: 'pending' },
    attempts: { type: 'integer', default: 0 },
    nextAttemptAt: { type: 'datetime', defaultRaw: 'now()' },
    claimedUntil: { type: 'datetime', nullable: true },
    sendingAt: { type: 'datetime', nullable: true },
    leaseRev: { type: 'bigint', nullable: true },
    reconcileAttempts: { type: 'integer', default: 0 },
    lastError: { type: 'text', nullable: true },
    externalId: { type: 'text', nullable: true },
    createdAt: { type: 'datetime', defaultRaw: 'now()' },
    updatedAt: { type: 'datetime', defaultRaw: 'now()' },
    sentAt: { type: 'datetime', nullable: true },
  },
});

export const conversationEntities = [
  ConversationSchema,
  ConversationRefSchema,
  ConversationMessageSchema,
  ConversationReadSchema,
  ConversationTransitionSchema,
  InboundReceiptSchema,
  OutboxSchema,
];
