import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { Test } from 'tap';
import { listenLocal, waitForRequests } from './local-server.js';

/**
 * A company's own HTTP API for agent action tests (node:http on 127.0.0.1). Records every
 * request (method, path with query, headers, raw body) and answers with the first `answer`
 * registered for its method and path prefix (the latest registration wins for equal ones):
 * after `delayMs` (default 100 ms, an API's pace), a status, a JSON or text body, or never
 * (`hang`), or a JSON string of `bytes` bytes (an oversized answer). A request nobody
 * registered an answer for gets 200 `{"ok":true,"method","path","body":<parsed>}` after 100 ms.
 */
export interface ApiStubRequest {
  method: string;
  /** With its query string. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface ApiStubAnswer {
  /** 200 unless told. */
  status?: number;
  /** JSON, or a string sent as text. */
  body?: unknown;
  /** 100 unless told. */
  delayMs?: number;
  headers?: Record<string, string>;
  /** Never answers (the connection stays open until the client leaves or the stand-in closes). */
  hang?: boolean;
  /** A JSON string body of this many bytes. */
  bytes?: number;
}

export interface ActionApiStub {
  /** http://127.0.0.1:<port> */
  url: string;
  requests: ApiStubRequest[];
  answer(method: string, pathPrefix: string, a: ApiStubAnswer | ((r: ApiStubRequest) => ApiStubAnswer)): void;
  /** Called for each request as it arrives (before it is answered). */
  onRequest: ((r: ApiStubRequest) => void) | null;
  /** Resolves once `n` requests arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const DEFAULT_DELAY_MS = 100;

interface Route {
  method: string;
  pathPrefix: string;
  answer: ApiStubAnswer | ((r: ApiStubRequest) => ApiStubAnswer);
}

function parsed(body: string): unknown {
  if (!body) return null;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

export async function startActionApiStub(t: Test | null): Promise<ActionApiStub> {
  const requests: ApiStubRequest[] = [];
  const routes: Route[] = [];
  const stub: ActionApiStub = {
    url: '',
    requests,
    answer: (method, pathPrefix, answer) => {
      routes.unshift({ method: method.toUpperCase(), pathPrefix, answer });
    },
    onRequest: null,
    waitFor: (n, timeoutMs = 10_000) => waitForRequests('action API stub', requests, (rs) => rs.length >= n, timeoutMs),
    close: async () => {},
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rec: ApiStubRequest = { method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
    requests.push(rec);
    stub.onRequest?.(rec);
    const route = routes.find((r) => r.method === rec.method && rec.path.startsWith(r.pathPrefix));
    const a: ApiStubAnswer = route
      ? typeof route.answer === 'function'
        ? route.answer(rec)
        : route.answer
      : { body: { ok: true, method: rec.method, path: rec.path, body: parsed(rec.body) } };
    if (a.hang) return;
    await new Promise((r) => setTimeout(r, a.delayMs ?? DEFAULT_DELAY_MS));
    if (res.destroyed) return;
    let payload: string;
    let type = 'application/json';
    if (a.bytes !== undefined) payload = JSON.stringify('x'.repeat(Math.max(0, a.bytes - 2)));
    else if (typeof a.body === 'string') {
      payload = a.body;
      type = 'text/plain; charset=utf-8';
    } else payload = a.body === undefined ? '' : JSON.stringify(a.body);
    res.writeHead(a.status ?? 200, { 'content-type': type, ...a.headers });
    res.end(payload);
  });
  const { url, close } = await listenLocal(server, t);
  stub.url = url;
  stub.close = close;
  return stub;
}
