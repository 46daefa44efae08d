import { Migration } from '@mikro-orm/migrations';

/**
 * Agent behaviour (issue #20, contract.md § Behaviour customers expect from an agent):
 * - `agents.debounce_ms`: customer messages within it of each other are answered once,
 *   together (0: off).
 * - `agents.hours`: business hours (lib/agents/hours.ts BusinessHours), null: always open.
 * - `integrations.handoff_group_id`: the Chat2Desk operator group a handed-off dialog is
 *   transferred to (helpdesk only; null: no transfer call).
 * - A handed-off helpdesk dialog's transfer is a `transfer` message (role system: the
 *   operators' record of it) with a `helpdesk_transfer` outbox row, sent once like a reply.
 * - `closing_reply`: the agent's last words when it closes the conversation (its
 *   close_conversation tool); unlike an agent reply it goes out although the conversation is
 *   closed by then.
 */
export class Migration0015AgentBehaviour extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column debounce_ms int not null default 0 check (debounce_ms between 0 and 60000);
      alter table agents add column hours jsonb;
      alter table integrations add column handoff_group_id int check (handoff_group_id > 0);
      alter table conversation_messages drop constraint conversation_messages_kind_check,
        add constraint conversation_messages_kind_check check (kind in ('message', 'reply', 'handoff_notice', 'transfer'));
      alter table outbox drop constraint outbox_kind_check,
        add constraint outbox_kind_check check (kind in ('agent_reply', 'handoff_notice', 'operator_reply', 'closing_reply', 'helpdesk_transfer'));
    `);
  }
}
