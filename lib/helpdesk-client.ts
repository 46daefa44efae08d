/**
 * Chat2Desk API v1 client (the helpdesk connector's outbound side), shared by the gateway
 * (region choice, register-webhook) and the workers (replies, transfers, closes).
 * Auth header is the bare token (no "Bearer"). Every call has a deadline.
 *
 * Plain node:http(s) over one keep-alive agent per protocol rather than fetch: replies are
 * on the worker's hot path, and fetch costs noticeably more client CPU per request. It
 * behaves like fetch did: redirects are followed (up to 20; the token is not carried to
 * another origin), the body is read as UTF-8, and the deadline covers the whole exchange.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export const DEFAULT_HELPDESK_TIMEOUT_MS = 10_000;

// Idle sockets are closed before the server's announced Keep-Alive timeout (node does it
// from the response header); this bounds the ones of servers announcing none.
const IDLE_SOCKET_MS = 30_000;
const httpAgent = new HttpAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
const httpsAgent = new HttpsAgent({ keepAlive: true, timeout: IDLE_SOCKET_MS });
const MAX_REDIRECTS = 20;

interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One HTTP exchange with fetch's redirect rules; rejects with a TimeoutError past the deadline. */
async function exchange(method: string, url: string, options: { headers: OutgoingHttpHeaders; body?: Buffer; timeoutMs: number }): Promise<HttpAnswer> {
  const deadline = Date.now() + options.timeoutMs;
  let target = new URL(url);
  let headers = { ...options.headers };
  let body = options.body;
  for (let redirects = 0; ; redirects++) {
    const res = await exchangeOnce(method, target, headers, body, deadline);
    const location = res.headers.location;
    if (![301, 302, 303, 307, 308].includes(res.status) || !location) return res;
    if (redirects >= MAX_REDIRECTS) throw new Error('too many redirects');
    const next = new URL(location, target);
    if (res.status === 303 ? method !== 'HEAD' : (res.status === 301 || res.status === 302) && method === 'POST') {
      method = 'GET';
      body = undefined;
      headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k !== 'content-type'));
    }
    if (next.origin !== target.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k !== 'authorization'));
    target = next;
  }
}

async function exchangeOnce(method: string, url: URL, headers: OutgoingHttpHeaders, body: Buffer | undefined, deadline: number): Promise<HttpAnswer> {
  try {
    return await requestOnce(method, url, headers, body, deadline);
  } catch (err) {
    // A kept-alive socket the server closed just as we reused it: the request never
    // reached the server, so it is sent again once on a fresh socket (node's advice).
    if ((err as StaleSocketError).staleSocket) return requestOnce(method, url, headers, body, deadline);
    throw err;
  }
}

type StaleSocketError = Error & { staleSocket?: boolean; code?: string };

function requestOnce(method: string, url: URL, headers: OutgoingHttpHeaders, body: Buffer | undefined, deadline: number): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const https = url.protocol === 'https:';
    if (!https && url.protocol !== 'http:') return reject(new TypeError(`unsupported protocol ${url.protocol}`));
    let settled = false;
    let answered = false;
    const done = (err: Error | null, answer?: HttpAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        req.destroy();
        reject(err);
      } else resolve(answer!);
    };
    const req = (https ? httpsRequest : httpRequest)(url, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-length': body.length },
      agent: https ? httpsAgent : httpAgent,
    });
    const timer = setTimeout(() => done(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), Math.max(0, deadline - Date.now()));
    req.on('error', (err: StaleSocketError) => {
      if (!answered && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) err.staleSocket = true;
      done(err);
    });
    req.on('response', (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (err) => done(err));
      // Closed before its end (after 'end' this is a no-op).
      res.on('close', () => done(new Error('the response was cut off')));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        // Like fetch's text(): a UTF-8 byte order mark is not part of the text.
        done(null, { status: res.statusCode ?? 0, headers: res.headers, text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text });
      });
    });
    req.end(body);
  });
}

export class HelpdeskError extends Error {
  /** HTTP status, or null for network errors and timeouts. */
  readonly status: number | null;
  readonly body: unknown;
  constructor(message: string, status: number | null, body: unknown, cause?: unknown) {
    super(message, { cause });
    this.name = 'HelpdeskError';
    this.status = status;
    this.body = body;
  }
  /** 5xx, 429, network errors and timeouts are worth retrying; other 4xx are not. */
  get retryable(): boolean {
    return this.status === null || this.status >= 500 || this.status === 429;
  }
}

export interface HelpdeskWebhook {
  id: number | string;
  url: string;
  name?: string;
  events?: string[];
}

export interface OutgoingMessage {
  client_id: string;
  text: string;
  transport?: string | null;
  channel_id?: string | null;
  type: 'to_client' | 'autoreply' | 'system' | 'comment';
}

export class HelpdeskClient {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  constructor(baseUrl: string, token: string, timeoutMs = DEFAULT_HELPDESK_TIMEOUT_MS) {
    this.#baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = token;
    this.#timeoutMs = timeoutMs;
  }

  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    let res: HttpAnswer;
    try {
      res = await exchange(method, this.#baseUrl + path, {
        headers: { authorization: this.#token, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
        timeoutMs: this.#timeoutMs,
      });
    } catch (err) {
      throw new HelpdeskError(`helpdesk ${method} ${path}: ${(err as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable'}`, null, null, err);
    }
    const text = res.text;
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* keep the text */
    }
    if (res.status < 200 || res.status > 299) throw new HelpdeskError(`helpdesk ${method} ${path}: HTTP ${res.status}`, res.status, parsed);
    return parsed as T;
  }

  /** Answers when the token is accepted by this instance. */
  apiInfo(): Promise<unknown> {
    return this.request('GET', '/v1/companies/api_info');
  }

  async listWebhooks(): Promise<HelpdeskWebhook[]> {
    const res = await this.request<{ data?: HelpdeskWebhook[] } | HelpdeskWebhook[]>('GET', '/v1/webhooks');
    return Array.isArray(res) ? res : (res?.data ?? []);
  }

  createWebhook(hook: Omit<HelpdeskWebhook, 'id'>): Promise<{ data?: HelpdeskWebhook }> {
    return this.request('POST', '/v1/webhooks', hook);
  }

  updateWebhook(id: HelpdeskWebhook['id'], hook: Omit<HelpdeskWebhook, 'id'>): Promise<{ data?: HelpdeskWebhook }> {
    return this.request('PUT', `/v1/webhooks/${encodeURIComponent(String(id))}`, hook);
  }

  sendMessage(message: OutgoingMessage): Promise<{ status?: string; data?: { message_id?: number } }> {
    return this.request('POST', '/v1/messages', message);
  }

  /** Hands the dialog to a human: Chat2Desk transfers by message id to an operator or group. */
  transferToGroup(messageId: string, groupId: number): Promise<unknown> {
    return this.request('GET', `/v1/messages/${encodeURIComponent(messageId)}/transfer_to_group?group_id=${groupId}`);
  }

  closeDialog(dialogId: number): Promise<unknown> {
    return this.request('PUT', `/v1/dialogs/${dialogId}`, { state: 'closed' });
  }
}
