/**
 * Chat2Desk API v1 client (the helpdesk connector's outbound side), shared by the gateway
 * (region choice, register-webhook) and the workers (replies, transfers, closes).
 * Auth header is the bare token (no "Bearer"). Every call goes through lib/outbound-http.ts:
 * a deadline, an answer of at most 1 MiB, keep-alive connections, at most 3 redirects, and
 * (for a tenant-supplied apiUrl) public addresses only.
 */
import { OutboundError, outboundErrorIn, retryAfterMs, transportFailureText, type OutboundErrorCode } from './outbound-errors.js';
import { outboundRequest, parseJsonBody } from './outbound-http.js';
import type { AddressGuard } from './address-guard.js';

export const DEFAULT_HELPDESK_TIMEOUT_MS = 10_000;
/** The largest helpdesk API answer read; a bigger one is a failure, never buffered. */
export const MAX_HELPDESK_ANSWER_BYTES = 1024 * 1024;

/**
 * A failed helpdesk call: an OutboundError (lib/outbound-errors.ts: `code`, `status`,
 * `permanent` / `retryable`, `maybeDelivered`, `retryAfterMs`) with the helpdesk's answer.
 * Its code follows from what is given: REFUSED when the answer refuses, a transport failure
 * (the cause's code, else NETWORK) when no status came back, HTTP_STATUS for a failure
 * status, BAD_ANSWER for a 2xx.
 */
export class HelpdeskError extends OutboundError {
  /** The parsed answer, for our own use only: never shown to a tenant (it is somebody else's text). */
  readonly body: unknown;

  constructor(message: string, status: number | null, body: unknown, options: { cause?: unknown; refused?: boolean; retryAfterMs?: number | null } = {}) {
    super(options.refused ? 'REFUSED' : codeOf(status, options.cause), message, { cause: options.cause, status, retryAfterMs: options.retryAfterMs });
    this.name = 'HelpdeskError';
    this.body = body;
  }

  /**
   * The helpdesk answered `{"status":"error"}`: it read the request and refused it. Chat2Desk
   * does this (even with HTTP 200) for requests it will not carry out; a certain failure.
   */
  get refused(): boolean {
    return this.code === 'REFUSED';
  }
}

function codeOf(status: number | null, cause: unknown): OutboundErrorCode {
  if (status === null) return transportCode(cause);
  return status >= 200 && status <= 299 ? 'BAD_ANSWER' : 'HTTP_STATUS';
}

/** Why no answer came back: the code of the OutboundError underneath, else NETWORK. */
const transportCode = (cause: unknown): OutboundErrorCode => outboundErrorIn(cause)?.code ?? 'NETWORK';

/** An id Chat2Desk keeps as an integer (client_id, channel_id): digits go out as a JSON number. */
export function helpdeskId(value: string | number): string | number {
  return typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
}


/** Why a helpdesk call failed, in words fit for a tenant (after "the helpdesk"): the status or the failure, never the helpdesk's own text. */
export function helpdeskFailureText(err: HelpdeskError): string {
  if (err.refused) return `answered status "error" (HTTP ${err.status})`;
  if (err.status !== null) return `answered HTTP ${err.status}`;
  return transportFailureText(err.code, MAX_HELPDESK_ANSWER_BYTES);
}

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
      throw new HelpdeskError(`helpdesk ${method} ${path}: ${transportFailureText(transportCode(err), MAX_HELPDESK_ANSWER_BYTES)}`, null, null, { cause: err });
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
