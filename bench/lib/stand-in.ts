import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { onCleanup } from './env.js';

/**
 * A fast local stand-in for the Chat2Desk API, in the bench process: answers every request
 * at once (or after `setLatency`), counts POST /v1/messages (the replies the workers send) and records when each
 * arrived (performance.now(), taken when the request's headers arrive, before its body).
 * `onReply` sees the client id of each reply (the latency section pairs it with its webhook).
 */
export interface StandIn {
  url: string;
  token: string;
  /** Replies received so far. */
  count: () => number;
  /** Arrival times (performance.now() ms) of the replies, in arrival order. */
  arrivals: () => Float64Array;
  /** Requests that were not POST /v1/messages (e.g. transfers), by path. */
  others: Map<string, number>;
  onReply: (fn: ((clientId: string, at: number, text: string) => void) | null) => void;
  /** Resolves when `n` replies have arrived, or with false after `timeoutMs` without progress. */
  waitForCount: (n: number, options: { stallMs: number; tick?: (count: number) => void }) => Promise<boolean>;
  /** How long every answer takes from now on (the real Chat2Desk takes ~150 ms); 0: at once. */
  setLatency: (ms: number) => void;
  reset: () => void;
  close: () => Promise<void>;
}

export async function startStandIn(token = 'bench-chat2desk-token'): Promise<StandIn> {
  let times = new Float64Array(1 << 16);
  let n = 0;
  let nextId = 1;
  let listener: ((clientId: string, at: number, text: string) => void) | null = null;
  const others = new Map<string, number>();
  let latencyMs = 0;

  const server: Server = createServer((req, res) => {
    const at = performance.now();
    const isReply = req.method === 'POST' && req.url === '/v1/messages';
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (isReply) {
        if (n === times.length) {
          const bigger = new Float64Array(times.length * 2);
          bigger.set(times);
          times = bigger;
        }
        times[n++] = at;
        if (listener) {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { client_id?: unknown; text?: unknown };
            listener(String(body.client_id), at, String(body.text ?? ''));
          } catch {
            /* not JSON: counted anyway */
          }
        }
      } else {
        const key = `${req.method} ${(req.url ?? '').replace(/\d+/g, ':n')}`;
        others.set(key, (others.get(key) ?? 0) + 1);
      }
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(isReply ? `{"status":"success","data":{"message_id":${nextId++}}}` : '{"status":"success","data":{}}');
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const dispose = onCleanup('chat2desk stand-in', close);

  return {
    url,
    token,
    count: () => n,
    arrivals: () => times.slice(0, n),
    others,
    onReply: (fn) => {
      listener = fn;
    },
    waitForCount: async (target, { stallMs, tick }) => {
      let last = n;
      let lastChange = performance.now();
      while (n < target) {
        await new Promise((r) => setTimeout(r, 100));
        tick?.(n);
        if (n !== last) {
          last = n;
          lastChange = performance.now();
        } else if (performance.now() - lastChange > stallMs) return false;
      }
      tick?.(n);
      return true;
    },
    setLatency: (ms) => {
      latencyMs = ms;
    },
    reset: () => {
      n = 0;
      others.clear();
    },
    close: dispose,
  };
}
