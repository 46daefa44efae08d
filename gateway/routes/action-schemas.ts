import { DEFAULT_TOOL_TIMEOUT_MS, MAX_TOOL_TIMEOUT_MS } from '../../lib/agents/tools/action-request.js';
import { CALLER_PLACEHOLDERS, MAX_BODY_TEMPLATE_BYTES, type CallerValues } from '../../lib/agents/tools/placeholders.js';
import { ACTION_NAME_PATTERN } from '../../lib/agents/tools/tool-names.js';
import { AppError, type FieldError } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secrets.js';
import type { ActionMethod, AgentAction } from '../../schema/action-entities.js';
import { BOOLEAN, EXAMPLE_TIME, ID, object, STRING, TIMESTAMP, type JsonSchema } from '../http/schemas.js';
import { bodyValidator, idPathParam, invalidFields, type BodyValidator } from '../http/validate.js';

/**
 * What the action routes (gateway/routes/actions.ts) accept and answer: the bodies they
 * check, the view of an action with the schema the OpenAPI document shows for it, and the
 * rules of the header maps an action or an MCP server (gateway/routes/mcp-servers.ts) sends
 * with its requests, whose values are sealed and never shown again.
 */

/** What an API answer shows in place of a header's value; sent back in a PATCH, it keeps the stored value. */
export const MASKED = '********';
export const MAX_HEADERS = 20;
const MAX_HEADER_VALUE_CHARS = 4096;
const MAX_HEADER_NAME_CHARS = 256;
/** RFC 7230 § 3.2.6: a header name is a token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What the request itself sets: a company may not (a wrong length or a second host would split or misroute the request). */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection']);
/** A line break would end the header and start another (or the body): no control character but tab. */
const CONTROL_CHARACTER = /[\u0000-\u0008\u000a-\u001f\u007f]/;
/** What node:http and fetch send in a header value: tab, printable ASCII, Latin-1 (RFC 9110 field-vchar and obs-text). */
const NOT_IN_A_HEADER = /[^\t\u0020-\u007e\u0080-\u00ff]/;
export const MIN_TOOL_TIMEOUT_MS = 100;
const MAX_URL_CHARS = 2048;
const MAX_DESCRIPTION_CHARS = 1000;
export const ACTION_METHODS: readonly ActionMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A header map as a body gives it (values in clear, or MASKED to keep one in a PATCH); checked further by headerProblems. */
export const HEADERS = {
  type: 'object',
  maxProperties: MAX_HEADERS,
  additionalProperties: { type: 'string', maxLength: MAX_HEADER_VALUE_CHARS },
  description: `At most ${MAX_HEADERS} headers sent with every request. Names are RFC 7230 tokens, not Host, Content-Length, Transfer-Encoding or Connection; values are at most ${MAX_HEADER_VALUE_CHARS} characters of printable ASCII, tab or Latin-1 (no line breaks). Values are write-only: answers show "${MASKED}".`,
} as const;

export const TIMEOUT_MS = {
  type: 'integer',
  minimum: MIN_TOOL_TIMEOUT_MS,
  maximum: MAX_TOOL_TIMEOUT_MS,
  description: `How long a call may take, in ms (default ${DEFAULT_TOOL_TIMEOUT_MS}).`,
} as const;

/**
 * What is wrong with a header map (field `field`): names that are not tokens or that the
 * request sets itself, a name given twice in another case, values with a line break or a
 * character a header cannot carry.
 */
export function headerProblems(headers: Readonly<Record<string, string>>, field: string): FieldError[] {
  const details: FieldError[] = [];
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(headers)) {
    const at = `${field}.${name}`;
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || name.length > MAX_HEADER_NAME_CHARS) details.push({ field: at, message: `is not a header name (letters, digits and !#$%&'*+-.^_\`|~, at most ${MAX_HEADER_NAME_CHARS})` });
    else if (RESERVED_HEADERS.has(lower)) details.push({ field: at, message: 'is set by the request itself' });
    else if (seen.has(lower)) details.push({ field: at, message: 'is given twice (header names ignore case)' });
    else if (CONTROL_CHARACTER.test(value)) details.push({ field: at, message: 'must not contain a line break or another control character' });
    else if (NOT_IN_A_HEADER.test(value)) {
      details.push({ field: at, message: 'has a character HTTP does not allow in a header (only printable ASCII, tab and Latin-1): encode it, e.g. as percent-escapes or Base64' });
    }
    seen.add(lower);
  }
  return details;
}

