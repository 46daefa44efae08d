import { Migration } from '@mikro-orm/migrations';

/**
 * Agent behaviour (issue #20, contract.md § Behaviour customers expect from an agent):
 * - `agents.debounce_ms`: customer messages within it of each other are answered once,
 *   together (0: off).
 * - `agents.hours`: business hours (lib/agents/hours.ts BusinessHours), null: always open.
 * - `integrations.handoff_group_id`: the Chat2Desk operator group a handed-off dialog is
 *   transferred to (helpdesk only; null: no transfer call).
 */
export class Migration0015AgentBehaviour extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column debounce_ms int not null default 0 check (debounce_ms between 0 and 60000);
      alter table agents add column hours jsonb;
      alter table integrations add column handoff_group_id int check (handoff_group_id > 0);
    `);
  }
}
