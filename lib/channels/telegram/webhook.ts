import { AppError } from '../../errors.js';
import { CONTACT_LIMITS, contactText } from '../../leads.js';
import type { CustomerContact } from '../../../schema/envelope.js';
import type { Normalised, WebhookChannel } from '../types.js';

/**
 * The gateway's half of the Telegram channel (Bot API webhooks, `setWebhook` with
 * `allowed_updates:["message"]`).
 *
 * - Proof: the integration's secret in `X-Telegram-Bot-Api-Secret-Token` (no HMAC; the
 *   gateway compares it in constant time).
 * - `message.text` from a `private` chat, sent by a person, is a customer message: the
 *   conversation key is the chat id (`clientId`), the idempotency key `tg:<update_id>`
 *   (`update_id` increases by one per update; Telegram retries a non-2xx delivery).
 * - Everything else answers 200 and is ignored: edited messages, channel posts, callback
 *   queries, groups / supergroups / channels, messages without text (photos, stickers ...),
 *   messages from bots.
 * - Malformed (400 VALIDATION_ERROR): a body that is not an object, an `update_id` that is not
 *   a non-negative safe integer; for a private text message, a `chat.id` that is not a safe
 *   integer or a `message_id` that is not a non-negative safe integer.
 * The name (`from.first_name` + `last_name`, else `username`; the chat's when `from` is
 * absent) is cleaned with contactText (hostile text is cut down, never refused).
 */

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const isNonNegativeId = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

function invalid(field: string, message: string): AppError {
  return new AppError('VALIDATION_ERROR', `Invalid Telegram update: ${field} ${message}.`, { details: [{ field, message }] });
}

/** Telegram's `date` (Unix seconds) as ISO; `fallback` when absent or unusable. */
function dateIso(date: unknown, fallback: string): string {
  if (typeof date !== 'number' || !Number.isFinite(date) || date <= 0) return fallback;
  const at = new Date(date * 1000);
  return Number.isNaN(at.getTime()) ? fallback : at.toISOString();
}

/** The person's name: first + last name, else the username; null when there is none. */
function nameOf(person: Json): string | null {
  const first = typeof person.first_name === 'string' ? person.first_name : '';
  const last = typeof person.last_name === 'string' ? person.last_name : '';
  return contactText([first, last].filter(Boolean).join(' '), CONTACT_LIMITS.name) ?? contactText(person.username, CONTACT_LIMITS.name);
}

export function normaliseTelegram(payload: unknown, _raw: Uint8Array, receivedAt: string): Normalised {
  if (!isObject(payload)) throw invalid('(body)', 'must be a Telegram Update object');
  const updateId = payload.update_id;
  if (!isNonNegativeId(updateId)) throw invalid('update_id', 'must be a non-negative integer');

  const message = payload.message;
  if (!isObject(message)) return { items: [] }; // edited_message, channel_post, callback_query, ...
  const text = message.text;
  if (typeof text !== 'string' || text === '') return { items: [] }; // a photo, a sticker, a service message
  const chat = message.chat;
  if (!isObject(chat)) throw invalid('message.chat', 'must be an object');
  if (chat.type !== 'private') {
    if (typeof chat.type !== 'string') throw invalid('message.chat.type', 'must be a string');
    return { items: [] }; // groups, supergroups, channels
  }
  const from = message.from;
  if (from !== undefined && from !== null && !isObject(from)) throw invalid('message.from', 'must be an object');
  if (isObject(from) && from.is_bot === true) return { items: [] };
  if (!Number.isSafeInteger(chat.id)) throw invalid('message.chat.id', 'must be an integer');
  if (!isNonNegativeId(message.message_id)) throw invalid('message.message_id', 'must be a non-negative integer');

  const name = nameOf(isObject(from) ? from : chat);
  const contact: CustomerContact | undefined = name === null ? undefined : { name, email: null, phone: null, source: 'telegram' };
  return {
    items: [
      {
        kind: 'message',
        idempotencyKey: `tg:${updateId}`,
        message: {
          messageId: String(message.message_id),
          text,
          clientId: String(chat.id),
          channelId: null,
          transport: 'telegram',
          requestId: null,
          dialogId: null,
          attachments: [],
          sentAt: dateIso(message.date, receivedAt),
          ...(contact ? { contact } : {}),
        },
      },
    ],
  };
}

export const telegramWebhook: WebhookChannel = {
  type: 'telegram',
  proof: { kind: 'secret_header', header: 'x-telegram-bot-api-secret-token' },
  normalise: normaliseTelegram,
};
