import { randomBytes, randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listen, waitForRequests, type SandboxAnswer } from './http.js';
import {
  inboundTextPayload,
  newWamid,
  signed,
  statusPayload,
  WebhookPoster,
  type InboundTextInput,
  type SignedBody,
  type StatusInput,
  type WebhookDelivery,
  type WhatsAppAccount,
  type WhatsAppStatus,
} from './whatsapp-webhooks.js';

export { hubSignature, newWamid, type InboundTextInput, type SignedBody, type StatusInput, type WebhookDelivery } from './whatsapp-webhooks.js';

export interface WhatsAppRecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** Parsed JSON; the raw text when it is not JSON; null when empty. */
  body: any;
  raw: string;
  at: number;
}

/** A message the sandbox delivered to a customer (recorded when the request arrived, before its answer). */
export interface WhatsAppSentMessage {
  wamid: string;
  phoneNumberId: string;
  to: string;
  body: string;
  bizOpaqueCallbackData: string | null;
  at: number;
}

export type WhatsAppAnswer = SandboxAnswer;

export type WhatsAppHandler = (req: WhatsAppRecordedRequest) => WhatsAppAnswer | undefined;

/**
 * What `failNext` makes the next sends do. Graph errors answer as Meta does (HTTP 400 with
 * `{error:{message, type, code, error_data, fbtrace_id}}` unless said), not delivered:
 * `rate_limit` 130429, `pair_rate_limit` 131056, `window_closed` 131047, `undeliverable`
 * 131026, `bad_request` 100, `bad_token` 401/190, `server_error` 500/131000, `unavailable`
 * 503/2, `http_429` 429/130429 with `Retry-After: 1`. Delivered all the same: `fails_later`
 * (accepted, then a `failed` status webhook with 131026), `window_closed_later` (accepted,
 * then a `failed` status with 131047: the window closed before Meta delivered it), `timeout`
 * (never answered), `cut` (the connection is closed instead of the answer).
 */
export type WhatsAppFault =
  | 'rate_limit'
  | 'pair_rate_limit'
  | 'window_closed'
  | 'undeliverable'
  | 'bad_request'
  | 'bad_token'
  | 'server_error'
  | 'unavailable'
  | 'http_429'
  | 'fails_later'
  | 'window_closed_later'
  | 'timeout'
  | 'cut';

