import { Migration } from '@mikro-orm/migrations';

/**
 * Answers a company can trust (issue #27, contract.md § Answers a company can trust):
 * - `conversation_messages.confidence`: an agent reply grounded in the knowledge base carries
 *   how sure the agent was that its passage answers the question (0–1); null otherwise.
 * - `agents.greeting`: the short reply to a greeting or thanks (null: the default text).
 * - `agents.relevance_threshold` is now compared with a passage's confidence (how much of the
 *   question it answers), no longer the share of the base's known words it holds: agents left at
 *   the old default (0.5) move to the new one (0.35, chosen on the trust bench); a threshold a
 *   company chose stays.
 * - Knowledge gaps are read from the transition log: the agent's decision is recorded in the
 *   payload of its `xstate.done.actor.agent` transition (`output.decision`). This partial index
 *   holds only the no-answers, by company, base and time, so listing a base's gaps never reads
 *   the rest of the log.
 */
export class Migration0018AnswerDecisions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table conversation_messages add column confidence real check (confidence between 0 and 1);
      alter table agents add column greeting text;
      alter table agents alter column relevance_threshold set default 0.35;
      update agents set relevance_threshold = 0.35 where relevance_threshold = 0.5;
      create index conversation_transitions_gaps_idx on conversation_transitions
        (company_id, ((payload #>> '{output,decision,knowledgeBaseId}')::int), at)
        where event = 'xstate.done.actor.agent' and payload #>> '{output,decision,kind}' = 'no_answer';
    `);
  }
}
