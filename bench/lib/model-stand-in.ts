import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './env.js';

/**
 * An OpenAI-compatible chat-completions stand-in in the bench process: every
 * `POST /v1/chat/completions` is answered after `latencyMs` (a real model takes 0.5–3 s) with
 * a short reply and fixed token usage. Counts the requests, those in flight now and the
 * most in flight at once (the model calls the worker keeps under way).
 */
export interface ModelStandIn {
  /** The agents' `model.baseUrl`. */
  baseUrl: string;
  setLatency: (ms: number) => void;
  requests: () => number;
  inflight: () => number;
  peak: () => number;
  reset: () => void;
  close: () => Promise<void>;
}

export const STAND_IN_USAGE = { prompt_tokens: 200, completion_tokens: 30 };

export async function startModelStandIn(): Promise<ModelStandIn> {
  let latencyMs = 1000;
  let requests = 0;
  let inflight = 0;
  let peak = 0;
  let nextId = 1;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      requests++;
      inflight++;
      if (inflight > peak) peak = inflight;
      let model = 'unknown';
      try {
        model = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: string }).model ?? model;
      } catch {
        /* answered anyway */
      }
      const answer = () => {
        inflight--;
        const body = JSON.stringify({
          id: `chatcmpl-${nextId++}`, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model,
          choices: [{ index: 0, message: { role: 'assistant', content: 'Thanks for your message: we open at 9 am and deliver within 2 days.' }, finish_reason: 'stop' }],
          usage: { ...STAND_IN_USAGE, total_tokens: STAND_IN_USAGE.prompt_tokens + STAND_IN_USAGE.completion_tokens },
        });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  server.maxConnections = 100_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 4096, resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = onCleanup('model stand-in', () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return {
    baseUrl: `${url}/v1`,
    setLatency: (ms) => {
      latencyMs = ms;
    },
    requests: () => requests,
    inflight: () => inflight,
    peak: () => peak,
    reset: () => {
      requests = 0;
      peak = inflight;
    },
    close,
  };
}
