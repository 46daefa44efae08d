import { query, type SqlClient } from '../../lib/db.js';
import { CONTACT_COLUMNS, insertLeadsFrom } from '../../lib/leads.js';
import { initialConversationSnapshot, statusOf, type StoredSnapshot } from '../../machines/conversation.js';
import type { Conversation, ConversationRef, ConversationTransition } from '../../schema/conversation-entities.js';
import type { Channel } from '../../schema/envelope.js';
import type { Row } from '../../schema/rows.js';
import { Table, type SqlType } from './table.js';

/**
 * The conversation tables as the worker writes them: `conversations` (a session and its
 * stored machine), its transition log and the helpdesk ids it has seen. Owner of their SQL on
 * the message path; the API reads them through the entities (schema/conversation-entities.ts).
 * A new column: the entity, its migration, and its line here.
 */
export type ConversationRow = Omit<Row<Conversation>, 'snapshot'> & { snapshot: StoredSnapshot };

export const conversations = new Table('conversations', {
  id: 'int',
  company_id: 'int',
  integration_id: 'int',
  channel: 'text',
  client_id: 'text',
  partition: 'int',
  status: 'text',
  state: 'jsonb',
  snapshot: 'jsonb',
  channel_id: 'text',
  transport: 'text',
  message_seq: 'int',
  transition_seq: 'int',
  hold_requested_at: 'timestamptz',
  assignee_id: 'uuid',
  labels: 'text[]',
  last_message_role: 'text',
  last_message_text: 'text',
  customer_messages: 'int',
  customer_sent_at: 'timestamptz',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
  last_message_at: 'timestamptz',
  closed_at: 'timestamptz',
} satisfies Record<keyof ConversationRow, SqlType>);

type Column = keyof typeof conversations.columns;

/** What a session is opened with (the rest has defaults). */
const OPENED: Column[] = ['company_id', 'integration_id', 'channel', 'client_id', 'partition', 'status', 'state', 'snapshot', 'channel_id', 'transport'];
/** What an outbox send reads of its conversation (tables/outbox.ts; `state`: whether the agent handed it over and still answers). */
const SENT_WITH: Column[] = ['status', 'state', 'hold_requested_at', 'channel', 'client_id', 'channel_id', 'transport', 'integration_id', 'customer_sent_at'];
/** What a step may change (updated_at is set by the database). The assignee and labels are the API's: a step never writes them. */
const STEPPED = [
  'status', 'state', 'snapshot', 'message_seq', 'transition_seq', 'last_message_at', 'last_message_role', 'last_message_text', 'customer_messages',
  'closed_at', 'hold_requested_at', 'channel_id', 'transport', 'customer_sent_at',
] as const satisfies readonly Column[];

/**
 * The rows of the step's conversations, locked in id order (two transactions locking
 * overlapping sets cannot deadlock): by id ($ids), and the open session of each
 * (integration, client) pair ($integrations, $clients). The ids are unnested, not looked up:
 * `where id = any('{}')` (a batch of new messages only) is a contradiction to the planner,
 * which then proves any partial index usable and read one whole (the auto-resolve one: every
 * active session the agent answered last) to find nothing.
 */
export const lockedConversations = (ids: string, integrations: string, clients: string) => `
  select c.* from conversations c where c.id in (
    select unnest(${ids}::int[])
    union
    select o.id from conversations o join unnest(${integrations}::int[], ${clients}::text[]) as k(integration_id, client_id)
      on o.integration_id = k.integration_id and o.client_id = k.client_id
    where o.status <> 'closed')
  order by c.id for update`;

/** What `updateConversations` reads of a row (its JSON carries nothing else). */
export function steppedFields(c: ConversationRow): Partial<ConversationRow> {
  const fields: Record<string, unknown> = { id: c.id };
  for (const column of STEPPED) fields[column] = c[column];
  return fields;
}

/** Saves the stepped rows of a JSON parameter; returns id and the new updated_at, and what an outbox send reads of its conversation (tables/outbox.ts). */
export const updateConversations = (param: string) => `
  update conversations c set ${conversations.assignments(STEPPED)}, updated_at = now()
  from ${conversations.recordset(param, 'v', ['id', ...STEPPED])}
  where c.id = v.id returning c.id, c.updated_at, ${conversations.list('c.', SENT_WITH)}`;


