import { query, type SqlClient } from '../../lib/db.js';
import type { InboundReceipt } from '../../schema/conversation-entities.js';
import type { InboundEnvelope } from '../../schema/envelope.js';
import type { Row } from '../../schema/rows.js';
import { Table, type SqlType } from './table.js';

/**
 * `inbound_receipts`: one row per inbound envelope applied (its idempotency key), so a
 * redelivery or a helpdesk's late retry is recognised and applied once.
 */
export type NewReceipt = Omit<Row<InboundReceipt>, 'received_at'>;

export const receipts = new Table('inbound_receipts', {
  integration_id: 'int',
  idempotency_key: 'text',
  company_id: 'int',
  kind: 'text',
  outcome: 'text',
  conversation_id: 'int',
} satisfies Record<keyof NewReceipt, SqlType>);

/**
 * Inserts the receipts of a JSON parameter; returns the keys that were new (the others were
 * applied before). `conversations`: a relation of open sessions (id, integration_id,
 * client_id) that gives a receipt without a conversation of its own the open session of its
 * `client_id` (a field of the rows beside the table's).
 */
export const insertReceipts = (param: string, conversations?: string) => `
  insert into inbound_receipts (${receipts.list()})
  select v.integration_id, v.idempotency_key, v.company_id, v.kind, v.outcome, ${conversations ? 'coalesce(v.conversation_id, s.id)' : 'v.conversation_id'}
  from ${receipts.recordset(param, 'v', undefined, conversations ? 'client_id text' : '')}
  ${conversations ? `left join ${conversations} s on s.integration_id = v.integration_id and s.client_id = v.client_id` : ''}
  on conflict do nothing returning integration_id, idempotency_key`;

/** Sets outcome and conversation of receipts written earlier in the transaction (keys from a JSON parameter). */
export const updateReceipts = (param: string) => `
  update inbound_receipts r set outcome = v.outcome, conversation_id = v.conversation_id
  from ${receipts.recordset(param, 'v', ['integration_id', 'idempotency_key', 'outcome', 'conversation_id'])}
  where r.integration_id = v.integration_id and r.idempotency_key = v.idempotency_key`;

/** Forgets receipts written earlier in the transaction (envelopes that are to be applied later after all). */
export const deleteReceipts = (param: string) => `
  delete from inbound_receipts r
  using ${receipts.recordset(param, 'v', ['integration_id', 'idempotency_key'])}
  where r.integration_id = v.integration_id and r.idempotency_key = v.idempotency_key`;

/** An envelope's receipt written outside a step (one the database refuses, a status event for no session), with no conversation. */
export async function recordReceipt(c: SqlClient, env: InboundEnvelope, outcome: string): Promise<void> {
  const receipt: NewReceipt = { integration_id: env.integrationId, idempotency_key: env.idempotencyKey, company_id: env.companyId, kind: env.kind, outcome, conversation_id: null };
  await query(c, 'receipt_insert_many', insertReceipts('$1'), [JSON.stringify([receipt])]);
}
