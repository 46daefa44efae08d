import { initialTransition, type StateValue } from 'xstate';
import { conversationMachine, statusOf } from '../machines/conversation.js';
import type { EntityManager } from '../lib/db.js';
import type { ConversationContext, ConversationStatus } from '../schema/conversation.js';
import type { Channel } from '../schema/envelope.js';

/**
 * Plain-SQL access to the conversation tables for the worker. Every function takes the
 * EntityManager of the surrounding transaction (`em.transactional`), so one applied event
 * writes the snapshot, the transition log, messages, outbox rows and the receipt atomically.
 * The worker spans companies: it names company_id explicitly instead of the tenant filter.
 */
export interface ConversationRow {
  id: number;
  company_id: number;
  integration_id: number;
  channel: Channel;
  client_id: string;
  partition: number;
  status: ConversationStatus;
  state: StateValue;
  snapshot: { value: StateValue; context: ConversationContext; [k: string]: unknown };
  channel_id: string | null;
  transport: string | null;
  message_seq: number;
  transition_seq: number;
  hold_requested_at: Date | null;
  created_at: Date;
  updated_at: Date;
  last_message_at: Date | null;
  closed_at: Date | null;
}

export interface MessageRow {
  id: string;
  company_id: number;
  conversation_id: number;
  seq: number;
  role: string;
  kind: string;
  text: string;
  external_id: string | null;
  reply_to_id: string | null;
  delivery: string | null;
  created_at: Date;
}

export async function rows<T>(em: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await em.execute(sql, params as never[], 'all')) as unknown as T[];
}

export async function one<T>(em: EntityManager, sql: string, params: unknown[] = []): Promise<T | null> {
  const r = await rows<T>(em, sql, params);
  return r[0] ?? null;
}

/** Records an inbound idempotency key; false when it was already there (a redelivery or late retry). */
export async function insertReceipt(em: EntityManager, r: { integrationId: number; key: string; companyId: number; kind: string; outcome: string; conversationId: number | null }): Promise<boolean> {
  const inserted = await rows<{ k: string }>(
    em,
    `insert into inbound_receipts (integration_id, idempotency_key, company_id, kind, outcome, conversation_id)
     values (?, ?, ?, ?, ?, ?) on conflict do nothing returning idempotency_key as k`,
    [r.integrationId, r.key, r.companyId, r.kind, r.outcome, r.conversationId],
  );
  return inserted.length > 0;
}

export async function setReceiptOutcome(em: EntityManager, integrationId: number, key: string, outcome: string, conversationId: number | null): Promise<void> {
  await em.execute(`update inbound_receipts set outcome = ?, conversation_id = ? where integration_id = ? and idempotency_key = ?`, [outcome, conversationId, integrationId, key]);
}

export async function findReceipt(em: EntityManager, integrationId: number, key: string): Promise<{ outcome: string; conversation_id: number | null } | null> {
  return one(em, `select outcome, conversation_id from inbound_receipts where integration_id = ? and idempotency_key = ?`, [integrationId, key]);
}

export async function lockConversation(em: EntityManager, id: number): Promise<ConversationRow | null> {
  return one<ConversationRow>(em, `select * from conversations where id = ? for update`, [id]);
}

export async function findOpenConversation(em: EntityManager, integrationId: number, clientId: string, lock: boolean): Promise<ConversationRow | null> {
  return one<ConversationRow>(
    em,
    `select * from conversations where integration_id = ? and client_id = ? and status <> 'closed' order by id desc limit 1${lock ? ' for update' : ''}`,
    [integrationId, clientId],
  );
}

/** The latest session that saw this request_id (or dialog_id); optionally only that client's. */
export async function findConversationByRef(em: EntityManager, integrationId: number, requestId: number | null, dialogId: number | null, clientId: string | null, lock: boolean): Promise<ConversationRow | null> {
  if (requestId === null && dialogId === null) return null;
  return one<ConversationRow>(
    em,
    `select c.* from conversations c
     where c.id = (
       select r.conversation_id from conversation_refs r join conversations c2 on c2.id = r.conversation_id
       where r.integration_id = ? and ((r.kind = 'request' and r.ref_id = ?) or (r.kind = 'dialog' and r.ref_id = ?))
         ${clientId !== null ? 'and c2.client_id = ?' : ''}
       order by r.conversation_id desc limit 1
     )${lock ? ' for update' : ''}`,
    [integrationId, requestId ?? -1, dialogId ?? -1, ...(clientId !== null ? [clientId] : [])],
  );
}

