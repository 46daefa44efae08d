import { performance } from 'node:perf_hooks';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { ActionMethod, ToolCallStatus } from '../../../schema/action-entities.js';
import type { AddressGuard } from '../../address-guard.js';
import { bodyText, outboundRequest } from '../../outbound-http.js';
import { outboundErrorIn, type OutboundError } from '../../outbound-errors.js';

/**
 * An agent's HTTP action (contract.md § Agent actions): the model's arguments checked against
 * the action's JSON Schema, put into the request (URL placeholders, query or JSON body), sent
 * through the outbound guard with the action's deadline and a bounded answer, and the answer
 * turned into what the model reads (≤ MAX_TOOL_RESULT_BYTES, header secrets replaced).
 */

/** The most of an answer read; a larger one fails the call. */
export const MAX_TOOL_ANSWER_BYTES = 256 * 1024;
/** The most the model is given of one call's result, serialised. */
export const MAX_TOOL_RESULT_BYTES = 8 * 1024;
export const DEFAULT_TOOL_TIMEOUT_MS = 10_000;
export const MAX_TOOL_TIMEOUT_MS = 15_000;
/** The largest `parameters` schema accepted, serialised, and its deepest nesting. */
export const MAX_PARAMETERS_SCHEMA_BYTES = 16 * 1024;
export const MAX_PARAMETERS_SCHEMA_DEPTH = 10;

export const REDACTED = '[redacted]';
/** Secrets shorter than this are not looked for in results (a 2-letter value is everywhere). */
const MIN_SECRET_LENGTH = 4;
/** Argument names that hold secrets whatever their schema says. */
const SECRET_NAME = /pass(word)?|secret|token|api[-_]?key|authorization|cvv|card[-_]?number/i;

export interface ActionCall {
  name: string;
  parameters: Record<string, unknown>;
  method: ActionMethod;
  url: string;
  /** Opened (not sealed) header values. */
  headers: Record<string, string>;
  body: 'json' | 'none';
  timeoutMs: number;
}

export interface ToolOutcome {
  status: Exclude<ToolCallStatus, 'started'>;
  httpStatus: number | null;
  ms: number;
  /** Our words, for the log; null when it went well. */
  error: string | null;
  /** What the model gets, ≤ MAX_TOOL_RESULT_BYTES serialised. */
  result: Record<string, unknown>;
}

// strict: false: a company's schema may carry keywords ajv does not know (examples, x-…) and is
// still usable. addUsedSchema: false: a schema's `$id` is not registered on the shared instance
// (two companies' schemas with the same `$id` must not clash).
const ajv = new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false, addUsedSchema: false, logger: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
// A format that only marks a value as secret (redactArgs): any string is one.
ajv.addFormat('password', true);

/** Compiled validators by schema text; the oldest go first past the bound (ajv's own cache of each goes with it). */
const VALIDATOR_CACHE_SIZE = 500;
const validators = new Map<string, { validate: ValidateFunction; schema: object }>();

function validatorFor(parameters: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(parameters);
  const hit = validators.get(key);
  if (hit) {
    validators.delete(key);
    validators.set(key, hit);
    return hit.validate;
  }
  const schema = structuredClone(parameters);
  const validate = ajv.compile(schema);
  validators.set(key, { validate, schema });
  if (validators.size > VALIDATOR_CACHE_SIZE) {
    const [oldestKey, oldest] = validators.entries().next().value!;
    validators.delete(oldestKey);
    ajv.removeSchema(oldest.schema);
  }
  return validate;
}

/** `arguments.a.b` of an ajv error. */
function fieldOf(e: ErrorObject): string {
  const parts = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') parts.push((e.params as { missingProperty: string }).missingProperty);
  if (e.keyword === 'additionalProperties') parts.push((e.params as { additionalProperty: string }).additionalProperty);
  return ['arguments', ...parts].join('.');
}

function messageOf(e: ErrorObject): string {
  if (e.keyword === 'required') return 'is required';
  if (e.keyword === 'additionalProperties') return 'is not a known argument';
  return e.message ?? 'is not valid';
}

/**
 * The model's arguments checked against the action's `parameters` (defaults filled in, on a
 * copy). On failure, `field` names the first wrong one (`arguments.orderId`) and `error` says
 * what is wrong with it, for the model (which may try again) and for a 400.
 */
