/**
 * Chat2Desk API v1 client (the helpdesk connector's outbound side), shared by the gateway
 * (region choice, register-webhook) and the workers (replies, transfers, closes).
 * Auth header is the bare token (no "Bearer"). Every call goes through lib/outbound-http.ts:
 * a deadline, an answer of at most 1 MiB, keep-alive connections, at most 3 redirects, and
 * (for a tenant-supplied apiUrl) public addresses only.
 */
import { OutboundError, outboundRequest, parseJsonBody } from './outbound-http.js';
import type { AddressGuard } from './address-guard.js';

export const DEFAULT_HELPDESK_TIMEOUT_MS = 10_000;
/** The largest helpdesk API answer read; a bigger one is a failure, never buffered. */
export const MAX_HELPDESK_ANSWER_BYTES = 1024 * 1024;
/** The longest `Retry-After` believed (a tenant-chosen apiUrl must not park a reply for days). */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;

export class HelpdeskError extends Error {
  /** HTTP status, or null when no usable answer came back (network error, timeout, refused address, oversized answer). */
  readonly status: number | null;
  /** The parsed answer, for our own use only: never shown to a tenant (it is somebody else's text). */
  readonly body: unknown;
  /** Why no usable answer came back (status null), e.g. TIMEOUT, BODY_TOO_LARGE, BLOCKED_ADDRESS. */
  readonly reason: OutboundError['code'] | null;
  /**
   * The helpdesk answered 2xx with `{"status":"error"}`: it read the request and refused it.
   * Chat2Desk does this (HTTP 200) for requests it will not carry out; a certain failure.
   */
  readonly refused: boolean;
  /** How long the helpdesk asked us to wait (`Retry-After` of a 429 / 503), capped at MAX_RETRY_AFTER_MS; null when it did not say. */
  readonly retryAfterMs: number | null;
  constructor(
    message: string,
    status: number | null,
    body: unknown,
    options: { cause?: unknown; reason?: OutboundError['code']; refused?: boolean; retryAfterMs?: number | null } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'HelpdeskError';
    this.status = status;
    this.body = body;
    this.reason = options.reason ?? null;
    this.refused = options.refused ?? false;
    this.retryAfterMs = options.retryAfterMs ?? null;
  }
  /** 5xx, 429, network errors and timeouts are worth retrying; other 4xx, `status: error` answers, refused addresses and oversized answers are not. */
  get retryable(): boolean {
    if (this.refused) return false;
    if (this.status === null) return this.reason === null || this.reason === 'TIMEOUT' || this.reason === 'NETWORK';
    return this.status >= 500 || this.status === 429;
  }

  /**
   * Whether the helpdesk may have carried the request out although it failed here: it
   * reached the server and no answer said otherwise (a timeout, a connection cut after
   * sending, a 5xx, an answer we could not read). Such a send is reconciled against the
   * helpdesk's history before it is sent again. A 4xx (429 included), a `status: error`
   * answer, a refused connection, an unresolvable name or a refused address mean it was not.
   */
  get maybeDelivered(): boolean {
    if (this.refused) return false;
    if (this.status !== null) return this.status >= 500 || this.status === 408;
    if (this.reason === 'NETWORK') return !NOT_SENT_CODES.has(codeOf(this.cause));
    return this.reason === 'TIMEOUT' || this.reason === 'BODY_TOO_LARGE' || this.reason === 'ABORTED' || this.reason === null;
  }
}

/** Network errors that happen before a request can reach the server. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

function codeOf(err: unknown): string {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'NETWORK') return code;
  }
  return '';
}

/** `Retry-After` (delay seconds or an HTTP date) in ms from `nowMs`, capped; null when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, nowMs = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v.trim() === '') return null;
  let ms: number;
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) ms = Number(v) * 1000;
  else {
    const at = Date.parse(v);
    if (Number.isNaN(at)) return null;
    ms = at - nowMs;
  }
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, Math.round(ms)));
}

/** An id Chat2Desk keeps as an integer (client_id, channel_id): digits go out as a JSON number. */
export function helpdeskId(value: string | number): string | number {
  return typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
}

/** A helpdesk timestamp (ISO, "2024-05-01 10:00:00", "2024-05-01T10:00:00 UTC", or Unix seconds / ms) in ms, or null. */
export function helpdeskTimeMs(value: unknown): number | null {
  let ms = NaN;
  if (typeof value === 'number') ms = value < 1e11 ? value * 1000 : value;
  else if (typeof value === 'string' && value) {
    if (/^\d+(\.\d+)?$/.test(value)) return helpdeskTimeMs(Number(value));
    ms = Date.parse(value);
    if (Number.isNaN(ms)) ms = Date.parse(value.replace(/\s*UTC$/i, 'Z').replace(' ', 'T'));
    if (Number.isNaN(ms)) ms = Date.parse(`${value.replace(' ', 'T')}Z`);
  }
  return Number.isFinite(ms) ? ms : null;
}

