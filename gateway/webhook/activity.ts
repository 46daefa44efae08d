import { query, type SqlPool } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { SIGNATURE_FAILURES, type SignatureFailure } from './signature.js';

/**
 * Webhook activity per integration: when a correctly signed webhook last arrived, and how
 * many were refused for a bad signature in the last hour, with the last reason
 * (contract.md § Chat2Desk as it is). What the dashboard's badge and `webhookStatus` say.
 *
 * The webhook path must not pay for it (it does no database query): `accepted` / `refused`
 * only touch an in-memory map of this process. Every `flushMs` (default 5 s) the process
 * writes what changed in one statement (migration 0012): the last times are kept with
 * `greatest()`, the refusals are added into per-minute rows, so any number of gateway
 * processes add up in PostgreSQL. A flush that fails keeps its counts for the next one; a
 * process that dies loses at most its last `flushMs` of them (statistics, not messages).
 * Memory is bounded by the integrations that received webhooks since the last flush.
 */
export const DEFAULT_ACTIVITY_FLUSH_MS = 5_000;
/** Refusals are counted per minute; rows older than this are deleted. */
const KEEP_FAILURES_MS = 2 * 3600_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const HOUR_MS = 3600_000;
const MINUTE_MS = 60_000;

export interface WebhookActivityOptions {
  /** How often this process writes its counts (ms). */
  flushMs?: number;
}

interface Pending {
  lastWebhookAt: number | null;
  lastFailureAt: number | null;
  lastFailureReason: SignatureFailure | null;
  /** Refusals by minute (epoch ms of the minute's start). */
  failures: Map<number, number>;
}

const FLUSH_SQL = `
with activity as (
  insert into integration_webhook_activity as t (integration_id, company_id, last_webhook_at, last_failure_at, last_failure_reason)
  select u.id, i.company_id, u.webhook_at, u.failure_at, u.reason
  from unnest($1::int[], $2::timestamptz[], $3::timestamptz[], $4::text[]) as u(id, webhook_at, failure_at, reason)
  join integrations i on i.id = u.id
  on conflict (integration_id) do update set
    last_webhook_at = greatest(t.last_webhook_at, excluded.last_webhook_at),
    last_failure_reason = case when excluded.last_failure_at is not null and (t.last_failure_at is null or excluded.last_failure_at >= t.last_failure_at)
      then excluded.last_failure_reason else t.last_failure_reason end,
    last_failure_at = greatest(t.last_failure_at, excluded.last_failure_at)
  returning 1
), failures as (
  insert into integration_signature_failures as t (integration_id, company_id, minute, failures)
  select u.id, i.company_id, u.minute, u.n
  from unnest($5::int[], $6::timestamptz[], $7::int[]) as u(id, minute, n)
  join integrations i on i.id = u.id
  on conflict (integration_id, minute) do update set failures = t.failures + excluded.failures
  returning 1
)
select (select count(*) from activity)::int as activity, (select count(*) from failures)::int as failures`;

const PRUNE_SQL = `delete from integration_signature_failures where minute < $1`;

const READ_SQL = `
select u.id as integration_id, a.last_webhook_at, a.last_failure_at, a.last_failure_reason,
  coalesce((select sum(f.failures) from integration_signature_failures f
            where f.integration_id = u.id and f.company_id = $1 and f.minute > $3), 0)::int as failures_last_hour
from unnest($2::int[]) as u(id)
left join integration_webhook_activity a on a.integration_id = u.id and a.company_id = $1`;

export class WebhookActivity {
  readonly #sql: SqlPool;
  readonly #logger: Logger;
  readonly #now: () => number;
  readonly #flushMs: number;
  #pending = new Map<number, Pending>();
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> | null = null;
  #lastPrune = 0;
  #lastWarning = 0;

  constructor(deps: { sql: SqlPool; logger: Logger; now?: () => number }, options: WebhookActivityOptions = {}) {
    this.#sql = deps.sql;
    this.#logger = deps.logger;
    this.#now = deps.now ?? Date.now;
    this.#flushMs = options.flushMs ?? DEFAULT_ACTIVITY_FLUSH_MS;
  }

  start(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => void this.flush(), this.#flushMs);
    this.#timer.unref();
  }