export function initialSnapshot(): { value: StateValue; context: ConversationContext; [k: string]: unknown } {
  const [s] = initialTransition(conversationMachine);
  return JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(s)));
}

export async function createConversation(em: EntityManager, c: { companyId: number; integrationId: number; channel: Channel; clientId: string; partition: number; channelId: string | null; transport: string | null }): Promise<ConversationRow> {
  const snapshot = initialSnapshot();
  const row = await one<ConversationRow>(
    em,
    `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, channel_id, transport)
     values (?, ?, ?, ?, ?, ?, ?::jsonb, ?::jsonb, ?, ?) returning *`,
    [c.companyId, c.integrationId, c.channel, c.clientId, c.partition, statusOf(snapshot.value), JSON.stringify(snapshot.value), JSON.stringify(snapshot), c.channelId, c.transport],
  );
  return row!;
}

export async function insertMessage(em: EntityManager, conv: ConversationRow, m: { role: string; kind?: string; text: string; externalId?: string | null; replyToId?: string | null; delivery?: string | null; attachments?: unknown[] }): Promise<MessageRow | null> {
  const seq = conv.message_seq + 1;
  const row = await one<MessageRow>(
    em,
    `insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, external_id, reply_to_id, delivery, attachments)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb) on conflict do nothing returning *`,
    [conv.company_id, conv.id, seq, m.role, m.kind ?? 'message', m.text, m.externalId ?? null, m.replyToId ?? null, m.delivery ?? null, JSON.stringify(m.attachments ?? [])],
  );
  if (row) conv.message_seq = seq;
  return row;
}

export async function insertOutbox(em: EntityManager, conv: ConversationRow, messageId: string, kind: string): Promise<void> {
  await em.execute(
    `insert into outbox (company_id, conversation_id, message_id, partition, kind) values (?, ?, ?, ?, ?) on conflict do nothing`,
    [conv.company_id, conv.id, messageId, conv.partition, kind],
  );
}

export async function rememberRefs(em: EntityManager, conv: ConversationRow, requestId: number | null | undefined, dialogId: number | null | undefined): Promise<void> {
  for (const [kind, id] of [['request', requestId], ['dialog', dialogId]] as const) {
    if (typeof id !== 'number' || !Number.isFinite(id)) continue;
    await em.execute(
      `insert into conversation_refs (integration_id, kind, ref_id, conversation_id, company_id) values (?, ?, ?, ?, ?)
       on conflict (integration_id, kind, ref_id, conversation_id) do update set seen_at = now()`,
      [conv.integration_id, kind, id, conv.id, conv.company_id],
    );
  }
}

export interface TransitionRecord {
  seq: number;
  at: Date;
  event: string;
  payload: Record<string, unknown>;
  from: StateValue | null;
  to: StateValue;
  actions: { type: string; params?: unknown; effect?: string }[];
}

export async function insertTransition(em: EntityManager, conv: ConversationRow, t: Omit<TransitionRecord, 'seq' | 'at'>): Promise<TransitionRecord> {
  const seq = conv.transition_seq + 1;
  const row = await one<{ at: Date }>(
    em,
    `insert into conversation_transitions (company_id, conversation_id, seq, event, payload, from_state, to_state, actions)
     values (?, ?, ?, ?, ?::jsonb, ?::jsonb, ?::jsonb, ?::jsonb) returning at`,
    [conv.company_id, conv.id, seq, t.event, JSON.stringify(t.payload), JSON.stringify(t.from), JSON.stringify(t.to), JSON.stringify(t.actions)],
  );
  conv.transition_seq = seq;
  return { ...t, seq, at: row!.at };
}

