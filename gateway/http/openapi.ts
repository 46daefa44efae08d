import { readFileSync } from 'node:fs';
import { AppError, ERRORS, type ErrorCode } from '../../lib/errors.js';
import { errorBody } from '../../lib/error-response.js';
import { ERROR_SCHEMA } from './errors.js';
import type { Access, MountedRouteDoc, ResponseDoc } from './route-docs.js';

/**
 * The OpenAPI 3.1 document of the app, built once at start from the route docs registered
 * where the routers are mounted (gateway/app.ts). Request body schemas are the objects the
 * routes' validators compiled; any (sub)schema with a `title` is listed once under
 * components.schemas and referred to. Every code of the error catalog is in
 * components.schemas.ErrorCode and components.examples; each operation lists, by status,
 * the codes it can answer. The result is deeply frozen.
 */
export type OpenApiDocument = Readonly<Record<string, unknown>>;

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const DESCRIPTION = [
  'Multi-tenant messaging automation: helpdesk webhooks and a webchat widget answered by AI agents, handed to human operators when needed.',
  '',
  '**Credentials.** Protected routes take `Authorization: Bearer <token>` with a session access token (`POST /api/auth/login`) or a company API token (`mas_…`, `POST /api/api-tokens`); managing API tokens, `/api/auth/me` and logout need a session. A resource of another company answers 404.',
  '',
  '**Roles.** A user is an `owner`, `admin` or `operator`; a company API token acts as an admin while the teammate who made it stays on the team with their role (removing them, or lowering their role, revokes it, with the invitations they sent that are still open); roles change only with an owner\'s or admin\'s session. Operators work conversations, leads and canned replies; the company\'s setup (integrations, agents, knowledge, API tokens, users, billing changes) answers them 403 `FORBIDDEN`.',
  '',
  '**Errors** are `{"error":{"code","message"}}` with a code from one catalog (`ErrorCode`); `VALIDATION_ERROR` adds `details` (one entry per bad field), `INTERNAL_ERROR` a `requestId`. Each operation lists the codes it can answer under their status.',
  '',
  '**Lists** take `limit` (1–200, default 50) and `offset`, and answer a `total` beside the items.',
  '',
  'This document is generated at start from the schemas the routes validate with (gateway/http/openapi.ts).',
].join('\n');

/** Every operation states its credentials: `[]` (none) for a public one, which no document-wide default could override. */
const SECURITY: Record<Access, Record<string, string[]>[]> = {
  public: [],
  any: [{ sessionToken: [] }, { apiToken: [] }],
  session: [{ sessionToken: [] }],
  // Open unless METRICS_TOKEN is set.
  metrics: [{}, { metricsToken: [] }],
};

const SECURITY_SCHEMES = {
  sessionToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A session access token from `POST /api/auth/login` or `/api/auth/refresh` (15 minutes).' },
  apiToken: { type: 'http', scheme: 'bearer', bearerFormat: 'mas_…', description: 'A company API token from `POST /api/api-tokens` (shown once).' },
  metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when the operator set one.' },
};

/** What each tag (a section of the docs page) holds. */
const TAG_DESCRIPTIONS: Readonly<Record<string, string>> = {
  Health: 'Liveness, readiness and Prometheus metrics, for the platform running the service.',
  Webhooks: 'Helpdesk (Chat2Desk) deliveries: signed customer messages and status events, queued before they are acknowledged.',
  Webchat: 'The embeddable chat widget and the WebSocket it speaks.',
  Accounts: 'Sign-up, sessions (access and refresh tokens) and the current user.',
  Team: "The company's users, their roles (owner, admin, operator) and invitations.",
  'Canned replies': 'Texts operators insert by their shortcut.',
  'API tokens': 'Company API tokens for servers and scripts (managed with a session).',
  Agents: 'The AI agents that answer customers: built-in (from a knowledge base) or any OpenAI-compatible model, and their evaluations.',
  Integrations: 'Helpdesk and webchat channels, each answered by an agent.',
  Knowledge: 'Knowledge bases, their documents (text, pages, files) and search.',
  Billing: 'Credit, the daily spend cap and the ledger of model costs.',
  Pipelines: 'Sales pipelines and their stages.',
  Conversations: 'Conversations with their messages and state, and the commands operators give them.',
  Leads: 'Every customer as a lead in a pipeline stage, with their sessions and moves.',
  Analytics: 'Outcomes of the agents over a period.',
  Dashboard: 'The web dashboard.',
  Documentation: 'This document and its docs page.',
};

