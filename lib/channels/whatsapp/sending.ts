import { DEFAULT_WHATSAPP_STATUS_WAIT_MS } from '../../config.js';
import { OutboundError, outboundErrorIn, retryAfterMs, type OutboundErrorCode } from '../../outbound-errors.js';
import { outboundRequest, parseJsonBody } from '../../outbound-http.js';
import type { ChannelEffect } from '../../../schema/envelope.js';
import type { SendFailure, SendingChannel, SendOptions, SendTarget } from '../types.js';

/**
 * The worker's half of the WhatsApp Cloud API channel: replies as text messages through
 * `POST {graphUrl}/{graphVersion}/{phoneNumberId}/messages` (Bearer access token), our outbox
 * id carried as `biz_opaque_callback_data` (Meta echoes it in the statuses webhooks: a send
 * whose answer was lost is still matched). Every call goes through lib/outbound-http.ts with
 * no address guard (the Graph URL is the operator's configuration), a deadline and an answer
 * of at most 1 MiB. WhatsApp keeps no history we can read: no reconcile.
 */
export const DEFAULT_WHATSAPP_TIMEOUT_MS = 10_000;
export const MAX_WHATSAPP_ANSWER_BYTES = 1024 * 1024;
/** The largest text body Meta takes (characters; we count UTF-16 code units, never more than characters). */
export const WHATSAPP_MAX_TEXT = 4096;
/** Free text may be sent this long after the customer's last message (Meta refuses it past that: 131047). */
export const WHATSAPP_REPLY_WINDOW_MS = 24 * 3600_000;

/**
 * A failed send: an OutboundError (code, status, retryAfterMs; its `permanent` follows the
 * Graph error code where one says "not now") with what Graph said of it: `graphCode` /
 * `graphSubcode` / `fbtraceId` from `{error:{code, error_subcode, fbtrace_id}}`. Meta's own
 * message text is not kept (never shown). classify() is the judgment the outbox uses.
 */
export class WhatsAppSendError extends OutboundError {
  readonly graphCode: number | null;
  readonly graphSubcode: number | null;
  readonly fbtraceId: string | null;

  constructor(
    code: OutboundErrorCode,
    message: string,
    options: { cause?: unknown; status?: number | null; retryAfterMs?: number | null; graphCode?: number | null; graphSubcode?: number | null; fbtraceId?: string | null } = {},
  ) {
    super(code, message, { cause: options.cause, status: options.status, retryAfterMs: options.retryAfterMs });
    this.name = 'WhatsAppSendError';
    this.graphCode = options.graphCode ?? null;
    this.graphSubcode = options.graphSubcode ?? null;
    this.fbtraceId = options.fbtraceId ?? null;
    if (this.graphCode !== null && LATER_CODES.has(this.graphCode)) (this as unknown as { permanent: boolean }).permanent = false;
  }
}

/** Graph error codes that mean "not now": rate limits (4, 80007, 130429, 131048, 131056) and temporary failures (1, 2, 131000, 131016, 133004). */
const LATER_CODES: ReadonlySet<number> = new Set([1, 2, 4, 80007, 130429, 131000, 131016, 131048, 131056, 133004]);
const WINDOW_CLOSED = 131047;

/** What a Graph error code does to the conversation, whether a send's answer or a `failed` status carried it (131047: `window_closed`). */
export function graphCodeEffect(code: number | string | null): ChannelEffect | null {
  return code !== null && Number(code) === WINDOW_CLOSED ? 'window_closed' : null;
}

/** What a Graph error code means, in our words (shown to operators with the code). */
const GRAPH_CODE_TEXT: Readonly<Record<number, string>> = {
  1: 'WhatsApp had a temporary problem',
  2: 'WhatsApp was temporarily unavailable',
  4: 'too many API calls by the app',
  10: 'the app lacks the permission',
  100: 'a parameter was refused',
  190: 'the access token is invalid or expired',
  200: 'the app lacks the permission',
  368: 'the number is temporarily blocked for policy violations',
  80007: 'the WhatsApp account hit its rate limit',
  130429: 'the number hit its sending rate limit',
  131000: 'WhatsApp had a temporary problem',
  131005: 'the access was denied',
  131008: 'a required parameter is missing',
  131009: 'a parameter value is invalid',
  131016: 'WhatsApp was temporarily unavailable',
  131021: 'the recipient is the sending number itself',
  131026: 'the number cannot receive it',
  131030: 'the number is not on the allowed list of a test account',
  131031: 'the business account is locked',
  131042: 'a payment problem of the business account',
  131045: 'the sending number is not registered',
  131047: "more than 24 hours since the customer's last message",
  131048: 'the number hit its spam rate limit',
  131051: 'the message type is not supported',
  131056: 'too many messages to this customer in a short time',
  133004: 'WhatsApp was temporarily unavailable',
  133010: 'the sending number is not registered',
};