export async function saveConversation(em: EntityManager, conv: ConversationRow, changes: { snapshot?: ConversationRow['snapshot']; lastMessageAt?: Date; clearHold?: boolean; channelId?: string | null; transport?: string | null }): Promise<void> {
  if (changes.snapshot) {
    conv.snapshot = changes.snapshot;
    conv.state = changes.snapshot.value;
    const status = statusOf(changes.snapshot.value);
    if (status === 'closed' && conv.status !== 'closed') conv.closed_at = new Date();
    conv.status = status;
  }
  if (changes.lastMessageAt) conv.last_message_at = changes.lastMessageAt;
  if (changes.clearHold) conv.hold_requested_at = null;
  if (changes.channelId) conv.channel_id = changes.channelId;
  if (changes.transport) conv.transport = changes.transport;
  const updated = await one<{ updated_at: Date }>(
    em,
    `update conversations set status = ?, state = ?::jsonb, snapshot = ?::jsonb, message_seq = ?, transition_seq = ?,
       last_message_at = ?, closed_at = ?, hold_requested_at = ?, channel_id = ?, transport = ?, updated_at = now()
     where id = ? returning updated_at`,
    [conv.status, JSON.stringify(conv.state), JSON.stringify(conv.snapshot), conv.message_seq, conv.transition_seq,
      conv.last_message_at, conv.closed_at, conv.hold_requested_at, conv.channel_id, conv.transport, conv.id],
  );
  conv.updated_at = updated!.updated_at;
}

export async function findMessage(em: EntityManager, id: string): Promise<MessageRow | null> {
  return one<MessageRow>(em, `select * from conversation_messages where id = ?`, [id]);
}

/**
 * Debits one model call from the company's credit, inside the transaction that commits the
 * answer it produced: one `model_usage` ledger entry, keyed by the customer message that was
 * answered (`message_id`, unique per kind: migration 0005), and `companies.balance_usd`
 * lowered by the same exact amount (numeric arithmetic in PostgreSQL, no floating point).
 * The balance may go below zero: the tokens were spent. Returns null when that message's
 * answer was already paid (it cannot be: the caller holds the conversation lock and only
 * applies an answer the machine is still waiting for; the unique index makes it a proof).
 */
export async function chargeModelUsage(
  em: EntityManager,
  c: { companyId: number; conversationId: number; messageId: string; model: string; inputTokens: number; outputTokens: number; costUsd: string },
): Promise<{ ledgerId: string; amountUsd: string; balanceAfterUsd: string } | null> {
  if (await one(em, `select 1 from credit_ledger where kind = 'model_usage' and message_id = ?::bigint`, [c.messageId])) return null;
  const company = await one<{ balance_usd: string }>(em, `update companies set balance_usd = balance_usd - ?::numeric where id = ? returning balance_usd::text`, [c.costUsd, c.companyId]);
  if (!company) throw new Error(`company ${c.companyId} not found`);
  const entry = await one<{ id: string; amount_usd: string }>(
    em,
    `insert into credit_ledger (company_id, kind, amount_usd, balance_after_usd, input_tokens, output_tokens, model, conversation_id, message_id)
     values (?, 'model_usage', -(?::numeric), ?::numeric, ?, ?, ?, ?, ?::bigint) returning id::text, amount_usd::text`,
    [c.companyId, c.costUsd, company.balance_usd, c.inputTokens, c.outputTokens, c.model, c.conversationId, c.messageId],
  );
  return { ledgerId: entry!.id, amountUsd: entry!.amount_usd, balanceAfterUsd: company.balance_usd };
}

/** The conversation's messages before `beforeMessageId`, oldest first (at most `limit`); replies never delivered are left out. */
export async function recentMessages(em: EntityManager, conversationId: number, beforeMessageId: string, limit: number): Promise<{ role: string; text: string }[]> {
  const found = await rows<{ role: string; text: string }>(
    em,
    `select role, text from conversation_messages
     where conversation_id = ? and id < ?::bigint and coalesce(delivery, 'sent') not in ('cancelled', 'failed')
     order by seq desc limit ?`,
    [conversationId, beforeMessageId, limit],
  );
  return found.reverse();
}
