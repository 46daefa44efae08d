import type { EntityName, FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from './db.js';
import { AppError } from './errors.js';

/**
 * Quotas per company (contract.md § No tenant slows another down; config.quotas): one more
 * than the limit is refused with 403 QUOTA_EXCEEDED, `details: [{field: "<resource>",
 * message: "limit N"}]`.
 *
 * The count and the write that adds one happen in one transaction under a lock per company
 * (a transaction-scoped advisory lock, not the company's row, which model calls update for
 * its balance): of two creates at once at N-1, the second counts after the first committed,
 * so both cannot pass.
 */
const QUOTA_LOCK = 19_002;

export interface QuotaCheck<T extends object = object> {
  companyId: number;
  /** The resource as the answer names it: "agents", "knowledgeBases", "integrations", "apiTokens". */
  field: string;
  limit: number;
  /** What is counted, through the tenant-scoped manager (its filter keeps the count to the company). */
  entity: EntityName<T>;
  where?: FilterQuery<T>;
}

export const quotaExceeded = (field: string, limit: number): AppError =>
  new AppError('QUOTA_EXCEEDED', `The company has reached its limit of ${limit} ${field}.`, { details: [{ field, message: `limit ${limit}` }] });

/**
 * Inside a transaction on `em`, before the write that adds one: takes the company's quota
 * lock (held to the end of the transaction) and throws QUOTA_EXCEEDED when the company is at
 * its limit.
 */
export async function holdQuota<T extends object>(em: EntityManager, quota: QuotaCheck<T>): Promise<void> {
  await em.execute('select pg_advisory_xact_lock(?, ?)', [QUOTA_LOCK, quota.companyId]);
  // flushMode commit: the new row, already in the unit of work, must not be flushed before it is counted.
  const used = await em.count(quota.entity, quota.where ?? {}, { flushMode: 'commit' });
  if (used >= quota.limit) throw quotaExceeded(quota.field, quota.limit);
}

/**
 * Runs `write` (which flushes `em` or inserts with it) in a transaction on `em` once the
 * company is below its limit; throws QUOTA_EXCEEDED (nothing written) otherwise.
 */
export async function withinQuota<T extends object, R>(em: EntityManager, quota: QuotaCheck<T>, write: () => Promise<R>): Promise<R> {
  await em.begin();
  try {
    await holdQuota(em, quota);
    const out = await write();
    await em.commit();
    return out;
  } catch (err) {
    await em.rollback();
    throw err;
  }
}
