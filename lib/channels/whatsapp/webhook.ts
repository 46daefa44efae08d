import { timingSafeEqual } from 'node:crypto';
import { AppError } from '../../errors.js';
import { CONTACT_LIMITS, contactText } from '../../leads.js';
import type { DeliveryReport, NormalisedMessage } from '../../../schema/envelope.js';
import type { InboundItem, Normalised, ProbeAnswer, ProbedIntegration, WebhookChannel } from '../types.js';
import { graphCodeEffect } from './sending.js';

/**
 * The gateway's half of the WhatsApp Cloud API channel (Meta Graph webhooks).
 *
 * A body is `{object:"whatsapp_business_account", entry:[{id, changes:[{field, value}]}]}`.
 * Every entry and every change is read (Meta batches; Chatwoot reads only the first of each
 * and loses the rest). Of a change with `field` "messages":
 * - `value.messages[]`: customer messages. `text` ones carry their body as is (the gateway
 *   already made it storable); any other type (image, audio, location, interactive, ...) is
 *   `[<type>]` with `unsupported: <type>` (handed to a person). `reaction` is not an item: an
 *   emoji on one of our messages asks nothing of anybody and must not trigger a "text only"
 *   answer. Key `wa:<wamid>`; the contact's name comes from `value.contacts[]` (the entry
 *   whose `wa_id` is the sender), cleaned like every contact field (lib/leads.ts contactText).
 * - `value.statuses[]`: what became of our sent messages (`sent`, `delivered`, `read`,
 *   `failed` with `errors[]` and what the first one's code does to the conversation, as a
 *   refused send's would: sending.ts graphCodeEffect), key `ws:<wamid>:<status>`; `biz_opaque_callback_data` (what
 *   our send carried: the outbox id) is kept when it is 1–20 digits.
 * Not items (the body is answered 200 and dropped): an object without `entry`, another
 * `object` than "whatsapp_business_account", other fields (account updates, templates, ...),
 * unknown status values, and malformed elements (no id / sender / recipient, wrong types, a
 * text without a body): Meta would retry a refused body for days, and the others of the batch
 * are good.
 * Refused (400 VALIDATION_ERROR): a body that is not a JSON object, an `entry` that is not an
 * array, and more than MAX_WHATSAPP_ITEMS messages + statuses (or changes) in one body.
 */
export const MAX_WHATSAPP_ITEMS = 1000;

/** Longest wamid / sender id taken (wamids are about 60 characters, wa_ids phone numbers): past it the element is malformed. */
const MAX_ID_LENGTH = 256;
const MAX_ERROR_TEXT = 300;
const STATUSES: ReadonlySet<string> = new Set(['sent', 'delivered', 'read', 'failed']);
/** Message types that are not items at all (see the module comment). */
const IGNORED_TYPES: ReadonlySet<string> = new Set(['reaction']);

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const idOf = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 && v.length <= MAX_ID_LENGTH ? v : null);

const invalid = (field: string, message: string): AppError =>
  new AppError('VALIDATION_ERROR', `Invalid WhatsApp webhook: ${field} ${message}.`, { details: [{ field, message }] });

/** Meta's `timestamp` (Unix seconds, a string of digits or a number) as ISO; `fallback` when absent or unreadable. */
export function whatsappTimeIso(value: unknown, fallback: string): string {
  const text = typeof value === 'number' && Number.isInteger(value) ? String(value) : value;
  if (typeof text !== 'string' || !/^\d{1,11}$/.test(text)) return fallback;
  const date = new Date(Number(text) * 1000);
  return Number.isNaN(date.getTime()) ? fallback : date.toISOString();
}

/** A message type as we name it: `[a-z_]` up to 32 characters, else "unsupported". */
const cleanType = (type: unknown): string => (typeof type === 'string' && /^[a-z_]{1,32}$/.test(type) ? type : 'unsupported');

/** The profile name of `from` in the change's `contacts[]`. */
function contactName(contacts: unknown, from: string): string | null {
  if (!Array.isArray(contacts)) return null;
  for (const c of contacts) {
    if (isObject(c) && c.wa_id === from) return contactText(isObject(c.profile) ? c.profile.name : undefined, CONTACT_LIMITS.name);
  }
  return null;
}

function messageItem(m: unknown, value: Obj, receivedAt: string): InboundItem | null {
  if (!isObject(m)) return null;
  const id = idOf(m.id);
  const from = idOf(m.from);
  if (id === null || from === null) return null;
  const type = cleanType(m.type);
  if (IGNORED_TYPES.has(type)) return null;
  let text: string;
  let unsupported: string | undefined;
  if (type === 'text') {
    const body = isObject(m.text) ? m.text.body : undefined;
    if (typeof body !== 'string') return null;
    text = body;
  } else {
    text = `[${type}]`;
    unsupported = type;
  }
  const metadata = isObject(value.metadata) ? value.metadata : {};
  const message: NormalisedMessage = {
    messageId: id,
    text,
    clientId: from,
    channelId: idOf(metadata.phone_number_id),
    transport: 'whatsapp',
    requestId: null,
    dialogId: null,
    attachments: [],
    sentAt: whatsappTimeIso(m.timestamp, receivedAt),
    contact: { name: contactName(value.contacts, from), email: null, phone: contactText(from, CONTACT_LIMITS.phone), source: 'whatsapp' },
    ...(unsupported !== undefined ? { unsupported } : {}),
  };
  return { kind: 'message', idempotencyKey: `wa:${id}`, message };
}