const codeText = (code: string, graphCode: number | null): string => {
  const words = graphCode !== null ? GRAPH_CODE_TEXT[graphCode] : undefined;
  return words ? `${code}: ${words}` : code;
};

/**
 * `text` as parts of at most 4096 UTF-16 code units, never splitting a surrogate pair, cut
 * after the last newline (else space) in the window's last 20 % when there is one (that
 * separator is dropped), else at the window's end; always at least one part.
 */
export function splitWhatsAppText(text: string, max = WHATSAPP_MAX_TEXT): string[] {
  const parts: string[] = [];
  let rest = text;
  const floor = Math.floor(max * 0.8);
  while (rest.length > max) {
    const window = rest.slice(0, max + 1);
    // A separator right after the window still lets the window go whole.
    let cut = window.lastIndexOf('\n');
    if (cut < floor) cut = Math.max(window.lastIndexOf(' '), window.lastIndexOf('\t'));
    if (cut >= floor) {
      parts.push(rest.slice(0, cut));
      rest = rest.slice(cut + 1);
      continue;
    }
    let end = max;
    const last = rest.charCodeAt(end - 1);
    if (last >= 0xd800 && last <= 0xdbff) end -= 1;
    parts.push(rest.slice(0, end));
    rest = rest.slice(end);
  }
  if (rest.length > 0 || parts.length === 0) parts.push(rest);
  return parts;
}

/** Graph's `{error:{code, error_subcode, fbtrace_id}}` of an answer, as far as it is well-typed. */
function graphErrorOf(body: unknown): { code: number | null; subcode: number | null; fbtraceId: string | null } {
  const error = body !== null && typeof body === 'object' ? (body as { error?: unknown }).error : undefined;
  if (error === null || typeof error !== 'object') return { code: null, subcode: null, fbtraceId: null };
  const e = error as { code?: unknown; error_subcode?: unknown; fbtrace_id?: unknown };
  const int = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) ? v : typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : null);
  return { code: int(e.code), subcode: int(e.error_subcode), fbtraceId: typeof e.fbtrace_id === 'string' ? e.fbtrace_id.slice(0, 64) : null };
}

export interface WhatsAppSendingOptions {
  /** Meta Graph's base (WHATSAPP_GRAPH_URL, https://graph.facebook.com), or a sandbox's. */
  graphUrl: string;
  /** The Graph API version (WHATSAPP_GRAPH_VERSION, v21.0). */
  graphVersion: string;
  timeoutMs?: number;
  /** How long Meta takes at most to post a status of a message it took (WHATSAPP_STATUS_WAIT_MS): SendingChannel.reportWithinMs. */
  statusWithinMs?: number;
}