const GRAPH_FAULTS: Record<Exclude<WhatsAppFault, 'fails_later' | 'window_closed_later' | 'timeout' | 'cut'>, { status: number; code: number; message: string; details?: string; headers?: Record<string, string> }> = {
  rate_limit: { status: 400, code: 130429, message: '(#130429) Rate limit hit', details: 'Cloud API message throughput has been reached.' },
  pair_rate_limit: { status: 400, code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit', details: 'Too many messages sent from this phone number to the same phone number in a short period of time.' },
  window_closed: { status: 400, code: 131047, message: 'Re-engagement message', details: 'Message failed to send because more than 24 hours have passed since the customer last replied to this number.' },
  undeliverable: { status: 400, code: 131026, message: 'Message undeliverable', details: 'Message Undeliverable.' },
  bad_request: { status: 400, code: 100, message: '(#100) Invalid parameter' },
  bad_token: { status: 401, code: 190, message: 'Invalid OAuth access token - Cannot parse access token' },
  server_error: { status: 500, code: 131000, message: 'Something went wrong', details: 'Something went wrong.' },
  unavailable: { status: 503, code: 2, message: 'Service temporarily unavailable' },
  http_429: { status: 429, code: 130429, message: '(#130429) Rate limit hit', headers: { 'retry-after': '1' } },
};

/** The `errors` of `window_closed_later`'s `failed` status (Meta's shape; `fails_later` posts statusPayload's default, 131026). */
const WINDOW_CLOSED_LATER: StatusInput['errors'] = [
  { code: 131047, title: 'Re-engagement message', message: 'Re-engagement message', error_data: { details: GRAPH_FAULTS.window_closed.details! } },
];

export interface StatusWebhookOptions {
  /** Post `read` after `delivered`. */
  read?: boolean;
  /** Post a send's statuses in reverse order (`delivered` before `sent`: Meta guarantees no order). */
  outOfOrder?: boolean;
  /** Post `delivered` twice (Meta delivers at least once). */
  duplicate?: boolean;
  /** Pause before each status webhook (default 20 ms). */
  statusDelayMs?: number;
}

export interface WhatsAppSandboxOptions {
  /** The access token it accepts (`Authorization: Bearer <token>`); a random one unless given. */
  token?: string;
  /** The business number the webhook builders speak for (sends are accepted for any id, as several integrations may share a sandbox). */
  phoneNumberId?: string;
  displayPhoneNumber?: string;
  wabaId?: string;
  /** Answer latency, chosen at random in [min, max] ms per send (default [100, 300]); the message is delivered at once. */
  latencyMs?: [number, number];
  /** Delays before the retries of a refused webhook (default 1 s, 5 s, 30 s). */
  webhookRetryDelaysMs?: number[];
  port?: number;
  host?: string;
}

/**
 * A local stand-in of Meta's Graph API for WhatsApp Cloud API sends, for `npm run demo` and
 * the tests: `POST /:version/:phoneNumberId/messages` checks the Bearer token (401, Graph
 * error 190), the body's shape (400, Graph error 100), delivers the message when the request
 * arrives (`sent`), and answers `{messaging_product, contacts, messages:[{id: wamid}]}` after
 * its latency: a client that gives up waiting has still delivered it, as with the real API.
 * `handle` / `failNext` inject answers; `connect` makes it post status webhooks (signed with
 * the app secret, as Meta does) for every delivered send; `inboundText` / `statusBody` build
 * signed webhook bodies for a test to post itself, `postInbound` posts one.
 */
export interface WhatsAppSandbox {
  url: string;
  token: string;
  account: WhatsAppAccount;
  requests: WhatsAppRecordedRequest[];
  sent: WhatsAppSentMessage[];
  /** Send requests received and not yet answered (or closed). */
  inFlight: () => number;
  /** Send requests received in all. */
  received: () => number;
  waitForInFlight: (n: number, timeoutMs?: number) => Promise<void>;
  waitFor: (predicate: (requests: WhatsAppRecordedRequest[]) => boolean, timeoutMs?: number) => Promise<void>;
  handle: (handler: WhatsAppHandler | null) => void;
  /** The next `n` sends fail with `kind` (after any handler, before the defaults). */
  failNext: (n: number, kind: WhatsAppFault) => void;
  setLatency: (range: [number, number]) => void;
  /** Posts status webhooks of every delivered send to `webhookUrl`, signed with `appSecret`. */
  connect: (webhookUrl: string, appSecret: string, options?: StatusWebhookOptions) => void;
  disconnect: () => void;
  /** Every webhook posted since connect (status and inbound), with the answers. */
  webhooks: () => WebhookDelivery[];
  /** Resolves once no webhook is still being posted or tried again. */
  webhooksIdle: () => Promise<void>;
  /** A customer's text message as Meta posts it, signed with the connected app secret (or `appSecret`). */
  inboundText: (input: InboundTextInput, appSecret?: string) => SignedBody;
  statusBody: (input: StatusInput, appSecret?: string) => SignedBody;
  /** Posts a customer's text message to the connected webhook (tried again while refused). */
  postInbound: (input: InboundTextInput) => Promise<WebhookDelivery>;
  close: () => Promise<void>;
}

const ALLOWED_FIELDS = new Set(['messaging_product', 'recipient_type', 'to', 'type', 'text', 'biz_opaque_callback_data', 'context']);

/** Why Graph would refuse this send body (error 100), or null. Only text messages are supported here. */
function invalidSend(body: any): string | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'The request body is not a JSON object';
  for (const key of Object.keys(body)) if (!ALLOWED_FIELDS.has(key)) return `Param ${key} is not a valid parameter`;
  if (body.messaging_product !== 'whatsapp') return 'Param messaging_product must be "whatsapp"';
  if (body.recipient_type !== undefined && body.recipient_type !== 'individual') return 'Param recipient_type must be "individual"';
  if (typeof body.to !== 'string' || body.to.length === 0) return 'Param to is required';
  if (body.type !== 'text') return 'The sandbox sends text messages only (type "text")';
  const text = body.text;
  if (text === null || typeof text !== 'object' || typeof text.body !== 'string' || text.body.length === 0) return 'Param text[body] is required';
  if (text.body.length > 4096) return 'Param text[body] must be at most 4096 characters long';
  if (text.preview_url !== undefined && typeof text.preview_url !== 'boolean') return 'Param text[preview_url] must be a boolean';
  const opaque = body.biz_opaque_callback_data;
  if (opaque !== undefined && (typeof opaque !== 'string' || opaque.length > 512)) return 'Param biz_opaque_callback_data must be a string of at most 512 characters';
  return null;
}

