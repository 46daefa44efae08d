import { createHash } from 'node:crypto';
import {
  HELPDESK_STATUS_HOOKS,
  helpdeskMessageSchema,
  helpdeskStatusSchema,
  type HelpdeskMessagePayload,
  type HelpdeskStatusHook,
  type HelpdeskStatusPayload,
} from '../../schema/helpdesk-payloads.js';
import type { NormalisedMessage, NormalisedStatus } from '../../schema/envelope.js';
import { bodyValidator } from '../http/validate.js';

/**
 * Turns a Chat2Desk webhook payload into what the gateway enqueues, or says it is ignored.
 *
 * - `hook_type` "inbox" or absent: a customer message (`type` "from_client" when present;
 *   other types such as to_client are echoes of operator / bot messages and are ignored).
 * - `close_dialog`, `close_request`, `dialog_transferred`: status events.
 * - any other `hook_type` (outbox, new_client, new_request, ...): ignored.
 * A payload of a kind we act on that does not match its schema throws 400 VALIDATION_ERROR.
 *
 * Idempotency key (stable across the helpdesk's retries): `m:<message_id>` when the payload
 * has one, else `s:<hook_type>:<request_id>:<dialog_id>` for status events, else
 * `h:<sha256 of the raw body>`. Partition key: the client id, or `request:<request_id>` for
 * a status event without client_id (the worker re-routes it to its conversation).
 */
export type HelpdeskInbound =
  | { kind: 'ignored'; reason: string }
  | { kind: 'message'; idempotencyKey: string; partitionKey: string; message: NormalisedMessage }
  | { kind: 'status'; idempotencyKey: string; partitionKey: string; status: NormalisedStatus };

const validateMessage = bodyValidator<HelpdeskMessagePayload>(helpdeskMessageSchema);
const validateStatus = bodyValidator<HelpdeskStatusPayload>(helpdeskStatusSchema);
const STATUS_HOOKS: ReadonlySet<string> = new Set(HELPDESK_STATUS_HOOKS);

const idString = (v: string | number | null | undefined): string | null => (v === null || v === undefined ? null : String(v));
const idNumber = (v: string | number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** Chat2Desk's event_time ("2024-05-01T10:00:00 UTC", ISO, or Unix seconds) as ISO; `fallback` when absent or unreadable. */
export function eventTimeIso(value: string | number | null | undefined, fallback: string): string {
  let ms = NaN;
  if (typeof value === 'number') ms = value < 1e11 ? value * 1000 : value;
  else if (typeof value === 'string' && value) {
    ms = Date.parse(value);
    if (Number.isNaN(ms)) ms = Date.parse(value.replace(/\s*UTC$/i, 'Z').replace(' ', 'T'));
  }
  return Number.isFinite(ms) ? new Date(ms).toISOString() : fallback;
}

const bodyHash = (raw: Uint8Array): string => createHash('sha256').update(raw).digest('hex');

export function normaliseHelpdesk(payload: unknown, rawBody: Uint8Array, receivedAt: string): HelpdeskInbound {
  const hook = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? (payload as { hook_type?: unknown }).hook_type : undefined;

  if (typeof hook === 'string' && STATUS_HOOKS.has(hook)) {
    const p = validateStatus(payload);
    const messageId = idString(p.message_id);
    const dialogId = p.dialog_id ?? null;
    const clientId = idString(p.client_id);
    return {
      kind: 'status',
      idempotencyKey: messageId !== null ? `m:${messageId}` : `s:${p.hook_type}:${p.request_id}:${dialogId ?? ''}`,
      partitionKey: clientId ?? `request:${p.request_id}`,
      status: { hookType: p.hook_type as HelpdeskStatusHook, requestId: p.request_id, dialogId, clientId },
    };
  }
  if (typeof hook === 'string' && hook !== 'inbox') return { kind: 'ignored', reason: `hook_type ${hook}` };

  // An inbound message (or something that claims to be one: it must match the schema).
  const chatType = payload !== null && typeof payload === 'object' ? (payload as { type?: unknown }).type : undefined;
  if (typeof chatType === 'string' && chatType !== 'from_client') return { kind: 'ignored', reason: `message type ${chatType}` };
  const p = validateMessage(payload);
  const messageId = idString(p.message_id);
  const clientId = String(p.client_id);
  return {
    kind: 'message',
    idempotencyKey: messageId !== null ? `m:${messageId}` : `h:${bodyHash(rawBody)}`,
    partitionKey: clientId,
    message: {
      messageId,
      text: p.text ?? '',
      clientId,
      channelId: idString(p.channel_id),
      transport: p.transport ?? null,
      requestId: idNumber(p.request_id),
      dialogId: idNumber(p.dialog_id),
      attachments: p.attachments ?? [],
      sentAt: eventTimeIso(p.event_time, receivedAt),
    },
  };
}
