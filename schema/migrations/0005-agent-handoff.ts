import { Migration } from '@mikro-orm/migrations';

/**
 * The agent brain (issue #6):
 * - `agents.handoff_message`: what the customer is told when the agent hands the
 *   conversation to a human (null = the default notice, lib/conversations.ts).
 * - `credit_ledger.message_id`: the customer message a `model_usage` entry paid the answer
 *   of. Unique per kind, so an answer that is asked again after a crash can never be
 *   debited twice (actors/store.ts chargeModelUsage).
 */
export class Migration0005AgentHandoff extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column handoff_message text;
      alter table credit_ledger add column message_id bigint;
      create unique index credit_ledger_model_usage_message_uq on credit_ledger(message_id) where kind = 'model_usage';
    `);
  }
}
