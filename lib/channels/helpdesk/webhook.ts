import { createHash } from 'node:crypto';
import {
  HELPDESK_STATUS_HOOKS,
  helpdeskMessageSchema,
  helpdeskStatusSchema,
  type HelpdeskMessagePayload,
  type HelpdeskStatusHook,
  type HelpdeskStatusPayload,
  helpdeskTimeMs,
} from '../../../schema/helpdesk-payloads.js';
import { AppError } from '../../errors.js';
import { bodyValidator } from '../../json-validation.js';
import { CONTACT_LIMITS, contactText } from '../../leads.js';
import type { CustomerContact, NormalisedMessage, NormalisedStatus } from '../../../schema/envelope.js';
import type { Normalised, WebhookChannel } from '../types.js';

/**
 * The gateway's half of the helpdesk channel (Chat2Desk API v1 webhooks): a Chat2Desk webhook
 * payload turned into what the gateway enqueues, or said to be ignored.
 *
 * - Proof: `sha256=<HMAC-SHA256 of the raw body, keyed with the webhook secret>` in
 *   `x-webhook-signature` or `x-hub-signature-256` (gateway/webhook/signature.ts).
 *
 * - `hook_type` "inbox" or absent: a customer message (`type` "from_client" when present;
 *   other types such as to_client are echoes of operator / bot messages and are ignored).
 * - `close_dialog`, `close_request`, `dialog_transferred`: status events.
 * - any other `hook_type` (outbox, new_client, new_request, ...): ignored.
 * A payload of a kind we act on that does not match its schema throws 400 VALIDATION_ERROR,
 * one message per field. Ids sent as "" count as absent (Chat2Desk sends them so; refusing
 * would make it retry three times and then drop the event). A status event that names its
 * kind in `event` or `type` instead of `hook_type` is told so (400), not read as a message.
 *
 * The customer's `client.name` / `client.phone` go with the message, cleaned (lib/leads.ts
 * contactText: hostile text such as control characters or a megabyte of name is cut down,
 * never refused); the worker fills their lead with them when it has none.
 *
 * Idempotency key (stable across the helpdesk's retries): `m:<message_id>` when the payload
 * has one, else `s:<hook_type>:<request_id>:<dialog_id>` for status events, else
 * `h:<sha256 of the raw body>`. (Its partition: lib/inbound.ts partitionKeyOf.)
 */
export type HelpdeskInbound =
  | { kind: 'ignored'; reason: string }
  | { kind: 'message'; idempotencyKey: string; message: NormalisedMessage }
  | { kind: 'status'; idempotencyKey: string; status: NormalisedStatus };

const validateMessage = bodyValidator<HelpdeskMessagePayload>(helpdeskMessageSchema);
const validateStatus = bodyValidator<HelpdeskStatusPayload>(helpdeskStatusSchema);
/** The checks of the payloads acted on: a customer message, a status event (for the route's docs). */
export const HELPDESK_PAYLOAD_VALIDATORS = [validateMessage, validateStatus] as const;
const STATUS_HOOKS: ReadonlySet<string> = new Set(HELPDESK_STATUS_HOOKS);

