import { query, type SqlClient } from '../../lib/db.js';
import type { ConversationMessage } from '../../schema/conversation-entities.js';
import type { Row } from '../../schema/rows.js';
import { Table } from './table.js';

/**
 * `conversation_messages` on the message path: customer messages, agent replies, handoff
 * notices, operator replies and notes, transfers, one row each, numbered per conversation (`seq`).
 */
export type MessageRow = Omit<Row<ConversationMessage>, 'attachments'>;

export const messages = new Table('conversation_messages', {
  id: 'bigint',
  company_id: 'int',
  conversation_id: 'int',
  seq: 'int',
  role: 'text',
  kind: 'text',
  text: 'text',
  external_id: 'text',
  reply_to_id: 'bigint',
  delivery: 'text',
  attachments: 'jsonb',
  sources: 'jsonb',
  confidence: 'real',
  options: 'jsonb',
  author_id: 'uuid',
  agent_version: 'int',
});

/** A message to insert: its id when reserved beforehand (a customer message the machine is told about), else the next one; its time comes from the database. */
export type NewMessage = Omit<Row<ConversationMessage>, 'id' | 'created_at' | 'delivery_error' | 'delivery_status' | 'delivery_error_code'> & { id: string | null };

/**
 * Inserts the messages of a JSON parameter; a row that conflicts (one reply per answered
 * message) is skipped and missing from what it returns.
 */
export const insertMessages = (param: string) => `
  insert into conversation_messages (${messages.list()})
  select coalesce(v.id, nextval('conversation_messages_id_seq')), ${messages.list('v.', NEW_COLUMNS)}
  from ${messages.recordset(param)}
  on conflict do nothing
  returning id, conversation_id, seq, role, text, reply_to_id, created_at`;
const NEW_COLUMNS = (Object.keys(messages.columns) as (keyof typeof messages.columns)[]).filter((c) => c !== 'id');

/** `n` message ids taken from the sequence now (bigint as text). */
export const reserveMessageIds = (n: string) => `select coalesce(array_agg(nextval('conversation_messages_id_seq')::text), '{}') from generate_series(1, ${n})`;

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

export async function messageText(c: SqlClient, id: string): Promise<string | null> {
  const rows = await query<{ text: string }>(c, 'message_text', 'select text from conversation_messages where id = $1', [id]);
  return rows[0]?.text ?? null;
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
