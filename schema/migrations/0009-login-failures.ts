import { Migration } from '@mikro-orm/migrations';

/**
 * Failed logins, counted in PostgreSQL so the lock-out holds across gateway processes and
 * restarts (gateway/auth/login-limits.ts). One row per counted key (`email:<address>`,
 * `ip:<address>`) and its current fixed window; a new window starts at the first failure
 * after the previous one ended. Rows whose window has ended are deleted in passing (the
 * index keeps that cheap), so the table holds at most the keys that failed recently.
 */
export class Migration0009LoginFailures extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table login_failures (
        key text primary key,
        window_ends_at timestamptz not null,
        failures integer not null check (failures >= 0)
      );
      create index login_failures_window_ends_at_idx on login_failures(window_ends_at);
    `);
  }
}
