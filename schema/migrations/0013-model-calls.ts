import { Migration } from '@mikro-orm/migrations';

/**
 * Model calls at real model latency (issue #17, contract.md § Model calls, § Chat2Desk … Balance):
 * - `agents.model_max_concurrency`: an agent's own cap on its calls in flight (null: none).
 * - Credit reservations: a model call reserves its estimated cost before it runs and settles
 *   after (lib/credit.ts). `companies.reserved_usd` is the sum of the company's reservations,
 *   changed only together with its rows, in one statement or transaction; a call is admitted
 *   while `balance_usd − reserved_usd` covers its estimate. One reservation per answered
 *   message (a re-asked answer replaces the reservation of the call that died); a reservation
 *   whose process died is released when it expires (`expires_at`, swept by the workers).
 */
export class Migration0013ModelCalls extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      alter table agents add column model_max_concurrency int check (model_max_concurrency > 0);
      alter table companies add column reserved_usd numeric(18,6) not null default 0;
      create table credit_reservations (
        id bigserial primary key,
        company_id int not null references companies(id) on delete cascade,
        agent_id int,
        message_id bigint,
        amount_usd numeric(18,6) not null check (amount_usd >= 0),
        created_at timestamptz not null default now(),
        expires_at timestamptz not null
      );
      create unique index credit_reservations_message_uq on credit_reservations(message_id) where message_id is not null;
      create index credit_reservations_expires_idx on credit_reservations(expires_at);
    `);
  }
}
