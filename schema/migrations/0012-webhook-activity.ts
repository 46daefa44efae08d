import { Migration } from '@mikro-orm/migrations';

/**
 * Webhook activity per integration (issue #18, contract.md § Chat2Desk as it is): when a
 * correctly signed webhook last arrived, and the webhooks refused for a bad signature, counted
 * per minute so "how many in the last hour" can be summed. Written only by the gateways'
 * periodic flush (gateway/webhook/activity.ts: counters in memory, one statement every few
 * seconds per process, added up here across processes), never on the webhook path itself.
 */
export class Migration0012WebhookActivity extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table integration_webhook_activity (
        integration_id int primary key references integrations(id) on delete cascade,
        company_id int not null,
        last_webhook_at timestamptz,
        last_failure_at timestamptz,
        last_failure_reason text
      );
      create table integration_signature_failures (
        integration_id int not null references integrations(id) on delete cascade,
        company_id int not null,
        minute timestamptz not null,
        failures int not null,
        primary key (integration_id, minute)
      );
    `);
  }
}
