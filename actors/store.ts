import { initialTransition, type StateValue } from 'xstate';
import { conversationMachine } from '../machines/conversation.js';
import { query, type SqlClient } from '../lib/db.js';
import { insertLeadsFrom } from '../lib/leads.js';

import type { ConversationContext, ConversationStatus } from '../schema/conversation.js';
import type { Channel } from '../schema/envelope.js';
import type { Conversation, ConversationMessage, ConversationTransition, OutboxKind } from '../schema/conversation-entities.js';
import type { Row } from '../schema/rows.js';

/**
 * Plain-SQL access to the conversation tables for the worker, through the `pg` pool
 * (lib/db.ts): named prepared statements, and bulk statements (`unnest` of array
 * parameters) so that one transaction writes the steps of many conversations with a handful
 * of statements whatever their number. The worker spans companies: it names company_id
 * explicitly instead of the tenant filter.
 */
/** A conversation row; its snapshot typed as the machine's persisted snapshot. */
export type ConversationRow = Omit<Row<Conversation>, 'snapshot'> & {
  snapshot: { value: StateValue; context: ConversationContext; [k: string]: unknown };
};

/** A message row as the worker reads and returns it (attachments are never read back). */
export type MessageRow = Omit<Row<ConversationMessage>, 'attachments' | 'delivery_error' | 'sources' | 'confidence'> &
  Partial<Pick<Row<ConversationMessage>, 'delivery_error' | 'sources' | 'confidence'>>;

/** A message to insert (its id and time come from the database). */
export type NewMessage = Omit<ConversationMessage, 'id' | 'createdAt' | 'deliveryError' | 'sources' | 'confidence'> & Partial<Pick<ConversationMessage, 'sources' | 'confidence'>>;

/** A transition log entry to insert (its id and time come from the database). */
export type NewTransition = Omit<ConversationTransition, 'id' | 'at'>;

export interface Receipt {
  integrationId: number;
  key: string;
  companyId: number;
  kind: string;
  outcome: string;
  conversationId: number | null;
}

const first = <T>(r: T[]): T | null => r[0] ?? null;

export function lockConversation(c: SqlClient, id: number): Promise<ConversationRow | null> {
  return query<ConversationRow>(c, 'conv_lock', `select * from conversations where id = $1 for update`, [id]).then(first);
}

/** Locks the given conversations in id order (two transactions locking overlapping sets cannot deadlock). */
export function lockConversations(c: SqlClient, ids: number[]): Promise<ConversationRow[]> {
  return query<ConversationRow>(c, 'conv_lock_many', `select * from conversations where id = any($1::int[]) order by id for update`, [ids]);
}

export function findConversation(c: SqlClient, id: number): Promise<ConversationRow | null> {
  return query<ConversationRow>(c, 'conv_find', `select * from conversations where id = $1`, [id]).then(first);
}

export function findOpenConversation(c: SqlClient, integrationId: number, clientId: string, lock: boolean): Promise<ConversationRow | null> {
  const sql = `select * from conversations where integration_id = $1 and client_id = $2 and status <> 'closed' order by id desc limit 1`;
  return (lock ? query<ConversationRow>(c, 'conv_open_lock', `${sql} for update`, [integrationId, clientId]) : query<ConversationRow>(c, 'conv_open', sql, [integrationId, clientId])).then(first);
}

/** The open sessions of these (integration, client) pairs, locked in id order. */
export function lockOpenConversations(c: SqlClient, keys: { integrationId: number; clientId: string }[]): Promise<ConversationRow[]> {
  return query<ConversationRow>(
    c,
    'conv_open_lock_many',
    `select c.* from conversations c
     join unnest($1::int[], $2::text[]) as k(integration_id, client_id) on c.integration_id = k.integration_id and c.client_id = k.client_id
     where c.status <> 'closed' order by c.id for update of c`,
    [keys.map((k) => k.integrationId), keys.map((k) => k.clientId)],
  );
}

