import { Migration } from '@mikro-orm/migrations';

/**
 * Hardening (issue #14):
 * - token counts as bigint: a model server reporting more than 2^31 tokens made the answer's
 *   commit fail, and the model was asked again every 1.5 s forever;
 * - the agent behind each model-usage ledger entry, and daily spend caps per company and per
 *   agent (what was spent since midnight UTC is summed from the ledger, hence the index);
 * - a durable count of model calls per customer message: a message whose answer cannot be
 *   stored is handed to a human after a bounded number of them, not asked forever.
 */
export class Migration0008Hardening extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table credit_ledger alter column input_tokens type bigint, alter column output_tokens type bigint;
      alter table credit_ledger add column agent_id int;
      create index credit_ledger_spend_idx on credit_ledger(company_id, at) where kind = 'model_usage';
      alter table companies add column spend_cap_usd_per_day numeric(18,6) check (spend_cap_usd_per_day >= 0);
      alter table agents add column spend_cap_usd_per_day numeric(18,6) check (spend_cap_usd_per_day >= 0);
      alter table conversation_messages add column answer_attempts int not null default 0;
    `);
  }
}
