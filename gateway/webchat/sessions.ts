import { query, type SqlPool } from '../../lib/db.js';
import type { ConversationStatus } from '../../schema/conversation.js';
import { Coalesced } from './coalesced.js';

/**
 * What the webchat gateway reads in PostgreSQL (plain SQL, system scope: the integration was
 * resolved from the socket's URL and the visitor from a signed token). The gateway writes
 * nothing here: sessions and messages are the worker's (a visitor's session is created by
 * the worker when the visitor's first message arrives, never by `hello`).
 *
 * Every lookup is coalesced with the same lookups of the process's other sockets
 * (coalesced.ts): a crowd of visitors asking at once costs a few statements, not one each.
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
  /** Empty for a note (never shown to the visitor: its text is not even read). */
  text: string;
  /** An operator message's author's display name; null otherwise (or when the author has none). */
  name: string | null;
  external_id: string | null;
  delivery: string | null;
  /** A `clarify` reply's numbered options, in the order offered; null otherwise. */
  options: { title: string }[] | null;
  created_at: Date;
}

/** A session's messages after a seq, in seq order, and its status (null: no such session). */
export interface SessionRead {
  messages: StoredMessage[];
  status: ConversationStatus | null;
}

/** At most this many messages of a session per read (the pump reads again after a full one). */
export const MESSAGES_PER_READ = 200;
/** Keys per statement. */
const MAX_KEYS = 500;
/** Statements of one kind at once. */
const IN_FLIGHT = 2;

// `with ordinality` numbers the keys: each answer row says which key it answers.
const OPEN_SESSIONS_SQL = `
  select q.i::int as i, c.id, c.status, c.message_seq
  from unnest($1::int[], $2::text[]) with ordinality as q(integration_id, client_id, i)
  cross join lateral (
    select id, status, message_seq from conversations
    where integration_id = q.integration_id and client_id = q.client_id and status <> 'closed'
    order by id desc limit 1
  ) c`;

const STORED_CUSTOMER_MESSAGES_SQL = `
  select q.i::int as i, m.conversation_id, m.seq
  from unnest($1::int[], $2::text[], $3::text[]) with ordinality as q(integration_id, client_id, external_id, i)
  cross join lateral (
    select m.conversation_id, m.seq from conversations c join conversation_messages m on m.conversation_id = c.id
    where c.integration_id = q.integration_id and c.client_id = q.client_id and m.role = 'customer' and m.external_id = q.external_id
    order by m.id desc limit 1
  ) m`;

// A note's row comes (the watermark passes it) without its text. The author's name is looked
// up for operator rows only (CASE evaluates the subquery for them alone): the agent's and
// the customer's rows, nearly all of them, cost no lookup.
const MESSAGES_AFTER_SQL = `
  select q.i::int as i, c.status, m.seq, m.role, m.kind, m.text, m.name, m.external_id, m.delivery, m.options, m.created_at
  from unnest($1::int[], $2::int[]) with ordinality as q(conversation_id, after_seq, i)
  join conversations c on c.id = q.conversation_id
  left join lateral (
    select seq, role, kind, case when kind = 'note' then '' else text end as text,
      case when role = 'operator' and kind <> 'note' and author_id is not null then (select nullif(display_name, '') from users where id = author_id) end as name,
      external_id, delivery, options, created_at
    from conversation_messages
    where conversation_id = q.conversation_id and seq > q.after_seq
    order by seq limit $3
  ) m on true
  order by q.i, m.seq`;

type Visitor = { integrationId: number; visitorId: string };

export class SessionReads {
  readonly #openSessions: Coalesced<Visitor, SessionRow | null>;
  readonly #storedMessages: Coalesced<Visitor & { clientMessageId: string }, { conversationId: number; seq: number } | null>;
  readonly #messagesAfter: Coalesced<{ conversationId: number; afterSeq: number }, SessionRead>;

  constructor(sql: SqlPool) {
    const options = { maxKeys: MAX_KEYS, inFlight: IN_FLIGHT };
    this.#openSessions = new Coalesced(async (keys) => {
      const rows = await query<SessionRow & { i: number }>(sql, 'webchat_open_sessions', OPEN_SESSIONS_SQL, [keys.map((k) => k.integrationId), keys.map((k) => k.visitorId)]);
      const found = new Array<SessionRow | null>(keys.length).fill(null);
      for (const { i, ...session } of rows) found[i - 1] = session;
      return found;
    }, options);
    this.#storedMessages = new Coalesced(async (keys) => {
      const rows = await query<{ i: number; conversation_id: number; seq: number }>(sql, 'webchat_stored_customer_messages', STORED_CUSTOMER_MESSAGES_SQL, [
        keys.map((k) => k.integrationId),
        keys.map((k) => k.visitorId),
        keys.map((k) => k.clientMessageId),
      ]);
      const found = new Array<{ conversationId: number; seq: number } | null>(keys.length).fill(null);
      for (const r of rows) found[r.i - 1] = { conversationId: r.conversation_id, seq: r.seq };
      return found;
    }, options);
    this.#messagesAfter = new Coalesced(async (keys) => {
      const rows = await query<{ i: number; status: ConversationStatus; seq: number | null } & Omit<StoredMessage, 'seq'>>(sql, 'webchat_messages_after', MESSAGES_AFTER_SQL, [
        keys.map((k) => k.conversationId),
        keys.map((k) => k.afterSeq),
        MESSAGES_PER_READ,
      ]);
      const found = Array.from({ length: keys.length }, (): SessionRead => ({ messages: [], status: null }));
      for (const { i, status, seq, ...m } of rows) {
        const read = found[i - 1]!;
        read.status = status;
        if (seq !== null) read.messages.push({ seq, ...m });
      }
      return found;
    }, options);
  }

  /** The visitor's open session (the newest not closed), if any. */
  openSession(integrationId: number, visitorId: string): Promise<SessionRow | null> {
    return this.#openSessions.get({ integrationId, visitorId });
  }

  /** Where a visitor's message with this clientMessageId was stored, if it was (any of the visitor's sessions). */
  storedCustomerMessage(integrationId: number, visitorId: string, clientMessageId: string): Promise<{ conversationId: number; seq: number } | null> {
    return this.#storedMessages.get({ integrationId, visitorId, clientMessageId });
  }

  /** A session's messages after `afterSeq` (at most MESSAGES_PER_READ) and its status, read in one snapshot. */
  messagesAfter(conversationId: number, afterSeq: number): Promise<SessionRead> {
    return this.#messagesAfter.get({ conversationId, afterSeq });
  }
}
