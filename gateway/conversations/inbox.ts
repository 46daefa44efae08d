import type { ConversationView } from '../../lib/conversations.js';
import type { SqlPool } from '../../lib/db.js';
import type { ConversationStatus } from '../../schema/conversation.js';
import type { Page } from '../http/pagination.js';
import { CONVERSATION_COLUMNS, rowView, type ConversationRow } from './rows.js';

/**
 * The inbox: the company's conversations as a team lists them (GET /api/conversations and
 * GET /api/conversations/:id), each with its assignee's name, the customer's name (their lead)
 * and the viewer's unread count. A page and its total are one statement.
 *
 * Every update of a conversation is non-HOT, so each index on `conversations` is paid on
 * every message: the page walks conversations_company_idx (company_id, updated_at desc),
 * filters on the rows, and stops at the page; an assignee or a label is found through partial
 * indexes that hold only the conversations a person works (migration 0021); `q` finds the
 * messages through the full-text index of conversation_messages (restricted to the company),
 * and the page is sorted out of the conversations among them.
 */
export interface ConversationFilters {
  /** `open`: not closed. */
  status?: ConversationStatus | 'open';
  integrationId?: number;
  clientId?: string;
  /** Started at or after. */
  since?: Date;
  /** Started before (or at, when inclusive). */
  until?: { at: Date; inclusive: boolean };
  /** `none`: unassigned; else the assignee's user id (`me` resolved by the route). */
  assignee?: 'none' | { userId: string };
  /** Paused, and the customer wrote last. */
  needsHuman?: boolean;
  label?: string;
  /** Words of any of its messages (notes included). */
  q?: string;
}

/** A listed conversation: its view, who has it, the viewer's unread customer messages and the customer's name. */
export interface ConversationItem extends ConversationView {
  assignee: { id: string; displayName: string | null } | null;
  unread: number;
  /** From their lead (lib/leads.ts: the team's, the verified identity's, the pre-chat form's or the helpdesk's). */
  customer: { name: string | null; email: string | null; phone: string | null };
}

interface ItemRow extends ConversationRow {
  assignee_name: string | null;
  customer_name: string | null;
  customer_email: string | null;
  customer_phone: string | null;
  unread: number;
}

/** Numbered parameters of a statement being written. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

function conditions(companyId: string, f: ConversationFilters, p: Params): string {
  const out = [`c.company_id = ${companyId}`];
  if (f.status === 'open') out.push(`c.status <> 'closed'`);
  else if (f.status) out.push(`c.status = ${p.add(f.status)}`);
  if (f.integrationId !== undefined) out.push(`c.integration_id = ${p.add(f.integrationId, '::int')}`);
  if (f.clientId !== undefined) out.push(`c.client_id = ${p.add(f.clientId)}`);
  if (f.since) out.push(`c.created_at >= ${p.add(f.since, '::timestamptz')}`);
  if (f.until) out.push(`c.created_at ${f.until.inclusive ? '<=' : '<'} ${p.add(f.until.at, '::timestamptz')}`);
  if (f.assignee === 'none') out.push('c.assignee_id is null');
  else if (f.assignee) out.push(`c.assignee_id = ${p.add(f.assignee.userId, '::uuid')}`);
  if (f.needsHuman) out.push(`c.status = 'paused' and c.last_message_role = 'customer'`);
  if (f.label !== undefined) out.push(`c.labels @> array[${p.add(f.label, '::text')}]`);
  if (f.q !== undefined) {
    // The expression of conversation_messages_search_idx, word for word, so the index serves it.
    out.push(`c.id in (select m.conversation_id from conversation_messages m
      where m.company_id = ${companyId} and to_tsvector('simple', m.text) @@ plainto_tsquery('simple', ${p.add(f.q, '::text')}))`);
  }
  return out.join(' and ');
}

/** The item columns of the conversations `c` of the company: assignee and lead joined; `viewer`'s reads (none for an API token: unread 0). */
function itemSelect(viewer: string | null, p: Params): { columns: string; joins: string } {
  const reads = viewer ? `left join conversation_reads r on r.conversation_id = c.id and r.user_id = ${p.add(viewer, '::uuid')}` : '';
  return {
    columns: `${CONVERSATION_COLUMNS}, u.display_name as assignee_name, l.name as customer_name, l.email as customer_email, l.phone as customer_phone,
      ${viewer ? 'greatest(c.customer_messages - coalesce(r.customer_messages_read, 0), 0)' : '0'} as unread`,
    joins: `left join users u on u.id = c.assignee_id and u.company_id = c.company_id
      left join leads l on l.integration_id = c.integration_id and l.client_id = c.client_id and l.company_id = c.company_id
      ${reads}`,
  };
}