/**
 * The header map to store: each value sealed, or, when it is MASKED, the value stored under
 * that name (any case) kept as it is. 400 naming the header when there is none to keep.
 */
export function sealHeaders(secrets: SecretBox, given: Readonly<Record<string, string>>, stored: Readonly<Record<string, string>>, field: string): Record<string, string> {
  const storedByName = new Map(Object.entries(stored).map(([name, sealed]) => [name.toLowerCase(), sealed]));
  const details: FieldError[] = [];
  const sealed: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    if (value !== MASKED) sealed[name] = secrets.seal(value);
    else {
      const kept = storedByName.get(name.toLowerCase());
      if (kept === undefined) details.push({ field: `${field}.${name}`, message: `is "${MASKED}" but no value is stored for this header` });
      else sealed[name] = kept;
    }
  }
  if (details.length) throw invalidFields(details);
  return sealed;
}

const originOf = (url: string): string | null => {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
};

/**
 * Stored header values go only where they went before: moving the URL to another origin
 * (scheme, host, port) needs every value sent again in clear, so a stolen credential cannot
 * steer them to a listener of its choice. 400 on `field` otherwise.
 */
export function assertHeadersFollow(stored: Readonly<Record<string, string>>, given: Readonly<Record<string, string>> | undefined, oldUrl: string, newUrl: string, field: string): void {
  if (Object.keys(stored).length === 0 || originOf(oldUrl) === originOf(newUrl)) return;
  if (given !== undefined && !Object.values(given).includes(MASKED)) return;
  throw invalidFields([{ field, message: "must be sent again, every value in clear, to change the URL's scheme, host or port (stored values are never sent to a new address)" }]);
}

/** The stored header values in clear, to make a request with. */
export const openHeaders = (secrets: SecretBox, sealed: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(sealed).map(([name, value]) => [name, secrets.open(value)]));

/** What answers show of a header map: its names, each value MASKED. */
export const maskedHeaders = (sealed: Readonly<Record<string, string>>): Record<string, string> => Object.fromEntries(Object.keys(sealed).map((name) => [name, MASKED]));

/**
 * A validator whose messages for a failed `pattern` say the rule in words (ajv's would quote
 * the regular expression). `messages` maps a field to its words.
 */
export function withPatternWords<T>(validator: BodyValidator<T>, messages: Readonly<Record<string, string>>): BodyValidator<T> {
  return Object.assign(
    (raw: unknown): T => {
      try {
        return validator(raw);
      } catch (err) {
        if (!(err instanceof AppError) || !err.details) throw err;
        const details = err.details.map((d) => (messages[d.field] && d.message.startsWith('must match pattern') ? { field: d.field, message: messages[d.field]! } : d));
        throw new AppError('VALIDATION_ERROR', err.message, { details });
      }
    },
    { schema: validator.schema },
  );
}

export interface ActionRequestInput {
  method?: ActionMethod;
  url?: string;
  headers?: Record<string, string>;
  /** `json`, `none`, or a JSON body template. */
  body?: 'json' | 'none' | Record<string, unknown>;
  idempotent?: boolean;
}

export interface ActionInput {
  name?: string;
  description?: string;
  parameters?: Record<string, unknown>;
  request?: ActionRequestInput;
  timeoutMs?: number;
}

export const ACTION_NAME_WORDS = 'must start with a letter, then at most 63 letters, digits, _ or -';

const CALLER_WORDS = CALLER_PLACEHOLDERS.map((n) => `{${n}}`).join(', ');

