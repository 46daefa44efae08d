import { causesOf } from './errors.js';

/**
 * Failures of calls to somebody else's server (the helpdesk API, model and embedding servers,
 * fetched pages). Each failure is judged once, where it is made, by its `code` (and status):
 * - `permanent`: the same request would fail again (a refused address or URL, too many
 *   redirects, an oversized answer, a call we gave up, an answer refusing it); timeouts, cut
 *   connections and the statuses that mean "not now" (408, 409, 429, 5xx: what the `openai`
 *   package retries) may succeed when tried again;
 * - `maybeDelivered`: the server may have carried the request out although it failed here:
 *   the request left and no answer said otherwise (a timeout, a connection cut after
 *   connecting, an answer too large to read, a 5xx or 408). A refused connection, an
 *   unresolvable name, a refused address and any other answer mean it was not;
 * - `retryAfterMs`: how long the server asked us to wait (`Retry-After`), when it said.
 * Callers decide what to do (retry, reconcile, give up) from these fields, never from a
 * status or message of their own reading.
 */
export type OutboundErrorCode =
  /** No complete answer within the deadline. */
  | 'TIMEOUT'
  /** The connection failed or was cut (the cause holds node's error and its `code`). */
  | 'NETWORK'
  /** The caller aborted the call. */
  | 'ABORTED'
  /** The answer is larger than the caller reads. */
  | 'BODY_TOO_LARGE'
  /** The address is one the call's guard refuses (lib/address-guard.ts). */
  | 'BLOCKED_ADDRESS'
  | 'TOO_MANY_REDIRECTS'
  /** Not an http(s) URL, or not a request this client can send. */
  | 'BAD_URL'
  /** A header name or value with characters HTTP does not allow (stored before they were checked). */
  | 'BAD_HEADER'
  /** The server answered with a failure status (`status`). */
  | 'HTTP_STATUS'
  /** The server read the request and refused it in its answer, whatever the status (Chat2Desk's `{"status":"error"}`, an account without quota). */
  | 'REFUSED'
  /** The server answered 2xx with something else than what was asked for. */
  | 'BAD_ANSWER';

/** The longest `Retry-After` believed (a tenant-chosen URL must not park a call for days). */
export const MAX_RETRY_AFTER_MS = 60 * 60_000;

/** Node's network errors that happen before a request can reach the server. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Statuses that mean "not now" rather than "no". */
const isTransientStatus = (status: number): boolean => status === 408 || status === 409 || status === 429 || status >= 500;

/** Node's error code (ECONNREFUSED ...) in the cause chain, below our own errors. */
function systemCodeOf(err: unknown): string {
  for (const e of causesOf(err)) {
    if (!(e instanceof OutboundError) && typeof e.code === 'string') return e.code;
  }
  return '';
}

function judge(code: OutboundErrorCode, status: number | null, cause: unknown): { permanent: boolean; maybeDelivered: boolean } {
  switch (code) {
    case 'TIMEOUT':
      return { permanent: false, maybeDelivered: true };
    case 'NETWORK':
      return { permanent: false, maybeDelivered: !NOT_SENT.has(systemCodeOf(cause)) };
    case 'ABORTED':
    case 'BODY_TOO_LARGE':
      return { permanent: true, maybeDelivered: true };
    case 'HTTP_STATUS':
      return status === null ? { permanent: false, maybeDelivered: true } : { permanent: !isTransientStatus(status), maybeDelivered: status >= 500 || status === 408 };
    case 'BLOCKED_ADDRESS':
    case 'TOO_MANY_REDIRECTS':
    case 'BAD_URL':
    case 'BAD_HEADER':
    case 'REFUSED':
    case 'BAD_ANSWER':
      return { permanent: true, maybeDelivered: false };
  }
}

export class OutboundError extends Error {
  readonly code: OutboundErrorCode;
  /** The answer's HTTP status; null when no answer came back. */
  readonly status: number | null;
  /** Trying the same request again cannot help. */
  readonly permanent: boolean;
  /** The server may have carried the request out (see the module comment). */
  readonly maybeDelivered: boolean;
  /** How long the server asked us to wait, capped at MAX_RETRY_AFTER_MS; null when it did not say. */
  readonly retryAfterMs: number | null;

  constructor(code: OutboundErrorCode, message: string, options: { cause?: unknown; status?: number | null; retryAfterMs?: number | null } = {}) {
    super(message, { cause: options.cause });
    this.name = 'OutboundError';
    this.code = code;
    this.status = options.status ?? null;
    this.retryAfterMs = options.retryAfterMs ?? null;
    const verdict = judge(code, this.status, options.cause);
    this.permanent = verdict.permanent;
    this.maybeDelivered = verdict.maybeDelivered;
  }

  /** Worth trying again (later): not permanent. */
  get retryable(): boolean {
    return !this.permanent;
  }
}

/** An answer with a failure status: judged by the status, with the wait its `Retry-After` asks for. */
export function statusFailure(message: string, status: number, retryAfter: string | string[] | null | undefined): OutboundError {
  return new OutboundError('HTTP_STATUS', message, { status, retryAfterMs: retryAfterMs(retryAfter ?? undefined) });
}

/** The first OutboundError in `err`'s cause chain (a client library wraps ours), or null. */
export function outboundErrorIn(err: unknown): OutboundError | null {
  for (const e of causesOf(err)) {
    if (e instanceof OutboundError) return e;
  }
  return null;
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

/**
 * Why no answer came back from a server, in words for a tenant (after "the helpdesk", "telegram
 * sendMessage: "): never the server's own text. `answerBytes`: the caller's answer cap.
 */
export function transportFailureText(code: OutboundErrorCode, answerBytes: number): string {
  switch (code) {
    case 'TIMEOUT':
      return 'timed out';
    case 'BODY_TOO_LARGE':
      return `answered with more than ${answerBytes} bytes`;
    case 'BLOCKED_ADDRESS':
      return 'refused: the address is private, loopback or link-local';
    case 'TOO_MANY_REDIRECTS':
      return 'too many redirects';
    case 'ABORTED':
      return 'aborted';
    case 'BAD_URL':
      return 'not a usable URL';
    case 'BAD_HEADER':
      return 'not a usable request';
    default:
      return 'unreachable';
  }
}
