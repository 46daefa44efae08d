import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { AppError, type FieldError } from './errors.js';
import { storable, UNSTORABLE_MESSAGE, unstorableFields } from './text.js';

/**
 * JSON body checks shared by the API (gateway/http/validate.ts re-exports them) and the
 * channels' webhook normalisers (lib/channels/): one ajv instance with its formats, and
 * bodyValidator with the wording of its 400 VALIDATION_ERROR (one message per field).
 */

/** The smallest and largest magnitudes of a PostgreSQL `real` (single precision, normal numbers). */
export const FLOAT_MIN = 1.1754943508222875e-38;
export const FLOAT_MAX = 3.4028234663852886e38;

// verbose: an error carries the schema it failed, so alternatives (anyOf) can be described in one message.
// strictNumbers (ajv's default) refuses NaN and ±Infinity (a JSON 1e999 parses to Infinity).
const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, coerceTypes: false, verbose: true, allowUnionTypes: true, strictNumbers: true });
(addFormats as unknown as (a: Ajv) => void)(ajv);
// `format: float` (OpenAPI's single precision) is what a PostgreSQL `real` column stores: ajv-formats
// accepts any number, but 1e-46 would round to zero there, and PostgreSQL refuses that with an error.
ajv.addFormat('float', { type: 'number', validate: (n: number) => n === 0 || (Math.abs(n) >= FLOAT_MIN && Math.abs(n) <= FLOAT_MAX) });

/** A UUID as PostgreSQL's `uuid` reads it from text (any case). */
export const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// `format: uuid` is what a uuid column takes: ajv-formats also accepts a `urn:uuid:` prefix, which
// PostgreSQL refuses (a 500 at the statement instead of a 400 naming the field).
ajv.addFormat('uuid', UUID_TEXT);

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

/**
 * A body check: throws 400 VALIDATION_ERROR listing each bad field, else returns the body.
 * `schema` is the very object it was compiled from: the OpenAPI document shows that one
 * (gateway/http/openapi.ts), so what is documented is what is checked.
 */
export interface BodyValidator<T> {
  /** `mayHoldUnstorable` false: the parser saw no escape that makes unstorable text (gateway/http/json-body.ts). */
  (body: unknown, mayHoldUnstorable?: boolean): T;
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
  const check = (body: unknown, mayHoldUnstorable = true): T => {
    if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new AppError('VALIDATION_ERROR', 'The body must be a JSON object (sent with Content-Type: application/json).', { details: [{ field: '(body)', message: 'must be a JSON object' }] });
    }
    const fields = body as Record<string, unknown>;
    for (const name of cleaned) if (typeof fields[name] === 'string') fields[name] = storable(fields[name]);
    // A bad character first: it is why such a field fails its other checks too (`must be a valid email`).
    const details: FieldError[] = mayHoldUnstorable ? unstorableFields(body).map((field) => ({ field, message: UNSTORABLE_MESSAGE })) : [];
    if (!validate(body)) for (const d of toFieldErrors(validate.errors)) if (!details.some((u) => u.field === d.field)) details.push(d);
    if (details.length) throw invalidFields(details);
    return body as T;
  };
  return Object.assign(check, { schema: schema as Readonly<Record<string, unknown>> });
}