export const transitions = new Table('conversation_transitions', {
  company_id: 'int',
  conversation_id: 'int',
  seq: 'int',
  event: 'text',
  payload: 'jsonb',
  from_state: 'jsonb',
  to_state: 'jsonb',
  actions: 'jsonb',
} satisfies Partial<Record<keyof Row<ConversationTransition>, SqlType>>);

/** A transition log entry to insert (its id and time come from the database). */
export type NewTransition = Omit<Row<ConversationTransition>, 'id' | 'at'>;

export const insertTransitions = (param: string) => `
  insert into conversation_transitions (${transitions.list()})
  select ${transitions.list()} from ${transitions.recordset(param)}
  returning conversation_id, seq, at`;

export const refs = new Table('conversation_refs', {
  integration_id: 'int',
  kind: 'text',
  ref_id: 'bigint',
  conversation_id: 'int',
  company_id: 'int',
} satisfies Partial<Record<keyof Row<ConversationRef>, SqlType>>);

export type NewRef = Omit<Row<ConversationRef>, 'seen_at' | 'ref_id'> & { ref_id: number };

/** The helpdesk ids a session saw (a status event that carries only them finds it by them). */
export const upsertRefs = (param: string) => `
  insert into conversation_refs (${refs.list()})
  select ${refs.list()} from ${refs.recordset(param)}
  on conflict (integration_id, kind, ref_id, conversation_id) do update set seen_at = now()`;

export interface NewConversation {
  company_id: number;
  integration_id: number;
  channel: Channel;
  client_id: string;
  partition: number;
  channel_id: string | null;
  transport: string | null;
}

/** What a new session's first message says of its customer (lib/leads.ts contactRow): their new lead starts with it. */
export type NewConversationContact = Partial<Record<'name' | 'email' | 'phone' | 'contact_source' | 'verified_id', string | null>>;

/**
 * Opens sessions; in the same statement each customer who has no lead yet gets one, with
 * what their first message says of them (lib/leads.ts: a customer who comes back keeps
 * theirs, filled in by the step's load). Both commit or roll back with the
 * transaction, so a crash or a redelivery cannot leave one without the other.
 */
export async function openConversations(c: SqlClient, list: (NewConversation & NewConversationContact)[]): Promise<ConversationRow[]> {
  if (list.length === 0) return [];
  return query<ConversationRow>(c, 'conv_open_many', OPEN_SQL, [JSON.stringify(list.map((n) => ({ ...n, ...OPENED_AS })))]);
}

/** A new session's machine (its stored snapshot is sent as JSON: one object serves every row). */
const INITIAL = initialConversationSnapshot();
const OPENED_AS = { status: statusOf(INITIAL.value), state: INITIAL.value, snapshot: INITIAL };

const OPEN_SQL = `
  with v as (select * from ${conversations.recordset('$1', 'v', OPENED, CONTACT_COLUMNS)}),
  l as (${insertLeadsFrom('v', true)})
  insert into conversations (${conversations.list('', OPENED)}) select ${conversations.list('', OPENED)} from v
  returning *`;

/** The latest session of the integration that saw this request_id (or dialog_id); optionally only that client's. */
export async function conversationIdByRef(c: SqlClient, integrationId: number, requestId: number | null, dialogId: number | null, clientId: string | null): Promise<{ id: number; client_id: string; partition: number } | null> {
  if (requestId === null && dialogId === null) return null;
  const rows = await query<{ id: number; client_id: string; partition: number }>(
    c,
    'conv_by_ref',
    `select c.id, c.client_id, c.partition from conversations c where c.id = (
       select r.conversation_id from conversation_refs r join conversations c2 on c2.id = r.conversation_id
       where r.integration_id = $1 and ((r.kind = 'request' and r.ref_id = $2) or (r.kind = 'dialog' and r.ref_id = $3))
         and ($4::text is null or c2.client_id = $4)
       order by r.conversation_id desc limit 1)`,
    [integrationId, requestId ?? -1, dialogId ?? -1, clientId],
  );
  return rows[0] ?? null;
}

/**
 * The sessions of a partition waiting for a debounce deadline (a worker acquiring it arms their
 * timers): active ones, and paused ones the agent handed over and still answers.
 */
export function conversationsWithDeadlines(c: SqlClient, partition: number): Promise<ConversationRow[]> {
  return query<ConversationRow>(
    c,
    'conv_debounce_due',
    `select * from conversations where partition = $1 and (status = 'active' or state #> '{paused,handedOver}' is not null) and snapshot->'context'->>'answerDueAt' is not null`,
    [partition],
  );
}
