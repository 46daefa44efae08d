import { Migration } from '@mikro-orm/migrations';

/**
 * The conversation engine (issue #4): sessions with their persisted XState snapshot, the
 * helpdesk ids each session has seen, messages, the transition log, durable inbound
 * receipts (idempotency beyond JetStream's 2-minute dedup window) and the outbox of
 * replies the dispatcher sends.
 */
export class Migration0004Conversations extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table conversations (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        integration_id int not null references integrations(id) on delete cascade,
        channel text not null check (channel in ('helpdesk', 'webchat')),
        client_id text not null,
        partition int not null,
        status text not null check (status in ('active', 'paused', 'closed')),
        state jsonb not null,
        snapshot jsonb not null,
        channel_id text,
        transport text,
        message_seq int not null default 0,
        transition_seq int not null default 0,
        hold_requested_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        last_message_at timestamptz,
        closed_at timestamptz
      );
      create unique index conversations_open_session_uq on conversations(integration_id, client_id) where status <> 'closed';
      create index conversations_client_idx on conversations(integration_id, client_id, id desc);
      create index conversations_company_idx on conversations(company_id, updated_at desc);

      create table conversation_refs (
        integration_id int not null references integrations(id) on delete cascade,
        kind text not null check (kind in ('request', 'dialog')),
        ref_id bigint not null,
        conversation_id int not null references conversations(id) on delete cascade,
        company_id int not null references companies(id) on delete cascade,
        seen_at timestamptz not null default now(),
        primary key (integration_id, kind, ref_id, conversation_id)
      );
      create index conversation_refs_conversation_idx on conversation_refs(conversation_id);

      create table conversation_messages (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        conversation_id int not null references conversations(id) on delete cascade,
        seq int not null,
        role text not null check (role in ('customer', 'agent', 'operator', 'system')),
        kind text not null default 'message' check (kind in ('message', 'reply', 'handoff_notice')),
        text text not null,
        external_id text,
        reply_to_id bigint references conversation_messages(id) on delete set null,
        delivery text check (delivery in ('pending', 'sent', 'failed', 'cancelled')),
        delivery_error text,
        attachments jsonb not null default '[]',
        created_at timestamptz not null default now(),
        unique (conversation_id, seq)
      );
      create unique index conversation_messages_reply_uq on conversation_messages(reply_to_id, kind) where reply_to_id is not null;

      create table conversation_transitions (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        conversation_id int not null references conversations(id) on delete cascade,
        seq int not null,
        at timestamptz not null default now(),
        event text not null,
        payload jsonb not null default '{}',
        from_state jsonb,
        to_state jsonb not null,
        actions jsonb not null default '[]',
        unique (conversation_id, seq)
      );

      create table inbound_receipts (
        integration_id int not null references integrations(id) on delete cascade,
        idempotency_key text not null,
        company_id int not null references companies(id) on delete cascade,
        kind text not null,
        outcome text not null,
        conversation_id int references conversations(id) on delete set null,
        received_at timestamptz not null default now(),
        primary key (integration_id, idempotency_key)
      );
      create index inbound_receipts_received_idx on inbound_receipts(received_at);

      create table outbox (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        conversation_id int not null references conversations(id) on delete cascade,
        message_id bigint not null references conversation_messages(id) on delete cascade,
        partition int not null,
        kind text not null check (kind in ('agent_reply', 'handoff_notice', 'operator_reply')),
        status text not null default 'pending' check (status in ('pending', 'sending', 'sent', 'failed', 'cancelled')),
        attempts int not null default 0,
        next_attempt_at timestamptz not null default now(),
        claimed_until timestamptz,
        last_error text,
        external_id text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        sent_at timestamptz,
        unique (message_id)
      );
      create index outbox_due_idx on outbox(partition, next_attempt_at) where status in ('pending', 'sending');
      create index outbox_conversation_idx on outbox(conversation_id, id);
    `);
  }
}
