import type { Orm } from '../../lib/db.js';
import type { ConversationStatus } from '../../schema/conversation.js';

/**
 * What the webchat gateway reads in PostgreSQL (plain SQL, system scope: the integration was
 * resolved from the socket's URL and the visitor from a signed token). The gateway writes
 * nothing here: sessions and messages are the worker's (a visitor's session is created by
 * the worker when the visitor's first message arrives, never by `hello`).
 */
export interface SessionRow {
  id: number;
  status: ConversationStatus;
  message_seq: number;
}

export interface StoredMessage {
  seq: number;
  role: string;
  kind: string;
  text: string;
  external_id: string | null;
  delivery: string | null;
  created_at: Date;
}

async function rows<T>(orm: Orm, sql: string, params: unknown[]): Promise<T[]> {
  return (await orm.em.fork().execute(sql, params as never[], 'all')) as unknown as T[];
}

export async function findOpenSession(orm: Orm, integrationId: number, visitorId: string): Promise<SessionRow | null> {
  const found = await rows<SessionRow>(
    orm,
    `select id, status, message_seq from conversations where integration_id = ? and client_id = ? and status <> 'closed' order by id desc limit 1`,
    [integrationId, visitorId],
  );
  return found[0] ?? null;
}

export async function sessionStatus(orm: Orm, conversationId: number): Promise<ConversationStatus | null> {
  const found = await rows<{ status: ConversationStatus }>(orm, `select status from conversations where id = ?`, [conversationId]);
  return found[0]?.status ?? null;
}

/** Messages of a session after `afterSeq`, in seq order. */
export function messagesAfter(orm: Orm, conversationId: number, afterSeq: number, limit: number): Promise<StoredMessage[]> {
  return rows<StoredMessage>(
    orm,
    `select seq, role, kind, text, external_id, delivery, created_at from conversation_messages
     where conversation_id = ? and seq > ? order by seq limit ?`,
    [conversationId, afterSeq, limit],
  );
}

/** Where a visitor's message with this clientMessageId was stored, if it was (any of the visitor's sessions). */
export async function findStoredCustomerMessage(orm: Orm, integrationId: number, visitorId: string, clientMessageId: string): Promise<{ conversationId: number; seq: number } | null> {
  const found = await rows<{ conversation_id: number; seq: number }>(
    orm,
    `select m.conversation_id, m.seq from conversations c join conversation_messages m on m.conversation_id = c.id
     where c.integration_id = ? and c.client_id = ? and m.role = 'customer' and m.external_id = ?
     order by m.id desc limit 1`,
    [integrationId, visitorId, clientMessageId],
  );
  return found[0] ? { conversationId: found[0].conversation_id, seq: found[0].seq } : null;
}
