import { Migration } from '@mikro-orm/migrations';

/**
 * Versions and replays (contract.md § Replay before publishing).
 * - `agents.version`: the agent's current version; `agent_versions`: every version's
 *   behaviour settings (lib/agents/versions.ts `AgentSettings`, the sealed model key
 *   included: a restore brings the key that went with its model server back), the fields it
 *   changed and who made it. Existing agents get version 1, their settings as they are.
 * - `conversation_messages.agent_version`: the version whose answer an agent reply or
 *   handoff notice is (null: older answers, and every other message).
 * - `agent_replays` / `agent_replay_items`: a replay of past customer messages with changes
 *   (`changes`: the agent fields as a PATCH would take them, a model key sealed; `settings`:
 *   the behaviour the replay answers with, the base version's with the changes applied), one item per
 *   customer message with the answer it got (`before`) and the replayed one (`after`, null
 *   until done). A worker holds a running replay under a lease (`lease_owner`,
 *   `lease_until`): one whose worker died is taken over when the lease runs out, and its
 *   items with an `after` are not answered again.
 */
export class Migration0023AgentVersionsReplays extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column version int not null default 1;

      create table agent_versions (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int not null references agents(id) on delete cascade,
        version int not null,
        settings jsonb not null,
        changes text[] not null default '{}',
        created_by uuid,
        restored_from int,
        replay_id int,
        created_at timestamptz not null default now(),
        unique (agent_id, version)
      );
      create index agent_versions_company_idx on agent_versions(company_id);

      insert into agent_versions (company_id, agent_id, version, settings, created_at)
      select company_id, id, 1,
             jsonb_build_object(
               'systemPrompt', system_prompt, 'modelProvider', model_provider, 'modelName', model_name, 'modelBaseUrl', model_base_url,
               'modelApiKeySealed', model_api_key_sealed, 'modelPricing', model_pricing, 'modelMaxConcurrency', model_max_concurrency,
               'knowledgeBaseId', knowledge_base_id, 'handoffMessage', handoff_message, 'spendCapUsdPerDay', spend_cap_usd_per_day::text,
               'onNoAnswer', on_no_answer, 'fallbackMessage', fallback_message, 'greeting', greeting, 'relevanceThreshold', relevance_threshold,
               'debounceMs', debounce_ms, 'hours', hours),
             created_at
      from agents;

      alter table conversation_messages add column agent_version int;

      create table agent_replays (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int not null references agents(id) on delete cascade,
        status text not null default 'running' check (status in ('running', 'done', 'failed')),
        changes jsonb not null,
        settings jsonb not null,
        change_fields text[] not null,
        base_version int not null,
        total int not null,
        error text,
        created_by uuid,
        lease_owner text,
        lease_until timestamptz,
        published_version int,
        created_at timestamptz not null default now(),
        finished_at timestamptz
      );
      create index agent_replays_agent_idx on agent_replays(company_id, agent_id, id desc);
      create index agent_replays_running_idx on agent_replays(lease_until) where status = 'running';

      create table agent_replay_items (
        id bigserial primary key,
        replay_id int not null references agent_replays(id) on delete cascade,
        company_id int not null references companies(id) on delete cascade,
        seq int not null,
        conversation_id int not null,
        message_id bigint not null,
        question text not null,
        before jsonb not null,
        after jsonb,
        changed boolean,
        cost_usd numeric(18, 6) not null default 0,
        done_at timestamptz,
        unique (replay_id, seq)
      );
      create index agent_replay_items_pending_idx on agent_replay_items(replay_id, seq) where after is null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql(`
      drop table agent_replay_items; drop table agent_replays; drop table agent_versions;
      alter table conversation_messages drop column agent_version;
      alter table agents drop column version;
    `);
  }
}