async function sendText(options: WhatsAppSendingOptions, target: SendTarget, text: string, send: SendOptions): Promise<{ externalId: string | null }> {
  if (!target.phoneNumberId) throw new WhatsAppSendError('BAD_URL', 'whatsapp send: the integration has no phone number id');
  const base = options.graphUrl.replace(/\/+$/, '');
  const url = `${base}/${encodeURIComponent(options.graphVersion)}/${encodeURIComponent(target.phoneNumberId)}/messages`;
  const body = {
    messaging_product: 'whatsapp',
    recipient_type: 'individual',
    to: target.clientId,
    type: 'text',
    text: { preview_url: false, body: text },
    biz_opaque_callback_data: send.outboxId,
  };
  let res;
  try {
    res = await outboundRequest({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${target.token}`, 'content-type': 'application/json', accept: 'application/json' },
      body: Buffer.from(JSON.stringify(body)),
      timeoutMs: options.timeoutMs ?? DEFAULT_WHATSAPP_TIMEOUT_MS,
      maxBodyBytes: MAX_WHATSAPP_ANSWER_BYTES,
      guard: null,
      onWritten: send.onWritten,
    });
  } catch (err) {
    const code = outboundErrorIn(err)?.code ?? 'NETWORK';
    throw new WhatsAppSendError(code, `whatsapp send: ${code.toLowerCase()}`, { cause: err });
  }
  const parsed = parseJsonBody(res.body);
  if (res.status < 200 || res.status > 299) {
    const graph = graphErrorOf(parsed);
    throw new WhatsAppSendError('HTTP_STATUS', `whatsapp send: HTTP ${res.status}${graph.code !== null ? ` (Graph error ${graph.code})` : ''}`, {
      status: res.status,
      retryAfterMs: retryAfterMs(res.headers['retry-after']),
      graphCode: graph.code,
      graphSubcode: graph.subcode,
      fbtraceId: graph.fbtraceId,
    });
  }
  const messages = parsed !== null && typeof parsed === 'object' ? (parsed as { messages?: unknown }).messages : undefined;
  const id = Array.isArray(messages) && messages[0] !== null && typeof messages[0] === 'object' ? (messages[0] as { id?: unknown }).id : undefined;
  return { externalId: typeof id === 'string' && id.length > 0 && id.length <= 256 ? id : null };
}

/**
 * What a failed send means: Graph's "not now" codes (LATER_CODES), HTTP 429 and 5xx → later
 * (with Retry-After when given); 131047 → never, `window_closed`; other answers → never, the
 * Graph code (else `http_<status>`); no answer: a timeout or a connection cut after the
 * request left → unknown (`timeout` / `network`), a connection never made → later.
 */
export function classifyWhatsAppFailure(err: unknown): SendFailure {
  const failure = (retry: SendFailure['retry'], code: string, message: string, extra: Partial<SendFailure> = {}): SendFailure => ({
    retry,
    code,
    message,
    retryAfterMs: null,
    effect: null,
    ...extra,
  });
  const wa = err instanceof WhatsAppSendError ? err : null;
  if (wa && wa.status !== null) {
    const status = wa.status;
    const g = wa.graphCode;
    const code = g !== null ? String(g) : `http_${status}`;
    const wait = { retryAfterMs: wa.retryAfterMs };
    const effect = graphCodeEffect(g);
    if (effect) return failure('never', code, `WhatsApp refused the message (${codeText(code, g)})`, { effect });
    if ((g !== null && LATER_CODES.has(g)) || status === 429 || status >= 500) {
      return failure('later', code, `WhatsApp did not take the message now (${codeText(code, g)}); it will be tried again`, wait);
    }
    if (status >= 200 && status <= 299) return failure('unknown', code, 'WhatsApp answered in a way we could not read: the message may have been delivered');
    return failure('never', code, `WhatsApp refused the message (${codeText(code, g)})`);
  }
  const out = outboundErrorIn(err);
  if (!out) return failure('unknown', 'internal', 'The send failed inside the service: the message may have been delivered');
  if (out.code === 'TIMEOUT') return failure('unknown', 'timeout', 'WhatsApp did not answer in time: the message may have been delivered');
  if (out.maybeDelivered) return failure('unknown', 'network', 'The connection to WhatsApp broke after the message left: it may have been delivered');
  if (out.retryable) return failure('later', 'network', 'WhatsApp could not be reached (network); it will be tried again');
  const code = out.code.toLowerCase();
  if (out.code === 'BAD_URL' && wa && wa.cause === undefined) return failure('never', 'no_phone_number', 'The WhatsApp integration has no phone number id');
  return failure('never', code, `The message could not be sent to WhatsApp (${code})`);
}

export function whatsappSending(options: WhatsAppSendingOptions): SendingChannel {
  return {
    type: 'whatsapp',
    split: (text) => splitWhatsAppText(text),
    send: (target, text, send) => sendText(options, target, text, send),
    classify: classifyWhatsAppFailure,
    replyWindowMs: WHATSAPP_REPLY_WINDOW_MS,
    // Every message Meta takes gets a `sent` (or `failed`) status carrying our biz_opaque_callback_data.
    reportWithinMs: options.statusWithinMs ?? DEFAULT_WHATSAPP_STATUS_WAIT_MS,
  };
}
