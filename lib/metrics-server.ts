import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from './logger.js';
import { writeError } from './error-response.js';
import { AppError, type ErrorCode } from './errors.js';
import { metricsAccess } from './metrics-access.js';

export interface MetricsServer {
  url: string;
  close: () => Promise<void>;
}

/**
 * GET /metrics of a process without an HTTP API (a worker): the registry's text, nothing
 * else. Errors answer in the API's shape (`{"error":{"code","message"}}`).
 */
export async function startMetricsServer(deps: { registry: Registry; token?: string; logger: Logger }, listen: { port: number; host: string }): Promise<MetricsServer> {
  const allowed = metricsAccess(deps.token);
  const server = createServer((req, res) => {
    const answer = (code: ErrorCode, message: string) => writeError(res, new AppError(code, message));
    if (req.url?.split('?', 1)[0] !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return answer('NOT_FOUND', 'Only GET /metrics is served here.');
    if (!allowed(req.headers.authorization)) return answer('UNAUTHORIZED', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>.');
    deps.registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': deps.registry.contentType });
        res.end(text);
      },
      (err: unknown) => {
        deps.logger.error({ err }, 'metrics: collecting failed');
        answer('INTERNAL_ERROR', 'Collecting the metrics failed.');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${listen.host.includes(':') ? `[${listen.host}]` : listen.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