/** What an action sends as its body: a mode, or a JSON template of the company's. */
const BODY = {
  oneOf: [
    { type: 'string', enum: ['json', 'none'], description: '`json`: the arguments not in the URL, as the JSON body; `none`: as the query string.' },
    {
      type: 'object', title: 'ActionBodyTemplate',
      description: `A JSON body written by the company (at most ${MAX_BODY_TEMPLATE_BYTES / 1024} KiB): a string that is one placeholder, \`"{orderId}"\`, becomes that argument's value with its JSON type (an absent one leaves its property out), placeholders inside longer strings are filled as text; ${CALLER_WORDS} are filled by the service alone. Arguments used neither here nor in the URL are not sent.`,
    },
  ],
  description: 'What the request carries besides the URL. Default: json for POST, PUT and PATCH, else none.',
} as const;

/** Who a test call is made for, as the service would fill the caller placeholders (none given: they are empty). */
const CALLER_CONTEXT = {
  type: 'object',
  additionalProperties: false,
  properties: {
    customer: {
      type: 'object', additionalProperties: false,
      properties: { id: { type: 'string', maxLength: 256 }, channel: { type: 'string', maxLength: 64 }, email: { type: 'string', maxLength: 320 } },
    },
    conversation: { type: 'object', additionalProperties: false, properties: { id: { type: 'string', maxLength: 64 } } },
  },
  description: `Who the test call is for: what ${CALLER_WORDS} are filled with (each empty when not given).`,
} as const;

export interface CallerContextInput {
  customer?: { id?: string; channel?: string; email?: string };
  conversation?: { id?: string };
}

/** The caller placeholders' values of a test call. */
export const callerOfContext = (c: CallerContextInput | undefined): CallerValues => ({
  'customer.id': c?.customer?.id ?? null,
  'customer.channel': c?.customer?.channel ?? null,
  'customer.email': c?.customer?.email ?? null,
  'conversation.id': c?.conversation?.id ?? null,
});

const requestSchema = (required: readonly string[]) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties: {
    method: { type: 'string', enum: ACTION_METHODS },
    url: {
      type: 'string', minLength: 1, maxLength: MAX_URL_CHARS, pattern: '^https?://',
      description: `http(s), with \`{param}\` placeholders in its path or query (never in the host), each a property of \`parameters\` or one the service fills (${CALLER_WORDS}); filled URL-encoded.`,
    },
    headers: { ...HEADERS, description: `${HEADERS.description} A value may hold ${CALLER_WORDS}, filled by the service.` },
    body: BODY,
    idempotent: { type: 'boolean', description: 'May be called again for the same answer (default: true for GET only). One that is not is never called twice for one answer, even across a crash, nor in a test.' },
  },
});

const actionProperties = (requestRequired: readonly string[]) => ({
  name: { type: 'string', pattern: ACTION_NAME_PATTERN, description: 'The function name the model sees (unique per agent; not handoff_to_human, close_conversation or set_lead_stage).' },
  description: { type: 'string', minLength: 1, maxLength: MAX_DESCRIPTION_CHARS, pattern: '\\S', description: 'What the model is told the action does.' },
  parameters: {
    type: 'object',
    description:
      'The arguments, a JSON Schema with `type: "object"` (at most 16 KiB, nested at most 10 deep), held to the schema policy: `pattern` and `patternProperties` run on RE2 (no lookaround or backreferences; at most 32 patterns, 1000 RE2 instructions in all), `$ref` only inside the schema and never back to where it started without going into a property or an item, and the checks arguments of 16 KiB can cost at most 40000 (bound large arrays with `maxItems`). A model\'s arguments are at most 16 KiB.',
  },
  request: requestSchema(requestRequired),
  timeoutMs: TIMEOUT_MS,
});

const PATTERN_WORDS = { name: ACTION_NAME_WORDS, 'request.url': 'must start with http:// or https://' };

