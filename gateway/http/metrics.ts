import type { RequestHandler } from 'express';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The path with its ids folded to `:id`, never the raw path (ids would explode the label
 * set); 404s share one label. Express's own req.route is no help here: the mount path is
 * gone by the time the response finishes.
 */
function routeLabel(req: Parameters<RequestHandler>[0], status: number): string {
  if (status === 404) return 'unmatched';
  const path = req.originalUrl.split('?')[0]!;
  return path.replace(/\/(\d+|[0-9a-f]{8}-[0-9a-f-]{27})(?=\/|$)/gi, '/:id');
}

/** One registry per process; the HTTP layer records every request's duration by route and status. */
export interface Metrics {
  registry: Registry;
  /** Express middleware timing every request it sees. */
  observe: RequestHandler;
  /** For handlers outside express (the webhook fast path). */
  record: (method: string, route: string, status: number, seconds: number) => void;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
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
      const route = routeLabel(req, res.statusCode);
      duration.observe({ method: req.method, route, status: String(res.statusCode) }, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
  const record: Metrics['record'] = (method, route, status, seconds) => duration.observe({ method, route, status: String(status) }, seconds);
  return { registry, observe, record };
}