/**
 * Whether the filters likely keep a small share of a big inbox: then the matching
 * conversations are gathered once (one scan, or for `q` their messages through the index and a
 * hash join), counted and the page sorted out of them. Otherwise the total is counted and the
 * page read walking the list in order, which stops after the page: cheap when most rows match,
 * but walking to the end when few do (and with `q`, looking into each conversation's messages
 * on the way: every message of thousands of conversations when the words are rare).
 */
function isNarrow(f: ConversationFilters): boolean {
  if (f.q !== undefined || f.label !== undefined || f.needsHuman || f.clientId !== undefined || (f.assignee && f.assignee !== 'none')) return true;
  const wide = [f.status, f.integrationId, f.since ?? f.until, f.assignee].filter((v) => v !== undefined);
  return wide.length > 1;
}

const itemOf = (r: ItemRow): ConversationItem => ({
  ...rowView(r),
  assignee: r.assignee_id ? { id: r.assignee_id, displayName: r.assignee_name } : null,
  unread: r.unread,
  customer: { name: r.customer_name, email: r.customer_email, phone: r.customer_phone },
});

export class Inbox {
  readonly #sql: SqlPool;

  constructor(sql: SqlPool) {
    this.#sql = sql;
  }

  /** A page of the company's conversations, most recently updated first, and how many match. */
  async list(companyId: number, viewer: string | null, filters: ConversationFilters, page: Page): Promise<{ items: ConversationItem[]; total: number }> {
    const p = new Params();
    const where = conditions(p.add(companyId, '::int'), filters, p);
    const item = itemSelect(viewer, p);
    const limit = `limit ${p.add(page.limit, '::int')} offset ${p.add(page.offset, '::int')}`;
    const gathered = isNarrow(filters);
    const [total, ids] = gathered
      ? [`select count(*)::int as total from hits`, `select h.id from hits h order by h.updated_at desc, h.id desc ${limit}`]
      : [`select count(*)::int as total from conversations c where ${where}`, `select c.id from conversations c where ${where} order by c.updated_at desc, c.id desc ${limit}`];
    // The total's row always comes, the page's rows joined to it (none past the end).
    const { rows } = await this.#sql.query<ItemRow & { total: number }>(
      `${gathered ? `with hits as materialized (select c.id, c.updated_at from conversations c where ${where})` : ''}
       select t.total, i.* from (${total}) t
       left join lateral (select ${item.columns} from (${ids}) pg join conversations c on c.id = pg.id ${item.joins}) i on true
       order by i.updated_at desc, i.id desc`,
      p.values,
    );
    return { items: rows.filter((r) => r.id !== null).map(itemOf), total: rows[0]?.total ?? 0 };
  }

  /** One conversation of the company as listed; null when it is not the company's. */
  async one(companyId: number, viewer: string | null, conversationId: number): Promise<ConversationItem | null> {
    const p = new Params();
    const company = p.add(companyId, '::int');
    const id = p.add(conversationId, '::int');
    const item = itemSelect(viewer, p);
    const { rows } = await this.#sql.query<ItemRow>(`select ${item.columns} from conversations c ${item.joins} where c.id = ${id} and c.company_id = ${company}`, p.values);
    return rows[0] ? itemOf(rows[0]) : null;
  }
}
