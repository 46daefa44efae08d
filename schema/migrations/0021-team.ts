import { Migration } from '@mikro-orm/migrations';

/**
 * A team works the conversations (contract.md § A team works the conversations).
 * - `users.role` (`owner`: who registered, every user until now; `admin`; `operator`) and
 *   `display_name`; `user_invitations`, their tokens stored as hashes.
 * - `conversations`: the assignee and labels (written by the API), and what the inbox shows of
 *   the last message of the customer or of whoever answered them (not notes, transfer records,
 *   cancelled replies or the bot's handoff notices) and how many the customer wrote (written by
 *   the worker in the update it already makes per step: no statement more on the message
 *   path). `last_message_at` now follows those messages, replies included. The assignee's and
 *   the labels' indexes are partial: the conversations the bot works alone pay nothing for them.
 * - `conversation_messages.author_id`: the teammate who wrote an operator reply or note;
 *   `kind` `note` (never sent). A full-text index over message texts serves `q=` (kept up at
 *   each message stored).
 * - `conversation_reads`: how many customer messages a user had seen when they last read a
 *   conversation (`unread` is the difference).
 * - `canned_replies`; `leads` get name, email and phone.
 */
export class Migration0021Team extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table users
        add column role text not null default 'owner' check (role in ('owner', 'admin', 'operator')),
        add column display_name text;

      create table user_invitations (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        email text not null,
        role text not null check (role in ('owner', 'admin', 'operator')),
        display_name text,
        token_hash text not null unique,
        created_by uuid,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        accepted_at timestamptz
      );
      create index user_invitations_company_idx on user_invitations(company_id, created_at desc);

      alter table conversations
        add column assignee_id uuid references users(id) on delete set null,
        add column labels text[] not null default '{}',
        add column last_message_role text,
        add column last_message_text text,
        add column customer_messages int not null default 0;
      -- The inbox's "Mine" and label views. Partial: a conversation nobody has and without labels (all
      -- the bot answers alone) has no entry, so the message path pays for them only on those a person works.
      create index conversations_assignee_idx on conversations(company_id, assignee_id, updated_at desc) where assignee_id is not null;
      create index conversations_labels_idx on conversations using gin (labels) where labels <> '{}';

      update conversations c set
        last_message_role = m.role, last_message_text = left(m.text, 200), last_message_at = m.created_at
      from (
        select distinct on (conversation_id) conversation_id, role, text, created_at from conversation_messages
        where role <> 'system' and kind <> 'handoff_notice' and delivery is distinct from 'cancelled' order by conversation_id, seq desc
      ) m where m.conversation_id = c.id;
      update conversations c set customer_messages = n.count
      from (select conversation_id, count(*) from conversation_messages where role = 'customer' group by conversation_id) n
      where n.conversation_id = c.id;

      alter table conversation_messages
        add column author_id uuid,
        drop constraint conversation_messages_kind_check,
        add constraint conversation_messages_kind_check check (kind in ('message', 'reply', 'handoff_notice', 'transfer', 'note'));
      create index conversation_messages_search_idx on conversation_messages using gin (to_tsvector('simple', text));

      create table conversation_reads (
        conversation_id int not null references conversations(id) on delete cascade,
        user_id uuid not null references users(id) on delete cascade,
        company_id int not null references companies(id) on delete cascade,
        customer_messages_read int not null,
        read_at timestamptz not null default now(),
        primary key (conversation_id, user_id)
      );

      create table canned_replies (
        id serial primary key,
        company_id int not null references companies(id) on delete cascade,
        shortcut text not null,
        text text not null,
        created_by uuid,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        unique (company_id, shortcut)
      );

      alter table leads add column name text, add column email text, add column phone text;
    `);
  }
}
