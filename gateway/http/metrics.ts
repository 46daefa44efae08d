import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { RequestObserver } from './request-observer.js';

/** The route label of every request that matches no route (whatever its path and status). */
export const UNMATCHED_ROUTE = 'unmatched';

/** One registry per process; the HTTP layer records every request's duration by route and status. */
export interface Metrics {
  registry: Registry;
  /** Records a request whose answer was sent (one the client left before its end is not timed). */
  record: RequestObserver;
}

/**
 * Requests are labelled by the pattern of the route they match, never by their raw path:
 * the label set is bounded by the route table, whatever paths clients send (junk under an
 * authenticated router that answers 401 before any route runs included).
 */
export function createMetrics(shared?: Registry): Metrics {
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
  const record: RequestObserver = ({ method, route, status, durationMs, aborted }) => {
    if (aborted || status === null) return;
    duration.observe({ method, route: route ?? UNMATCHED_ROUTE, status: String(status) }, durationMs / 1e3);
  };
  return { registry, record };
}
