import type { ParamDoc } from './route-docs.js';
import type { QueryParams } from './route.js';
import { arrayOf, COUNT, object, type JsonSchema } from './schemas.js';
import { invalidFields } from './validate.js';

/**
 * Lists (contract.md § Chat2Desk as it is; lists; errors): `limit` (default 50, 1–200) and
 * `offset` in the query, and the answer `{"<plural>":[…],"total":N,"limit":50,"offset":0}`,
 * so a client can tell where a list ends. Every list route reads its page here.
 */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 200;
/** What pageParams reads of an offset: up to nine digits. */
const MAX_OFFSET = 999_999_999;

export interface Page {
  limit: number;
  offset: number;
}

/** `limit` (default 50, max 200) and `offset` of a list; 400 VALIDATION_ERROR naming the bad one. */
export function pageParams(q: Record<string, unknown>): Page {
  const details = [];
  const int = (v: unknown) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : NaN);
  const limit = q.limit === undefined ? DEFAULT_LIST_LIMIT : int(q.limit);
  const offset = q.offset === undefined ? 0 : int(q.offset);
  if (!(limit >= 1 && limit <= MAX_LIST_LIMIT)) details.push({ field: 'limit', message: `must be an integer from 1 to ${MAX_LIST_LIMIT}` });
  if (!(offset >= 0)) details.push({ field: 'offset', message: 'must be a non-negative integer' });
  if (details.length) throw invalidFields(details);
  return { limit, offset };
}

/** The `limit` and `offset` query parameters of every list, for its route docs. */
export const PAGE_PARAMS: readonly ParamDoc[] = [
  { name: 'limit', in: 'query', description: `Items per page (1–${MAX_LIST_LIMIT}, default ${DEFAULT_LIST_LIMIT}).`, schema: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT, default: DEFAULT_LIST_LIMIT } },
  { name: 'offset', in: 'query', description: 'Items to skip (default 0).', schema: { type: 'integer', minimum: 0, maximum: MAX_OFFSET, default: 0 } },
];

/** The page of a list route's query: its documented parameters and their parser. */
export const PAGE_QUERY: QueryParams<Page> = { params: PAGE_PARAMS, parse: pageParams };

/** The answer of a list: `{"<key>":[…],"total":N,"limit":50,"offset":0}`. */
export const pageOf = (key: string, item: JsonSchema): JsonSchema => object({ [key]: arrayOf(item), total: COUNT, limit: { type: 'integer', minimum: 1, maximum: MAX_LIST_LIMIT }, offset: COUNT });

/** What a list's route docs say of its VALIDATION_ERROR. */
export const BAD_PAGE = 'a bad limit or offset';

/** The documented example of a list: one item. */
export const examplePage = (key: string, item: unknown) => ({ [key]: [item], total: 1, limit: DEFAULT_LIST_LIMIT, offset: 0 });