export const createActionBody = withPatternWords(
  bodyValidator<ActionInput & { name: string; description: string; parameters: Record<string, unknown>; request: ActionRequestInput & { method: ActionMethod; url: string } }>({
    title: 'AgentActionCreate',
    type: 'object',
    additionalProperties: false,
    required: ['name', 'description', 'parameters', 'request'],
    properties: actionProperties(['method', 'url']),
  }),
  PATTERN_WORDS,
);

export const patchActionBody = withPatternWords(
  bodyValidator<ActionInput>({ title: 'AgentActionPatch', type: 'object', additionalProperties: false, properties: actionProperties([]) }),
  PATTERN_WORDS,
);

export const tryActionBody = bodyValidator<{ arguments?: Record<string, unknown>; context?: CallerContextInput }>({
  title: 'AgentActionTry',
  type: 'object',
  additionalProperties: false,
  properties: { arguments: { type: 'object', description: 'The arguments, as the model would give them (default {}).' }, context: CALLER_CONTEXT },
});

export const actionView = (a: AgentAction) => ({
  id: a.id,
  agentId: a.agentId,
  name: a.name,
  description: a.description,
  parameters: a.parameters,
  request: { method: a.method, url: a.url, headers: maskedHeaders(a.headersSealed), body: a.bodyTemplate ?? a.body, idempotent: a.idempotent },
  timeoutMs: a.timeoutMs,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

/** A header map as answers show it. */
export const MASKED_HEADERS: JsonSchema = { type: 'object', additionalProperties: { type: 'string', enum: [MASKED] }, description: `Header names; every value is "${MASKED}" (values are write-only).` };

export const ACTION_SCHEMA = object(
  {
    id: ID,
    agentId: ID,
    name: STRING,
    description: STRING,
    parameters: { type: 'object', description: 'The JSON Schema of the arguments.' },
    request: object(
      { method: { type: 'string', enum: ACTION_METHODS }, url: STRING, headers: MASKED_HEADERS, body: BODY, idempotent: BOOLEAN },
      { title: 'AgentActionRequest' },
    ),
    timeoutMs: { type: 'integer', minimum: MIN_TOOL_TIMEOUT_MS, maximum: MAX_TOOL_TIMEOUT_MS },
    createdAt: TIMESTAMP,
    updatedAt: TIMESTAMP,
  },
  { title: 'AgentAction' },
);

const EXAMPLE_PARAMETERS = { type: 'object', required: ['orderId'], properties: { orderId: { type: 'string', description: 'The order number, e.g. A-1001' } } };
export const EXAMPLE_ACTION_INPUT = {
  name: 'order_status',
  description: 'The shipping status of an order.',
  parameters: EXAMPLE_PARAMETERS,
  request: { method: 'GET', url: 'https://shop.example.com/api/orders/{orderId}', headers: { Authorization: 'Bearer shop-api-key' } },
  timeoutMs: 5000,
};
export const EXAMPLE_ACTION = {
  id: 1,
  agentId: 1,
  name: 'order_status',
  description: 'The shipping status of an order.',
  parameters: EXAMPLE_PARAMETERS,
  request: { method: 'GET', url: 'https://shop.example.com/api/orders/{orderId}', headers: { Authorization: MASKED }, body: 'none', idempotent: true },
  timeoutMs: 5000,
  createdAt: EXAMPLE_TIME,
  updatedAt: EXAMPLE_TIME,
};
export const ONE_ACTION = { schema: object({ action: ACTION_SCHEMA }), example: { action: EXAMPLE_ACTION } };
export const ACTION_ID = idPathParam('action', 'actionId');
export const BAD_ACTION =
  'a bad field: a name that is not a function name or is a built-in tool\'s, a parameters object that is not a JSON Schema of type object or that the schema policy refuses (the keyword named), a URL that is not http(s), at a private address, or with a placeholder in its host or not among the parameters, a bad header (name, line break, Host…, more than 20), "********" for a header with no stored value, timeoutMs outside 100–15000, an unknown field';