/** The first error of a failed status, in storable words (it is Meta's text: shown to operators, cut and cleaned). */
function firstError(errors: unknown): { code: string; message: string } {
  const e = Array.isArray(errors) && isObject(errors[0]) ? errors[0] : null;
  const code = e && (typeof e.code === 'number' || typeof e.code === 'string') ? contactText(String(e.code), 32) : null;
  const message = e ? (contactText(e.title, MAX_ERROR_TEXT) ?? contactText(e.message, MAX_ERROR_TEXT)) : null;
  return { code: code ?? 'unknown', message: message ?? 'WhatsApp gave no reason' };
}

function statusItem(s: unknown, receivedAt: string): InboundItem | null {
  if (!isObject(s)) return null;
  const id = idOf(s.id);
  const clientId = idOf(s.recipient_id);
  const status = s.status;
  if (id === null || clientId === null || typeof status !== 'string' || !STATUSES.has(status)) return null;
  const opaque = s.biz_opaque_callback_data;
  const error = status === 'failed' ? firstError(s.errors) : null;
  const delivery: DeliveryReport = {
    externalId: id,
    outboxId: typeof opaque === 'string' && /^\d{1,20}$/.test(opaque) ? opaque : null,
    status: status as DeliveryReport['status'],
    error,
    effect: error ? graphCodeEffect(error.code) : null,
    clientId,
    at: whatsappTimeIso(s.timestamp, receivedAt),
  };
  return { kind: 'delivery', idempotencyKey: `ws:${id}:${status}`, delivery };
}

export function normaliseWhatsApp(payload: unknown, _raw: Uint8Array, receivedAt: string): Normalised {
  if (!isObject(payload)) throw invalid('body', 'must be a JSON object');
  if (payload.object !== undefined && payload.object !== 'whatsapp_business_account') return { items: [] };
  if (payload.entry === undefined) return { items: [] };
  if (!Array.isArray(payload.entry)) throw invalid('entry', 'must be an array');
  const items: InboundItem[] = [];
  let elements = 0;
  let changes = 0;
  const count = (list: unknown[], field: string) => {
    elements += list.length;
    if (elements > MAX_WHATSAPP_ITEMS) throw invalid(field, `holds more than ${MAX_WHATSAPP_ITEMS} messages and statuses in one body`);
  };
  for (const [e, entry] of payload.entry.entries()) {
    if (!isObject(entry) || !Array.isArray(entry.changes)) continue;
    changes += entry.changes.length;
    if (changes > MAX_WHATSAPP_ITEMS) throw invalid(`entry[${e}].changes`, `more than ${MAX_WHATSAPP_ITEMS} changes in one body`);
    for (const [c, change] of entry.changes.entries()) {
      if (!isObject(change) || change.field !== 'messages' || !isObject(change.value)) continue;
      const value = change.value;
      const at = `entry[${e}].changes[${c}].value`;
      if (Array.isArray(value.messages)) {
        count(value.messages, `${at}.messages`);
        for (const m of value.messages) {
          const item = messageItem(m, value, receivedAt);
          if (item) items.push(item);
        }
      }
      if (Array.isArray(value.statuses)) {
        count(value.statuses, `${at}.statuses`);
        for (const s of value.statuses) {
          const item = statusItem(s, receivedAt);
          if (item) items.push(item);
        }
      }
    }
  }
  return { items };
}

const MAX_CHALLENGE_LENGTH = 256;

/**
 * Meta's subscription check: `GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`
 * answers the challenge as plain text when the token is the integration's (compared in
 * constant time); any other probe 403. No `hub.mode`: not Meta's probe (null).
 */
export function probeWhatsApp(query: URLSearchParams, integration: ProbedIntegration): ProbeAnswer | null {
  const mode = query.get('hub.mode');
  if (mode === null) return null;
  const refused: ProbeAnswer = { status: 403, text: 'verification failed' };
  const token = query.get('hub.verify_token');
  const challenge = query.get('hub.challenge');
  if (mode !== 'subscribe' || token === null || !integration.verifyToken) return refused;
  if (challenge === null || challenge.length === 0 || challenge.length > MAX_CHALLENGE_LENGTH) return refused;
  const given = Buffer.from(token, 'utf8');
  const expected = Buffer.from(integration.verifyToken, 'utf8');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refused;
  return { status: 200, text: challenge };
}

export const whatsappWebhook: WebhookChannel = {
  type: 'whatsapp',
  proof: { kind: 'signature', headers: ['x-hub-signature-256'] },
  normalise: normaliseWhatsApp,
  probe: probeWhatsApp,
};
