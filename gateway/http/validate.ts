import { Ajv, type ErrorObject, type JSONSchemaType, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { AppError, type FieldError } from '../../lib/errors.js';

const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, coerceTypes: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);

function fieldOf(e: ErrorObject): string {
  const path = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (e.keyword === 'required') return [path, (e.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.');
  if (e.keyword === 'additionalProperties') return [path, (e.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.');
  return path || '(body)';
}

function messageOf(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties') return 'is not a known field';
  if (e.keyword === 'format') return `must be a valid ${(e.params as { format: string }).format}`;
  return e.message ?? 'is invalid';
}

export function toFieldErrors(errors: ErrorObject[] | null | undefined): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors ?? []) {
    const d = { field: fieldOf(e), message: messageOf(e) };
    const key = `${d.field}\u0000${d.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(d);
    }
  }
  return out;
}

/** Compiles a body schema once; the returned function throws 400 VALIDATION_ERROR listing each bad field. */
export function bodyValidator<T>(schema: JSONSchemaType<T> | Record<string, unknown>): (body: unknown) => T {
  const validate = ajv.compile(schema) as ValidateFunction<T>;
  return (body: unknown): T => {
    if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new AppError('VALIDATION_ERROR', 'The body must be a JSON object.', { details: [{ field: '(body)', message: 'must be a JSON object' }] });
    }
    if (!validate(body)) {
      const details = toFieldErrors(validate.errors);
      throw new AppError('VALIDATION_ERROR', `Invalid ${details.map((d) => d.field).join(', ')}.`, { details });
    }
    return body;
  };
}

/** Parses a positive integer path id; anything else is a resource that cannot exist (404). */
export function idParam(value: unknown, what = 'Resource'): number {
  if (typeof value === 'string' && /^[1-9]\d{0,9}$/.test(value)) {
    const n = Number(value);
    if (n <= 2_147_483_647) return n;
  }
  throw new AppError('NOT_FOUND', `${what} not found.`);
}
