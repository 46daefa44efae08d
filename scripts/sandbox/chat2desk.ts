import { createHmac, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen, readBody, waitForRequests, type SandboxAnswer } from './http.js';
import { sandboxPage } from './chat2desk-page.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
}

export type SandboxHandler = (req: RecordedRequest) => SandboxAnswer | undefined;

export type { SandboxAnswer };

/** A message in the stand-in's history, as Chat2Desk's `GET /v1/messages` lists them. */
export interface HistoryMessage {
  id: number;
  text: string;
  type: 'to_client';
  /** An integer, as Chat2Desk lists it (a string only for the tests' non-numeric ids). */
  client_id: number | string;
  /** Chat2Desk's format: "2024-05-01T10:00:00 UTC". */
  created: string;
  /** What our send carried; listed only when `listExternalIds` (Chat2Desk may not return it). */
  external_id?: string;
}

/** A webhook registration at the stand-in; `status` "enable" / "disable" as Chat2Desk keeps it. */
export interface RegisteredWebhook {
  id: number;
  url: string;
  name?: string;
  events?: string[];
  status?: string;
}

/** What became of one webhook the stand-in sent: the answers to each attempt, and whether one was taken. */
export interface WebhookDelivery {
  delivered: boolean;
  statuses: number[];
  /** The last answer's body (parsed JSON when it was). */
  lastBody: any;
}

/**
 * A local Chat2Desk sandbox: the API v1 as Chat2Desk answers it, for `npm run demo` and for
 * the tests (the only outside service they replace), behaving as Chat2Desk does where it
 * matters to us:
 * - Accepts `token` (any other Authorization answers 401), records every request.
 * - Ids are integers: message and webhook ids, and `client_id` in the history. A send whose
 *   `client_id` / `channel_id` is a string of digits, or that carries an explicit `null`, is
 *   refused the Chat2Desk way: HTTP 200 with `{"status":"error"}` (and not delivered).
 * - Webhooks: kept in memory with `status` "enable" (a PUT can switch one back on;
 *   `disableWebhook` switches one off, as Chat2Desk does after 5 h of failed deliveries).
 * - Its own signing secret (`signingSecret`): `sendWebhook` posts a payload signed with it
 *   (`x-webhook-signature: sha256=<hex>`) and, like Chat2Desk, tries a refused delivery three
 *   more times (after `webhookRetryDelaysMs`), then drops it.
 * - A send is carried out when it arrives (it enters the history at once) and answered after
 *   `sendLatencyMs`; `GET /v1/messages?client_id=&type=to_client&limit=&offset=` pages the
 *   history in an order of its own (not by time: the API documents none).
 * `handle` overrides any route (return undefined to fall through to the defaults), e.g. to
 * answer 503, 429 with `Retry-After` (`headers`), 200 with `{"status":"error"}`, or write the
 * answer itself (`raw`).
 * `GET /` is the sandbox's own page (not Chat2Desk's API, not recorded): the webhooks
 * registered, the messages delivered to customers, transfers and closed dialogs.
 */
