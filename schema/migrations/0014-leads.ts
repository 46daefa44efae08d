import { Migration } from '@mikro-orm/migrations';

/**
 * Leads and outcomes (issue #20, contract.md § Behaviour customers expect from an agent).
 *
 * - `leads`: one per customer of an integration (helpdesk client, webchat visitor), keyed by
 *   (integration, client id) like the customer's sessions, which are its conversations.
 *   The worker creates it with the customer's first session (actors/store.ts), in the
 *   default pipeline's first stage. Its stage is checked by a foreign key to belong to its
 *   pipeline and to its company. No direct key to `companies`: the lead goes with its
 *   integration, which goes with the company (0007: a key to the hot company row costs a
 *   lock per insert).
 * - `lead_stage_moves`: every change of stage, who made it (an operator, an API token, the
 *   agent of a conversation) and when: the lead's history.
 * - Indexes for the outcome figures (gateway/analytics/outcomes.ts), chosen so that the
 *   worker's writes hardly feel them: sessions started are read from their first message
 *   (`seq = 1`, written once per session, at the session's own creation time) rather than
 *   from an index on `conversations`, whose rows are rewritten with every message; sessions
 *   closed from a partial index that only a closing write enters; handoffs from a partial
 *   index over the few transitions that carry one; replies from a partial index over agent
 *   replies. Model cost uses credit_ledger_spend_idx (0008).
 * - Customers who wrote before this migration get their lead now, dated by their first
 *   session.
 */
export class Migration0014Leads extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table pipeline_stages add constraint pipeline_stages_company_pipeline_id_uq unique (company_id, pipeline_id, id);

      create table leads (
        id serial primary key,
        company_id int not null,
        integration_id int not null references integrations(id) on delete cascade,
        client_id text not null,
        pipeline_id int not null,
        stage_id int not null,
        created_at timestamptz not null default now(),
        stage_changed_at timestamptz not null default now(),
        unique (integration_id, client_id),
        foreign key (company_id, pipeline_id, stage_id) references pipeline_stages(company_id, pipeline_id, id)
      );
      create index leads_board_idx on leads(company_id, pipeline_id, stage_id, stage_changed_at desc, id desc);

      create table lead_stage_moves (
        id bigserial primary key,
        company_id int not null,
        lead_id int not null references leads(id) on delete cascade,
        from_stage_id int references pipeline_stages(id),
        to_stage_id int not null references pipeline_stages(id),
        moved_by text not null check (moved_by in ('operator', 'api_token', 'agent')),
        user_id uuid references users(id) on delete set null,
        api_token_id int references api_tokens(id) on delete set null,
        conversation_id int references conversations(id) on delete set null,
        at timestamptz not null default now()
      );
      create index lead_stage_moves_lead_idx on lead_stage_moves(lead_id, id desc);
      create index lead_stage_moves_from_idx on lead_stage_moves(from_stage_id);
      create index lead_stage_moves_to_idx on lead_stage_moves(to_stage_id);

      create index conversation_messages_first_idx on conversation_messages(company_id, created_at) where seq = 1;
      create index conversation_messages_agent_reply_idx on conversation_messages(company_id, created_at) where role = 'agent' and kind = 'reply';
      create index conversations_closed_idx on conversations(company_id, closed_at) where closed_at is not null;
      create index conversation_transitions_handoff_idx on conversation_transitions(company_id, at) where actions @> '[{"type":"session_transfer_external"}]';

      insert into leads (company_id, integration_id, client_id, pipeline_id, stage_id, created_at, stage_changed_at)
      select c.company_id, c.integration_id, c.client_id, f.pipeline_id, f.id, c.first_at, c.first_at
      from (select company_id, integration_id, client_id, min(created_at) as first_at from conversations group by company_id, integration_id, client_id) c
      cross join lateral (
        select st.pipeline_id, st.id from pipelines p join pipeline_stages st on st.pipeline_id = p.id
        where p.company_id = c.company_id and p.is_default order by p.id, st.position limit 1
      ) f
      on conflict do nothing;
    `);
  }
}
