import type { RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { pingDatabase, type Orm } from '../../lib/db.js';
import { withinDeadline } from '../../lib/deadline.js';
import { errorBody } from '../../lib/error-response.js';
import { AppError } from '../../lib/errors.js';
import { metricsAccess } from '../../lib/metrics-access.js';
import { pingNats, type NatsConnection } from '../../lib/nats.js';
import { replicaReport, type StreamNames } from '../../lib/streams.js';
import { defineRoute, type Route } from '../http/route.js';
import { COUNT, nullable, object, STRING } from '../http/schemas.js';

/**
 * `/healthz` and `/readyz` are open (load balancers, orchestrators), and say no more than
 * whether the process is alive and ready. `/metrics` is open too unless METRICS_TOKEN is
 * set; then it takes `Authorization: Bearer <METRICS_TOKEN>`, which is also what shows
 * /readyz's details (stream names, replicas, leaders: nothing for the open internet).
 */
export interface HealthDeps {
  orm: Orm;
  nc: NatsConnection;
  registry: Registry;
  metricsToken?: string;
  names: StreamNames;
  /** NATS_REPLICAS: what the streams' replication is checked against. */
  natsReplicas: number;
}

/** A deadline for the replica report (it asks JetStream about two streams). */
const REPLICA_REPORT_MS = 2000;

const REACHABLE = { type: 'string', enum: ['ok', 'unreachable'] };
const CHECKS = object(
  {
    postgres: REACHABLE,
    nats: REACHABLE,
    natsReplicas: object(
      {
        status: { type: 'string', enum: ['ok', 'degraded', 'unknown'] },
        expected: { type: 'integer', minimum: 1, description: 'NATS_REPLICAS' },
        streams: { type: 'object', additionalProperties: object({ replicas: COUNT, current: COUNT, leader: nullable(STRING) }) },
      },
      { optional: ['streams'] },
    ),
  },
  { title: 'ReadinessChecks', optional: ['natsReplicas'] },
);
const EXAMPLE_CHECKS = { postgres: 'ok', nats: 'ok', natsReplicas: { status: 'ok', expected: 1, streams: { mas_inbound: { replicas: 1, current: 1, leader: 'nats-1' } } } };

/** The guard of `access: 'metrics'` (GET /metrics): open unless METRICS_TOKEN is set, then its Bearer token only. */
export function metricsGuard(metricsToken: string | undefined): RequestHandler {
  const mayReadMetrics = metricsAccess(metricsToken);
  return (req, _res, next) => {
    if (!mayReadMetrics(req.headers.authorization)) throw new AppError('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    next();
  };
}

export function healthRoutes(deps: HealthDeps): readonly Route[] {
  // Unset, METRICS_TOKEN opens /metrics to anyone; the details of /readyz stay closed then.
  const maySeeDetails = deps.metricsToken === undefined ? () => false : metricsAccess(deps.metricsToken);
  return [
    defineRoute({
      method: 'GET', path: '/healthz', operationId: 'healthz', tag: 'Health', access: 'public',
      summary: 'The process is alive',
      responses: { 200: { description: 'Alive.', schema: object({ ok: { const: true } }), example: { ok: true } } },
      handler: ({ res }) => {
        res.json({ ok: true });
      },
    }),
    /**
     * Ready when PostgreSQL and NATS answer. With the metrics token, the detail also says how
     * the streams are replicated (`natsReplicas`: expected NATS_REPLICAS, per stream replicas
     * configured and current, and the leader): a stream with fewer current replicas than
     * NATS_REPLICAS is `degraded` (it still works; one more node lost may stop it), not unready.
     */
    defineRoute({
      method: 'GET', path: '/readyz', operationId: 'readyz', tag: 'Health', access: 'public',
      summary: 'PostgreSQL and NATS answer (and, for the metrics token, how the streams are replicated)',
      description: '`checks.natsReplicas` only with `Authorization: Bearer <METRICS_TOKEN>` (METRICS_TOKEN set); without it the answer says no more than whether each dependency answers.',
      responses: {
        200: { description: 'Ready; `natsReplicas.status` `degraded` means a stream has fewer current replicas than NATS_REPLICAS.', schema: object({ ok: { const: true }, checks: CHECKS }), example: { ok: true, checks: EXAMPLE_CHECKS } },
        503: {
          description: 'Not ready: `NOT_READY` naming what is unreachable.',
          schema: object({ ok: { const: false }, checks: CHECKS, error: object({ code: { const: 'NOT_READY' }, message: STRING }) }),
          example: { ok: false, checks: { postgres: 'unreachable', nats: 'ok' }, ...errorBody(new AppError('NOT_READY', 'PostgreSQL not reachable.')) },
        },
      },
      handler: async ({ req, res }) => {
        const [postgres, nats] = await Promise.all([pingDatabase(deps.orm), pingNats(deps.nc)]);
        const checks: Record<string, unknown> = { postgres: postgres ? 'ok' : 'unreachable', nats: nats ? 'ok' : 'unreachable' };
        if (nats && maySeeDetails(req.headers.authorization)) {
          const report = await withinDeadline(replicaReport(deps.nc, deps.names, deps.natsReplicas), REPLICA_REPORT_MS).catch(() => null);
          checks.natsReplicas = report ? { status: report.ok ? 'ok' : 'degraded', expected: report.expected, streams: report.streams } : { status: 'unknown', expected: deps.natsReplicas };
        }
        if (postgres && nats) {
          res.json({ ok: true, checks });
          return;
        }
        const down = [!postgres && 'PostgreSQL', !nats && 'NATS'].filter(Boolean).join(' and ');
        const notReady = new AppError('NOT_READY', `${down} not reachable.`);
        res.status(notReady.status).json({ ok: false, checks, ...errorBody(notReady) });
      },
    }),
    defineRoute({
      method: 'GET', path: '/metrics', operationId: 'metrics', tag: 'Health', access: 'metrics',
      summary: 'Prometheus metrics: request durations by method, route pattern and status; process metrics',
      responses: {
        200: {
          description: 'Prometheus text exposition.',
          type: 'text/plain',
          schema: STRING,
          example: '# HELP http_request_duration_seconds Duration of HTTP requests\n# TYPE http_request_duration_seconds histogram\nhttp_request_duration_seconds_count{method="GET",route="/api/agents",status="200"} 3\n',
        },
      },
      handler: async ({ res }) => {
        res.setHeader('Content-Type', deps.registry.contentType);
        res.send(await deps.registry.metrics());
      },
    }),
  ];
}