const RETRY_AFTER = { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 1 } };
const WITH_RETRY_AFTER: ReadonlySet<ErrorCode> = new Set(['RATE_LIMITED', 'QUEUE_UNAVAILABLE', 'TIMEOUT']);
/** Routes under /api that use none of the API's database connections (lib/db.ts ApiDatabase): no statement timeout. */
const WITHOUT_API_DATABASE: ReadonlySet<string> = new Set(['Webhooks', 'Documentation']);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** Keywords whose values are data, not schemas: never searched for named schemas. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples', 'example']);

/** Express path syntax to an OpenAPI path template: `/api/agents/:id` → `/api/agents/{id}`. */
export const openApiPath = (expressPath: string): string => expressPath.replace(/:([A-Za-z_$][\w$]*)/g, '{$1}');

/** An example of each code's answer, as errorBody writes it. */
function errorExample(code: ErrorCode): { summary: string; value: unknown } {
  const details = code === 'VALIDATION_ERROR' ? [{ field: 'name', message: 'is required' }] : code === 'QUOTA_EXCEEDED' ? [{ field: 'agents', message: 'limit 100' }] : undefined;
  const requestId = code === 'INTERNAL_ERROR' ? '3b241101-e2bb-4255-8caf-4136c566a962' : undefined;
  return { summary: ERRORS[code].message, value: errorBody(new AppError(code, undefined, { details }), requestId) };
}

/** A code every route of a kind can answer, with when, and the name its answer has under components.responses. */
interface Implied {
  when: string;
  response: string;
}

const UNAUTHORIZED: Record<Exclude<Access, 'public'>, Implied> = {
  any: { when: 'no Bearer token, or an invalid, expired or revoked one', response: 'Unauthorized' },
  session: { when: 'no session token, or an invalid, expired or revoked one (API tokens are refused here)', response: 'SessionRequired' },
  metrics: { when: 'METRICS_TOKEN is set and the Bearer token is not it', response: 'MetricsTokenRequired' },
};

/** The codes a route can answer without saying so: those of its access, its place and its body, TIMEOUT (the API's statement timeout) and INTERNAL_ERROR (at most one per status). */
function impliedErrors(doc: MountedRouteDoc): Partial<Record<ErrorCode, Implied>> {
  const out: Partial<Record<ErrorCode, Implied>> = {};
  if (doc.access !== 'public') out.UNAUTHORIZED = UNAUTHORIZED[doc.access];
  if (doc.role === 'admin' || doc.role === 'owner') out.FORBIDDEN = { when: `the caller's role is below ${doc.role} (company API tokens act as admin)`, response: doc.role === 'admin' ? 'AdminRequired' : 'OwnerRequired' };
  if (doc.fullPath.startsWith('/api/')) out.HTTPS_REQUIRED = { when: 'ENFORCE_HTTPS is on and the request did not arrive over TLS', response: 'HttpsRequired' };
  // Every query string under /api is checked before its route (gateway/http/validate.ts storableQuery).
  if (doc.servedBy === 'express' && doc.fullPath.startsWith('/api/')) out.VALIDATION_ERROR = { when: 'a query parameter holds U+0000 or an unpaired surrogate', response: 'UnstorableQuery' };
  if (doc.servedBy === 'express' && doc.fullPath.startsWith('/api/') && BODY_METHODS.has(doc.method)) {
    out.VALIDATION_ERROR = { when: 'the body is not valid JSON, or a string in it or in the query holds U+0000 or an unpaired surrogate', response: 'InvalidJson' };
    out.PAYLOAD_TOO_LARGE = { when: 'the JSON body is over its limit', response: 'PayloadTooLarge' };
    out.UNSUPPORTED_MEDIA_TYPE = { when: 'a body not sent as application/json', response: 'UnsupportedMediaType' };
  }
  if (doc.servedBy === 'express' && doc.fullPath.startsWith('/api/') && !WITHOUT_API_DATABASE.has(doc.tag)) {
    out.TIMEOUT = { when: 'a database statement of the request ran past DB_STATEMENT_TIMEOUT_MS (Retry-After)', response: 'Timeout' };
  }
  out.INTERNAL_ERROR = { when: 'anything unexpected (logged with the request id)', response: 'InternalError' };
  return out;
}

