import { Migration } from '@mikro-orm/migrations';

/**
 * Two agent settings of the answers that find what the help centre says (contract.md § Answers
 * that find what the help centre says):
 * - `agents.out_of_scope_text`: the reply to a message that is not about this business (the
 *   `out_of_scope` decision); null: a default polite line in the customer's language.
 * - `agents.knowledge_passages`: how many of the best passages a model agent is given with
 *   their confidence (0–20, default 5); the built-in agent does not use it.
 * Versions recorded before keep the agent's own values for them (lib/agents/versions.ts
 * storedSettings reads only the settings a version holds).
 */
export class Migration0028AgentScopeAndPassages extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column out_of_scope_text text;
      alter table agents add column knowledge_passages int not null default 5 check (knowledge_passages between 0 and 20);
    `);
  }
}
