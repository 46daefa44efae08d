import { Router, type Express, type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../lib/errors.js';
import { ROLE_RANK, type Access, type BodyDoc, type HttpMethod, type MountedRouteDoc, type ParamDoc, type Role, type RouteDoc, type ServedBy } from './route-docs.js';
import { mayHoldUnstorable } from './json-body.js';
import type { BodyValidator } from './validate.js';

/**
 * A route is one declaration: what the OpenAPI document says of it (gateway/http/route-docs.ts)
 * and how it is answered, in one object. AppRoutes mounts declarations on the express app:
 * each on a router at its prefix, behind the guard of its `access`, its query and body checked
 * by the very parsers and validators the document shows, and its doc recorded under the same
 * prefix. Nothing about a route is written twice, so the document cannot drift from the app.
 */

/** Query parameters as documented, and the parser that reads them (400 VALIDATION_ERROR naming each bad one). */
export interface QueryParams<Q> {
  readonly params: readonly ParamDoc[];
  readonly parse: (query: Record<string, unknown>) => Q;
}

/** A route's JSON body: the validators the document shows (anyOf when several), and which one checks a request. */
export interface RouteBody<B> extends Omit<BodyDoc, 'validators'> {
  readonly validators: readonly BodyValidator<B>[];
  /**
   * With several validators (or a body of another media type): the one that checks this
   * request's body, or null when the handler reads the body itself (a multipart upload).
   * It may refuse the request (415).
   */
  readonly choose?: (req: Request) => BodyValidator<B> | null;
}

/** What a handler is given: the request, and what the route's stages produced. */
export interface RouteInput<L, Q, B> {
  req: Request;
  res: Response;
  /** What `load` answered. */
  loaded: L;
  query: Q;
  /** The checked body (undefined when `choose` left it to the handler). */
  body: B;
}

/**
 * A route as declared. The request passes, in order: the guard of `access`, `load`, the query
 * parser, the body validator, then `handler`, which answers.
 */
export interface RouteDeclaration<L = unknown, Q = unknown, B = unknown> extends Omit<RouteDoc, 'params' | 'body'> {
  /**
   * Parameters documented but read by `load` or the handler: path ids (idParam), headers, and
   * a query that must be read at a moment of the handler's own (after a rate limit's slot).
   */
  params?: readonly ParamDoc[];
  query?: QueryParams<Q>;
  body?: RouteBody<B>;
  /**
   * What must answer before the query and body are checked: the resource the path names (its
   * 404 comes before a bad body's 400), or a rate limit that counts every attempt.
   */
  load?(req: Request): L | Promise<L>;
  handler(input: RouteInput<L, Q, B>): void | Promise<void>;
}

/** Any declared route (its handler's input types erased). */
export type Route = RouteDeclaration;

/** Declares a route; the types of `load`, `query` and `body` flow to the handler. */
export const defineRoute = <L = undefined, Q = undefined, B = undefined>(route: RouteDeclaration<L, Q, B>): Route => route;

/** The doc of a declared route, as the OpenAPI document reads it. */
function routeDoc(route: Route): RouteDoc {
  const { params = [], query, body, load: _load, handler: _handler, ...doc } = route;
  const allParams = [...params, ...(query?.params ?? [])];
  return {
    ...doc,
    ...(allParams.length ? { params: allParams } : {}),
    ...(body ? { body: { validators: body.validators, example: body.example, ...(body.description ? { description: body.description } : {}), ...(body.alsoAccepts ? { alsoAccepts: body.alsoAccepts } : {}) } } : {}),
  };
}

/** The middleware that lets a caller through by each kind of access but `public`. */
export type Guards = Readonly<Record<Exclude<Access, 'public'>, RequestHandler>>;

const EXPRESS_METHOD: Readonly<Record<HttpMethod, 'get' | 'post' | 'put' | 'patch' | 'delete'>> = { GET: 'get', POST: 'post', PUT: 'put', PATCH: 'patch', DELETE: 'delete' };

/** `:name` segments of an express path. */
const pathParamNames = (path: string): string[] => [...path.matchAll(/:([A-Za-z_$][\w$]*)/g)].map((m) => m[1]!);

/** What a declaration must state for its doc to be the route: its path's parameters, and which validator checks a body. */
function assertDeclared(route: Route): void {
  const name = `${route.method} ${route.path}`;
  const declared = (route.params ?? []).filter((p) => p.in === 'path').map((p) => p.name).sort();
  const inPath = pathParamNames(route.path).sort();
  if (JSON.stringify(declared) !== JSON.stringify(inPath)) throw new Error(`${name}: path parameters declared [${declared.join(', ')}] for [${inPath.join(', ')}]`);
  if (route.body && route.body.validators.length !== 1 && !route.body.choose) throw new Error(`${name}: several body validators and no choose`);
}

function checkedBody<B>(body: RouteBody<B>, req: Request): B | undefined {
  const validator = body.choose ? body.choose(req) : body.validators[0]!;
  if (!validator) return undefined;
  if (!body.validators.includes(validator)) throw new Error('A body was checked by a validator its route does not document.');
  return validator(req.body, mayHoldUnstorable(req));
}

/** The express handler of a declaration: its stages in order, then the handler. */
function answer(route: Route): RequestHandler {
  return async (req, res) => {
    const loaded: unknown = route.load ? await route.load(req) : undefined;
    const query: unknown = route.query ? route.query.parse(req.query as Record<string, unknown>) : undefined;
    const body: unknown = route.body ? checkedBody(route.body, req) : undefined;
    await route.handler({ req, res, loaded, query, body });
  };
}

/** `prefix` + `path` as express joins them (listAppRoutes' rule: no trailing slash). */
const joinPath = (prefix: string, path: string): string => (prefix.replace(/\/+$/, '') + path).replace(/(.)\/+$/, '$1') || '/';

export interface MountOptions {
  /**
   * Every request under the prefix needs this access, checked before its path is matched: a
   * path nobody declared answers 401 to a caller without the credential, 404 only to one with
   * it. Every route of the group must declare this access.
   */
  access?: Exclude<Access, 'public'>;
  /** The least role of the group's routes that do not declare one (default operator). */
  role?: Role;
}

/** 403 FORBIDDEN when the caller's role `held` is below `needed`; `what` is what they tried, for the message. */
export function assertRole(held: Role | undefined, needed: Role, what = 'This'): void {
  if (!held || ROLE_RANK[held] < ROLE_RANK[needed]) throw new AppError('FORBIDDEN', `${what} needs the ${needed} role or above; you are ${held ?? 'unknown'}.`);
}

/** The middleware that refuses a caller whose role is below `role`; the authentication guard ran first. */
function roleGuard(role: Role): RequestHandler {
  return (req, _res, next) => {
    assertRole(req.principal?.role, role);
    next();
  };
}

/** The routes of one express app and their docs, in the order they were mounted. */
export class AppRoutes {
  readonly #app: Express;
  readonly #guards: Guards;
  readonly #docs: MountedRouteDoc[] = [];

  constructor(app: Express, guards: Guards) {
    this.#app = app;
    this.#guards = guards;
  }

  /** Declared routes on a router of their own at `prefix`. */
  mount(prefix: string, routes: readonly Route[], options: MountOptions = {}): void {
    const router = Router();
    if (options.access) router.use(this.#guards[options.access]);
    const declared = routes.map((route) => (route.access === 'public' || route.access === 'metrics' || route.role ? route : { ...route, role: options.role ?? 'operator' }));
    for (const route of declared) {
      assertDeclared(route);
      if (options.access && route.access !== options.access) throw new Error(`${route.method} ${prefix}${route.path} is ${route.access} under a prefix that needs ${options.access}`);
      const guard = route.access === 'public' || options.access ? [] : [this.#guards[route.access]];
      const roles = route.role && route.role !== 'operator' ? [roleGuard(route.role)] : [];
      router[EXPRESS_METHOD[route.method]](route.path, ...guard, ...roles, answer(route));
    }
    this.#app.use(prefix, router);
    this.#record(prefix, declared.map(routeDoc), 'express');
  }

  /** The docs of routes the HTTP server answers ahead of express (webhook POSTs, WebSocket upgrades); their paths are full. */
  servedAhead(docs: readonly RouteDoc[]): void {
    this.#record('/', docs, 'server');
  }

  docs(): readonly MountedRouteDoc[] {
    return this.#docs;
  }

  #record(prefix: string, docs: readonly RouteDoc[], servedBy: ServedBy): void {
    for (const doc of docs) this.#docs.push({ ...doc, fullPath: joinPath(prefix, doc.path), servedBy });
  }
}
