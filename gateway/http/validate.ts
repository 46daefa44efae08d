import type { RequestHandler } from 'express';
import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { checkUrlHost, guardForUrl } from '../../lib/address-guard.js';
import { AppError, type FieldError } from '../../lib/errors.js';
import { storable, UNSTORABLE_MESSAGE, unstorableFields } from '../../lib/text.js';
import type { ParamDoc } from './route-docs.js';
import { FLOAT_MAX, FLOAT_MIN, ID } from './schemas.js';

// verbose: an error carries the schema it failed, so alternatives (anyOf) can be described in one message.
// strictNumbers (ajv's default) refuses NaN and ±Infinity (a JSON 1e999 parses to Infinity).
const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, coerceTypes: false, verbose: true, allowUnionTypes: true, strictNumbers: true });
(addFormats as unknown as (a: Ajv) => void)(ajv);
// `format: float` (OpenAPI's single precision) is what a PostgreSQL `real` column stores: ajv-formats
// accepts any number, but 1e-46 would round to zero there, and PostgreSQL refuses that with an error.
ajv.addFormat('float', { type: 'number', validate: (n: number) => n === 0 || (Math.abs(n) >= FLOAT_MIN && Math.abs(n) <= FLOAT_MAX) });

/** A UUID as PostgreSQL's `uuid` reads it from text (any case). */
const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// `format: uuid` is what a uuid column takes: ajv-formats also accepts a `urn:uuid:` prefix, which
// PostgreSQL refuses (a 500 at the statement instead of a 400 naming the field).
ajv.addFormat('uuid', UUID_TEXT);

/** Whether a path or query value is a UUID (a user id): anything else names no row. */
export const isUuid = (value: unknown): value is string => typeof value === 'string' && UUID_TEXT.test(value);

function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [path, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties') return [path, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
  return path || '(body)';
}

const TYPE_TEXT: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** "a, b or c" */
const oneOf = (items: string[]): string => {
  const unique = [...new Set(items)];
  return unique.length <= 1 ? (unique[0] ?? 'valid') : `${unique.slice(0, -1).join(', ')} or ${unique.at(-1)}`;
};

/** What a (sub)schema accepts, in words: "a non-empty string, an integer or null". */
function describe(schema: unknown): string {
  if (schema === null || typeof schema !== 'object') return 'valid';
  const s = schema as { anyOf?: unknown[]; oneOf?: unknown[]; enum?: unknown[]; type?: string | string[]; minLength?: number; minimum?: number; pattern?: string };
  const alternatives = s.anyOf ?? s.oneOf;
  if (Array.isArray(alternatives)) return oneOf(alternatives.map(describe));
  if (Array.isArray(s.enum)) return `one of ${s.enum.map((v) => String(v)).join(', ')}`;
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  return oneOf(
    types.map((t) => {
      if (t === 'string' && s.pattern && /^\^\\d/.test(s.pattern)) return 'a string of digits';
      if (t === 'string' && s.minLength === 1) return 'a non-empty string';
      if (t === 'integer' && s.minimum === 0) return 'a whole number ≥ 0';
      return TYPE_TEXT[t] ?? t;
    }),
  );
}

function messageOf(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    case 'format':
      if ((e.params as { format: string }).format === 'float') return `must be 0 or of a magnitude from ${FLOAT_MIN.toPrecision(2)} to ${FLOAT_MAX.toPrecision(2)} (a single-precision number)`;
      return `must be a valid ${(e.params as { format: string }).format}`;
    case 'anyOf':
    case 'oneOf':
      return `must be ${describe({ anyOf: e.schema })}`;
    case 'type':
      return `must be ${describe({ type: e.schema })}`;
    case 'enum':
      return `must be one of ${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => String(v)).join(', ')}`;
    case 'minLength':
      return e.schema === 1 ? 'must not be empty' : `must be at least ${String(e.schema)} characters`;
    case 'maxLength':
      return `must be at most ${String(e.schema)} characters`;
    case 'pattern':
      return e.schema === '\\S' ? 'must not be blank' : (e.message ?? 'is invalid');
    default:
      return e.message ?? 'is invalid';
  }
}

/**
 * One message per field: the errors ajv reports inside the branches of an `anyOf` (one per
 * alternative: "must be string", "must be integer", …) are folded into the `anyOf`'s own,
 * which says every alternative at once; of several errors on one field the first is kept.
 */
export function toFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const all = errors ?? [];
  const branches = all.filter((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf').map((e) => `${e.schemaPath}/`);
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of all) {
    if (branches.some((prefix) => e.schemaPath.startsWith(prefix))) continue;
    const d = { field: fieldOf(e), message: messageOf(e) };
    if (!seen.has(d.field)) {
      seen.add(d.field);
      out.push(d);
    }
  }
  return out;
}

/** A non-negative USD amount as a decimal string (up to 6 decimals: the ledger's precision). */
export const USD_AMOUNT = '^\\d{1,12}(\\.\\d{1,6})?$';

/**
 * A body check: throws 400 VALIDATION_ERROR listing each bad field, else returns the body.
 * `schema` is the very object it was compiled from: the OpenAPI document shows that one
 * (gateway/http/openapi.ts), so what is documented is what is checked.
 */
export interface BodyValidator<T> {
  (body: unknown): T;
  readonly schema: Readonly<Record<string, unknown>>;
}

export interface BodyValidatorOptions {
  /**
   * Top-level string fields whose U+0000 and unpaired surrogates are removed (lib/text.ts
   * storable) rather than refused: a document's content, pasted or converted from a file,
   * where one stray character must not cost the whole text. Every other string is refused.
   */
  cleaned?: readonly string[];
}

/** 400 VALIDATION_ERROR naming each bad field: `Invalid a, b.` with their details. */
export const invalidFields = (details: FieldError[]): AppError => new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });

/** 400 VALIDATION_ERROR of one bad field, with why: `Invalid title: must be at most 500 characters.` */
export const invalidField = (field: string, message: string): AppError => new AppError('VALIDATION_ERROR', `Invalid ${field}: ${message}.`, { details: [{ field, message }] });

/**
 * Compiles a body schema once; the returned function throws 400 VALIDATION_ERROR listing each
 * bad field: those the schema refuses, and every string (or key) holding U+0000 or an
 * unpaired surrogate, which PostgreSQL cannot store (a 500 otherwise, at the first write).
 */
export function bodyValidator<T>(schema: JSONSchemaType<T> | Record<string, unknown>, options: BodyValidatorOptions = {}): BodyValidator<T> {
  const validate = ajv.compile(schema) as ValidateFunction<T>;
  const cleaned = options.cleaned ?? [];
  const check = (body: unknown): T => {
    if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new AppError('VALIDATION_ERROR', 'The body must be a JSON object (sent with Content-Type: application/json).', { details: [{ field: '(body)', message: 'must be a JSON object' }] });
    }
    const fields = body as Record<string, unknown>;
    for (const name of cleaned) if (typeof fields[name] === 'string') fields[name] = storable(fields[name]);
    // A bad character first: it is why such a field fails its other checks too (`must be a valid email`).
    const details: FieldError[] = unstorableFields(body).map((field) => ({ field, message: UNSTORABLE_MESSAGE }));
    if (!validate(body)) for (const d of toFieldErrors(validate.errors)) if (!details.some((u) => u.field === d.field)) details.push(d);
    if (details.length) throw invalidFields(details);
    return body as T;
  };
  return Object.assign(check, { schema: schema as Readonly<Record<string, unknown>> });
}

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