class DocumentBuilder {
  readonly schemas: Record<string, unknown> = {};
  readonly responses: Record<string, unknown> = {};
  readonly #named = new Map<string, string>();

  /** A schema as the document holds it: titled (sub)schemas listed once in components and referred to. */
  schema(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.schema(v));
    if (value === null || typeof value !== 'object') return value;
    const s = value as Record<string, unknown>;
    if (typeof s.title === 'string') {
      const name = s.title;
      const json = JSON.stringify(s);
      const known = this.#named.get(name);
      if (known === undefined) {
        this.#named.set(name, json);
        this.schemas[name] = this.#inner(s);
      } else if (known !== json) {
        throw new Error(`OpenAPI: two different schemas are titled ${name}`);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    return this.#inner(s);
  }

  #inner(s: Record<string, unknown>): Record<string, unknown> {
    return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, DATA_KEYWORDS.has(k) ? v : this.schema(v)]));
  }

  response(r: ResponseDoc): Record<string, unknown> {
    return {
      description: r.description,
      ...(r.headers ? { headers: Object.fromEntries(Object.entries(r.headers).map(([name, h]) => [name, { description: h.description, schema: this.schema(h.schema) }])) } : {}),
      ...(r.schema ? { content: this.#content(r) } : {}),
    };
  }

  #content(r: ResponseDoc): Record<string, unknown> {
    const media = (schema: unknown, example: unknown) => ({ schema: this.schema(schema), ...(example !== undefined ? { example } : {}) });
    return {
      [r.type ?? 'application/json']: media(r.schema, r.example),
      ...Object.fromEntries(Object.entries(r.alsoAnswers ?? {}).map(([type, m]) => [type, media(m.schema, m.example)])),
    };
  }

  /** The error answers of an operation by status; a status only implied codes answer refers to components.responses. */
  errorResponses(doc: MountedRouteDoc): Record<string, unknown> {
    const implied = impliedErrors(doc);
    const codes: Partial<Record<ErrorCode, string>> = { ...Object.fromEntries(Object.entries(implied).map(([c, i]) => [c, i.when])), ...doc.errors };
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of Object.keys(codes) as ErrorCode[]) {
      const status = ERRORS[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    const out: Record<string, unknown> = {};
    for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
      const documented = doc.responses[status];
      const response = this.#errorResponse(list, codes);
      if (documented) {
        // Only an answer of another media type may share a status with error codes (one JSON body per status).
        if ((documented.type ?? 'application/json') === 'application/json' || !documented.schema) {
          throw new Error(`OpenAPI: ${doc.method} ${doc.fullPath} documents ${status} and error codes with that status (${list.join(', ')})`);
        }
        out[status] = { ...response, description: `${documented.description}; ${response.description as string}`, content: { ...(response.content as object), ...this.#content(documented) } };
        continue;
      }
      const only = list.length === 1 && doc.errors?.[list[0]!] === undefined ? implied[list[0]!] : undefined;
      if (only) {
        this.responses[only.response] ??= response;
        out[status] = { $ref: `#/components/responses/${only.response}` };
      } else out[status] = response;
    }
    return out;
  }

  #errorResponse(list: ErrorCode[], codes: Partial<Record<ErrorCode, string>>): Record<string, unknown> {
    return {
      description: list.map((c) => `\`${c}\`: ${codes[c]}`).join('; '),
      ...(list.some((c) => WITH_RETRY_AFTER.has(c)) ? { headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } } } : {}),
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/Error' },
          examples: Object.fromEntries(list.map((c) => [c, { $ref: `#/components/examples/${c}` }])),
        },
      },
    };
  }

  operation(doc: MountedRouteDoc): Record<string, unknown> {
    const body = doc.body;
    const bodySchema = body && (body.validators.length === 1 ? this.schema(body.validators[0]!.schema) : { anyOf: body.validators.map((v) => this.schema(v.schema)) });
    return {
      operationId: doc.operationId,
      summary: doc.summary,
      ...(doc.description ? { description: doc.description } : {}),
      tags: [doc.tag],
      security: SECURITY[doc.access],
      ...(doc.params?.length
        ? {
            parameters: doc.params.map((p) => ({
              name: p.name,
              in: p.in,
              description: p.description,
              required: p.in === 'path' ? true : (p.required ?? false),
              schema: this.schema(p.schema),
              ...(p.example !== undefined ? { example: p.example } : {}),
            })),
          }
        : {}),
      ...(body
        ? {
            requestBody: {
              required: true,
              ...(body.description ? { description: body.description } : {}),
              content: {
                'application/json': { schema: bodySchema, example: body.example },
                ...Object.fromEntries(Object.entries(body.alsoAccepts ?? {}).map(([type, schema]) => [type, { schema: this.schema(schema) }])),
              },
            },
          }
        : {}),
      responses: {
        ...Object.fromEntries(Object.entries(doc.responses).map(([status, r]) => [status, this.response(r)])),
        ...this.errorResponses(doc),
      },
    };
  }
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Where the document's operations are served. */
export interface DocumentOptions {
  /** The service's public base URL (PUBLIC_BASE_URL): absolute, so a generated client needs no other setting. */
  serverUrl: string;
}