export interface Chat2DeskSandbox {
  url: string;
  token: string;
  /** The secret this helpdesk signs its webhooks with (it issued it, not us). */
  signingSecret: string;
  requests: RecordedRequest[];
  webhooks: RegisteredWebhook[];
  /** Messages the service sent to customers (POST /v1/messages bodies). */
  sent: () => any[];
  /** What the helpdesk has delivered (a send that arrived, even if its answer never got back). */
  history: HistoryMessage[];
  /** Delivered messages of one client, in delivery order. */
  delivered: (clientId: string) => HistoryMessage[];
  handle: (handler: SandboxHandler | null) => void;
  /** Answer every send this much later (Chat2Desk takes 100–300 ms); the message is delivered at once. */
  setSendLatency: (ms: number) => void;
  /** List `external_id` with history messages (off by default: Chat2Desk may not). */
  listExternalIds: (on: boolean) => void;
  /** Resolves once `predicate` holds for the recorded requests (polls), or rejects after timeoutMs. */
  waitFor: (predicate: (requests: RecordedRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  /** Posts a webhook to `targetUrl` signed with `signingSecret` (or `secret`), retried like Chat2Desk (3 more tries) while refused. */
  sendWebhook: (targetUrl: string, payload: unknown, options?: { secret?: string }) => Promise<WebhookDelivery>;
  /** Switches a registered webhook off, as Chat2Desk does after 5 h without a successful delivery. */
  disableWebhook: (id: number) => void;
  /** Delays before the retries of a refused webhook (Chat2Desk: 10 s, 5 min, 2 h; the tests shorten them). */
  webhookRetryDelaysMs: number[];
  close: () => Promise<void>;
}

/** Why Chat2Desk would refuse this send body, or null: its integer ids sent as strings, or explicit nulls. */
function refusedSend(body: any): string | null {
  if (body === null || typeof body !== 'object') return 'the body is not an object';
  for (const [key, value] of Object.entries(body)) if (value === null) return `${key} must not be null`;
  for (const key of ['client_id', 'channel_id']) if (typeof body[key] === 'string' && /^\d+$/.test(body[key])) return `${key} must be an integer`;
  return null;
}

export interface Chat2DeskSandboxOptions {
  /** The API token it accepts (`Authorization: <token>`); a random one unless given. */
  token?: string;
  /** Where it listens: loopback, any free port, unless given. */
  port?: number;
  host?: string;
  /** Delays before the retries of a refused webhook (default Chat2Desk's: 10 s, 5 min, 2 h). */
  webhookRetryDelaysMs?: number[];
}

/** Chat2Desk's retries of a refused webhook: after 10 s, 5 min and 2 h. */
export const CHAT2DESK_WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [10_000, 300_000, 7_200_000];

export async function startChat2DeskSandbox(options: Chat2DeskSandboxOptions = {}): Promise<Chat2DeskSandbox> {
  const token = options.token ?? randomBytes(16).toString('hex');
  const requests: RecordedRequest[] = [];
  const webhooks: RegisteredWebhook[] = [];
  const signingSecret = randomBytes(20).toString('base64url');
  const webhookRetryDelaysMs = [...(options.webhookRetryDelaysMs ?? CHAT2DESK_WEBHOOK_RETRY_DELAYS_MS)];
  let nextWebhookId = 1;
  let nextMessageId = 1000;
  let override: SandboxHandler | null = null;
  let sendLatencyMs = 0;
  let withExternalIds = false;
  const history: HistoryMessage[] = [];
  const chat2deskTime = (ms: number) => `${new Date(ms).toISOString().slice(0, 19)} UTC`;
  /** Carries a send out: it enters the history. */
  const record = (body: any): number => {
    const id = nextMessageId++;
    const clientId = body?.client_id ?? '';
    history.push({ id, text: String(body?.text ?? ''), type: 'to_client', client_id: /^\d+$/.test(String(clientId)) ? Number(clientId) : String(clientId), created: chat2deskTime(Date.now()), ...(body?.external_id !== undefined ? { external_id: String(body.external_id) } : {}) });
    return id;
  };

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    const body = await readBody(req);
    const u = new URL(req.url ?? '/', 'http://stub');
    if (req.method === 'GET' && u.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(sandboxPage({ webhooks, history, requests }));
      return;
    }
    const rec: RecordedRequest = { method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body, at: Date.now() };
    requests.push(rec);

    const custom = override?.(rec);
    if (custom?.deliver && rec.method === 'POST' && u.pathname === '/v1/messages' && req.headers.authorization === token) record(body);
    if (custom) {
      if (custom.delayMs) await new Promise((r) => setTimeout(r, custom.delayMs));
      if (res.destroyed) return;
      if (custom.raw) custom.raw(res);
      else send(res, custom.status, custom.body ?? {}, custom.headers);
      return;
    }
    if (req.headers.authorization !== token) return send(res, 401, { status: 'error', message: 'Wrong token' });

    const m = /^\/v1\/webhooks\/(\d+)$/.exec(u.pathname);
    if (rec.method === 'GET' && u.pathname === '/v1/companies/api_info') return send(res, 200, { status: 'success', data: { company_name: 'Sandbox' } });
    if (rec.method === 'GET' && u.pathname === '/v1/webhooks') return send(res, 200, { status: 'success', data: webhooks });
    if (rec.method === 'POST' && u.pathname === '/v1/webhooks') {
      const hook = { status: 'enable', ...body, id: nextWebhookId++ };
      webhooks.push(hook);
      return send(res, 200, { status: 'success', data: hook });
    }
    if (rec.method === 'PUT' && m) {
      const hook = webhooks.find((w) => w.id === Number(m[1]));
      if (!hook) return send(res, 404, { status: 'error', message: 'Not found' });
      Object.assign(hook, body);
      return send(res, 200, { status: 'success', data: hook });
    }
    if (rec.method === 'POST' && u.pathname === '/v1/messages') {
      const refusal = refusedSend(body);
      if (refusal) return send(res, 200, { status: 'error', message: refusal });
      const id = record(body);
      if (sendLatencyMs > 0) await new Promise((r) => setTimeout(r, sendLatencyMs));
      if (!res.destroyed) send(res, 200, { status: 'success', data: { message_id: id } });
      return;
    }
    if (rec.method === 'GET' && u.pathname === '/v1/messages') {
      const clientId = u.searchParams.get('client_id');
      const limit = Math.min(200, Number(u.searchParams.get('limit') ?? 20));
      const offset = Number(u.searchParams.get('offset') ?? 0);
      // An order of its own: by the id's last digit, then the id (stable across pages, not by time).
      const all = history
        .filter((m) => String(m.client_id) === clientId && (u.searchParams.get('type') ?? 'to_client') === m.type)
        .sort((a, b) => (a.id % 10) - (b.id % 10) || b.id - a.id)
        .map(({ external_id, ...m }) => (withExternalIds && external_id !== undefined ? { ...m, external_id } : m));
      return send(res, 200, { status: 'success', data: all.slice(offset, offset + limit), meta: { total: all.length, limit, offset } });
    }
    if (rec.method === 'GET' && /^\/v1\/messages\/[^/]+\/transfer(_to_group)?$/.test(u.pathname)) return send(res, 200, { status: 'success' });
    if (rec.method === 'PUT' && /^\/v1\/dialogs\/\d+$/.test(u.pathname)) return send(res, 200, { status: 'success' });
    return send(res, 404, { status: 'error', message: 'Unknown route' });
  });
  const { url, close } = await listen(server, options.port, options.host);

