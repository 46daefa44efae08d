import type { ErrorCode } from '../../lib/errors.js';
import type { UserRole } from '../../schema/entities.js';
import type { JsonSchema } from './schemas.js';

/**
 * What the OpenAPI document (gateway/http/openapi.ts) says about each route: part of the
 * route's declaration (gateway/http/route.ts), recorded where it is mounted (gateway/app.ts),
 * so the mount prefix is written once. Request bodies are given as the validators the route
 * runs (their `schema` is what ajv compiled); responses carry real JSON Schemas that the
 * tests check the route's real answers against.
 */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Who may call: anyone, any company credential (session JWT or API token), a session JWT only, or the METRICS_TOKEN when set. */
export type Access = 'public' | 'any' | 'session' | 'metrics';

/**
 * The least role a protected route needs, one of a user's (contract.md § A team works the
 * conversations): `operator` (every user: conversations, leads, canned replies), `admin` (the
 * company's setup; company API tokens act as admin) or `owner`. Below it: 403 FORBIDDEN.
 */
export type Role = UserRole;
export const ROLE_RANK: Readonly<Record<Role, number>> = { operator: 0, admin: 1, owner: 2 };

export interface ParamDoc {
  name: string;
  in: 'path' | 'query' | 'header';
  description: string;
  schema: JsonSchema;
  /** Path parameters are always required. */
  required?: boolean;
  example?: unknown;
}

export interface ResponseDoc {
  description: string;
  /** The body's schema; none for an answer without a body (204, 101, 304). */
  schema?: JsonSchema;
  /**
   * Media type of the body (default application/json). A response of another type may share
   * its status with error codes (their JSON Error beside it: WhatsApp's probe refused as text).
   */
  type?: string;
  /** One example of the body; it must validate against `schema` (test/gateway/openapi.test.ts). */
  example?: unknown;
  /** The same status answered in other media types too, by type (WhatsApp's probe: its challenge as text/plain). */
  alsoAnswers?: Readonly<Record<string, { schema: JsonSchema; example?: unknown }>>;
  headers?: Readonly<Record<string, { description: string; schema: JsonSchema }>>;
}

export interface BodyDoc {
  /** The checks the route runs on its body: the document shows their schemas (anyOf when several). */
  validators: readonly { readonly schema: JsonSchema }[];
  example: unknown;
  description?: string;
  /** Other media types the route reads (a multipart upload), each with its schema. */
  alsoAccepts?: Readonly<Record<string, JsonSchema>>;
}

export interface RouteDoc {
  method: HttpMethod;
  /** Express path syntax, relative to where the router is mounted (`/:id`). */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  /** The least role a caller needs (protected routes; default: the mount's, else operator). */
  role?: Role;
  params?: readonly ParamDoc[];
  body?: BodyDoc;
  /** Answers other than errors, by status. */
  responses: Readonly<Record<number, ResponseDoc>>;
  /**
   * Error codes the route itself answers, with when. The document adds those every route of
   * its kind can answer: UNAUTHORIZED (protected), HTTPS_REQUIRED (under /api), the JSON
   * body parser's (express routes under /api taking a body) and INTERNAL_ERROR.
   */
  errors?: Readonly<Partial<Record<ErrorCode, string>>>;
}

/** Where a route is answered: an express router, or the HTTP server ahead of express (webhook POSTs, WebSocket upgrades). */
export type ServedBy = 'express' | 'server';

export interface MountedRouteDoc extends RouteDoc {
  /** The full express path (`/api/agents/:id`). */
  fullPath: string;
  servedBy: ServedBy;
}
