import { Migration } from '@mikro-orm/migrations';

/**
 * Knowledge gaps count the questions the agent declined as not about the business
 * (`out_of_scope`, contract.md § Answers that find what the help centre says) beside its
 * no-answers: both ended without an answer, and a company sees there what its agent took for
 * off-topic. The partial index lib/knowledge/gaps.ts reads through is widened to both kinds
 * (its where clause and the query's stay identical).
 */
export class Migration0030GapsOutOfScope extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      drop index if exists conversation_transitions_gaps_idx;
      create index conversation_transitions_gaps_idx on conversation_transitions
        (company_id, ((payload #>> '{output,decision,knowledgeBaseId}')::int), at)
        where event = 'xstate.done.actor.agent' and payload #>> '{output,decision,kind}' in ('no_answer', 'out_of_scope');
    `);
  }
}
