import type { EntityManager, Orm } from './db.js';

/**
 * The data-access layer's tenant scope. Every company-owned entity has the `tenant` filter
 * (schema/entities.ts), which is on by default; this is the one place that sets its
 * parameter. Routes and workers get a scope and never write their own `companyId` condition.
 */
export interface TenantScope {
  readonly companyId: number;
  /** A fresh EntityManager whose reads are limited to this company. */
  readonly em: EntityManager;
}

export function tenantScope(orm: Orm, companyId: number): TenantScope {
  const em = orm.em.fork();
  em.setFilterParams('tenant', { companyId });
  return { companyId, em };
}

/** For system work that spans companies (auth lookups, workers); reads must pass `filters: false`. */
export function systemEm(orm: Orm): EntityManager {
  return orm.em.fork();
}
