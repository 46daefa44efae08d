import { Migration } from '@mikro-orm/migrations';

/**
 * The rows the worker writes for every message (messages, transitions, outbox, receipts,
 * helpdesk refs) each checked a foreign key to `companies`: one index lookup and a shared
 * lock on the company's row per inserted row, about seven per answered message, all on the
 * same hot row. Each of these tables also references its conversation or integration with
 * `on delete cascade`, and those cascade from the company, so the direct keys added no
 * protection: deleting a company still deletes all of it. `company_id` stays as a column
 * (the tenant condition of every read).
 */
export class Migration0007DropRedundantCompanyKeys extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table conversation_messages drop constraint conversation_messages_company_id_fkey;
      alter table conversation_transitions drop constraint conversation_transitions_company_id_fkey;
      alter table outbox drop constraint outbox_company_id_fkey;
      alter table inbound_receipts drop constraint inbound_receipts_company_id_fkey;
      alter table conversation_refs drop constraint conversation_refs_company_id_fkey;
    `);
  }
}
