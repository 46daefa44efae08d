import { Migration } from '@mikro-orm/migrations';

export class Migration0001Foundation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table companies (
        id serial primary key,
        public_id uuid not null unique,
        name text not null,
        balance_usd numeric(18,6) not null default 0,
        created_at timestamptz not null default now()
      );
      create table users (
        id uuid primary key,
        email text not null unique,
        password_hash text not null,
        company_id int not null references companies(id) on delete cascade,
        is_superadmin boolean not null default false,
        created_at timestamptz not null default now()
      );
      create index users_company_idx on users(company_id);
      create table auth_sessions (
        id uuid primary key,
        user_id uuid not null references users(id) on delete cascade,
        company_id int not null references companies(id) on delete cascade,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz,
        revoked_reason text
      );
      create table refresh_tokens (
        id bigserial primary key,
        session_id uuid not null references auth_sessions(id) on delete cascade,
        token_hash text not null unique,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        used_at timestamptz
      );
      create index refresh_tokens_session_idx on refresh_tokens(session_id);
      create table api_tokens (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        name text not null,
        prefix text not null,
        token_hash text not null unique,
        created_by uuid references users(id) on delete set null,
        created_at timestamptz not null default now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      );
      create index api_tokens_company_idx on api_tokens(company_id);
      create table credit_ledger (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        kind text not null,
        amount_usd numeric(18,6) not null,
        balance_after_usd numeric(18,6) not null,
        input_tokens int,
        output_tokens int,
        model text,
        conversation_id int,
        at timestamptz not null default now()
      );
      create index credit_ledger_company_idx on credit_ledger(company_id, id);
      create table pipelines (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        name text not null,
        is_default boolean not null default false,
        created_at timestamptz not null default now()
      );
      create index pipelines_company_idx on pipelines(company_id);
      create table pipeline_stages (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        pipeline_id int not null references pipelines(id) on delete cascade,
        name text not null,
        position int not null,
        is_won boolean not null default false,
        is_lost boolean not null default false,
        unique (pipeline_id, position)
      );
      create table knowledge_bases (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        name text not null,
        created_at timestamptz not null default now()
      );
      create index knowledge_bases_company_idx on knowledge_bases(company_id);
      create table agents (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        name text not null,
        system_prompt text not null default '',
        model_provider text not null default 'builtin',
        model_name text,
        model_base_url text,
        model_api_key_sealed text,
        model_pricing jsonb,
        knowledge_base_id int references knowledge_bases(id) on delete set null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index agents_company_idx on agents(company_id);
    `);
  }
}