const idString = (v: string | number | null | undefined): string | null => (v === null || v === undefined ? null : String(v));
const idNumber = (v: string | number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

/** Fields that hold an id: `""` there means "none". */
const ID_FIELDS = ['client_id', 'channel_id', 'message_id', 'request_id', 'dialog_id', 'operator_id'] as const;

/** The payload without its `""` ids (a shallow copy only when there is one). */
function withoutEmptyIds(payload: Record<string, unknown>): Record<string, unknown> {
  if (!ID_FIELDS.some((f) => payload[f] === '')) return payload;
  const copy = { ...payload };
  for (const f of ID_FIELDS) if (copy[f] === '') delete copy[f];
  return copy;
}

/** `event` / `type` holding a status event's name, where `hook_type` was meant. */
function misnamedHook(payload: Record<string, unknown>): string | null {
  for (const field of ['event', 'type'] as const) {
    const v = payload[field];
    if (typeof v === 'string' && STATUS_HOOKS.has(v)) return field;
  }
  return null;
}

/** Chat2Desk's event_time ("2024-05-01T10:00:00 UTC", ISO, or Unix seconds) as ISO; `fallback` when absent or unreadable. */
export function eventTimeIso(value: string | number | null | undefined, fallback: string): string {
  const ms = helpdeskTimeMs(value);
  return ms === null ? fallback : new Date(ms).toISOString();
}

/** The payload's client card as a contact, or undefined when it names neither name nor phone. */
function clientContact(client: unknown): CustomerContact | undefined {
  if (!client || typeof client !== 'object' || Array.isArray(client)) return undefined;
  const card = client as { name?: unknown; phone?: unknown };
  const name = contactText(card.name, CONTACT_LIMITS.name);
  const phone = contactText(card.phone, CONTACT_LIMITS.phone);
  return name === null && phone === null ? undefined : { name, email: null, phone, source: 'helpdesk' };
}

const bodyHash = (raw: Uint8Array): string => createHash('sha256').update(raw).digest('hex');

/**
 * One payload as at most one item (`ignored` says why it is not one); helpdeskWebhook.normalise
 * is this as the channel interface's `{items}`. The payload is storable text already (the
 * gateway cleaned it), so the validators do not look for U+0000 again.
 */
export function normaliseHelpdesk(input: unknown, rawBody: Uint8Array, receivedAt: string): HelpdeskInbound {
  const isObject = input !== null && typeof input === 'object' && !Array.isArray(input);
  const payload = isObject ? withoutEmptyIds(input as Record<string, unknown>) : input;
  const hook = isObject ? (payload as { hook_type?: unknown }).hook_type : undefined;

  if (hook === undefined && isObject) {
    const field = misnamedHook(payload as Record<string, unknown>);
    if (field) {
      const name = (payload as Record<string, string>)[field];
      throw new AppError('VALIDATION_ERROR', `Invalid hook_type: a status event names its kind in hook_type, not in ${field} (send "hook_type":"${name}").`, {
        details: [{ field: 'hook_type', message: `is required: this payload has ${field}: "${name}"; the field is named hook_type` }],
      });
    }
  }

  if (typeof hook === 'string' && STATUS_HOOKS.has(hook)) {
    const p = validateStatus(payload, false);
    const messageId = idString(p.message_id);
    const requestId = Number(p.request_id);
    const dialogId = idNumber(p.dialog_id);
    const clientId = idString(p.client_id);
    return {
      kind: 'status',
      idempotencyKey: messageId !== null ? `m:${messageId}` : `s:${p.hook_type}:${requestId}:${dialogId ?? ''}`,
      status: { hookType: p.hook_type as HelpdeskStatusHook, requestId, dialogId, clientId },
    };
  }
  if (typeof hook === 'string' && hook !== 'inbox') return { kind: 'ignored', reason: `hook_type ${hook}` };

  // An inbound message (or something that claims to be one: it must match the schema).
  const chatType = payload !== null && typeof payload === 'object' ? (payload as { type?: unknown }).type : undefined;
  if (typeof chatType === 'string' && chatType !== 'from_client') return { kind: 'ignored', reason: `message type ${chatType}` };
  const p = validateMessage(payload, false);
  const messageId = idString(p.message_id);
  const clientId = String(p.client_id);
  const contact = clientContact(p.client);
  return {
    kind: 'message',
    idempotencyKey: messageId !== null ? `m:${messageId}` : `h:${bodyHash(rawBody)}`,
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
      ...(contact ? { contact } : {}),
    },
  };
}

export const helpdeskWebhook: WebhookChannel = {
  type: 'helpdesk',
  proof: { kind: 'signature', headers: ['x-webhook-signature', 'x-hub-signature-256'] },
  normalise(payload, raw, receivedAt): Normalised {
    const inbound = normaliseHelpdesk(payload, raw, receivedAt);
    return { items: inbound.kind === 'ignored' ? [] : [inbound] };
  },
};