export function checkArguments(parameters: Record<string, unknown>, args: unknown): { ok: true; args: Record<string, unknown> } | { ok: false; error: string; field: string } {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return { ok: false, error: 'arguments must be an object', field: 'arguments' };
  let validate: ValidateFunction;
  try {
    validate = validatorFor(parameters);
  } catch (err) {
    return { ok: false, error: `the action's parameters are not a usable JSON Schema (${(err as Error).message})`, field: 'parameters' };
  }
  const copy = structuredClone(args) as Record<string, unknown>;
  if (validate(copy)) return { ok: true, args: copy };
  const first = validate.errors?.[0];
  if (!first) return { ok: false, error: 'arguments are not valid', field: 'arguments' };
  const field = fieldOf(first);
  return { ok: false, error: `${field} ${messageOf(first)}`, field };
}

function depthOf(value: unknown, depth = 0): number {
  if (value === null || typeof value !== 'object') return depth;
  let deepest = depth + 1;
  for (const v of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(v, depth + 1));
    if (deepest > MAX_PARAMETERS_SCHEMA_DEPTH) break;
  }
  return deepest;
}

/** Null when `schema` is a usable JSON Schema of an object (the arguments), else why not. */
export function checkParametersSchema(schema: unknown): string | null {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'must be a JSON Schema object';
  if ((schema as { type?: unknown }).type !== 'object') return 'must have "type": "object"';
  if (Buffer.byteLength(JSON.stringify(schema)) > MAX_PARAMETERS_SCHEMA_BYTES) return `must be at most ${MAX_PARAMETERS_SCHEMA_BYTES / 1024} KiB`;
  if (depthOf(schema) > MAX_PARAMETERS_SCHEMA_DEPTH) return `must not be nested deeper than ${MAX_PARAMETERS_SCHEMA_DEPTH} levels`;
  if (hasPattern(schema)) return 'may not use "pattern" or "patternProperties": a company\'s regular expression would run on the worker for every call (use enum, format or maxLength)';
  try {
    validatorFor(schema as Record<string, unknown>);
  } catch (err) {
    return `is not a valid JSON Schema: ${(err as Error).message}`;
  }
  return null;
}

/** Keywords whose value maps names to schemas (the names are not keywords). */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas']);

/**
 * Whether a schema uses a regular expression of its own. Refused: ajv runs them with
 * JavaScript's backtracking engine, where one pattern such as `(a+)+$` holds the worker's
 * event loop for seconds on a 30-character argument (every tenant's answers stall).
 */
function hasPattern(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.some(hasPattern);
  if (schema === null || typeof schema !== 'object') return false;
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'pattern' || key === 'patternProperties') return true;
    if (SCHEMA_MAPS.has(key) && value && typeof value === 'object') {
      if (Object.values(value).some(hasPattern)) return true;
    } else if (key !== 'enum' && key !== 'const' && key !== 'default' && key !== 'examples' && hasPattern(value)) return true;
  }
  return false;
}

