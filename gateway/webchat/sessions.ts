import { initialTransition } from 'xstate';
import type { Orm } from '../../lib/db.js';
import { partitionOf } from '../../lib/streams.js';
import { conversationMachine, statusOf } from '../../machines/conversation.js';
import type { ConversationStatus } from '../../schema/conversation.js';

/**
 * What the webchat gateway reads and writes in PostgreSQL (plain SQL, system scope: the
 * integration was resolved from the socket's URL and the visitor from a signed token).
 *
 * The gateway never steps a machine: it only *creates* a visitor's session at `hello`, in
 * the machine's initial state (exactly what the worker's createConversation writes), so the
 * worker finds an ordinary open session with an untouched snapshot when the first message
 * arrives. Race-safe through the partial unique index on (integration_id, client_id) of
 * non-closed sessions: `insert … on conflict do nothing`, then select.
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

let initial: { value: unknown; snapshot: string; status: ConversationStatus } | null = null;
function initialState() {
  if (!initial) {
    const [s] = initialTransition(conversationMachine);
    const snapshot = JSON.parse(JSON.stringify(conversationMachine.getPersistedSnapshot(s))) as { value: Parameters<typeof statusOf>[0] };
    initial = { value: snapshot.value, snapshot: JSON.stringify(snapshot), status: statusOf(snapshot.value) };
  }
  return initial;
}

/** The visitor's open session, created (active, no messages) when there is none. */
export async function ensureOpenSession(orm: Orm, s: { companyId: number; integrationId: number; visitorId: string; partitions: number }): Promise<SessionRow> {
  const init = initialState();
  for (let attempt = 0; attempt < 5; attempt++) {
    const inserted = await rows<SessionRow>(
      orm,
      `insert into conversations (company_id, integration_id, channel, client_id, partition, status, state, snapshot)
       values (?, ?, 'webchat', ?, ?, ?, ?::jsonb, ?::jsonb)
       on conflict (integration_id, client_id) where status <> 'closed' do nothing
       returning id, status, message_seq`,
      [s.companyId, s.integrationId, s.visitorId, partitionOf(s.integrationId, s.visitorId, s.partitions), init.status, JSON.stringify(init.value), init.snapshot],
    );
    if (inserted[0]) return inserted[0];
    const open = await findOpenSession(orm, s.integrationId, s.visitorId);
    if (open) return open;
    // Closed between the two statements: try again.
  }
  throw new Error('could not find or create the visitor session');
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
