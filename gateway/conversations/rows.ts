import type { StateValue } from 'xstate';
import { conversationView, type ConversationView } from '../../lib/conversations.js';
import type { SqlClient } from '../../lib/db.js';
import type { ConversationContext, ConversationStatus } from '../../schema/conversation.js';
import type { Channel } from '../../schema/envelope.js';

/**
 * A conversation read with plain SQL (the inbox list, the API's own updates, the event
 * stream's look-ups) and its view: the columns conversationView needs, the snapshot's context
 * alone (the rest of the snapshot is the machine's, and large).
 */
export interface ConversationRow {
  id: number;
  integration_id: number;
  channel: Channel;
  transport: string | null;
  client_id: string;
  status: ConversationStatus;
  state: StateValue;
  context: ConversationContext | null;
  created_at: Date;
  updated_at: Date;
  last_message_at: Date | null;
  closed_at: Date | null;
  assignee_id: string | null;
  labels: string[];
  last_message_role: string | null;
  last_message_text: string | null;
  customer_messages: number;
}

/** The select list of a ConversationRow from `conversations` under the alias `c`. */
export const CONVERSATION_COLUMNS = `c.id, c.integration_id, c.channel, c.transport, c.client_id, c.status, c.state, c.snapshot->'context' as context, c.created_at, c.updated_at,
  c.last_message_at, c.closed_at, c.assignee_id, c.labels, c.last_message_role, c.last_message_text, c.customer_messages`;

export const rowView = (r: ConversationRow): ConversationView =>
  conversationView({
    id: r.id, integrationId: r.integration_id, channel: r.channel, transport: r.transport, clientId: r.client_id, status: r.status, state: r.state, snapshot: r.context ? { context: r.context } : null,
    createdAt: r.created_at, updatedAt: r.updated_at, lastMessageAt: r.last_message_at, closedAt: r.closed_at,
    assigneeId: r.assignee_id, labels: r.labels, lastMessageRole: r.last_message_role, lastMessageText: r.last_message_text, customerMessages: r.customer_messages,
  });

/** The views of the conversations among `ids` (those that exist), each with its company, in one statement. */
export async function conversationsAmong(sql: SqlClient, ids: readonly number[]): Promise<{ companyId: number; view: ConversationView }[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql.query<ConversationRow & { company_id: number }>(`select c.company_id, ${CONVERSATION_COLUMNS} from conversations c where c.id = any($1::int[])`, [ids]);
  return rows.map((r) => ({ companyId: r.company_id, view: rowView(r) }));
}
