/**
 * Chat2Desk API v1 client (the helpdesk connector's outbound side), shared by the gateway
 * (region choice, register-webhook) and the workers (replies, transfers, closes).
 * Auth header is the bare token (no "Bearer"). Every call has a deadline.
 */
export const DEFAULT_HELPDESK_TIMEOUT_MS = 10_000;

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
    let res: Response;
    try {
      res = await fetch(this.#baseUrl + path, {
        method,
        headers: { authorization: this.#token, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (err) {
      throw new HelpdeskError(`helpdesk ${method} ${path}: ${(err as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable'}`, null, null, err);
    }
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* keep the text */
    }
    if (!res.ok) throw new HelpdeskError(`helpdesk ${method} ${path}: HTTP ${res.status}`, res.status, parsed);
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
