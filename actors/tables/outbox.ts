import { REPORTING_CHANNELS } from '../../lib/channels/registry.js';
import { query, type SqlClient } from '../../lib/db.js';
import type { OutboxItem, OutboxKind } from '../../schema/conversation-entities.js';
import type { Channel } from '../../schema/envelope.js';
import type { Row } from '../../schema/rows.js';
import type { MessageRow } from './messages.js';
import { Table } from './table.js';

/**
 * `outbox`: what is to be sent (agent replies, handoff notices, operator replies,
 * transfers), one row per message, `pending → sending → sent | failed | cancelled`
 * (contract.md § Delivery; actors/outbox/sender.ts sends them).
 */
export const outbox = new Table('outbox', {
  company_id: 'int',
  conversation_id: 'int',
  seq: 'int',
  partition: 'int',
  kind: 'text',
  lease_rev: 'bigint',
} as const);

/** A planned row, named by its message's conversation and seq (the message's id is not known yet). */
export interface NewOutboxRow {
  company_id: number;
  conversation_id: number;
  seq: number;
  partition: number;
  kind: OutboxKind;
  /** The epoch of its partition's lease when the committing worker may send it at once, else null (the sender's claim takes it). */
  lease_rev: number | null;
}

/**
 * An outbox row as the sender gets it: claimed (`sending` under a lease epoch), with
 * everything its send needs. Read by one column list, SEND_COLUMNS, whether the sender
 * claimed it or a step inserted it already claimed.
 */
export interface OutboxSend extends Pick<Row<OutboxItem>, 'id' | 'company_id' | 'conversation_id' | 'message_id' | 'kind' | 'attempts' | 'partition' | 'reconcile_attempts' | 'last_error'> {
  /** The lease epoch it is being sent under (fencing token), as text (bigint). */
  lease_rev: string;
  /** When the (last) send began. */
  sending_at: Date;
  /** Found `sending`: it may have been delivered already; reconcile before sending. */
  uncertain: boolean;
  /** A later row of the same conversation is waiting for this one. */
  has_next: boolean;
  conversation_status: string;
  /** The agent handed the conversation over and no person has acted yet (`paused.handedOver`, machines/states.ts): its replies still go out. */
  handed_over: boolean;
  hold_requested_at: Date | null;
  channel: Channel;
  client_id: string;
  channel_id: string | null;
  transport: string | null;
  integration_id: number;
  api_url: string | null;
  api_token_sealed: string | null;
  /** WhatsApp: the integration's business phone number id. */
  phone_number_id: string | null;
  /** When the platform says the customer's last message was sent (a channel's reply window counts from it). */
  customer_sent_at: Date | null;
  /** Parts of the reply whose requests had left (channels without a history: actors/outbox/written-parts.ts). */
  written_parts: number;
  /** The channel's id of the message, when one was recorded before (a status report of an uncertain send). */
  external_id: string | null;
  /** The channel reported the message's fate (a WhatsApp status naming it): it arrived. */
  reported: boolean;
  /** A helpdesk_transfer row: the integration's operator group. */
  handoff_group_id: number | null;
  /** A helpdesk_transfer row: the helpdesk's id of the customer message the transfer is keyed to. */
  reply_to_external_id: string | null;
  seq: number;
  role: string;
  text: string;
  created_at: Date;
}

/**
 * Whether the channel reported an uncertain send (read only for channels that report what
 * they take: SendingChannel.reportWithinMs): its status is on the message, or the gateway has
 * accepted a delivery report naming the row (the acceptance journal, lib/inbound-journal.ts:
 * written before the gateway's 200, kept until the worker took it), so a report not applied
 * yet (queued behind the partition's backlog at a takeover) counts too. Looked up for
 * uncertain rows of those channels only (sent before this claim: a crash or a lost answer).
 */
const REPORTED = `case when o.sending_at < now() and c.channel = any('{${REPORTING_CHANNELS.join(',')}}'::text[]) then m.delivery_status is not null or exists (
    select 1 from inbound_accepted a
    where a.partition = o.partition and a.integration_id = c.integration_id
      and a.envelope -> 'delivery' ->> 'outboxId' = o.id::text) else false end`;

/**
 * What a send needs, from the outbox row `o`, its conversation `c`, integration `i` and message
 * `m`. `inserted`: rows a step inserts claimed, in the same statement: none can be uncertain,
 * have a later row (the statement sees no row it inserts) or be a transfer (never sent
 * directly), so those three are constants and the statement is planned cheaper.
 */
