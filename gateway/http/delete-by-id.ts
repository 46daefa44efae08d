import type { EntityName, FilterQuery } from '@mikro-orm/core';
import { notFound } from '../../lib/errors.js';
import type { TenantScope } from '../../lib/tenancy.js';
import { idParam } from './validate.js';

/**
 * `DELETE …/:id` of a company-owned row: deletes the row the path's id names (through the
 * tenant scope: another company's is not there) if it also matches `where`; 404 NOT_FOUND
 * ("<what> not found.") when none does. Answers the id.
 */
export async function deleteById<T extends object>(tenant: TenantScope, entity: EntityName<T>, rawId: unknown, what: string, where: FilterQuery<T> = {}): Promise<number> {
  const id = idParam(rawId, what);
  const n = await tenant.em.nativeDelete(entity, { ...(where as object), id } as FilterQuery<T>);
  if (n === 0) throw notFound(what);
  return id;
}
