import type { RateLimitRule } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Logger } from '../../lib/logger.js';

/** Expired windows are swept at most this often per process. */
const SWEEP_INTERVAL_MS = 60_000;

export interface LoginLimitRules {
  perEmail: RateLimitRule;
  perIp: RateLimitRule;
}

/** One login attempt, counted as a failure until it is known to have succeeded. */
export interface LoginAttempt {
  /** The password was right: the attempt no longer counts. */
  succeeded: () => Promise<void>;
}

interface CountedRow {
  key: string;
  /** As PostgreSQL wrote it (the driver hands timestamps over as text): bound back as is, it names exactly this window. */
  window_ends_at: string;
  /** The same instant, ms since the epoch. */
  ends_at_ms: number | string;
  failures: number;
}

/**
 * Login lock-out, counted in PostgreSQL (table login_failures) so every gateway process and
 * every restart sees the same counts. Only failures count: an email (or an IP) with
 * `limit` failures in its window is refused with 429 RATE_LIMITED and Retry-After until the
 * window ends, even with the right password; successful logins never lock anyone out.
 *
 * An attempt is counted *before* the password is checked and uncounted when it succeeds:
 * were failures only counted after the (slow, argon2) check, a burst of parallel guesses
 * would all pass the limit check together. Fixed windows start at the first failure after
 * the previous window ended.
 */
export class LoginLimits {
  readonly #orm: Orm;
  readonly #rules: LoginLimitRules;
  readonly #now: () => number;
  readonly #logger: Logger;
  #lastSweep = 0;

  constructor(deps: { orm: Orm; rules: LoginLimitRules; logger: Logger; now?: () => number }) {
    this.#orm = deps.orm;
    this.#rules = deps.rules;
    this.#logger = deps.logger;
    this.#now = deps.now ?? Date.now;
  }

  /** Counts an attempt for this email and IP; throws 429 (uncounted) when either is at its limit. */
  async begin(email: string, ip: string): Promise<LoginAttempt> {
    const now = this.#now();
    await this.#sweepIfDue(now);
    const keys = [
      { key: `email:${email}`, rule: this.#rules.perEmail },
      { key: `ip:${ip}`, rule: this.#rules.perIp },
    ];
    // One atomic upsert per key (a window that has ended starts again at 1); always in this key order.
    const rows = await this.#execute<CountedRow>(
      `insert into login_failures as f (key, window_ends_at, failures)
       values (?, ?, 1), (?, ?, 1)
       on conflict (key) do update set
         window_ends_at = case when f.window_ends_at <= ? then excluded.window_ends_at else f.window_ends_at end,
         failures = case when f.window_ends_at <= ? then 1 else f.failures + 1 end
       returning key, window_ends_at, (extract(epoch from window_ends_at) * 1000)::float8 as ends_at_ms, failures`,
      [
        ...keys.flatMap(({ key, rule }) => [key, new Date(now + rule.windowSeconds * 1000)]),
        new Date(now),
        new Date(now),
      ],
    );
    const uncount = () => this.#uncount(rows);
    const over = rows.filter((row) => row.failures > keys.find((k) => k.key === row.key)!.rule.limit);
    if (over.length > 0) {
      await uncount();
      const endsAt = Math.max(...over.map((row) => Number(row.ends_at_ms)));
      const retryAfter = Math.max(1, Math.ceil((endsAt - now) / 1000));
      throw new AppError('RATE_LIMITED', 'Too many failed logins; retry later.', { headers: { 'Retry-After': String(retryAfter) } });
    }
    return { succeeded: uncount };
  }

  /** Takes back what `begin` counted, in the same windows (a window that has since restarted is left alone). */
  async #uncount(rows: CountedRow[]): Promise<void> {
    await this.#execute(
      `update login_failures set failures = failures - 1
       where failures > 0 and (${rows.map(() => '(key = ? and window_ends_at = ?)').join(' or ')})`,
      rows.flatMap((row) => [row.key, row.window_ends_at]),
    );
  }

  /** Deletes ended windows; rows a login holds are skipped (no waiting, no deadlock), the next sweep takes them. */
  async #sweepIfDue(now: number): Promise<void> {
    if (now - this.#lastSweep < SWEEP_INTERVAL_MS) return;
    this.#lastSweep = now;
    try {
      await this.#execute(
        `delete from login_failures where key in (
           select key from login_failures where window_ends_at <= ? order by key for update skip locked)`,
        [new Date(now)],
      );
    } catch (err) {
      this.#logger.warn({ err }, 'could not sweep ended login-failure windows');
    }
  }

  async #execute<T>(sql: string, params: unknown[]): Promise<T[]> {
    return (await this.#orm.em.fork().getConnection().execute(sql, params as never[], 'all')) as unknown as T[];
  }
}
