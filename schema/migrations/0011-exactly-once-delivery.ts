import { Migration } from '@mikro-orm/migrations';

/**
 * Exactly-once delivery at the helpdesk (issue #15, contract.md § Delivery): an outbox row in
 * `sending` carries when its send began and the lease epoch it is sent under (the fencing
 * token); a row whose send may or may not have arrived is reconciled against the helpdesk's
 * history, and reconciliations that could not read it are counted. Rows already `sending`
 * (sent by the previous version) count from their last update.
 */
export class Migration0011ExactlyOnceDelivery extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table outbox add column sending_at timestamptz, add column lease_rev bigint, add column reconcile_attempts int not null default 0;
      update outbox set sending_at = updated_at where status = 'sending';
    `);
  }
}
