import type { Express } from 'express';

/** One route of the app: its method (`*` for `all()`) and its full path pattern (`/api/agents/:id`). */
export interface RoutePattern {
  method: string;
  path: string;
}

/** What router 2's `listRoutes()` answers for each layer (express 5's own router). */
interface ListedRoute {
  path: string | RegExp;
  methods?: string[];
  router?: { listRoutes: () => ListedRoute[] };
}

/**
 * Every route of an express app with its full path, mounted routers walked. HEAD, which
 * express answers for every GET route by itself, is left out (match HEAD as GET).
 */
export function listAppRoutes(app: Express): RoutePattern[] {
  const out: RoutePattern[] = [];
  const walk = (routes: ListedRoute[], prefix: string) => {
    for (const r of routes) {
      if (typeof r.path !== 'string') continue; // no RegExp routes in this app; they would have no pattern to name
      const path = prefix + (r.path === '/' && r.router ? '' : r.path);
      if (r.router) walk(r.router.listRoutes(), path);
      else for (const method of r.methods ?? []) if (method !== 'HEAD') out.push({ method, path: path.replace(/(.)\/+$/, '$1') });
    }
  };
  walk((app as unknown as { router: { listRoutes: () => ListedRoute[] } }).router.listRoutes(), '');
  const unique = new Map(out.map((r) => [`${r.method} ${r.path}`, r]));
  return [...unique.values()];
}

/**
 * Express 5 path syntax (`:name`, `*name`, `{optional}`) as an anchored, case-insensitive
 * regular expression over the raw path, trailing slash optional: express's own defaults.
 */
function compile(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    const name = /^[:*][A-Za-z_$][\w$]*/.exec(pattern.slice(i));
    if (name) {
      source += c === ':' ? '[^/]+' : '.+';
      i += name[0].length - 1;
    } else if (c === '{') source += '(?:';
    else if (c === '}') source += ')?';
    else if (c === '\\' && i + 1 < pattern.length) source += `\\${pattern[++i]}`;
    else source += c.replace(/[.+?^$|()[\]\\*]/g, '\\$&');
  }
  return new RegExp(`^${source}/?$`, 'i');
}

/**
 * Names a request by the route pattern it matches, never by its raw path, so anything that
 * counts requests by route (metrics labels) is bounded by the number of routes, whatever
 * paths clients invent. Built from the app's routes at the first lookup: every route is
 * mounted by the time a request has finished.
 */
export class RouteTable {
  readonly #source: () => RoutePattern[];
  #compiled: { method: string; path: string; regexp: RegExp }[] | null = null;

  constructor(source: () => RoutePattern[]) {
    this.#source = source;
  }

  static of(app: Express): RouteTable {
    return new RouteTable(() => listAppRoutes(app));
  }

  /** The pattern of the first route matching `method` and `path` (no query), or null. */
  match(method: string, path: string): string | null {
    this.#compiled ??= this.#source().map((r) => ({ ...r, regexp: compile(r.path) }));
    const m = method === 'HEAD' ? 'GET' : method;
    for (const r of this.#compiled) if ((r.method === m || r.method === '*') && r.regexp.test(path)) return r.path;
    return null;
  }
}
