import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { onCleanup } from './env.js';

/**
 * A fast local stand-in for the Chat2Desk API, in the bench process: answers every request
 * at once (or after `setLatency`), counts POST /v1/messages (the replies the workers send) and records when each
 * arrived (performance.now(), taken when the request's headers arrive, before its body).
 * `onReply` sees the client id of each reply (the latency section pairs it with its webhook),
 * its text and its `external_id` (the worker's outbox row id).
 *
 * Options (the chaos section; off by default): `refuseRate` answers that share of the replies
 * 503 without keeping them (not delivered: the worker reconciles, then sends again), and
 * `history` keeps every delivered reply and answers the history read of reconciliation
 * (`GET /v1/messages?client_id=…&type=to_client&limit&offset`) with them, `external_id`
 * included, as Chat2Desk does. Without `history` that read gets the old `{"data":{}}`.
 */
export interface StandInOptions {
  /** Share of POST /v1/messages answered 503 and not kept (0: none, the default). */
  refuseRate?: number;
  /** Random numbers in [0, 1) for `refuseRate` (default Math.random). */
  random?: () => number;
  /** Keep the delivered replies and answer the history read with them. */
  history?: boolean;
}

/** A delivered reply as the history read answers it. */
export interface HistoryEntry {
  id: number;
  client_id: string;
  text: string;
  type: 'to_client';
  external_id: string | null;
  created: string;
}

export interface StandIn {
  url: string;
  token: string;
  /** Replies received so far. */
  count: () => number;
  /** Arrival times (performance.now() ms) of the replies, in arrival order. */
  arrivals: () => Float64Array;
  /** Requests that were not POST /v1/messages (e.g. transfers), by path. */
  others: Map<string, number>;
  onReply: (fn: ((clientId: string, at: number, text: string, externalId: string | null) => void) | null) => void;
  /** Replies answered 503 and not kept (`refuseRate`). */
  refused: () => number;
  /** History reads answered (`history`): reconciliations of uncertain sends. */
  historyReads: () => number;
  /** Resolves when `n` replies have arrived, or with false after `timeoutMs` without progress. */
  waitForCount: (n: number, options: { stallMs: number; tick?: (count: number) => void }) => Promise<boolean>;
  /** How long every answer takes from now on (the real Chat2Desk takes ~150 ms); 0: at once. */
  setLatency: (ms: number) => void;
  reset: () => void;
  close: () => Promise<void>;
}

export async function startStandIn(token = 'bench-chat2desk-token', options: StandInOptions = {}): Promise<StandIn> {
  let times = new Float64Array(1 << 16);
  let n = 0;
  let nextId = 1;
  let listener: ((clientId: string, at: number, text: string, externalId: string | null) => void) | null = null;
  const others = new Map<string, number>();
  let latencyMs = 0;
  const refuseRate = options.refuseRate ?? 0;
  const random = options.random ?? Math.random;
  let refused = 0;
  let historyReads = 0;
  /** Delivered replies by client id (`history`). */
  const history = new Map<string, HistoryEntry[]>();

  const server: Server = createServer((req, res) => {
    const at = performance.now();
    const isReply = req.method === 'POST' && req.url === '/v1/messages';
    const isHistory = options.history === true && req.method === 'GET' && (req.url ?? '').startsWith('/v1/messages?');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (isReply && refuseRate > 0 && random() < refuseRate) {
        refused++;
        const refuse = () => {
          res.writeHead(503, { 'content-type': 'application/json' });
          res.end('{"status":"error","errors":{"message":"Service temporarily unavailable"}}');
        };
        if (latencyMs > 0) setTimeout(refuse, latencyMs);
        else refuse();
        return;
      }
      if (isHistory) {
        historyReads++;
        const q = new URL(req.url ?? '', 'http://stand-in').searchParams;
        const limit = Math.max(1, Math.min(200, Number(q.get('limit') ?? 200) || 200));
        const offset = Math.max(0, Number(q.get('offset') ?? 0) || 0);
        const page = (history.get(q.get('client_id') ?? '') ?? []).slice(offset, offset + limit);
        const answer = () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: 'success', data: page }));
        };
        if (latencyMs > 0) setTimeout(answer, latencyMs);
        else answer();
        return;
      }
      const messageId = isReply ? nextId++ : 0;
      if (isReply) {
        if (n === times.length) {
          const bigger = new Float64Array(times.length * 2);
          bigger.set(times);
          times = bigger;
        }
        times[n++] = at;
        if (listener || options.history) {
          try {
            const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { client_id?: unknown; text?: unknown; external_id?: unknown };
            const externalId = body.external_id === undefined || body.external_id === null ? null : String(body.external_id);
            if (options.history) {
              const clientId = String(body.client_id);
              let list = history.get(clientId);
              if (!list) history.set(clientId, (list = []));
              list.push({ id: messageId, client_id: clientId, text: String(body.text ?? ''), type: 'to_client', external_id: externalId, created: new Date().toISOString() });
            }
            listener?.(String(body.client_id), at, String(body.text ?? ''), externalId);
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
        res.end(isReply ? `{"status":"success","data":{"message_id":${messageId}}}` : '{"status":"success","data":{}}');
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
    refused: () => refused,
    historyReads: () => historyReads,
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
      refused = 0;
      historyReads = 0;
      others.clear();
      history.clear();
    },
    close: dispose,
  };
}
