import type { RequestHandler } from 'express';
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process; the HTTP layer records every request's duration by route and status. */
export function createMetrics(): { registry: Registry; observe: RequestHandler } {
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
      // The route pattern, never the raw path: ids would explode the label set.
      const route = req.route?.path ? `${req.baseUrl}${req.route.path}` : 'unmatched';
      duration.observe({ method: req.method, route, status: String(res.statusCode) }, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
  return { registry, observe };
}