const REASON_TEXT: Record<OutboundError['code'], string> = {
  TIMEOUT: 'timed out',
  BODY_TOO_LARGE: `answered with more than ${MAX_HELPDESK_ANSWER_BYTES} bytes`,
  BLOCKED_ADDRESS: 'refused: the address is private, loopback or link-local',
  TOO_MANY_REDIRECTS: 'too many redirects',
  NETWORK: 'unreachable',
  ABORTED: 'aborted',
  BAD_URL: 'not a usable URL',
};

export interface HelpdeskWebhook {
  id: number | string;
  url: string;
  name?: string;
  events?: string[];
  /** Chat2Desk's switch of a webhook: `"enable"` / `"disable"` (it disables one after 5 h of failed deliveries). */
  status?: string | boolean;
}

export interface OutgoingMessage {
  /** Sent as a number when it is one (Chat2Desk's ids are integers). */
  client_id: string | number;
  text: string;
  /** Left out when null (Chat2Desk refuses explicit nulls). */
  transport?: string | null;
  channel_id?: string | number | null;
  type: 'to_client' | 'autoreply' | 'system' | 'comment';
  /** Our id of the message (the outbox row id): the helpdesk keeps it with the message. */
  external_id?: string;
}

/** A message of the helpdesk's history (`GET /v1/messages`), as far as reconciliation reads it. */
export interface HistoryMessage {
  id: number | string;
  text?: string | null;
  type?: string;
  client_id?: number | string;
  created?: string | number;
  external_id?: string | number | null;
}

/** Page size of history reads (the API's maximum). */
export const HISTORY_PAGE_SIZE = 200;

export interface HelpdeskClientOptions {
  timeoutMs?: number;
  /**
   * Addresses the client may connect to, at every redirect (lib/address-guard.ts
   * guardForUrl: public only, the operator's instances exempt for themselves); null: any.
   */
  guard?: AddressGuard | null;
}

export class HelpdeskClient {
  readonly #baseUrl: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly #guard: AddressGuard | null;

  constructor(baseUrl: string, token: string, options: HelpdeskClientOptions = {}) {
    this.#baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = token;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_HELPDESK_TIMEOUT_MS;
    this.#guard = options.guard ?? null;
  }

  async request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    let res;
    try {
      res = await outboundRequest({
        method,
        url: this.#baseUrl + path,
        headers: { authorization: this.#token, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)),
        timeoutMs: this.#timeoutMs,
        maxBodyBytes: MAX_HELPDESK_ANSWER_BYTES,
        guard: this.#guard,
      });
    } catch (err) {
      const reason = err instanceof OutboundError ? err.code : 'NETWORK';
      throw new HelpdeskError(`helpdesk ${method} ${path}: ${REASON_TEXT[reason]}`, null, null, { cause: err, reason });
    }
    const parsed = parseJsonBody(res.body);
    if (res.status < 200 || res.status > 299) {
      throw new HelpdeskError(`helpdesk ${method} ${path}: HTTP ${res.status}`, res.status, parsed, { retryAfterMs: retryAfterMs(res.headers['retry-after']) });
    }
    // Chat2Desk answers some refusals with HTTP 200 and `{"status":"error", ...}`: a failure all the same.
    if (parsed !== null && typeof parsed === 'object' && (parsed as { status?: unknown }).status === 'error') {
      throw new HelpdeskError(`helpdesk ${method} ${path}: answered status "error" (HTTP ${res.status})`, res.status, parsed, { refused: true });
    }
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

  /** Ids that are numbers go out as numbers, absent (null) fields are left out: Chat2Desk refuses both strings for its integer ids and explicit nulls. */
  sendMessage(message: OutgoingMessage): Promise<{ status?: string; data?: { message_id?: number } }> {
    const body: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(message)) {
      if (value === null || value === undefined) continue;
      body[key] = key === 'client_id' || key === 'channel_id' ? helpdeskId(value as string | number) : value;
    }
    return this.request('POST', '/v1/messages', body);
  }

  /** One page of the messages sent to a client (order not documented). */
  async listMessages(q: { clientId: string; type: 'to_client'; limit: number; offset: number }): Promise<HistoryMessage[]> {
    const params = new URLSearchParams({ client_id: q.clientId, type: q.type, limit: String(q.limit), offset: String(q.offset) });
    const res = await this.request<{ data?: unknown } | null>('GET', `/v1/messages?${params}`);
    const data = res && typeof res === 'object' ? (res as { data?: unknown }).data : undefined;
    if (!Array.isArray(data)) throw new HelpdeskError('helpdesk GET /v1/messages: the answer has no data list', 200, null);
    return data.filter((m): m is HistoryMessage => m !== null && typeof m === 'object' && (typeof m.id === 'number' || typeof m.id === 'string'));
  }

  /** Hands the dialog to a human: Chat2Desk transfers by message id to an operator or group. */
  transferToGroup(messageId: string, groupId: number): Promise<unknown> {
    return this.request('GET', `/v1/messages/${encodeURIComponent(messageId)}/transfer_to_group?group_id=${groupId}`);
  }

  closeDialog(dialogId: number): Promise<unknown> {
    return this.request('PUT', `/v1/dialogs/${dialogId}`, { state: 'closed' });
  }
}