  #entry(integrationId: number): Pending {
    let p = this.#pending.get(integrationId);
    if (!p) {
      p = { lastWebhookAt: null, lastFailureAt: null, lastFailureReason: null, failures: new Map() };
      this.#pending.set(integrationId, p);
    }
    return p;
  }

  /** A webhook with a valid signature arrived (hot path: memory only). */
  accepted(integrationId: number, at: number): void {
    const p = this.#entry(integrationId);
    if (p.lastWebhookAt === null || at > p.lastWebhookAt) p.lastWebhookAt = at;
  }

  /** A webhook was refused for its signature (hot path: memory only). */
  refused(integrationId: number, reason: SignatureFailure, at: number): void {
    const p = this.#entry(integrationId);
    if (p.lastFailureAt === null || at >= p.lastFailureAt) {
      p.lastFailureAt = at;
      p.lastFailureReason = reason;
    }
    const minute = at - (at % MINUTE_MS);
    p.failures.set(minute, (p.failures.get(minute) ?? 0) + 1);
  }

  /** Writes what this process counted since the last flush; one flush at a time. */
  flush(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    if (this.#pending.size === 0) return Promise.resolve();
    this.#flushing = this.#write().finally(() => {
      this.#flushing = null;
    });
    return this.#flushing;
  }

  async #write(): Promise<void> {
    const batch = this.#pending;
    this.#pending = new Map();
    const ids: number[] = [];
    const webhookAt: (string | null)[] = [];
    const failureAt: (string | null)[] = [];
    const reasons: (string | null)[] = [];
    const failureIds: number[] = [];
    const minutes: string[] = [];
    const counts: number[] = [];
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    for (const [id, p] of batch) {
      ids.push(id);
      webhookAt.push(iso(p.lastWebhookAt));
      failureAt.push(iso(p.lastFailureAt));
      reasons.push(p.lastFailureReason);
      for (const [minute, n] of p.failures) {
        failureIds.push(id);
        minutes.push(new Date(minute).toISOString());
        counts.push(n);
      }
    }
    try {
      await query(this.#sql, 'webhook_activity_flush', FLUSH_SQL, [ids, webhookAt, failureAt, reasons, failureIds, minutes, counts]);
    } catch (err) {
      this.#restore(batch);
      const t = this.#now();
      if (t - this.#lastWarning > 60_000) {
        this.#lastWarning = t;
        this.#logger.warn({ err }, 'webhook activity could not be written; kept for the next flush');
      }
      return;
    }
    const t = this.#now();
    if (t - this.#lastPrune > PRUNE_EVERY_MS) {
      this.#lastPrune = t;
      await query(this.#sql, 'webhook_activity_prune', PRUNE_SQL, [new Date(t - KEEP_FAILURES_MS).toISOString()]).catch(() => {});
    }
  }

  /** Puts an unwritten batch back, merged with what arrived meanwhile. */
  #restore(batch: Map<number, Pending>): void {
    for (const [id, old] of batch) {
      const p = this.#entry(id);
      if (old.lastWebhookAt !== null && (p.lastWebhookAt === null || old.lastWebhookAt > p.lastWebhookAt)) p.lastWebhookAt = old.lastWebhookAt;
      if (old.lastFailureAt !== null && (p.lastFailureAt === null || old.lastFailureAt > p.lastFailureAt)) {
        p.lastFailureAt = old.lastFailureAt;
        p.lastFailureReason = old.lastFailureReason;
      }
      for (const [minute, n] of old.failures) p.failures.set(minute, (p.failures.get(minute) ?? 0) + n);
    }
  }

  /** Stops the timer and writes what is left (a failed last write is given up: statistics only). */
  async close(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#flushing;
    await this.flush();
  }
}

export interface WebhookActivityView {
  lastWebhookAt: string | null;
  signatureFailuresLastHour: number;
  lastSignatureFailure: { at: string; reason: SignatureFailure; message: string } | null;
}

const NO_ACTIVITY: WebhookActivityView = { lastWebhookAt: null, signatureFailuresLastHour: 0, lastSignatureFailure: null };

/** The activity of a company's integrations, as every gateway process wrote it. */
export async function readWebhookActivity(sql: SqlPool, companyId: number, integrationIds: number[], nowMs: number): Promise<Map<number, WebhookActivityView>> {
  const out = new Map<number, WebhookActivityView>();
  if (integrationIds.length === 0) return out;
  const rows = await query<{ integration_id: number; last_webhook_at: Date | null; last_failure_at: Date | null; last_failure_reason: string | null; failures_last_hour: number }>(
    sql,
    'webhook_activity_read',
    READ_SQL,
    [companyId, integrationIds, new Date(nowMs - HOUR_MS).toISOString()],
  );
  for (const r of rows) {
    const reason = r.last_failure_reason as SignatureFailure | null;
    out.set(r.integration_id, {
      lastWebhookAt: r.last_webhook_at ? r.last_webhook_at.toISOString() : null,
      signatureFailuresLastHour: r.failures_last_hour,
      lastSignatureFailure:
        r.last_failure_at && reason ? { at: r.last_failure_at.toISOString(), reason, message: SIGNATURE_FAILURES[reason] ?? reason } : null,
    });
  }
  return out;
}

export const activityOf = (map: Map<number, WebhookActivityView>, id: number): WebhookActivityView => map.get(id) ?? NO_ACTIVITY;

export type WebhookStatus = 'pending' | 'ok' | 'failing';

/**
 * `failing`: a webhook was refused for its signature in the last hour and none was accepted
 * since. `ok`: registered (or a signed webhook proved the helpdesk has it) and not failing:
 * webhooks arrive, or none was expected yet. `pending`: neither.
 */
export function webhookStatusOf(registered: boolean, activity: WebhookActivityView, nowMs: number): WebhookStatus {
  const failure = activity.lastSignatureFailure;
  if (failure && Date.parse(failure.at) > nowMs - HOUR_MS && (!activity.lastWebhookAt || Date.parse(activity.lastWebhookAt) < Date.parse(failure.at))) return 'failing';
  return registered || activity.lastWebhookAt ? 'ok' : 'pending';
}
