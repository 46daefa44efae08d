import type { RequestHandler } from 'express';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The route label of every request that matches no route (whatever its path and status). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Names a request by its route pattern (`/api/agents/:id`), or null when no route matches it. */
export type RouteOf = (method: string, path: string) => string | null;

/** One registry per process; the HTTP layer records every request's duration by route and status. */
export interface Metrics {
  registry: Registry;
  /** Express middleware timing every request it sees. */
  observe: RequestHandler;
  /** For handlers outside express (the webhook fast path). */
  record: (method: string, route: string, status: number, seconds: number) => void;
}

/**
 * Requests are labelled by the pattern of the route they match, never by their raw path:
 * the label set is bounded by the route table, whatever paths clients send (junk under an
 * authenticated router that answers 401 before any route runs included).
 */
export function createMetrics(routeOf: RouteOf, shared?: Registry): Metrics {
  // A process's registry (lib/runtime.ts) already collects the process figures.
  const registry = shared ?? new Registry();
  if (!shared) collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const observe: RequestHandler = (req, res, next) => {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      const route = routeOf(req.method, req.originalUrl.split('?', 1)[0]!) ?? UNMATCHED_ROUTE;
      duration.observe({ method: req.method, route, status: String(res.statusCode) }, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
  const record: Metrics['record'] = (method, route, status, seconds) => duration.observe({ method, route, status: String(status) }, seconds);
  return { registry, observe, record };
}
