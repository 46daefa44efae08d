import { createServer, type Server } from 'node:http';
import { performance } from 'node:perf_hooks';
import { listen } from '../../scripts/sandbox/http.js';
import { onCleanup } from './env.js';

/**
 * A company's own order API in the bench process, for the agent action the actions section
 * creates: `GET /orders/<id>` is answered after `latencyMs` (100 ms: an API's pace) with
 * `{"orderId","status":"shipped","eta"}`; anything else gets 404. Counts the requests, those
 * in flight now and the most in flight at once.
 */
export interface ActionApiStandIn {
  /** http://127.0.0.1:<port> */
  url: string;
  setLatency: (ms: number) => void;
  requests: () => number;
  /** Sees the order id of each order request as it arrives (performance.now()). */
  onRequest: (fn: ((orderId: string, at: number) => void) | null) => void;
  inflight: () => number;
  peak: () => number;
  reset: () => void;
  close: () => Promise<void>;
}

/** What every order is, as the API reports it (the model's second turn quotes it). */
export const ORDER_STATUS = 'shipped';

export async function startActionApiStandIn(): Promise<ActionApiStandIn> {
  let latencyMs = 100;
  let requests = 0;
  let inflight = 0;
  let peak = 0;
  let listener: ((orderId: string, at: number) => void) | null = null;
  const server: Server = createServer((req, res) => {
    const at = performance.now();
    req.resume();
    req.on('end', () => {
      const order = req.method === 'GET' ? /^\/orders\/([^/?]+)/.exec(req.url ?? '') : null;
      if (!order) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
        return;
      }
      requests++;
      inflight++;
      if (inflight > peak) peak = inflight;
      listener?.(order[1]!, at);
      const answer = () => {
        inflight--;
        const body = JSON.stringify({ orderId: order[1], status: ORDER_STATUS, eta: '2 days' });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  const listening = await listen(server);
  const url = listening.url;
  const close = onCleanup('action API stand-in', listening.close);
  return {
    url,
    setLatency: (ms) => {
      latencyMs = ms;
    },
    requests: () => requests,
    onRequest: (fn) => {
      listener = fn;
    },
    inflight: () => inflight,
    peak: () => peak,
    reset: () => {
      requests = 0;
      peak = inflight;
    },
    close,
  };
}
