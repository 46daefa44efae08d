import { performance } from 'node:perf_hooks';
import type { ActionMethod, ToolCallStatus } from '../../../schema/action-entities.js';
import type { AddressGuard } from '../../address-guard.js';
import { bodyText, outboundRequest } from '../../outbound-http.js';
import { outboundErrorIn, type OutboundError } from '../../outbound-errors.js';
import type { CheckedArguments } from './arguments-check.js';
import { fillHeader, fillTemplate, fillUrl, textOf, type CallerValues } from './placeholders.js';

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

export const REDACTED = '[redacted]';
/** Secrets shorter than this are not looked for in results (a 2-letter value is everywhere). */
const MIN_SECRET_LENGTH = 4;
/** Argument names that hold secrets whatever their schema says. */
const SECRET_NAME = /pass(word)?|secret|token|api[-_]?key|authorization|cvv|card[-_]?number/i;

export interface ActionCall {
  name: string;
  method: ActionMethod;
  url: string;
  /** Opened (not sealed) header values. */
  headers: Record<string, string>;
  body: 'json' | 'none';
  /** A JSON body the company wrote, with {placeholders}; null: `body` says what is sent. */
  bodyTemplate: Record<string, unknown> | null;
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

/** The names of the query parameters an action's URL sets itself. */
function queryKeysOf(url: string): Set<string> {
  const query = url.split('#')[0]!.split('?')[1];
  return new Set(query ? [...new URLSearchParams(query).keys()] : []);
}

/** The HTTP request an action makes for `args` (already checked) on behalf of `caller`: placeholders filled, the other arguments as query or JSON body (or only where the body template puts them). */
export function actionRequest(action: ActionCall, args: Record<string, unknown>, caller: CallerValues): { method: string; url: string; headers: Record<string, string>; body?: Buffer } {
  const used = new Set<string>();
  const filled = fillUrl(action.url, args, caller, used);
  const headers: Record<string, string> = Object.fromEntries(Object.entries(action.headers).map(([name, value]) => [name, fillHeader(value, caller)]));
  const has = (name: string) => Object.keys(headers).some((k) => k.toLowerCase() === name);
  if (!has('accept')) headers.accept = 'application/json';
  if (action.bodyTemplate) {
    if (!has('content-type')) headers['content-type'] = 'application/json';
    return { method: action.method, url: filled, headers, body: Buffer.from(JSON.stringify(fillTemplate(action.bodyTemplate, args, caller, used))) };
  }
  const rest = Object.fromEntries(Object.entries(args).filter(([k, v]) => !used.has(k) && v !== undefined));
  if (action.body === 'json') {
    if (!has('content-type')) headers['content-type'] = 'application/json';
    return { method: action.method, url: filled, headers, body: Buffer.from(JSON.stringify(rest)) };
  }
  // Appended as text: the URL's own query and path stay byte for byte as the company wrote them.
  // An argument never repeats a query parameter the URL sets (`?customer={customer.id}`): the API would see two.
  const own = queryKeysOf(action.url);
  const pairs = Object.entries(rest).flatMap(([k, v]) =>
    v === null || own.has(k) ? [] : (Array.isArray(v) ? v : [v]).map((one) => `${encodeURIComponent(k)}=${encodeURIComponent(textOf(one))}`),
  );
  if (pairs.length === 0) return { method: action.method, url: filled, headers };
  const hash = filled.indexOf('#');
  const [base, fragment] = hash < 0 ? [filled, ''] : [filled.slice(0, hash), filled.slice(hash)];
  const joiner = !base.includes('?') ? '?' : base.endsWith('?') || base.endsWith('&') ? '' : '&';
  return { method: action.method, url: `${base}${joiner}${pairs.join('&')}${fragment}`, headers };
}

/**
 * The secrets to keep out of results and logs: each header value of at least 4 characters, and
 * the credential of an `<scheme> <credential>` value (`Bearer sk-…`), which an API may echo
 * alone; and `more` of them (secretArguments), as long.
 */
export function secretsOf(headers: Record<string, string>, more: readonly string[] = []): string[] {
  const out = new Set<string>(more.filter((s) => s.length >= MIN_SECRET_LENGTH));
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

/** The texts a secret argument holds (its strings and numbers, nested ones too). */
function collectTexts(value: unknown, into: string[]): void {
  if (typeof value === 'string' || typeof value === 'number') into.push(String(value));
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) collectTexts(v, into);
}

/** `value` with its secret properties redacted; the texts they held go into `found`. */
function redactValue(value: unknown, schema: Schema, secrets: readonly string[], found: string[]): unknown {
  if (typeof value === 'string') return hideSecrets(value, secrets);
  if (Array.isArray(value)) {
    const items = schema?.items;
    const prefix = Array.isArray(schema?.prefixItems) ? schema.prefixItems : Array.isArray(items) ? items : null;
    return value.map((v, i) => redactValue(v, asSchema(prefix ? prefix[i] : items), secrets, found));
  }
  if (value !== null && typeof value === 'object') {
    const properties = asSchema(schema?.properties);
    const additional = asSchema(schema?.additionalProperties);
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => {
        const sub = asSchema(properties?.[k]) ?? additional;
        if (!isSecretProperty(k, sub)) return [k, redactValue(v, sub, secrets, found)];
        collectTexts(v, found);
        return [k, REDACTED];
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
  return redactValue(args, parameters, secrets, []) as Record<string, unknown>;
}

/**
 * The texts the arguments hold in the properties redactArgs redacts: a tool's answer that
 * echoes one has it masked as a header secret would be (secretsOf).
 */
export function secretArguments(args: Record<string, unknown>, parameters: Record<string, unknown>): string[] {
  const found: string[] = [];
  redactValue(args, parameters, [], found);
  return found;
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
    case 'BAD_HEADER':
      return { status: 'error', error: 'a header value has characters HTTP does not allow: enter it again' };
    case 'NETWORK':
      return { status: 'error', error: 'connection failed' };
    default:
      return { status: 'error', error: 'the call failed' };
  }
}

/**
 * Calls the action with arguments checkArguments passed (defaults filled in): one request
 * (never repeated here) within the action's deadline. Never throws.
 */
export async function callAction(
  action: ActionCall,
  args: CheckedArguments,
  o: { guard: AddressGuard | null; caller: CallerValues; signal?: AbortSignal; masked?: readonly string[] },
): Promise<ToolOutcome> {
  const secrets = secretsOf(action.headers, o.masked);
  const started = performance.now();
  const request = actionRequest(action, args, o.caller);
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