/** The latest session that saw this request_id (or dialog_id); optionally only that client's. */
export function findConversationByRef(c: SqlClient, integrationId: number, requestId: number | null, dialogId: number | null, clientId: string | null, lock: boolean): Promise<ConversationRow | null> {
  if (requestId === null && dialogId === null) return Promise.resolve(null);
  const sql = `select c.* from conversations c
     where c.id = (
       select r.conversation_id from conversation_refs r join conversations c2 on c2.id = r.conversation_id
       where r.integration_id = $1 and ((r.kind = 'request' and r.ref_id = $2) or (r.kind = 'dialog' and r.ref_id = $3))
         and ($4::text is null or c2.client_id = $4)
       order by r.conversation_id desc limit 1
     )`;
  const values = [integrationId, requestId ?? -1, dialogId ?? -1, clientId];
  return (lock ? query<ConversationRow>(c, 'conv_by_ref_lock', `${sql} for update`, values) : query<ConversationRow>(c, 'conv_by_ref', sql, values)).then(first);
}

export function initialSnapshot(): { value: StateValue; context: ConversationContext; [k: string]: unknown } {
  const [s] = initialTransition(conversationMachine);
  return JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(s)));
}

export interface NewConversation {
  companyId: number;
  integrationId: number;
  channel: Channel;
  clientId: string;
  partition: number;
  status: ConversationStatus;
  snapshot: ConversationRow['snapshot'];
  channelId: string | null;
  transport: string | null;
}

/**
 * Opens sessions; in the same statement each customer who has no lead yet gets one
 * (lib/leads.ts insertLeadsFrom: a customer who comes back keeps theirs). Both commit or
 * roll back with the transaction, so a crash or a redelivery cannot leave one without the other.
 */
export function createConversations(c: SqlClient, list: NewConversation[]): Promise<ConversationRow[]> {
  return query<ConversationRow>(
    c,
    'conv_create_many',
    `with v as (
       select * from unnest($1::int[], $2::int[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[])
         as v(company_id, integration_id, channel, client_id, partition, status, snapshot, channel_id, transport)
     ), l as (${insertLeadsFrom('v')})
     insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot, channel_id, transport)
     select company_id, integration_id, channel, client_id, partition, status, (snapshot::jsonb)->'value', snapshot::jsonb, channel_id, transport
     from v
     returning *`,
    [
      list.map((n) => n.companyId), list.map((n) => n.integrationId), list.map((n) => n.channel), list.map((n) => n.clientId), list.map((n) => n.partition),
      list.map((n) => n.status), list.map((n) => JSON.stringify(n.snapshot)), list.map((n) => n.channelId), list.map((n) => n.transport),
    ],
  );
}

/** Records inbound idempotency keys; returns the keys that were new (the others are redeliveries or late retries). */
export async function insertReceipts(c: SqlClient, list: Receipt[]): Promise<Set<string>> {
  if (list.length === 0) return new Set();
  const inserted = await query<{ integration_id: number; idempotency_key: string }>(
    c,
    'receipt_insert_many',
    `insert into inbound_receipts (integration_id, idempotency_key, company_id, kind, outcome, conversation_id)
     select * from unnest($1::int[], $2::text[], $3::int[], $4::text[], $5::text[], $6::int[])
     on conflict do nothing returning integration_id, idempotency_key`,
    [list.map((r) => r.integrationId), list.map((r) => r.key), list.map((r) => r.companyId), list.map((r) => r.kind), list.map((r) => r.outcome), list.map((r) => r.conversationId)],
  );
  return new Set(inserted.map((r) => receiptKey(r.integration_id, r.idempotency_key)));
}

export const receiptKey = (integrationId: number, key: string) => `${integrationId}\n${key}`;

export async function setReceiptOutcomes(c: SqlClient, list: { integrationId: number; key: string; outcome: string; conversationId: number | null }[]): Promise<void> {
  if (list.length === 0) return;
  await query(
    c,
    'receipt_outcome_many',
    `update inbound_receipts r set outcome = v.outcome, conversation_id = v.conversation_id
     from unnest($1::int[], $2::text[], $3::text[], $4::int[]) as v(integration_id, idempotency_key, outcome, conversation_id)
     where r.integration_id = v.integration_id and r.idempotency_key = v.idempotency_key`,
    [list.map((r) => r.integrationId), list.map((r) => r.key), list.map((r) => r.outcome), list.map((r) => r.conversationId)],
  );
}

/**
 * The insert of messages given as one JSON parameter (V8 serialises it natively, where
 * array parameters are escaped element by element in JavaScript); a row that conflicts (one
 * reply per answered message) is skipped and missing from what it returns.
 */
