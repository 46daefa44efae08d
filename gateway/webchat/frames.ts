import { AppError, type ErrorCode } from '../../lib/errors.js';
import { CONTACT_LIMITS, contactText } from '../../lib/leads.js';
import { storable } from '../../lib/text.js';
import type { PrechatForm } from '../../schema/entities.js';

/**
 * The webchat socket's frames (contract.md § Webchat): JSON objects `{type, ...}`.
 *
 * Client → server: `hello {visitorToken?, lastSeq?, conversationId?, identity?}`, `identify
 * {id, name?, email?, hash}`, `message {clientMessageId, text, contact?}`, `typing {role?:
 * "customer"}` (the visitor is writing: accepted silently, never stored), `ping`.
 * (`hello.conversationId`, optional, says which session `lastSeq` counts in: when it is not
 * the visitor's open session, everything of the open session is replayed.)
 * Customers have names (identity.ts): `hello.identity` and `identify` carry the host page's
 * `MAS.identify({id, name, email, hash})`, `hash` = hex HMAC-SHA256 of `id` keyed with the
 * integration's webhook secret; a hash that does not verify answers `error IDENTITY_INVALID`
 * and the chat goes on anonymously. `message.contact {name?, email?}`: the pre-chat form's
 * answers (unverified). Both reach the customer's lead with their next message.
 * Server → client: `welcome {visitorId, visitorToken, conversationId, greeting, prechat}`
 * (`prechat`: the integration's pre-chat form, "off" | "name" | "name_email")
 * (`conversationId` null while the visitor has no open session: the first message creates
 * one, and a second `welcome` announces it; `greeting`: the integration's agent's greeting or
 * the default, for the widget to show on first open, never stored), `ack {clientMessageId,
 * seq, conversationId}` (the session the message was stored in), `message {seq, role, text,
 * at, name, options?}` (`name`: an operator's display name; null for the others and for an
 * operator without one; an operator's note is never sent; `options`: only on an agent's
 * `clarify` reply, the titles of its numbered options in order, `["Returns", "Exchanges"]`:
 * the visitor may answer with one), `status {status}`, `pong`,
 * `error {code, message}` (an error about one message frame also names its `clientMessageId`),
 * `typing {role:"agent"}` (the agent started on an answer) and `delta {conversationId, text}`
 * (the next piece of a model reply being written; the `message` that follows is the reply
 * whole and replaces them; deltas are a preview, never stored or replayed).
 */
/** The host page's word on who the visitor is; `hash` not yet verified. */
export interface IdentityClaim {
  id: string;
  name: string | null;
  email: string | null;
  hash: string;
}

export type ClientFrame =
  /** `identity` 'malformed': one was sent that cannot verify (answered IDENTITY_INVALID; the hello itself stands). */
  | { type: 'hello'; visitorToken: string | null; lastSeq: number; conversationId: number | null; identity: IdentityClaim | 'malformed' | null }
  | { type: 'identify'; identity: IdentityClaim }
  | { type: 'message'; clientMessageId: string; text: string; contact: { name: string | null; email: string | null } | null }
  | { type: 'typing' }
  | { type: 'ping' };

export type ServerFrame =
  | { type: 'welcome'; visitorId: string; visitorToken: string; conversationId: number | null; greeting: string; prechat: PrechatForm }
  | { type: 'ack'; clientMessageId: string; seq: number; conversationId: number }
  | { type: 'message'; seq: number; role: 'customer' | 'agent' | 'operator'; text: string; at: string; name: string | null; options?: string[] }
  | { type: 'status'; status: 'active' | 'paused' | 'closed' }
  | { type: 'pong' }
  | { type: 'typing'; role: 'agent' }
  | { type: 'delta'; conversationId: number; text: string }
  | { type: 'error'; code: WebchatErrorCode; message: string; clientMessageId?: string };

/** The codes an `error` frame carries: entries of the one catalog (lib/errors.ts), the same strings on the wire. */
export const FRAME_ERROR_CODES = [
  'INVALID_FRAME',
  'UNKNOWN_TYPE',
  'VALIDATION_ERROR',
  'HELLO_REQUIRED',
  'ALREADY_WELCOMED',
  'INVALID_TOKEN',
  'IDENTITY_INVALID',
  'QUEUE_UNAVAILABLE',
  'RATE_LIMITED',
  'INTEGRATION_INACTIVE',
  'INTERNAL_ERROR',
] as const satisfies readonly ErrorCode[];

export type WebchatErrorCode = (typeof FRAME_ERROR_CODES)[number];

export const MAX_TEXT_CHARS = 4096;
export const MAX_TOKEN_CHARS = 4096;
const CLIENT_MESSAGE_ID = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * A failure answered on the socket as an `error` frame (the socket stays open). One about a
 * message frame names its clientMessageId, so the widget knows which message to send again.
 */
export class FrameError extends AppError {
  declare readonly code: WebchatErrorCode;
  readonly clientMessageId: string | undefined;

  constructor(code: WebchatErrorCode, message?: string, clientMessageId?: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'FrameError';
    this.clientMessageId = clientMessageId;
  }

