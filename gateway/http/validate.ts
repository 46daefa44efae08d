import type { RequestHandler } from 'express';
import { checkUrlHost, guardForUrl } from '../../lib/address-guard.js';
import { AppError, type FieldError } from '../../lib/errors.js';
import { invalidFields, UUID_TEXT } from '../../lib/json-validation.js';
import { UNSTORABLE_MESSAGE, unstorableFields } from '../../lib/text.js';
import type { ParamDoc } from './route-docs.js';
import { ID } from './schemas.js';

/**
 * The ajv instance, its formats and bodyValidator with its error wording live in
 * lib/json-validation.ts (the channels' webhook normalisers use them too); re-exported here
 * for the routes.
 */
export { bodyValidator, invalidField, invalidFields, toFieldErrors, type BodyValidator, type BodyValidatorOptions } from '../../lib/json-validation.js';

/** Whether a path or query value is a UUID (a user id): anything else names no row. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_TEXT.test(value);

/** A non-negative USD amount as a decimal string (up to 6 decimals: the ledger's precision). */
export const USD_AMOUNT = '^\\d{1,12}(\\.\\d{1,6})?$';

/**
 * Query strings under /api: a parameter holding U+0000 (`%00`) is refused with 400 naming it,
 * whatever the route, before any route reads it. (Percent-encoded bytes that are not UTF-8,
 * `%ED%A0%80`, decode to U+FFFD, which is storable.)
 */
export const storableQuery: RequestHandler = (req, _res, next) => {
  const fields = unstorableFields(req.query);
  if (fields.length) throw invalidFields(fields.map((field) => ({ field, message: UNSTORABLE_MESSAGE })));
  next();
};

/** Parses a positive integer path id; anything else is a resource that cannot exist (404). */
export function idParam(value: unknown, what = 'Resource'): number {
  if (typeof value === 'string' && /^[1-9]\d{0,9}$/.test(value)) {
    const n = Number(value);
    if (n <= 2_147_483_647) return n;
  }
  throw new AppError('NOT_FOUND', `${what} not found.`);
}

/** A query filter by id (`?integrationId=7`): the id, undefined when absent; a bad one (not an int a column holds) is added to `details`. */
export function idFilter(q: Record<string, unknown>, field: string, details: FieldError[]): number | undefined {
  const v = q[field];
  if (v === undefined) return undefined;
  if (typeof v === 'string' && /^[1-9]\d{0,9}$/.test(v) && Number(v) <= ID.maximum) return Number(v);
  details.push({ field, message: 'must be a positive integer' });
  return undefined;
}

/** The route doc of a path id that idParam reads. */
export const idPathParam = (what: string, name = 'id'): ParamDoc => ({ name, in: 'path', description: `The ${what}'s id.`, schema: ID, example: 1 });

/**
 * A URL a tenant is about to store (an integration's apiUrl, an agent's baseUrl) must not
 * lead to internal addresses (lib/address-guard.ts): 400 on `field` otherwise. Operator
 * URLs and ALLOW_PRIVATE_URLS pass unchecked. Connections are guarded again when made.
 */
export async function assertTenantUrl(config: { allowPrivateUrls: boolean; helpdeskGlobalUrl: string; helpdeskEuropeUrl: string }, field: string, url: string): Promise<void> {
  const guard = guardForUrl(config, url);
  if (!guard) return;
  const verdict = await checkUrlHost(url, guard);
  if (!verdict.ok) throw new AppError('VALIDATION_ERROR', `Invalid ${field}.`, { details: [{ field, message: verdict.error }] });
}
