import { Migration } from '@mikro-orm/migrations';

/**
 * Auto-resolve (contract.md § The first hour): a conversation whose last message is the
 * agent's answer and whose customer stays silent for `agents.auto_resolve_minutes` (default
 * 1440, 0: never, at most 30 days) closes as resolved by the agent.
 * The worker's sweep (actors/auto-resolve.ts) reads the active sessions the agent answered
 * last, oldest answer first, through the partial index below: its where clause and the
 * sweep's are written alike so the planner can use it.
 */
export class Migration0032AutoResolve extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column auto_resolve_minutes int not null default 1440 check (auto_resolve_minutes between 0 and 43200);
      create index conversations_auto_resolve_idx on conversations (partition, last_message_at)
        where status = 'active' and last_message_role = 'agent';
    `);
  }
}
