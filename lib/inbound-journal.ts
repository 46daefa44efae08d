import { Batcher } from './batcher.js';
import { query, type SqlClient, type SqlPool } from './db.js';
import type { Logger } from './logger.js';
import type { InboundEnvelope } from '../schema/envelope.js';

/**
 * `inbound_accepted` (migration 0026): what a gateway answered 200 for, recorded in
 * PostgreSQL beside JetStream, so that an accepted webhook is answered even when JetStream
 * loses it (a nats-server that resets its stream after a node failure; field notes).
 *
 * - The gateway records each envelope while JetStream takes it (`AcceptedJournal.record`,
 *   group-committed, durable); the 200 waits for both. A record that fails is logged, not
 *   answered 503: JetStream has the message, and a database outage must not stop intake.
 * - A worker's receipt (inbound_receipts, written when a step stores the envelope) says it
 *   was taken. The owner of the partition sweeps (actors/accepted-sweeper.ts): a row taken
 *   is forgotten, one not taken `check_at` after it was accepted is published again.
 */
export const DEFAULT_ACCEPTED_CHECK_MS = 10_000;

export interface AcceptedRecord {
  env: InboundEnvelope;
  /** `env` as JSON (the publisher's own serialisation, written as it is). */
  json: string;
  partition: number;
}

const INSERT_SQL = `
insert into inbound_accepted (integration_id, idempotency_key, partition, envelope, check_at)
select v.integration_id, v.idempotency_key, v.partition, v.envelope, now() + ($2::int * interval '1 millisecond')
from json_to_recordset($1::json) as v(integration_id int, idempotency_key text, partition int, envelope json)`;

/** One row of the insert's JSON parameter, the envelope spliced in as it was serialised (not serialised again). */
const rowJson = (r: AcceptedRecord) =>
  `{"integration_id":${r.env.integrationId},"idempotency_key":${JSON.stringify(r.env.idempotencyKey)},"partition":${r.partition},"envelope":${r.json}}`;

/** The gateway's side: records accepted envelopes in group commits. */
export class AcceptedJournal {
  readonly #batches: Batcher<AcceptedRecord, undefined>;
  readonly #logger: Logger;
  #lastWarning = 0;

  constructor(sql: SqlPool, logger: Logger, checkMs = DEFAULT_ACCEPTED_CHECK_MS) {
    this.#logger = logger;
    // One flush at a time: while it commits the next batch fills up (fewer, larger statements).
    this.#batches = new Batcher(
      async (records) => {
        await query(sql, 'accepted_insert', INSERT_SQL, [`[${records.map(rowJson).join(',')}]`, checkMs]);
        return records.map(() => undefined);
      },
      { concurrency: 1, maxBatch: 512 },
    );
  }

  /** Resolves once the record is committed, or once it failed (logged): intake never waits on a database outage to refuse. */
  async record(env: InboundEnvelope, json: string, partition: number): Promise<void> {
    try {
      await this.#batches.submit({ env, json, partition });
    } catch (err) {
      const now = Date.now();
      if (now - this.#lastWarning > 10_000) {
        this.#lastWarning = now;
        this.#logger.warn({ err }, 'could not record an accepted webhook in PostgreSQL; JetStream alone holds it');
      }
    }
  }
}

/** A row due for a look: not taken yet, or taken by a conversation that has not answered it. */
export interface DueAccepted {
  /** The row's physical id (the table has no key: a redelivered webhook has two rows). */
  row_id: string;
  integration_id: number;
  idempotency_key: string;
  partition: number;
  envelope: InboundEnvelope;
  republished: number;
  /** Milliseconds since it was accepted. */
  age_ms: number;
  /** Stored, but its conversation is still answering (maybe a message JetStream lost while it was being answered). */
  answering: boolean;
}

// Rows of the given partitions whose check is due: those taken (a receipt) by a conversation
// that is not answering are forgotten; the others are returned. Only a partition's owner
// sweeps it; during a handover two sweepers may both publish a row again, which receipts make
// harmless (`skip locked` keeps them from waiting on each other's statement).
const DUE_SQL = `
with due as (
  select a.ctid as row_id, a.integration_id, a.idempotency_key, a.partition, a.envelope, a.republished,
         (extract(epoch from now() - a.accepted_at) * 1000)::bigint as age_ms,
         r.idempotency_key is not null as taken,
         -- machines/states.ts isAnswering: the bot's own answer, or one it gives after handing over.
         coalesce(c.state ->> 'active' = 'answering' or c.state #>> '{paused,handedOver}' = 'answering', false) as answering
  from inbound_accepted a
  left join inbound_receipts r on r.integration_id = a.integration_id and r.idempotency_key = a.idempotency_key
  left join conversations c on c.id = r.conversation_id
  where a.partition = any($1::int[]) and a.check_at <= now()
  order by a.check_at
  limit $2
  for update of a skip locked
), forgotten as (
  delete from inbound_accepted a using due d where a.ctid = d.row_id and d.taken and not d.answering
)
select row_id::text, integration_id, idempotency_key, partition, envelope, republished, age_ms::int as age_ms, answering
from due where not taken or answering`;

/** Forgets the due rows that were taken and returns the others. */
export function takeDueAccepted(c: SqlClient, partitions: number[], limit: number): Promise<DueAccepted[]> {
  return query<DueAccepted>(c, 'accepted_due', DUE_SQL, [partitions, limit]);
}

// By physical id, read by the same sweeper a moment before (only the partition's owner sweeps
// it, so nothing else moved the row meanwhile; a row that did move is simply not found).
const LATER_SQL = `
update inbound_accepted a set check_at = now() + (v.delay_ms * interval '1 millisecond'), republished = a.republished + v.republished
from json_to_recordset($1::json) as v(row_id text, delay_ms int, republished int)
where a.ctid = v.row_id::tid`;

/** Looks at rows again later; `republished` counts those published again now. */
export async function checkAcceptedLater(c: SqlClient, rows: { row_id: string; delay_ms: number; republished: 0 | 1 }[]): Promise<void> {
  if (rows.length > 0) await query(c, 'accepted_later', LATER_SQL, [JSON.stringify(rows)]);
}