const sendColumns = (inserted: boolean) => `o.id::text as id, o.company_id, o.conversation_id, o.message_id::text as message_id, o.kind, o.attempts, o.partition,
  o.lease_rev::text as lease_rev, o.sending_at, o.reconcile_attempts, o.written_parts, o.external_id, ${inserted ? 'false' : '(o.sending_at < now())'} as uncertain, o.last_error,
  ${inserted ? 'false' : "exists (select 1 from outbox l where l.conversation_id = o.conversation_id and l.id > o.id and l.status in ('pending', 'sending'))"} as has_next,
  ${inserted ? 'false' : REPORTED} as reported, c.status as conversation_status, (c.state #> '{paused,handedOver}') is not null as handed_over, c.hold_requested_at, c.channel, c.client_id, c.channel_id, c.transport, c.integration_id, c.customer_sent_at,
  i.api_url, i.api_token_sealed, i.handoff_group_id, i.phone_number_id, m.seq, m.role, m.text, m.created_at,
  ${inserted ? 'null::text' : "case when o.kind = 'helpdesk_transfer' then (select r.external_id from conversation_messages r where r.id = m.reply_to_id) end"} as reply_to_external_id`;

/** A send read back as JSON (from a data-modifying CTE): its timestamps as Dates. */
export function sendFromJson(row: OutboxSend): OutboxSend {
  row.sending_at = new Date(row.sending_at);
  row.created_at = new Date(row.created_at);
  if (row.hold_requested_at !== null) row.hold_requested_at = new Date(row.hold_requested_at);
  return row;
}

/**
 * The planned rows of a JSON parameter, each joined to its message as inserted (`messages`,
 * a CTE returning id, conversation_id, seq). A row with a lease epoch is inserted already
 * `sending` under it (claimed for `$claimMs`) when no earlier row of its conversation is
 * unfinished: the committing worker sends it at once.
 */
export const insertOutbox = (param: string, messages: string, claimMs: string) => `
  insert into outbox (company_id, conversation_id, message_id, partition, kind, status, attempts, claimed_until, sending_at, lease_rev)
  select v.company_id, v.conversation_id, m.id, v.partition, v.kind,
         case when d.now then 'sending' else 'pending' end, case when d.now then 1 else 0 end,
         case when d.now then now() + (${claimMs}::int * interval '1 millisecond') end,
         case when d.now then now() end, case when d.now then v.lease_rev end
  from ${outbox.recordset(param)}
  join ${messages} m on m.conversation_id = v.conversation_id and m.seq = v.seq
  cross join lateral (
    select v.lease_rev is not null and not exists (select 1 from outbox e where e.conversation_id = v.conversation_id and e.status in ('pending', 'sending')) as now
  ) d
  on conflict do nothing
  returning *`;

/** The rows a step inserted claimed, as sends (`o`: the insert's CTE; `c`, `m`: the step's updated conversations and inserted messages). */
export const claimedSends = (o: string, conversations: string, messages: string) => `
  select ${sendColumns(true)}
  from ${o} o join ${messages} m on m.id = o.message_id join ${conversations} c on c.id = o.conversation_id join integrations i on i.id = c.integration_id
  where o.status = 'sending'`;

/** The epoch of the row's partition among the claimed ones (the arrays $2 / $3 of the claim). */
const EPOCH = (partition: string) => `($3::bigint[])[array_position($2::int[], ${partition})]`;

// `= any(array(…))`: the locking subquery is an init plan, run once, and the claimed rows
// are then fetched by primary key (an `in (…)` semi-join was planned as a seq scan of outbox).
// A row already `sending` is uncertain; it keeps its `sending_at` (reconciliation compares
// the history with it), so the sends tell the two kinds apart by `sending_at < now()`
// (now() is this transaction's start: a fresh claim's sending_at equals it).
const CLAIM_SQL = `
update outbox o set status = 'sending', attempts = o.attempts + 1,
  sending_at = case when o.status = 'sending' and o.sending_at is not null then o.sending_at else now() end,
  lease_rev = ${EPOCH('o.partition')},
  claimed_until = now() + ($1::int * interval '1 millisecond'), updated_at = now()
from conversations c, integrations i, conversation_messages m
where o.id = any(array(
    select d.id from outbox d
    where d.partition = any($2::int[])
      and d.status in ('pending', 'sending')
      and d.next_attempt_at <= now()
      and (d.status = 'pending' or d.lease_rev is null or d.lease_rev < ${EPOCH('d.partition')} or d.claimed_until is null or d.claimed_until < now())
      and not exists (select 1 from outbox e where e.conversation_id = d.conversation_id and e.id < d.id and e.status in ('pending', 'sending'))
    order by d.id limit $4 for update skip locked))
  and c.id = o.conversation_id and i.id = c.integration_id and m.id = o.message_id
returning ${sendColumns(false)}`;

/**
 * Claims due rows of the owned partitions (with their epochs), one conversation's rows in
 * order: a row is claimable only when no earlier row of its conversation is unfinished.
 */