const insertMessagesFromJson = (param: string) => `
  insert into conversation_messages (company_id, conversation_id, seq, role, kind, text, external_id, reply_to_id, delivery, attachments, sources, confidence)
  select company_id, conversation_id, seq, role, kind, text, external_id, reply_to_id, delivery, attachments, sources, confidence
  from json_to_recordset(${param}::json)
    as v(company_id int, conversation_id int, seq int, role text, kind text, text text, external_id text, reply_to_id bigint, delivery text, attachments jsonb, sources jsonb, confidence real)
  on conflict do nothing returning id::text as id, conversation_id, seq, created_at`;

const messageRecords = (list: NewMessage[]) =>
  JSON.stringify(
    list.map((m) => ({
      company_id: m.companyId, conversation_id: m.conversationId, seq: m.seq, role: m.role, kind: m.kind, text: m.text,
      external_id: m.externalId, reply_to_id: m.replyToId, delivery: m.delivery, attachments: m.attachments, sources: m.sources ?? null, confidence: m.confidence ?? null,
    })),
  );

/** The stored row of a planned message, from what its insert returned. */
export function storedMessage(m: NewMessage, inserted: { id: string; created_at: Date }): MessageRow {
  return {
    id: inserted.id, company_id: m.companyId, conversation_id: m.conversationId, seq: m.seq, role: m.role, kind: m.kind, text: m.text,
    external_id: m.externalId, reply_to_id: m.replyToId, delivery: m.delivery, delivery_error: null, sources: m.sources ?? null, confidence: m.confidence ?? null, created_at: inserted.created_at,
  };
}

export const messageKey = (conversationId: number, seq: number) => `${conversationId}:${seq}`;

/** Inserts messages; one that conflicts (see insertMessagesFromJson) is missing from the result. */
export async function insertMessages(c: SqlClient, list: NewMessage[]): Promise<MessageRow[]> {
  if (list.length === 0) return [];
  const inserted = await query<{ id: string; conversation_id: number; seq: number; created_at: Date }>(c, 'message_insert_many', insertMessagesFromJson('$1'), [messageRecords(list)]);
  const planned = new Map(list.map((m) => [messageKey(m.conversationId, m.seq), m]));
  return inserted.map((r) => storedMessage(planned.get(messageKey(r.conversation_id, r.seq))!, r));
}

export interface Ref {
  integrationId: number;
  kind: 'request' | 'dialog';
  refId: number;
  conversationId: number;
  companyId: number;
}

/** An outbox row as the outbox sender gets it: claimed, with everything its send needs. */
export interface OutboxSend {
  id: string;
  company_id: number;
  conversation_id: number;
  message_id: string;
  kind: OutboxKind;
  attempts: number;
  partition: number;
  /** The lease epoch it is being sent under (fencing token), as text (bigint). */
  lease_rev: string;
  /** When the (last) send began. */
  sending_at: Date;
  /** Reconciliations that could not read the helpdesk's history so far. */
  reconcile_attempts: number;
  /** Found `sending`: it may have been delivered already; reconcile before sending. */
  uncertain: boolean;
  /** Why its previous attempt failed, if one did. */
  last_error: string | null;
  /** A later row of the same conversation is waiting for this one. */
  has_next: boolean;
  conversation_status: string;
  hold_requested_at: Date | null;
  channel: 'helpdesk' | 'webchat';
  client_id: string;
  channel_id: string | null;
  transport: string | null;
  integration_id: number;
  api_url: string | null;
  api_token_sealed: string | null;
  /** A helpdesk_transfer row (read by the claim; never sent directly): the integration's operator group. */
  handoff_group_id?: number | null;
  /** A helpdesk_transfer row: the helpdesk's id of the customer message the transfer is keyed to. */
  reply_to_external_id?: string | null;
  seq: number;
  role: string;
  text: string;
  created_at: Date;
}

export interface PlanRows {
  messages: NewMessage[];
  /**
   * Outbox rows of messages of `messages`, named by conversation and seq (their ids are not
   * known yet). A row with a `leaseRev` (the epoch of its partition's lease) is inserted
   * already `sending` under it when no earlier row of its conversation is unfinished: the
   * committing worker sends it at once, without a claim.
   */
  outbox: { companyId: number; conversationId: number; seq: number; partition: number; kind: string; leaseRev: number | null }[];
  /** How long a direct row's claim lasts (a crash before its send leaves it to the claim's expiry). */
  claimMs: number;
  transitions: NewTransition[];
  refs: Ref[];
  conversations: ConversationRow[];
}

