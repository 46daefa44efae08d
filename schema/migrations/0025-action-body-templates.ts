import { Migration } from '@mikro-orm/migrations';

/**
 * An action's JSON body may be a template the company writes (contract.md § Tools that cannot
 * be turned against us, "Who is asking"): `{param}` takes a model's argument, `{customer.id}`
 * and the other caller placeholders what only the service knows (lib/agents/tools/placeholders.ts).
 * Null: `body` says what is sent, as before.
 */
export class Migration0025ActionBodyTemplates extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table agent_actions add column body_template jsonb;`);
  }
}