export function claimSends(c: SqlClient, owned: { partition: number; epoch: number }[], claimMs: number, limit: number): Promise<OutboxSend[]> {
  return query<OutboxSend>(c, 'outbox_claim', CLAIM_SQL, [claimMs, owned.map((o) => o.partition), owned.map((o) => o.epoch), limit]);
}

export type FinalStatus = 'sent' | 'failed' | 'cancelled';

export interface Finish {
  outboxId: string;
  leaseRev: string;
  status: FinalStatus;
  externalId: string | null;
  error: string | null;
  /** The failure's code (the channel's, or ours: window_closed, delivery_uncertain, not_sent, ...). */
  errorCode: string | null;
}

// The outbox row and its message in one statement (a data-modifying CTE always runs); only
// rows still sending under the finishing sender's epoch change (fencing).
const FINISH_SQL = `
with done as (
  select * from unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) as d(outbox_id, lease_rev, status, external_id, error, error_code)
), outbox_done as (
  update outbox o set status = d.status, external_id = coalesce(d.external_id, o.external_id), last_error = d.error, claimed_until = null, updated_at = now(),
    sent_at = case when d.status = 'sent' then now() else null end
  from done d where o.id = d.outbox_id and o.status = 'sending' and o.lease_rev = d.lease_rev
  returning o.id, o.message_id, d.status, d.external_id, d.error, d.error_code
)
update conversation_messages m set delivery = d.status, external_id = coalesce(d.external_id, m.external_id),
  delivery_error = coalesce(d.error, m.delivery_error), delivery_error_code = coalesce(d.error_code, m.delivery_error_code),
  -- A channel's report may have come first (a status webhook outran this answer): it is never moved back.
  delivery_status = case d.status when 'sent' then coalesce(m.delivery_status, 'sent') when 'failed' then 'failed' else m.delivery_status end
from outbox_done d where m.id = d.message_id
returning d.id::text as outbox_id, m.id::text as id, m.company_id, m.conversation_id, m.seq, m.role, m.kind, m.text, m.external_id, m.reply_to_id::text as reply_to_id,
  m.delivery, m.delivery_error, m.delivery_status, m.delivery_error_code, m.sources, m.confidence, m.options, m.author_id, m.agent_version, m.created_at`;

/** Records final outcomes (of rows still sending under the given epochs); returns each finished row's message, by outbox id. */
export async function finishSends(c: SqlClient, list: Finish[]): Promise<Map<string, MessageRow>> {
  const rows = await query<MessageRow & { outbox_id: string }>(c, 'outbox_finish', FINISH_SQL, [
    list.map((r) => r.outboxId),
    list.map((r) => r.leaseRev),
    list.map((r) => r.status),
    list.map((r) => r.externalId),
    list.map((r) => r.error),
    list.map((r) => r.errorCode),
  ]);
  return new Map(rows.map((r) => [r.outbox_id, r]));
}

export interface RetryLater {
  outboxId: string;
  leaseRev: string;
  error: string;
  delayMs: number;
  /** The row stays `sending` (it may have been delivered: reconcile before resending) or goes back to `pending`. */
  uncertain: boolean;
  /** Counts a reconciliation that could not read the history. */
  unreadable: boolean;
}

const RETRY_LATER_SQL = `
update outbox o set status = case when r.uncertain then 'sending' else 'pending' end, claimed_until = null, last_error = r.error,
  next_attempt_at = now() + (r.delay_ms * interval '1 millisecond'), updated_at = now(),
  reconcile_attempts = o.reconcile_attempts + case when r.unreadable then 1 else 0 end
from unnest($1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::boolean[], $6::boolean[]) as r(id, lease_rev, error, delay_ms, uncertain, unreadable)
where o.id = r.id and o.status = 'sending' and o.lease_rev = r.lease_rev`;

export async function retrySendsLater(c: SqlClient, list: RetryLater[]): Promise<void> {
  await query(c, 'outbox_retry_later', RETRY_LATER_SQL, [
    list.map((r) => r.outboxId),
    list.map((r) => r.leaseRev),
    list.map((r) => r.error),
    list.map((r) => r.delayMs),
    list.map((r) => r.uncertain),
    list.map((r) => r.unreadable),
  ]);
}

/** Remote ids already recorded for the conversation's other rows: a history message carrying one is theirs. */
export async function recordedExternalIds(c: SqlClient, conversationId: number, outboxId: string): Promise<Set<string>> {
  const rows = await query<{ external_id: string }>(c, 'outbox_recorded_ids', 'select external_id from outbox where conversation_id = $1 and id <> $2 and external_id is not null', [conversationId, outboxId]);
  return new Set(rows.map((r) => r.external_id));
}
