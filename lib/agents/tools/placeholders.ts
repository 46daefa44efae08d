import { nestedDeeperThan } from './tool-schema.js';

/**
 * The `{placeholders}` of an action's request (contract.md § Agent actions, § Tools that
 * cannot be turned against us): `{param}` takes a model's argument; `{customer.id}`,
 * `{customer.channel}`, `{conversation.id}` and `{customer.email}` say who is asking, and only
 * the service fills them, so a company's API can answer the asking customer alone (the model
 * cannot set them: no parameter may bear their names). They may stand in the URL's path or
 * query (URL-encoded), in header values (as they are when a header can carry them, else
 * URL-encoded), and in a JSON body template (a whole-string placeholder keeps its JSON type).
 */

/** `{name}` in an action URL, header value or body template. */
const PLACEHOLDER = /\{([^{}/?#&=\s]+)\}/g;
const WHOLE_PLACEHOLDER = /^\{([^{}/?#&=\s]+)\}$/;

/** What the service says of who is asking, by placeholder name. */
export const CALLER_PLACEHOLDERS = ['customer.id', 'customer.channel', 'conversation.id', 'customer.email'] as const;
export type CallerPlaceholder = (typeof CALLER_PLACEHOLDERS)[number];
const CALLER = new Set<string>(CALLER_PLACEHOLDERS);
const CALLER_WORDS = CALLER_PLACEHOLDERS.map((n) => `{${n}}`).join(', ');

/** Who a call is made for, as the placeholders read it: null where nobody is asking (an evaluation) or it is not known. */
export type CallerValues = Readonly<Record<CallerPlaceholder, string | null>>;
export const NO_CALLER: CallerValues = { 'customer.id': null, 'customer.channel': null, 'conversation.id': null, 'customer.email': null };

export const MAX_BODY_TEMPLATE_BYTES = 4096;
const MAX_BODY_TEMPLATE_DEPTH = 10;

/** Null when no parameter bears a caller placeholder's name (the model would seem to set it), else why not. */
export function checkParameterNames(parameterNames: readonly string[]): string | null {
  const taken = parameterNames.find((n) => CALLER.has(n));
  return taken === undefined ? null : `may not have a property named "${taken}": {${taken}} is filled by the service, never by the model`;
}

function unknownPlaceholder(text: string, known: ReadonlySet<string>): string | null {
  for (const [, name] of text.matchAll(PLACEHOLDER)) if (!known.has(name!) && !CALLER.has(name!)) return name!;
  return null;
}

/** Null when `url` is an http(s) URL whose `{placeholders}` are all in its path or query and each a parameter or a caller placeholder; else why not. */
export function checkActionUrl(url: string, parameterNames: readonly string[]): string | null {
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
  const unknown = unknownPlaceholder(url, new Set(parameterNames));
  if (unknown !== null) return `has the placeholder {${unknown}}, which is not one of the parameters nor one the service fills (${CALLER_WORDS})`;
  const rest = url.replace(PLACEHOLDER, '');
  if (/[{}]/.test(rest.slice(authority[0].length))) return 'has an unclosed or empty { } placeholder';
  return null;
}

/** Null when `template` is a JSON body template whose placeholders are parameters or caller placeholders; else why not. */
export function checkBodyTemplate(template: Record<string, unknown>, parameterNames: readonly string[]): string | null {
  const text = JSON.stringify(template);
  if (Buffer.byteLength(text) > MAX_BODY_TEMPLATE_BYTES) return `must be at most ${MAX_BODY_TEMPLATE_BYTES / 1024} KiB`;
  if (nestedDeeperThan(template, MAX_BODY_TEMPLATE_DEPTH)) return `must not be nested deeper than ${MAX_BODY_TEMPLATE_DEPTH} levels`;
  const known = new Set(parameterNames);
  const strings: string[] = [];
  const collect = (v: unknown): void => {
    if (typeof v === 'string') strings.push(v);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(collect);
  };
  collect(template);
  for (const s of strings) {
    const unknown = unknownPlaceholder(s, known);
    if (unknown !== null) return `has the placeholder {${unknown}}, which is not one of the parameters nor one the service fills (${CALLER_WORDS})`;
  }
  return null;
}

/** Whether any part of an action's request asks for `{name}` (the customer's email is read only then). */
export function usesPlaceholder(name: CallerPlaceholder, parts: readonly unknown[]): boolean {
  return parts.some((p) => p !== null && p !== undefined && (typeof p === 'string' ? p : JSON.stringify(p)).includes(`{${name}}`));
}

/** A value as text: scalars as they are, objects as JSON. */
export const textOf = (v: unknown): string => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v));

/** `url` with its placeholders filled, URL-encoded (an absent value is empty); `used` gets the parameters it took. */
export function fillUrl(url: string, args: Readonly<Record<string, unknown>>, caller: CallerValues, used: Set<string>): string {
  return url.replace(PLACEHOLDER, (_, name: string) => {
    const v = CALLER.has(name) ? caller[name as CallerPlaceholder] : (used.add(name), args[name]);
    return v === undefined || v === null ? '' : encodeURIComponent(textOf(v));
  });
}

/** A header value with its caller placeholders filled: as they are when printable ASCII (no line can be added), else URL-encoded. */
export function fillHeader(value: string, caller: CallerValues): string {
  if (!value.includes('{')) return value;
  return value.replace(PLACEHOLDER, (whole, name: string) => {
    if (!CALLER.has(name)) return whole;
    const v = caller[name as CallerPlaceholder] ?? '';
    return /^[\x20-\x7e]*$/.test(v) ? v : encodeURIComponent(v);
  });
}

/**
 * A body template filled: a string that is one placeholder becomes the value (its JSON type
 * kept; an absent argument leaves its property out, an array place null); placeholders inside
 * longer strings are filled as text. `used` gets the parameters it took.
 */
export function fillTemplate(template: unknown, args: Readonly<Record<string, unknown>>, caller: CallerValues, used: Set<string>): unknown {
  const valueOf = (name: string): unknown => {
    if (CALLER.has(name)) return caller[name as CallerPlaceholder];
    used.add(name);
    return args[name];
  };
  if (typeof template === 'string') {
    const whole = WHOLE_PLACEHOLDER.exec(template);
    if (whole) return valueOf(whole[1]!);
    return template.replace(PLACEHOLDER, (_, name: string) => {
      const v = valueOf(name);
      return v === undefined || v === null ? '' : textOf(v);
    });
  }
  if (Array.isArray(template)) return template.map((v) => fillTemplate(v, args, caller, used) ?? null);
  if (template !== null && typeof template === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(template)) {
      const filled = fillTemplate(v, args, caller, used);
      if (filled !== undefined) Object.defineProperty(out, k, { value: filled, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return template;
}