const graphError = (code: number, message: string, details?: string) => ({
  error: { message, type: 'OAuthException', code, ...(details ? { error_data: { messaging_product: 'whatsapp', details } } : {}), fbtrace_id: randomBytes(12).toString('base64url') },
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const SEND_PATH = /^\/(v\d+\.\d+)\/([^/]+)\/messages$/;

export async function startWhatsAppSandbox(options: WhatsAppSandboxOptions = {}): Promise<WhatsAppSandbox> {
  const token = options.token ?? randomBytes(24).toString('base64url');
  const account: WhatsAppAccount = {
    phoneNumberId: options.phoneNumberId ?? `1${String(randomInt(1e12, 1e13))}`,
    displayPhoneNumber: options.displayPhoneNumber ?? '15550001234',
    wabaId: options.wabaId ?? `1${String(randomInt(1e12, 1e13))}`,
  };
  const retryDelaysMs = options.webhookRetryDelaysMs ?? [1000, 5000, 30_000];
  const requests: WhatsAppRecordedRequest[] = [];
  const sent: WhatsAppSentMessage[] = [];
  const faults: WhatsAppFault[] = [];
  let latency: [number, number] = options.latencyMs ?? [100, 300];
  let handler: WhatsAppHandler | null = null;
  let poster: WebhookPoster | null = null;
  let statusOptions: StatusWebhookOptions = {};
  let inFlight = 0;
  let received = 0;
  const pauses = new Set<NodeJS.Timeout>();
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        pauses.delete(timer);
        resolve();
      }, ms);
      pauses.add(timer);
    });
  const pickLatency = () => (latency[1] > latency[0] ? randomInt(latency[0], latency[1] + 1) : latency[0]);

  /**
   * Posts `sent`, `delivered` (and `read`), or with a `failure`, `sent`, `failed` (its `errors`,
   * else statusPayload's), for one delivered message, in the background.
   */
  function postStatuses(message: WhatsAppSentMessage, failure: Pick<StatusInput, 'errors'> | null): void {
    const failed = failure !== null;
    const target = poster;
    if (!target) return;
    const opts = statusOptions;
    let list: WhatsAppStatus[] = failed ? ['sent', 'failed'] : ['sent', 'delivered', ...(opts.read ? (['read'] as const) : [])];
    if (opts.duplicate && !failed) list.splice(2, 0, 'delivered');
    if (opts.outOfOrder) list = list.reverse();
    void (async () => {
      for (const status of list) {
        await sleep(opts.statusDelayMs ?? 20);
        if (target.stopped) return;
        const payload = statusPayload(account, {
          wamid: message.wamid, status, recipientId: message.to,
          ...(message.bizOpaqueCallbackData !== null ? { bizOpaqueCallbackData: message.bizOpaqueCallbackData } : {}),
          ...(status === 'failed' ? failure : {}),
        });
        // Each status in its own webhook, each tried again on its own while refused.
        void target.post(payload);
      }
    })();
  }

  const answer = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed || res.writableEnded) return;
    try {
      res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
      res.end(JSON.stringify(body));
    } catch {
      // the client went away: the answer has nowhere to go
    }
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: any = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    const path = new URL(req.url ?? '/', 'http://sandbox').pathname;
    const rec: WhatsAppRecordedRequest = { method: req.method ?? 'GET', path, headers: req.headers, body, raw, at: Date.now() };
    requests.push(rec);
    const route = req.method === 'POST' ? SEND_PATH.exec(path) : null;
    if (!route) return answer(res, 404, graphError(100, `Unsupported ${(req.method ?? 'get').toLowerCase()} request.`));

    received += 1;
    inFlight += 1;
    let counted = true;
    const settle = () => {
      if (counted) inFlight -= 1;
      counted = false;
    };
    res.once('close', settle);
    if (res.destroyed || !req.socket || req.socket.destroyed) settle(); // the client left while its body was read

    const authorised = req.headers.authorization === `Bearer ${token}`;
    const refusal = authorised ? invalidSend(body) : null;
    const deliver = (): WhatsAppSentMessage => {
      const message: WhatsAppSentMessage = {
        wamid: newWamid(),
        phoneNumberId: decodeURIComponent(route[2]),
        to: body.to,
        body: body.text.body,
        bizOpaqueCallbackData: typeof body.biz_opaque_callback_data === 'string' ? body.biz_opaque_callback_data : null,
        at: Date.now(),
      };
      sent.push(message);
      return message;
    };
    const success = (m: WhatsAppSentMessage) => ({ messaging_product: 'whatsapp', contacts: [{ input: m.to, wa_id: m.to }], messages: [{ id: m.wamid }] });

    const custom = handler?.(rec);
    if (custom) {
      const m = custom.deliver && authorised && !refusal ? deliver() : null;
      if (m) postStatuses(m, null);
      await later(custom.delayMs ?? pickLatency());
      if (custom.raw) return custom.raw(res);
      return answer(res, custom.status, custom.body ?? (m && custom.status < 300 ? success(m) : {}), custom.headers);
    }
    if (!authorised) return answer(res, 401, graphError(190, 'Invalid OAuth access token - Cannot parse access token'));
    if (refusal) return answer(res, 400, graphError(100, '(#100) Invalid parameter', refusal));

    const fault = faults.shift();
    if (fault === undefined || fault === 'fails_later' || fault === 'window_closed_later' || fault === 'timeout' || fault === 'cut') {
      const m = deliver();
      postStatuses(m, fault === 'fails_later' ? {} : fault === 'window_closed_later' ? { errors: WINDOW_CLOSED_LATER } : null);
      if (fault === 'timeout') return; // held open until the client gives up or the sandbox closes
      await later(pickLatency());
      if (fault === 'cut') return void res.destroy();
      return answer(res, 200, success(m));
    }
    const f = GRAPH_FAULTS[fault];
    await later(pickLatency());
    return answer(res, f.status, graphError(f.code, f.message, f.details), f.headers);
  });
  const listening = await listen(server, options.port, options.host);

  const secretOf = (appSecret?: string): string => {
    const secret = appSecret ?? poster?.appSecret;
    if (!secret) throw new Error('whatsapp sandbox: no app secret (connect first or pass one)');
    return secret;
  };
  const waitUntil = async (what: string, predicate: () => boolean, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`whatsapp sandbox: ${what} not reached within ${timeoutMs} ms (${inFlight} in flight, ${received} received)`);
      await sleep(10);
    }
  };

  return {
    url: listening.url,
    token,
    account,
    requests,
    sent,
    inFlight: () => inFlight,
    received: () => received,
    waitForInFlight: (n, timeoutMs = 10_000) => waitUntil(`${n} sends in flight`, () => inFlight >= n, timeoutMs),
    waitFor: (predicate, timeoutMs = 10_000) => waitForRequests('whatsapp sandbox', requests, predicate, timeoutMs),
    handle: (h) => {
      handler = h;
    },
    failNext: (n, kind) => {
      for (let i = 0; i < n; i++) faults.push(kind);
    },
    setLatency: (range) => {
      latency = range;
    },
    connect: (webhookUrl, appSecret, opts = {}) => {
      poster?.stop();
      poster = new WebhookPoster(webhookUrl, appSecret, retryDelaysMs);
      statusOptions = opts;
    },
    disconnect: () => {
      poster?.stop();
      poster = null;
    },
    webhooks: () => poster?.deliveries ?? [],
    webhooksIdle: async () => {
      await poster?.idle();
    },
    inboundText: (input, appSecret) => signed(secretOf(appSecret), inboundTextPayload(account, input)),
    statusBody: (input, appSecret) => signed(secretOf(appSecret), statusPayload(account, input)),
    postInbound: (input) => {
      if (!poster) return Promise.reject(new Error('whatsapp sandbox: connect a webhook first'));
      return poster.post(inboundTextPayload(account, input));
    },
    close: async () => {
      poster?.stop();
      for (const t of pauses) clearTimeout(t);
      pauses.clear();
      await listening.close();
    },
  };
}