  async function sendWebhook(targetUrl: string, payload: unknown, options: { secret?: string } = {}): Promise<WebhookDelivery> {
    const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
    const signature = `sha256=${createHmac('sha256', options.secret ?? signingSecret).update(raw).digest('hex')}`;
    const statuses: number[] = [];
    let lastBody: any = null;
    for (let attempt = 0; attempt <= webhookRetryDelaysMs.length; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, webhookRetryDelaysMs[attempt - 1]));
      const res = await fetch(targetUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'x-webhook-signature': signature }, body: raw });
      const text = await res.text();
      try {
        lastBody = JSON.parse(text);
      } catch {
        lastBody = text;
      }
      statuses.push(res.status);
      if (res.status >= 200 && res.status < 300) return { delivered: true, statuses, lastBody };
    }
    return { delivered: false, statuses, lastBody };
  }

  return {
    url,
    token,
    signingSecret,
    requests,
    webhooks,
    sent: () => requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && r.headers.authorization === token).map((r) => r.body),
    history,
    delivered: (clientId) => history.filter((m) => String(m.client_id) === clientId),
    handle: (h) => {
      override = h;
    },
    setSendLatency: (ms) => {
      sendLatencyMs = ms;
    },
    listExternalIds: (on) => {
      withExternalIds = on;
    },
    waitFor: (predicate, timeoutMs = 10_000) => waitForRequests('chat2desk sandbox', requests, predicate, timeoutMs),
    sendWebhook,
    disableWebhook: (id) => {
      const hook = webhooks.find((w) => w.id === id);
      if (hook) hook.status = 'disable';
    },
    webhookRetryDelaysMs,
    close,
  };
}
