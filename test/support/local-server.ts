import type { Server } from 'node:http';
import { createServer } from 'node:net';
import type { Test } from 'tap';
import { listen } from '../../scripts/sandbox/http.js';

export { readBody, waitForRequests } from '../../scripts/sandbox/http.js';

/** Listens on a free loopback port; the returned close ends open connections too (and runs at teardown). */
export async function listenLocal(server: Server, t: Test | null): Promise<{ url: string; close: () => Promise<void> }> {
  const listening = await listen(server);
  t?.teardown(listening.close);
  return listening;
}

/** A TCP port free on 127.0.0.1 right now (for servers that must be told their port: nats-server, PostgreSQL). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}
