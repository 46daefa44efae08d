import { Migration } from '@mikro-orm/migrations';

export class Migration0002Integrations extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table integrations (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        type text not null check (type in ('helpdesk', 'webchat')),
        name text not null,
        agent_id int references agents(id) on delete set null,
        active boolean not null default true,
        api_url text,
        region text check (region in ('global', 'europe')),
        api_token_sealed text,
        webhook_secret_sealed text not null,
        previous_secret_sealed text,
        previous_secret_expires_at timestamptz,
        webhook_status text not null default 'pending' check (webhook_status in ('pending', 'ok')),
        webhook_registered_at timestamptz,
        webhook_remote_id text,
        allowed_origins jsonb not null default '[]',
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now()
      );
      create index integrations_company_idx on integrations(company_id);
    `);
  }
}
