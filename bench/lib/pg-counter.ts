import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './env.js';

/**
 * A counting TCP relay in front of PostgreSQL (diagnostics, `--count-queries`): the worker's
 * DATABASE_URL points here, every byte is relayed unchanged, and the frontend messages are
 * tallied by type: `Q` simple queries (BEGIN / COMMIT / ROLLBACK from the ORM), `E` executes
 * of the extended protocol (every parameterised statement), `S` syncs (round trips of the
 * extended protocol). Statements = Q + E. The relay adds a little latency, so drain figures
 * taken with it are not the headline ones.
 */
export interface PgCounter {
  /** DATABASE_URL for a database through the relay. */
  urlFor: (database: string) => string;
  counts: () => { simple: number; execute: number; sync: number; statements: number; connections: number };
  reset: () => void;
  close: () => Promise<void>;
}

export async function startPgCounter(pgBase: string): Promise<PgCounter> {
  const target = new URL(pgBase);
  const host = target.hostname;
  const port = Number(target.port || 5432);
  let simple = 0;
  let execute = 0;
  let sync = 0;
  let connections = 0;
  const sockets = new Set<Socket>();

  const server: Server = createServer((client) => {
    connections++;
    const upstream = connect(port, host);
    sockets.add(client);
    sockets.add(upstream);
    let buf: Buffer = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      let at = 0;
      for (;;) {
        if (!started) {
          // Startup / SSLRequest: int32 length, no type byte.
          if (buf.length - at < 4) break;
          const len = buf.readInt32BE(at);
          if (buf.length - at < len) break;
          const code = buf.readInt32BE(at + 4);
          at += len;
          if (code !== 80877103) started = true; // not an SSLRequest: the startup message
          continue;
        }
        if (buf.length - at < 5) break;
        const type = buf[at]!;
        const len = buf.readInt32BE(at + 1);
        if (buf.length - at < len + 1) break;
        if (type === 0x51) simple++;
        else if (type === 0x45) execute++;
        else if (type === 0x53) sync++;
        at += len + 1;
      }
      buf = at >= buf.length ? Buffer.alloc(0) : buf.subarray(at);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end);
    upstream.on('close', end);
    client.on('error', end);
    upstream.on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayPort = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  const dispose = onCleanup('pg counter', close);
  return {
    urlFor: (database) => {
      const u = new URL(pgBase);
      u.hostname = '127.0.0.1';
      u.port = String(relayPort);
      u.pathname = `/${database}`;
      return u.toString();
    },
    counts: () => ({ simple, execute, sync, statements: simple + execute, connections }),
    reset: () => {
      simple = execute = sync = connections = 0;
    },
    close: dispose,
  };
}
