import { query, type SqlClient } from '../../lib/db.js';
import type { DeliveryReport } from '../../schema/envelope.js';
import type { MessageRow } from './messages.js';

/**
 * What a channel reports of our sent messages (WhatsApp `statuses[]`), written on the message
 * it names: by our outbox id when the channel echoed it (`biz_opaque_callback_data`: it also
 * finds a send whose answer was lost, and records its id), else by the channel's id of the
 * message among the customer's conversations. `delivery_status` never moves back: a late
 * `delivered` after `read` changes nothing; `failed` overrides `sent` and `delivered`.
 * Applying a report twice is applying it once.
 */
const RANK = `case s when 'sent' then 1 when 'delivered' then 2 when 'read' then 3 when 'failed' then 3 else 0 end`;
const rank = (column: string) => RANK.replace(/\bs\b/, column);

const FIND_BY_OUTBOX = `
  select o.message_id as id from outbox o join conversations c on c.id = o.conversation_id
  where o.id = $1 and c.integration_id = $2 and c.client_id = $3`;
const FIND_BY_EXTERNAL_ID = `
  select m.id from conversations c join conversation_messages m on m.conversation_id = c.id
  where $1::bigint is null and c.integration_id = $2 and c.client_id = $3 and m.external_id = $4 and m.role <> 'customer'
  order by m.id desc limit 1`;

const APPLY = (find: string) => `
with found as (${find}),
recorded as (
  update outbox o set external_id = coalesce(o.external_id, $4) from found f where o.message_id = f.id and o.external_id is null returning o.id
)
update conversation_messages m set
  delivery_status = $5, external_id = coalesce(m.external_id, $4),
  delivery_error = case when $5 = 'failed' then $6 else m.delivery_error end,
  delivery_error_code = case when $5 = 'failed' then $7 else m.delivery_error_code end
from found f
where m.id = f.id and ${rank('m.delivery_status')} < ${rank('$5::text')}
returning m.id::text as id, m.company_id, m.conversation_id, m.seq, m.role, m.kind, m.text, m.external_id, m.reply_to_id::text as reply_to_id,
  m.delivery, m.delivery_error, m.delivery_status, m.delivery_error_code, m.sources, m.confidence, m.options, m.author_id, m.agent_version, m.created_at`;

const APPLY_BY_OUTBOX = APPLY(FIND_BY_OUTBOX);
const APPLY_BY_EXTERNAL_ID = APPLY(FIND_BY_EXTERNAL_ID);
const FOUND = (find: string) => `select m.id::text as id, m.conversation_id from (${find}) f join conversation_messages m on m.id = f.id`;
const FOUND_BY_OUTBOX = FOUND(FIND_BY_OUTBOX);
const FOUND_BY_EXTERNAL_ID = FOUND(FIND_BY_EXTERNAL_ID);

/**
 * `updated`: the message as it is now (its status moved); `unchanged`: the message holds this
 * status or a later one; `unknown`: no message of ours has that id (yet: the send's own
 * answer may not be recorded when the report outruns it).
 */
export type ReportOutcome = { kind: 'updated'; message: MessageRow } | { kind: 'unchanged'; messageId: string; conversationId: number } | { kind: 'unknown' };

export async function applyDeliveryReport(c: SqlClient, integrationId: number, report: DeliveryReport): Promise<ReportOutcome> {
  const byOutbox = report.outboxId !== null;
  const params = [byOutbox ? report.outboxId : null, integrationId, report.clientId, report.externalId, report.status, report.error?.message ?? null, report.error?.code ?? null];
  const rows = await query<MessageRow>(c, byOutbox ? 'delivery_report_outbox' : 'delivery_report_external', byOutbox ? APPLY_BY_OUTBOX : APPLY_BY_EXTERNAL_ID, params);
  if (rows[0]) return { kind: 'updated', message: rows[0] };
  const [found] = await query<{ id: string; conversation_id: number }>(c, byOutbox ? 'delivery_report_outbox_found' : 'delivery_report_external_found', byOutbox ? FOUND_BY_OUTBOX : FOUND_BY_EXTERNAL_ID, byOutbox ? params.slice(0, 3) : params.slice(0, 4));
  return found ? { kind: 'unchanged', messageId: found.id, conversationId: found.conversation_id } : { kind: 'unknown' };
}
