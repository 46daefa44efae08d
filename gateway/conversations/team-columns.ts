import type { ConversationNotices, ConversationView, ReadMark } from '../../lib/conversations.js';
import type { SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import type { NatsConnection } from '../../lib/nats.js';
import type { StreamNames } from '../../lib/streams.js';
import { CONVERSATION_COLUMNS, rowView, type ConversationRow } from './rows.js';

/**
 * What a team writes of a conversation: its assignee, its labels, and each user's read mark
 * (`conversation_reads`). The API owns these; the worker never writes them (its steps save
 * other columns: actors/tables/conversations.ts STEPPED), so one row update here never races a
 * step's. Every change is told on the conversation's subject (names.conversationEvents) as an
 * `updated` notice after it is committed, so the inspect stream, the inbox's event stream and
 * other gateways see it as they see the worker's notices.
 *
 * An assignment or labels count as an update of the conversation (`updated_at`, the list's
 * order); a read does not.
 */
export interface TeamColumnsDeps {
  sql: SqlPool;
  nc: NatsConnection;
  names: StreamNames;
  logger: Logger;
}

export class TeamColumns {
  readonly #deps: TeamColumnsDeps;

  constructor(deps: TeamColumnsDeps) {
    this.#deps = deps;
  }

  /**
   * Gives the conversation to `assigneeId` (null: to nobody). Null when that is not a user of
   * the company, or the conversation is not the company's.
   */
  async assign(companyId: number, conversationId: number, assigneeId: string | null): Promise<ConversationView | null> {
    return this.#update(
      companyId,
      `update conversations c set assignee_id = $3::uuid, updated_at = now()
       where c.id = $2 and c.company_id = $1 and ($3::uuid is null or exists (select 1 from users u where u.id = $3::uuid and u.company_id = $1))
       returning ${CONVERSATION_COLUMNS}`,
      [companyId, conversationId, assigneeId],
    );
  }

  /** Take-over: the conversation becomes `userId`'s if nobody has it. Null when somebody has it already (nothing changes). */
  async takeOver(companyId: number, conversationId: number, userId: string): Promise<ConversationView | null> {
    return this.#update(
      companyId,
      `update conversations c set assignee_id = $3::uuid, updated_at = now()
       where c.id = $2 and c.company_id = $1 and c.assignee_id is null and exists (select 1 from users u where u.id = $3::uuid and u.company_id = $1)
       returning ${CONVERSATION_COLUMNS}`,
      [companyId, conversationId, userId],
    );
  }

  /** A user leaves the company: the conversations they had become nobody's (each told, so open inboxes move them). */
  async unassignAllOf(companyId: number, userId: string): Promise<void> {
    const { rows } = await this.#deps.sql.query<ConversationRow>(
      `update conversations c set assignee_id = null, updated_at = now() where c.company_id = $1 and c.assignee_id = $2::uuid returning ${CONVERSATION_COLUMNS}`,
      [companyId, userId],
    );
    for (const row of rows) this.#tell(companyId, rowView(row));
  }

  /** Replaces the labels (already checked and deduplicated); null when the conversation is not the company's. */
  async setLabels(companyId: number, conversationId: number, labels: readonly string[]): Promise<ConversationView | null> {
    return this.#update(
      companyId,
      `update conversations c set labels = $3::text[], updated_at = now() where c.id = $2 and c.company_id = $1 returning ${CONVERSATION_COLUMNS}`,
      [companyId, conversationId, labels],
    );
  }

  /** `userId` has seen every customer message of the conversation so far; false when it is not the company's. */
  async markRead(companyId: number, conversationId: number, userId: string): Promise<boolean> {
    const { rows } = await this.#deps.sql.query<ConversationRow & { customer_messages_read: number }>(
      `with c as (select ${CONVERSATION_COLUMNS} from conversations c where c.id = $2 and c.company_id = $1),
       r as (
         insert into conversation_reads (conversation_id, user_id, company_id, customer_messages_read)
         select c.id, $3::uuid, $1, c.customer_messages from c
         on conflict (conversation_id, user_id) do update
           set customer_messages_read = greatest(conversation_reads.customer_messages_read, excluded.customer_messages_read), read_at = now()
         returning customer_messages_read
       )
       select c.*, r.customer_messages_read from c, r`,
      [companyId, conversationId, userId],
    );
    const row = rows[0];
    if (!row) return false;
    this.#tell(companyId, rowView(row), { userId, customerMessagesRead: row.customer_messages_read });
    return true;
  }

  /**
   * What each user had seen of each conversation they ever read, of the pairs asked (the others:
   * nothing read), keyed `<userId>:<conversationId>`; one statement for many users at once.
   */
  async readMarks(pairs: readonly { userId: string; conversationId: number }[]): Promise<Map<string, number>> {
    if (pairs.length === 0) return new Map();
    const users = [...new Set(pairs.map((p) => p.userId))];
    const conversations = [...new Set(pairs.map((p) => p.conversationId))];
    const { rows } = await this.#deps.sql.query<{ user_id: string; conversation_id: number; customer_messages_read: number }>(
      'select user_id, conversation_id, customer_messages_read from conversation_reads where user_id = any($1::uuid[]) and conversation_id = any($2::int[])',
      [users, conversations],
    );
    return new Map(rows.map((r) => [`${r.user_id}:${r.conversation_id}`, r.customer_messages_read]));
  }

  async #update(companyId: number, text: string, values: unknown[]): Promise<ConversationView | null> {
    const { rows } = await this.#deps.sql.query<ConversationRow>(text, values);
    if (!rows[0]) return null;
    const view = rowView(rows[0]);
    this.#tell(companyId, view);
    return view;
  }

  /** Best effort, like the worker's notices: the row is the record, and a stream that missed it sees the next change. */
  #tell(companyId: number, conversation: ConversationView, reader?: ReadMark): void {
    const notices: ConversationNotices = [{ type: 'updated', conversationId: conversation.id, conversation, ...(reader ? { reader } : {}) }];
    try {
      this.#deps.nc.publish(this.#deps.names.conversationEvents(companyId, conversation.id), JSON.stringify(notices));
    } catch (err) {
      this.#deps.logger.warn({ err, conversationId: conversation.id }, 'conversation update could not be published');
    }
  }
}
