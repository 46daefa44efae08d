import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { streamNames, ensureStreams } from '../lib/streams.js';
import { createGatewayApp, type GatewayDeps } from './app.js';

export interface RunningGateway {
  server: Server;
  port: number;
  url: string;
  /** Where a browser on this machine opens the dashboard (a wildcard address named as localhost). */
  dashboardUrl: string;
  close: () => Promise<void>;
}

/** Time allowed for in-flight requests when closing before connections are cut. */
const DEFAULT_DRAIN_MS = 10_000;

export async function startGateway(deps: GatewayDeps, listen: { port: number; host: string }): Promise<RunningGateway> {
  // Webhooks publish to the inbound stream: it must exist before the first one is accepted.
  await ensureStreams(deps.nc, streamNames(deps.config.natsPrefix), { replicas: deps.config.natsReplicas });
  const gateway = createGatewayApp(deps);
  const server = createServer(gateway.handler);
  // Slow-loris guards: a client must send its headers and body in bounded time.
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 65_000;
  // WebSocket upgrades (the webchat socket); any other upgrade path is refused with 404.
  server.on('upgrade', gateway.webchat.handleUpgrade);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    port,
    url: `http://${listen.host}:${port}`,
    dashboardUrl: `http://${browsableHost(listen.host)}:${port}/`,
    close: () =>
      new Promise<void>((resolve) => {
        // Upgraded sockets keep the server open: close them first (1001; widgets reconnect elsewhere).
        void gateway.webchat.close();
        const force = setTimeout(() => server.closeAllConnections(), DEFAULT_DRAIN_MS);
        force.unref();
        server.close(() => {
          clearTimeout(force);
          void gateway.close().finally(resolve);
        });
        server.closeIdleConnections();
      }),
  };
}

/** A listening address as a browser reaches it: 0.0.0.0 and :: are every interface, so localhost; IPv6 in brackets. */
export function browsableHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