  get frame(): Extract<ServerFrame, { type: 'error' }> {
    const { code, message, clientMessageId } = this;
    return clientMessageId === undefined ? { type: 'error', code, message } : { type: 'error', code, message, clientMessageId };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
// Loose on purpose: the address is the customer's word (or the host page's); it is never mailed to, and only a verified one is trusted.
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
const emailOf = (v: unknown): string | null => {
  const e = contactText(v, CONTACT_LIMITS.email);
  return e !== null && EMAIL.test(e) ? e : null;
};

/** `hello.identity` / `identify`: an id and a hex hash are required; a name or email that is no use is dropped. */
function identityOf(v: unknown, frame: string): IdentityClaim {
  const bad = () => new FrameError('VALIDATION_ERROR', `Invalid ${frame}: identity needs id (1-${CONTACT_LIMITS.verifiedId} characters) and hash (64 hex digits).`);
  if (!isObject(v)) throw bad();
  const id = typeof v.id === 'number' && Number.isSafeInteger(v.id) ? String(v.id) : v.id;
  if (typeof id !== 'string' || id.length === 0 || id.length > CONTACT_LIMITS.verifiedId || typeof v.hash !== 'string' || !/^[0-9a-fA-F]{64}$/.test(v.hash)) throw bad();
  return { id: storable(id), name: contactText(v.name, CONTACT_LIMITS.name), email: emailOf(v.email), hash: v.hash.toLowerCase() };
}

/** A bad identity must not cost the visitor the chat: the hello goes on without it. */
function malformedAsSuch(read: () => IdentityClaim): IdentityClaim | 'malformed' {
  try {
    return read();
  } catch {
    return 'malformed';
  }
}

/** `message.contact`: the pre-chat form's answers; null when it says nothing usable. */
function contactOf(v: unknown): { name: string | null; email: string | null } | null {
  if (!isObject(v)) return null;
  const name = contactText(v.name, CONTACT_LIMITS.name);
  const email = emailOf(v.email);
  return name === null && email === null ? null : { name, email };
}

/** Parses one text frame; throws FrameError (sent back as an `error` frame) for anything else. */
export function parseClientFrame(raw: string): ClientFrame {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    throw new FrameError('INVALID_FRAME', 'A frame must be a JSON object.');
  }
  if (!isObject(data) || typeof data.type !== 'string') throw new FrameError('INVALID_FRAME', 'A frame must be a JSON object with a string "type".');
  switch (data.type) {
    case 'hello': {
      const bad: string[] = [];
      const token = data.visitorToken;
      if (token !== undefined && token !== null && (typeof token !== 'string' || token.length === 0 || token.length > MAX_TOKEN_CHARS)) bad.push('visitorToken must be a string');
      if (data.lastSeq !== undefined && data.lastSeq !== null && !isSeq(data.lastSeq)) bad.push('lastSeq must be a non-negative integer');
      const conv = data.conversationId;
      if (conv !== undefined && conv !== null && !(isSeq(conv) && conv > 0)) bad.push('conversationId must be a positive integer');
      if (bad.length) throw new FrameError('VALIDATION_ERROR', `Invalid hello: ${bad.join('; ')}.`);
      return {
        type: 'hello',
        visitorToken: typeof token === 'string' ? token : null,
        lastSeq: isSeq(data.lastSeq) ? data.lastSeq : 0,
        conversationId: typeof conv === 'number' ? conv : null,
        identity: data.identity === undefined || data.identity === null ? null : malformedAsSuch(() => identityOf(data.identity, 'hello')),
      };
    }
    case 'identify':
      return { type: 'identify', identity: identityOf(data, 'identify') };
    case 'message': {
      const id = data.clientMessageId;
      const idOk = typeof id === 'string' && CLIENT_MESSAGE_ID.test(id);
      const bad: string[] = [];
      if (!idOk) bad.push('clientMessageId must be 1-100 characters of A-Z a-z 0-9 _ . : -');
      // Made storable here (lib/text.ts), like at the webhook door.
      const text = typeof data.text === 'string' ? storable(data.text) : data.text;
      if (typeof text !== 'string' || !/\S/.test(text)) bad.push('text must be a non-empty string');
      else if (text.length > MAX_TEXT_CHARS) bad.push(`text must be at most ${MAX_TEXT_CHARS} characters`);
      if (bad.length) throw new FrameError('VALIDATION_ERROR', `Invalid message: ${bad.join('; ')}.`, idOk ? id : undefined);
      return { type: 'message', clientMessageId: id as string, text: text as string, contact: contactOf(data.contact) };
    }
    case 'typing':
      // Only the visitor types on this side of the socket.
      if (data.role !== undefined && data.role !== 'customer') throw new FrameError('VALIDATION_ERROR', 'Invalid typing: role must be "customer" when given.');
      return { type: 'typing' };
    case 'ping':
      return { type: 'ping' };
    default:
      throw new FrameError('UNKNOWN_TYPE', `Unknown frame type ${JSON.stringify(data.type.slice(0, 40))}; expected hello, identify, message, typing or ping.`);
  }
}