/** `{name}` in an action URL. */
const PLACEHOLDER = /\{([^{}/?#&=\s]+)\}/g;

/** Null when `url` is an http(s) URL whose `{placeholders}` are all in its path or query and each a parameter; else why not. */
export function checkActionUrl(url: string, parameterNames: string[]): string | null {
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/.exec(url);
  if (!authority) return 'must be an absolute http or https URL';
  if (/[{}]/.test(authority[0])) return 'may have {placeholders} only in its path or query, not in its scheme, host or port';
  let parsed: URL;
  try {
    parsed = new URL(url.replace(PLACEHOLDER, 'x'));
  } catch {
    return 'is not a valid URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must be an http or https URL';
  if (parsed.username || parsed.password) return 'must not contain credentials (put them in a header)';
  const known = new Set(parameterNames);
  for (const [, name] of url.matchAll(PLACEHOLDER)) {
    if (!known.has(name!)) return `has the placeholder {${name}}, which is not one of the parameters`;
  }
  const rest = url.replace(PLACEHOLDER, '');
  if (/[{}]/.test(rest.slice(authority[0].length))) return 'has an unclosed or empty { } placeholder';
  return null;
}

/** A query parameter's text: scalars as they are, objects as JSON. */
const queryValue = (v: unknown): string => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));

/** The HTTP request an action makes for `args` (already checked): placeholders filled, the rest as query or JSON body. */
export function actionRequest(action: ActionCall, args: Record<string, unknown>): { method: string; url: string; headers: Record<string, string>; body?: Buffer } {
  const used = new Set<string>();
  const filled = action.url.replace(PLACEHOLDER, (_, name: string) => {
    used.add(name);
    const v = args[name];
    return v === undefined || v === null ? '' : encodeURIComponent(queryValue(v));
  });
  const rest = Object.fromEntries(Object.entries(args).filter(([k, v]) => !used.has(k) && v !== undefined));
  const headers: Record<string, string> = { ...action.headers };
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('accept')) headers.accept = 'application/json';
  if (action.body === 'json') {
    if (!has('content-type')) headers['content-type'] = 'application/json';
    return { method: action.method, url: filled, headers, body: Buffer.from(JSON.stringify(rest)) };
  }
  // Appended as text: the URL's own query and path stay byte for byte as the company wrote them.
  const pairs = Object.entries(rest).flatMap(([k, v]) => (v === null ? [] : (Array.isArray(v) ? v : [v]).map((one) => `${encodeURIComponent(k)}=${encodeURIComponent(queryValue(one))}`)));
  if (pairs.length === 0) return { method: action.method, url: filled, headers };
  const hash = filled.indexOf('#');
  const [base, fragment] = hash < 0 ? [filled, ''] : [filled.slice(0, hash), filled.slice(hash)];
  const joiner = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return { method: action.method, url: `${base}${joiner}${pairs.join('&')}${fragment}`, headers };
}

/**
 * The secrets to keep out of results and logs: each header value of at least 4 characters, and
 * the credential of an `<scheme> <credential>` value (`Bearer sk-…`), which an API may echo alone.
 */
export function secretsOf(headers: Record<string, string>): string[] {
  const out = new Set<string>();
  for (const value of Object.values(headers)) {
    if (value.length >= MIN_SECRET_LENGTH) out.add(value);
    const credential = /^\S+\s+(\S+)$/.exec(value.trim())?.[1];
    if (credential && credential.length >= MIN_SECRET_LENGTH) out.add(credential);
  }
  // Longest first: a value containing a shorter one is replaced whole.
  return [...out].sort((a, b) => b.length - a.length);
}

/** `text` with every header secret (secretsOf) replaced by REDACTED. */
export function hideSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.replaceAll(s, REDACTED);
  return out;
}

/** `value` with every secret inside its strings (keys too) replaced. */
function hideSecretsDeep(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return hideSecrets(value, secrets);
  if (Array.isArray(value)) return value.map((v) => hideSecretsDeep(v, secrets));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [hideSecrets(k, secrets), hideSecretsDeep(v, secrets)]));
  return value;
}

type Schema = Record<string, unknown> | undefined;
const asSchema = (s: unknown): Schema => (s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Record<string, unknown>) : undefined);

function isSecretProperty(name: string, schema: Schema): boolean {
  return SECRET_NAME.test(name) || schema?.writeOnly === true || schema?.format === 'password';
}

function redactValue(value: unknown, schema: Schema, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return hideSecrets(value, secrets);
  if (Array.isArray(value)) {
    const items = schema?.items;
    const prefix = Array.isArray(schema?.prefixItems) ? schema.prefixItems : Array.isArray(items) ? items : null;
    return value.map((v, i) => redactValue(v, asSchema(prefix ? prefix[i] : items), secrets));
  }
  if (value !== null && typeof value === 'object') {
    const properties = asSchema(schema?.properties);
    const additional = asSchema(schema?.additionalProperties);
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => {
        const sub = asSchema(properties?.[k]) ?? additional;
        return [k, isSecretProperty(k, sub) ? REDACTED : redactValue(v, sub, secrets)];
      }),
    );
  }
  return value;
}

/**
 * The arguments as they may be stored and shown (ledger, transition log, logs): secret
 * properties (`writeOnly`, `format: "password"`, or a secret-looking name), nested ones too,
 * become "[redacted]", and header secrets inside strings are replaced.
 */
export function redactArgs(args: Record<string, unknown>, parameters: Record<string, unknown>, secrets: readonly string[]): Record<string, unknown> {
  return redactValue(args, parameters, secrets) as Record<string, unknown>;
}

const serialisedBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** The fields cut first when a result is too long (the payload, not its status). */
const CUTTABLE = ['body', 'result', 'error'];

/**
 * What the model gets of a call: secrets replaced (before any cut, so no cut can end inside
 * one and show its beginning), and at most MAX_TOOL_RESULT_BYTES
 * serialised: a longer payload (`body`, `result` or `error`) is cut, as text, and the result
 * marked `"truncated": true`.
 */
export function modelResult(value: Record<string, unknown>, secrets: readonly string[]): Record<string, unknown> {
  const clean = hideSecretsDeep(value, secrets) as Record<string, unknown>;
  if (serialisedBytes(clean) <= MAX_TOOL_RESULT_BYTES) return clean;
  const field = CUTTABLE.find((k) => k in clean);
  if (field) {
    const full = typeof clean[field] === 'string' ? (clean[field] as string) : JSON.stringify(clean[field]);
    const cutTo = (n: number) => {
      let text = full.slice(0, n);
      // A cut inside a surrogate pair would leave half a character.
      if (/[\uD800-\uDBFF]$/.test(text)) text = text.slice(0, -1);
      return { ...clean, [field]: text, truncated: true };
    };
    // The longest cut that fits (serialised size grows with the cut's length).
    let lo = 0;
    let hi = full.length;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (serialisedBytes(cutTo(mid)) <= MAX_TOOL_RESULT_BYTES) lo = mid;
      else hi = mid - 1;
    }
    const cut = cutTo(lo);
    if (serialisedBytes(cut) <= MAX_TOOL_RESULT_BYTES) return cut;
  }
  return { error: 'the result is too large to show', truncated: true };
}

const elapsed = (since: number) => Math.round(performance.now() - since);

/** An answer's body for the model: parsed JSON, else its text. */
function answerBody(body: Buffer): unknown {
  const text = bodyText(body);
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A failed exchange in our words, and its status word, by the error's code. */
export function failureOf(err: OutboundError | null, timeoutMs: number): { status: ToolOutcome['status']; error: string } {
  switch (err?.code) {
    case 'TIMEOUT':
      return { status: 'timeout', error: `no answer within ${timeoutMs} ms` };
    case 'BLOCKED_ADDRESS':
      return { status: 'blocked', error: 'blocked: the address is private, loopback or otherwise internal' };
    case 'BODY_TOO_LARGE':
      return { status: 'error', error: `the answer is larger than ${MAX_TOOL_ANSWER_BYTES / 1024} KiB` };
    case 'ABORTED':
      return { status: 'error', error: 'cancelled' };
    case 'TOO_MANY_REDIRECTS':
      return { status: 'error', error: 'too many redirects' };
    case 'BAD_URL':
      return { status: 'error', error: 'the URL is not valid' };
    case 'NETWORK':
      return { status: 'error', error: 'connection failed' };
    default:
      return { status: 'error', error: 'the call failed' };
  }
}

/**
 * Calls the action with the model's arguments: checked first (invalid ones make no request),
 * then one request (never repeated here) within the action's deadline. Never throws.
 */
export async function callAction(action: ActionCall, args: unknown, o: { guard: AddressGuard | null; signal?: AbortSignal }): Promise<ToolOutcome> {
  const secrets = secretsOf(action.headers);
  const checked = checkArguments(action.parameters, args);
  if (!checked.ok) {
    const error = `invalid arguments: ${checked.error}`;
    return { status: 'invalid_arguments', httpStatus: null, ms: 0, error: hideSecrets(error, secrets), result: modelResult({ error }, secrets) };
  }
  const started = performance.now();
  const request = actionRequest(action, checked.args);
  try {
    const res = await outboundRequest({ ...request, timeoutMs: action.timeoutMs, maxBodyBytes: MAX_TOOL_ANSWER_BYTES, guard: o.guard, signal: o.signal });
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: ok ? 'ok' : 'error',
      httpStatus: res.status,
      ms: elapsed(started),
      error: ok ? null : `HTTP ${res.status}`,
      result: modelResult({ status: res.status, body: answerBody(res.body) }, secrets),
    };
  } catch (err) {
    const { status, error } = failureOf(outboundErrorIn(err), action.timeoutMs);
    return { status, httpStatus: null, ms: elapsed(started), error, result: { error } };
  }
}
