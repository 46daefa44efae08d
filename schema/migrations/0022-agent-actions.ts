import { Migration } from '@mikro-orm/migrations';

/**
 * Agent actions: the company's own tools (contract.md § Agent actions).
 * - `agent_actions`: an HTTP call the model may make (a function tool); header values are
 *   sealed (lib/secrets.ts) and never shown again.
 * - `agent_mcp_servers`: Model Context Protocol servers (Streamable HTTP) whose tools the
 *   model is offered; `status` / `tools` / `last_error` are what the last check found.
 * - `agent_tool_calls`: every call the agent made, written before the request goes out
 *   (`status` `started`) and completed after, so a crash leaves a trace: a call of a tool that
 *   changes data found `started` by the next attempt at the same answer is uncertain and is
 *   not made again (`message_id` is the customer message the answer is for; null: a test).
 *   Calls outlive the action or server they used (`on delete set null`).
 */
export class Migration0022AgentActions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table agent_actions (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int not null references agents(id) on delete cascade,
        name text not null,
        description text not null,
        parameters jsonb not null,
        method text not null check (method in ('GET', 'POST', 'PUT', 'PATCH', 'DELETE')),
        url text not null,
        headers_sealed jsonb not null default '{}',
        body text not null check (body in ('json', 'none')),
        idempotent boolean not null,
        timeout_ms int not null check (timeout_ms between 100 and 15000),
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        unique (agent_id, name)
      );
      create index agent_actions_company_idx on agent_actions(company_id);

      create table agent_mcp_servers (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int not null references agents(id) on delete cascade,
        name text not null,
        url text not null,
        headers_sealed jsonb not null default '{}',
        timeout_ms int not null default 10000 check (timeout_ms between 100 and 15000),
        status text not null default 'pending' check (status in ('pending', 'connected', 'failed')),
        tools jsonb not null default '[]',
        last_error text,
        checked_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        unique (agent_id, name)
      );
      create index agent_mcp_servers_company_idx on agent_mcp_servers(company_id);

      create table agent_tool_calls (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int not null references agents(id) on delete cascade,
        conversation_id int references conversations(id) on delete cascade,
        message_id bigint,
        seq int not null,
        source text not null check (source in ('action', 'mcp')),
        action_id int references agent_actions(id) on delete set null,
        mcp_server_id int references agent_mcp_servers(id) on delete set null,
        name text not null,
        args jsonb not null,
        idempotent boolean not null,
        status text not null,
        http_status int,
        ms int,
        error text,
        result jsonb,
        called_at timestamptz not null default now(),
        finished_at timestamptz
      );
      create index agent_tool_calls_agent_idx on agent_tool_calls(company_id, agent_id, called_at desc);
      create index agent_tool_calls_message_idx on agent_tool_calls(message_id) where message_id is not null;
    `);
  }

  override async down(): Promise<void> {
    this.addSql('drop table agent_tool_calls; drop table agent_mcp_servers; drop table agent_actions;');
  }
}
