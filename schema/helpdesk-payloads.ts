/**
 * JSON schemas (ajv) of what the helpdesk connector (Chat2Desk API v1 webhooks) posts to
 * `POST /api/webhook/helpdesk/:integrationId`. Chat2Desk sends many more fields than these
 * (operator_id, ...): unknown fields are allowed and ignored; of the `client {...}` card only
 * `name` and `phone` are read (the normaliser cleans them; never a reason to refuse).
 * Ids arrive as numbers or strings depending on the event, so both are accepted where
 * Chat2Desk is known to send either, and an id sent as "" counts as absent (the normaliser
 * drops it before these schemas see it); lib/channels/helpdesk/webhook.ts turns them
 * into the one envelope shape (schema/envelope.ts).
 */
export const HELPDESK_STATUS_HOOKS = ['close_dialog', 'close_request', 'dialog_transferred'] as const;
export type HelpdeskStatusHook = (typeof HELPDESK_STATUS_HOOKS)[number];

/** A message from the customer (`hook_type` "inbox" or absent, Chat2Desk `type` "from_client"). */
export interface HelpdeskMessagePayload {
  hook_type?: string;
  text: string | null;
  client_id: string | number;
  channel_id?: string | number | null;
  transport?: string | null;
  message_id?: string | number | null;
  type?: string | null;
  dialog_id?: string | number | null;
  request_id?: string | number | null;
  attachments?: unknown[] | null;
  event_time?: string | number | null;
  /** Who wrote (Chat2Desk's client card): only `name` and `phone` are read, whatever else it holds. */
  client?: unknown;
}

/** A status event (flat, snake_case): close_dialog, close_request, dialog_transferred. */
export interface HelpdeskStatusPayload {
  hook_type: HelpdeskStatusHook;
  /** A number, or a string of digits (turned into the number). */
  request_id: number | string;
  dialog_id?: number | string | null;
  client_id?: string | number | null;
  message_id?: string | number | null;
  event_time?: string | number | null;
}

const idValue = { anyOf: [{ type: 'string', minLength: 1, maxLength: 200 }, { type: 'integer' }] };
const nullableId = { anyOf: [...idValue.anyOf, { type: 'null' }] };
/** request_id / dialog_id inside a message payload: a number, or a string of digits. */
const numericId = { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: '^\\d{1,15}$' }, { type: 'null' }] };
const eventTime = { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] };

export const helpdeskMessageSchema = {
  title: 'HelpdeskMessagePayload',
  type: 'object',
  required: ['text', 'client_id'],
  properties: {
    hook_type: { type: 'string' },
    // null: an attachment without a caption.
    text: { type: ['string', 'null'] },
    client_id: idValue,
    channel_id: nullableId,
    transport: { type: ['string', 'null'], maxLength: 100 },
    message_id: nullableId,
    type: { type: ['string', 'null'] },
    dialog_id: numericId,
    request_id: numericId,
    // Kept as sent, whatever their shape; `items` said outright for OpenAPI tools that expect it.
    attachments: { type: ['array', 'null'], items: {} },
    event_time: eventTime,
    // Any shape inside: a name or phone the normaliser cannot use is dropped, never a reason to refuse the message (the helpdesk would retry it, then drop it).
    client: { description: "The customer's card (an object); its `name` and `phone` fill their lead (cleaned, bounded); anything else is ignored." },
  },
} as const;

/** An id the helpdesk keeps as an integer; some events carry it as a string of digits. */
const integerId = { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'string', pattern: '^\\d{1,15}$' }] };

export const helpdeskStatusSchema = {
  title: 'HelpdeskStatusPayload',
  type: 'object',
  required: ['hook_type', 'request_id'],
  properties: {
    hook_type: { type: 'string', enum: HELPDESK_STATUS_HOOKS },
    request_id: integerId,
    dialog_id: { anyOf: [...integerId.anyOf, { type: 'null' }] },
    client_id: nullableId,
    message_id: nullableId,
    event_time: eventTime,
  },
} as const;

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
