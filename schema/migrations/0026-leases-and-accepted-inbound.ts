import { Migration } from '@mikro-orm/migrations';

/**
 * Two records kept outside JetStream, so that a NATS cluster that resets its state loses
 * nothing (issue #45):
 * - `partition_leases` / `worker_presence`: partition ownership in PostgreSQL. A claim takes
 *   its epoch (the outbox's fencing token) from a sequence, which never goes backwards; the
 *   KV bucket's revisions did, once the bucket was reset. The sequence starts above every
 *   epoch the outbox already holds.
 * - `inbound_accepted`: every envelope a gateway answered 200 for, until a worker's receipt
 *   shows it was taken; one not taken in time is published again (lib/inbound-journal.ts).
 *   `json`, not `jsonb`: stored as the gateway serialised it, never queried inside.
 */
export class Migration0026LeasesAndAcceptedInbound extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create sequence partition_lease_epochs;`);
    this.addSql(`select setval('partition_lease_epochs', greatest(1, (select coalesce(max(lease_rev), 0) from outbox) + 1), false);`);
    this.addSql(`create table partition_leases (
      partition int primary key,
      owner text,
      epoch bigint not null,
      expires_at timestamptz not null
    );`);
    this.addSql(`create table worker_presence (
      worker_id text primary key,
      expires_at timestamptz not null
    );`);
    this.addSql(`create table inbound_accepted (
      integration_id int not null,
      idempotency_key text not null,
      partition int not null,
      envelope json not null,
      accepted_at timestamptz not null default now(),
      republished int not null default 0,
      check_at timestamptz not null
    );`);
    // No primary key: the webhook path only appends (a redelivered webhook's second row costs
    // the sweeper one look; receipts make its copy harmless), and the one index is the sweeper's.
    this.addSql(`create index inbound_accepted_due on inbound_accepted (partition, check_at);`);
  }
}
