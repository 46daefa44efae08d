import type { IncomingMessage, Server } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import type { Test } from 'tap';

/** Listens on a free loopback port; the returned close ends open connections too (and runs at teardown). */
export async function listenLocal(server: Server, t: Test | null): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t?.teardown(close);
  return { url, close };
}

/** A stand-in's request body: parsed JSON, the raw text when it is not JSON, null when empty. */
export async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    return raw ? JSON.parse(raw) : null;
  } catch {
    return raw;
  }
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
