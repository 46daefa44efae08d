import { Router } from 'express';
import type { Registry } from 'prom-client';
import { pingDatabase, type Orm } from '../../lib/db.js';
import { pingNats, type NatsConnection } from '../../lib/nats.js';

export function healthRoutes(deps: { orm: Orm; nc: NatsConnection; registry: Registry }): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });
  router.get('/readyz', async (_req, res) => {
    const [postgres, nats] = await Promise.all([pingDatabase(deps.orm), pingNats(deps.nc)]);
    const checks = { postgres: postgres ? 'ok' : 'unreachable', nats: nats ? 'ok' : 'unreachable' };
    if (postgres && nats) {
      res.json({ ok: true, checks });
      return;
    }
    const down = [!postgres && 'PostgreSQL', !nats && 'NATS'].filter(Boolean).join(' and ');
    res.status(503).json({ ok: false, checks, error: { code: 'NOT_READY', message: `${down} not reachable.` } });
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', deps.registry.contentType);
    res.send(await deps.registry.metrics());
  });
  return router;
}