export interface PlanWritten {
  /** The messages stored (one that conflicted, a second reply to one message, is missing). */
  messages: { id: string; conversation_id: number; seq: number; created_at: Date }[];
  transitions: { conversation_id: number; seq: number; at: Date }[];
  /** Outbox rows inserted claimed, for the committing worker to send. */
  claimed: ClaimedOutboxRow[];
}

export interface ClaimedOutboxRow {
  id: string;
  company_id: number;
  conversation_id: number;
  message_id: string;
  kind: OutboxSend['kind'];
  attempts: number;
  partition: number;
  lease_rev: string;
  sending_at: string;
  seq: number;
  api_url: string | null;
  api_token_sealed: string | null;
}

/**
 * Writes a transaction's planned rows in ONE statement (data-modifying CTEs, one JSON
 * parameter per table): messages, their outbox rows, transition log entries, helpdesk refs
 * and the conversations' new state; sets the conversations' `updated_at`.
 */
export async function writePlanRows(c: SqlClient, rows: PlanRows): Promise<PlanWritten> {
  // One row per key: an upsert may not touch the same row twice in one statement.
  const refs = [...new Map(rows.refs.map((r) => [`${r.integrationId}:${r.kind}:${r.refId}:${r.conversationId}`, r])).values()];
  const [out] = await query<{
    messages: { id: string; conversation_id: number; seq: number; created_at: string }[];
    transitions: { conversation_id: number; seq: number; at: string }[];
    conversations: { id: number; updated_at: string }[];
    claimed: ClaimedOutboxRow[];
  }>(
    c,
    'plan_write',
    `with m as (${insertMessagesFromJson('$1')}
     ), o as (
       insert into outbox (company_id, conversation_id, message_id, partition, kind, status, attempts, claimed_until, sending_at, lease_rev)
       select v.company_id, v.conversation_id, m.id::bigint, v.partition, v.kind,
              case when d.now then 'sending' else 'pending' end, case when d.now then 1 else 0 end,
              case when d.now then now() + ($6::int * interval '1 millisecond') end,
              case when d.now then now() end, case when d.now then v.lease_rev end
       from json_to_recordset($2::json) as v(company_id int, conversation_id int, seq int, partition int, kind text, lease_rev bigint)
       join m on m.conversation_id = v.conversation_id and m.seq = v.seq
       cross join lateral (
         select v.lease_rev is not null and not exists (select 1 from outbox e where e.conversation_id = v.conversation_id and e.status in ('pending', 'sending')) as now
       ) d
       on conflict do nothing
       returning id, company_id, conversation_id, message_id, kind, status, attempts, partition, lease_rev, sending_at
     ), t as (
       insert into conversation_transitions (company_id, conversation_id, seq, event, payload, from_state, to_state, actions)
       select company_id, conversation_id, seq, event, payload, from_state, to_state, actions
       from json_to_recordset($3::json)
         as v(company_id int, conversation_id int, seq int, event text, payload jsonb, from_state jsonb, to_state jsonb, actions jsonb)
       returning conversation_id, seq, at
     ), r as (
       insert into conversation_refs (integration_id, kind, ref_id, conversation_id, company_id)
       select integration_id, kind, ref_id, conversation_id, company_id
       from json_to_recordset($4::json) as v(integration_id int, kind text, ref_id bigint, conversation_id int, company_id int)
       on conflict (integration_id, kind, ref_id, conversation_id) do update set seen_at = now()
     ), s as (
       update conversations c set status = v.status, state = v.state, snapshot = v.snapshot, message_seq = v.message_seq,
         transition_seq = v.transition_seq, last_message_at = v.last_message_at, closed_at = v.closed_at,
         hold_requested_at = v.hold_requested_at, channel_id = v.channel_id, transport = v.transport, updated_at = now()
       from json_to_recordset($5::json)
         as v(id int, status text, state jsonb, snapshot jsonb, message_seq int, transition_seq int, last_message_at timestamptz,
              closed_at timestamptz, hold_requested_at timestamptz, channel_id text, transport text)
       where c.id = v.id returning c.id, c.updated_at
     )
     select (select coalesce(json_agg(m), '[]') from m) as messages,
            (select coalesce(json_agg(t), '[]') from t) as transitions,
            (select coalesce(json_agg(s), '[]') from s) as conversations,
            (select coalesce(json_agg(json_build_object(
               'id', o.id::text, 'company_id', o.company_id, 'conversation_id', o.conversation_id, 'message_id', o.message_id::text, 'kind', o.kind,
               'attempts', o.attempts, 'partition', o.partition, 'lease_rev', o.lease_rev::text, 'sending_at', o.sending_at,
               'seq', m.seq, 'api_url', i.api_url, 'api_token_sealed', i.api_token_sealed)), '[]')
             from o join m on m.id::bigint = o.message_id join conversations c on c.id = o.conversation_id join integrations i on i.id = c.integration_id
             where o.status = 'sending') as claimed`,
    [
      messageRecords(rows.messages),
      JSON.stringify(rows.outbox.map((o) => ({ company_id: o.companyId, conversation_id: o.conversationId, seq: o.seq, partition: o.partition, kind: o.kind, lease_rev: o.leaseRev }))),
      JSON.stringify(
        rows.transitions.map((t) => ({ company_id: t.companyId, conversation_id: t.conversationId, seq: t.seq, event: t.event, payload: t.payload, from_state: t.fromState, to_state: t.toState, actions: t.actions })),
      ),
      JSON.stringify(refs.map((r) => ({ integration_id: r.integrationId, kind: r.kind, ref_id: r.refId, conversation_id: r.conversationId, company_id: r.companyId }))),
      JSON.stringify(
        rows.conversations.map((r) => ({
          id: r.id, status: r.status, state: r.state, snapshot: r.snapshot, message_seq: r.message_seq, transition_seq: r.transition_seq,
          last_message_at: r.last_message_at, closed_at: r.closed_at, hold_requested_at: r.hold_requested_at, channel_id: r.channel_id, transport: r.transport,
        })),
      ),
      rows.claimMs,
    ],
  );
  const updatedAt = new Map(out!.conversations.map((u) => [u.id, new Date(u.updated_at)]));
  for (const r of rows.conversations) r.updated_at = updatedAt.get(r.id) ?? r.updated_at;
  return {
    messages: out!.messages.map((m) => ({ ...m, created_at: new Date(m.created_at) })),
    transitions: out!.transitions.map((t) => ({ ...t, at: new Date(t.at) })),
    claimed: out!.claimed,
  };
}

