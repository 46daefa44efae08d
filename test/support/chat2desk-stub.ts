import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Test } from 'tap';
import { listenLocal, readBody } from './local-server.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
}

export type StubHandler = (req: RecordedRequest) => { status: number; body?: unknown; delayMs?: number } | undefined;

/**
 * A local stand-in for the Chat2Desk API v1 (the only outside service the tests replace).
 * Accepts `token` (any other Authorization answers 401), keeps webhooks in memory, records
 * every request, and answers POST /v1/messages with a message id. `handle` overrides any
 * route (return undefined to fall through to the defaults), e.g. to answer 503.
 */
export interface Chat2DeskStub {
  url: string;
  token: string;
  requests: RecordedRequest[];
  webhooks: { id: number; url: string; name?: string; events?: string[] }[];
  /** Messages the service sent to customers (POST /v1/messages bodies). */
  sent: () => any[];
  handle: (handler: StubHandler | null) => void;
  /** Resolves once `predicate` holds for the recorded requests (polls), or rejects after timeoutMs. */
  waitFor: (predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  close: () => Promise<void>;
}

export async function startChat2DeskStub(t: Test | null, token = 'c2d-test-token'): Promise<Chat2DeskStub> {
  const requests: RecordedRequest[] = [];
  const webhooks: Chat2DeskStub['webhooks'] = [];
  let nextWebhookId = 1;
  let nextMessageId = 1000;
  let override: StubHandler | null = null;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const u = new URL(req.url ?? '/', 'http://stub');
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body, at: Date.now() };
    requests.push(rec);

    const custom = override?.(rec);
    if (custom) {
      if (custom.delayMs) await new Promise((r) => setTimeout(r, custom.delayMs));
      if (!res.destroyed) send(res, custom.status, custom.body ?? {});
      return;
    }
    if (req.headers.authorization !== token) return send(res, 401, { status: 'error', message: 'Wrong token' });

    const m = /^\/v1\/webhooks\/(\d+)$/.exec(u.pathname);
    if (rec.method === 'GET' && u.pathname === '/v1/companies/api_info') return send(res, 200, { status: 'success', data: { company_name: 'Stub' } });
    if (rec.method === 'GET' && u.pathname === '/v1/webhooks') return send(res, 200, { status: 'success', data: webhooks });
    if (rec.method === 'POST' && u.pathname === '/v1/webhooks') {
      const hook = { id: nextWebhookId++, ...body };
      webhooks.push(hook);
      return send(res, 200, { status: 'success', data: hook });
    }
    if (rec.method === 'PUT' && m) {
      const hook = webhooks.find((w) => w.id === Number(m[1]));
      if (!hook) return send(res, 404, { status: 'error', message: 'Not found' });
      Object.assign(hook, body);
      return send(res, 200, { status: 'success', data: hook });
    }
    if (rec.method === 'POST' && u.pathname === '/v1/messages') return send(res, 200, { status: 'success', data: { message_id: nextMessageId++ } });
    if (rec.method === 'GET' && /^\/v1\/messages\/[^/]+\/transfer(_to_group)?$/.test(u.pathname)) return send(res, 200, { status: 'success' });
    if (rec.method === 'PUT' && /^\/v1\/dialogs\/\d+$/.test(u.pathname)) return send(res, 200, { status: 'success' });
    return send(res, 404, { status: 'error', message: 'Unknown route' });
  });
  const { url, close } = await listenLocal(server, t);
  return {
    url,
    token,
    requests,
    webhooks,
    sent: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.headers.authorization === token).map((r) => r.body),
    handle: (h) => {
      override = h;
    },
    waitFor: async (predicate, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(requests)) {
        if (Date.now() > deadline) throw new Error(`chat2desk stub: condition not met within ${timeoutMs} ms (${requests.length} requests recorded)`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    close,
  };
}