/** What a tag holds, or a throw: every section of the docs page says what it is. */
function tagDescription(name: string): string {
  const description = TAG_DESCRIPTIONS[name];
  if (description === undefined) throw new Error(`OpenAPI: the tag ${name} has no description (TAG_DESCRIPTIONS)`);
  return description;
}

/** The document of these routes (in mount order), frozen. Throws on a doc that cannot be stated (a name used twice, a status both success and error, a tag without a description). */
export function buildOpenApiDocument(docs: readonly MountedRouteDoc[], options: DocumentOptions): OpenApiDocument {
  const builder = new DocumentBuilder();
  builder.schema(ERROR_SCHEMA);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const doc of docs) {
    const item = (paths[openApiPath(doc.fullPath)] ??= {});
    const method = doc.method.toLowerCase();
    if (item[method]) throw new Error(`OpenAPI: ${doc.method} ${doc.fullPath} is documented twice`);
    item[method] = builder.operation(doc);
  }
  const codes = Object.keys(ERRORS) as ErrorCode[];
  return deepFreeze({
    openapi: '3.1.0',
    info: { title: 'Messaging automation API', version: VERSION, description: DESCRIPTION },
    servers: [{ url: options.serverUrl, description: 'This deployment (PUBLIC_BASE_URL).' }],
    tags: [...new Set(docs.map((d) => d.tag))].map((name) => ({ name, description: tagDescription(name) })),
    paths,
    components: {
      schemas: builder.schemas,
      responses: builder.responses,
      securitySchemes: SECURITY_SCHEMES,
      examples: Object.fromEntries(codes.map((c) => [c, errorExample(c)])),
      headers: { RetryAfter: RETRY_AFTER },
    },
  });
}
