/**
 * A small Telegram Bot API client: `POST {apiUrl}/bot<token>/<method>` with a JSON body,
 * through lib/outbound-http.ts (a deadline, an answer of at most 1 MiB, keep-alive
 * connections). The base URL is operator configuration (TELEGRAM_API_URL), so no address
 * guard applies.
 *
 * The bot token is part of the URL: no error message built here names the URL (only the
 * method), and the errors below carry no URL either (outbound-http's messages and causes name
 * addresses, never paths).
 */
import { MAX_RETRY_AFTER_MS, OutboundError, outboundErrorIn, retryAfterMs as retryAfterHeaderMs, transportFailureText, type OutboundErrorCode } from '../../outbound-errors.js';
import { outboundRequest, parseJsonBody } from '../../outbound-http.js';

export const DEFAULT_TELEGRAM_TIMEOUT_MS = 10_000;
/** The largest Bot API answer read; a bigger one is a failure, never buffered. */
export const MAX_TELEGRAM_ANSWER_BYTES = 1024 * 1024;
/** What Telegram accepts as a webhook's `secret_token`: 1–256 of A-Z a-z 0-9 _ -. */
export const TELEGRAM_SECRET_RE = /^[A-Za-z0-9_-]{1,256}$/;
/** The characters of a bot token (`<bot id>:<secret>`): anything else is not sent. */
const TOKEN_RE = /^[A-Za-z0-9:_-]{1,256}$/;
const METHOD_RE = /^[A-Za-z]{1,64}$/;

/**
 * A failed Bot API call: an OutboundError (`code`, `status`, `permanent`, `maybeDelivered`,
 * `retryAfterMs`) with what Telegram said.
 * - Telegram answered `{ok:false}` (or a non-2xx status): `errorCode` is its `error_code`
 *   (else the HTTP status), `retryAfterMs` its `parameters.retry_after` (seconds) when given,
 *   code HTTP_STATUS (REFUSED when the status was 2xx);
 * - no answer came back: the transport's code (TIMEOUT, NETWORK, ...), `errorCode` null;
 * - a 2xx that is not `{ok:true, result}`: BAD_ANSWER.
 */
export class TelegramApiError extends OutboundError {
  /** Telegram's `error_code` (429, 403, 400 ...); null when Telegram did not answer. */
  readonly errorCode: number | null;
  /** Telegram's own text ("Forbidden: bot was blocked by the user"): for our logs and mapping only, never shown to a tenant. */
  readonly description: string | null;
  /** The Bot API method called. */
  readonly method: string;

  constructor(
    method: string,
    code: OutboundErrorCode,
    message: string,
    options: { cause?: unknown; status?: number | null; errorCode?: number | null; description?: string | null; retryAfterMs?: number | null } = {},
  ) {
    super(code, message, { cause: options.cause, status: options.status ?? null, retryAfterMs: options.retryAfterMs ?? null });
    this.name = 'TelegramApiError';
    this.method = method;
    this.errorCode = options.errorCode ?? null;
    this.description = options.description ?? null;
  }
}

export interface BotApiCallOptions {
  timeoutMs?: number;
  /** Called once the request has been handed to the network, before any answer. */
  onWritten?: () => void;
}

/** `parameters.retry_after` (seconds) in ms, capped; null when absent or unreadable. */
function retryAfterOf(parameters: unknown): number | null {
  const seconds = parameters !== null && typeof parameters === 'object' ? (parameters as { retry_after?: unknown }).retry_after : undefined;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) return null;
  return Math.min(MAX_RETRY_AFTER_MS, Math.round(seconds * 1000));
}

/**
 * Calls `method` with `body` (JSON) as bot `token` at `apiUrl`; resolves Telegram's `result`.
 * Rejects with TelegramApiError only.
 */
export async function callBotApi<T = unknown>(apiUrl: string, token: string, method: string, body: unknown, options: BotApiCallOptions = {}): Promise<T> {
  const where = `telegram ${METHOD_RE.test(method) ? method : '(method)'}`;
  if (!METHOD_RE.test(method)) throw new TelegramApiError(method, 'BAD_URL', `${where}: not a Bot API method name`);
  if (!TOKEN_RE.test(token)) throw new TelegramApiError(method, 'BAD_URL', `${where}: the bot token has characters a token cannot have`);
  let res;
  try {
    res = await outboundRequest({
      method: 'POST',
      url: `${apiUrl.replace(/\/+$/, '')}/bot${token}/${method}`,
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify(body ?? {})),
      timeoutMs: options.timeoutMs ?? DEFAULT_TELEGRAM_TIMEOUT_MS,
      maxBodyBytes: MAX_TELEGRAM_ANSWER_BYTES,
      guard: null,
      onWritten: options.onWritten,
    });
  } catch (err) {
    const code = outboundErrorIn(err)?.code ?? 'NETWORK';
    throw new TelegramApiError(method, code, `${where}: ${transportFailureText(code, MAX_TELEGRAM_ANSWER_BYTES)}`, { cause: err });
  }
  const parsed = parseJsonBody(res.body);
  const answer = parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as { ok?: unknown; result?: unknown; error_code?: unknown; description?: unknown; parameters?: unknown }) : null;
  const ok2xx = res.status >= 200 && res.status <= 299;
  if (ok2xx && answer?.ok === true && 'result' in answer) return answer.result as T;
  if (ok2xx && answer?.ok !== false) throw new TelegramApiError(method, 'BAD_ANSWER', `${where}: the answer is not a Bot API result (HTTP ${res.status})`, { status: res.status });
  const errorCode = typeof answer?.error_code === 'number' && Number.isInteger(answer.error_code) ? answer.error_code : ok2xx ? null : res.status;
  throw new TelegramApiError(method, ok2xx ? 'REFUSED' : 'HTTP_STATUS', `${where}: refused with ${errorCode ?? `HTTP ${res.status}`}`, {
    status: res.status,
    errorCode,
    description: typeof answer?.description === 'string' ? answer.description.slice(0, 500) : null,
    retryAfterMs: retryAfterOf(answer?.parameters) ?? retryAfterHeaderMs(res.headers['retry-after']),
  });
}

export interface TelegramWebhookSettings {
  /** Where Telegram posts updates (our `/api/webhook/telegram/<id>`). */
  url: string;
  /** Sent back in `X-Telegram-Bot-Api-Secret-Token` (TELEGRAM_SECRET_RE). */
  secretToken: string;
}

/** Registers the bot's webhook for customer messages only (`allowed_updates:["message"]`); resolves Telegram's `result` (true). */
export function setWebhook(apiUrl: string, token: string, settings: TelegramWebhookSettings, options: { timeoutMs?: number } = {}): Promise<unknown> {
  return callBotApi(apiUrl, token, 'setWebhook', { url: settings.url, secret_token: settings.secretToken, allowed_updates: ['message'] }, options);
}
