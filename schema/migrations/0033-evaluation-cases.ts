import { Migration } from '@mikro-orm/migrations';

/**
 * The Test agent page's cases, kept per agent (contract.md § The first hour:
 * `GET|PUT /api/agents/:id/evaluation-cases`): one row per agent holding the list as it was
 * last saved (a PUT replaces it whole). Owned by lib/agents/evaluation-cases.ts.
 */
export class Migration0033EvaluationCases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table agent_evaluation_cases (
        agent_id int primary key references agents(id) on delete cascade,
        company_id int not null references companies(id) on delete cascade,
        cases jsonb not null default '[]',
        updated_at timestamptz not null default now()
      );
    `);
  }
}