/**
 * Counts one more attempt at answering each of these customer messages with a model call,
 * in the database (a crash, a redelivery or an answer that cannot be stored all count):
 * returns the new counts, in order.
 */
export async function countAnswerAttempts(c: SqlClient, messageIds: string[]): Promise<number[]> {
  const rows = await query<{ id: string; answer_attempts: number }>(
    c,
    'answer_attempts',
    'update conversation_messages set answer_attempts = answer_attempts + 1 where id = any($1::bigint[]) returning id::text, answer_attempts',
    [messageIds],
  );
  const counts = new Map(rows.map((r) => [r.id, r.answer_attempts]));
  return messageIds.map((id) => counts.get(id) ?? 1);
}

export { isDataError } from '../lib/pg-errors.js';

export function findMessage(c: SqlClient, id: string): Promise<MessageRow | null> {
  return query<MessageRow>(c, 'message_find', `select * from conversation_messages where id = $1`, [id]).then(first);
}

/** The conversation's messages before `beforeMessageId`, oldest first (at most `limit`); replies never delivered are left out. */
export async function recentMessages(c: SqlClient, conversationId: number, beforeMessageId: string, limit: number): Promise<{ role: string; text: string }[]> {
  const found = await query<{ role: string; text: string }>(
    c,
    'messages_recent',
    `select role, text from conversation_messages
     where conversation_id = $1 and id < $2::bigint and coalesce(delivery, 'sent') not in ('cancelled', 'failed')
     order by seq desc limit $3`,
    [conversationId, beforeMessageId, limit],
  );
  return found.reverse();
}

export function agentOfIntegration(c: SqlClient, integrationId: number): Promise<number | null> {
  return query<{ agent_id: number | null }>(c, 'integration_agent', 'select agent_id from integrations where id = $1', [integrationId]).then((r) => r[0]?.agent_id ?? null);
}
