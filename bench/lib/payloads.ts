import { HELD_OUT_QUESTIONS } from '../knowledge/held-out.js';
import { TINY_BASES_EN } from '../knowledge/held-out-tiny-en.js';
import { TINY_BASES_RU } from '../knowledge/held-out-tiny-ru.js';
import { TELECOM_QUESTIONS } from '../knowledge/telecom.js';
import { HELD_OUT_UNANSWERABLE } from '../knowledge/trust-held-out.js';
import { createHmac } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { normaliseHelpdesk } from '../../lib/channels/helpdesk/webhook.js';
import { normaliseTelegram } from '../../lib/channels/telegram/webhook.js';
import type { Normalised } from '../../lib/channels/types.js';
import { normaliseWhatsApp } from '../../lib/channels/whatsapp/webhook.js';
import { hubSignature, inboundTextPayload, type WhatsAppAccount } from '../../scripts/sandbox/whatsapp-webhooks.js';
import type { NatsConnection } from '../../lib/nats.js';
import { partitionOf, streamNames } from '../../lib/streams.js';
import type { InboundEnvelope } from '../../schema/envelope.js';

/**
 * What the bench sends: Chat2Desk `inbox` webhooks (unique message_id each, signed with the
 * integration's secret) and, for queueing work directly, the InboundEnvelope the gateway
 * would have published for them. Questions are ones the benchmark knowledge base answers, so
 * every message gets a reply (a handoff would pause the conversation and stop the drain).
 */
export const KNOWLEDGE_DOCUMENTS: { title: string; content: string }[] = [
  {
    title: 'Opening hours',
    content: '## Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.\nOn Sunday we are closed.\n\nPublic holidays: open from 10 am to 4 pm.',
  },
  {
    title: 'Delivery',
    content: 'We deliver within 2 to 3 working days in the city and within 5 working days elsewhere. Delivery is free for orders over 50 euros; below that it costs 4.90 euros. Express delivery the next day costs 9.90 euros.',
  },
  {
    title: 'Returns and refunds',
    content: 'You can return any item within 30 days of delivery. Refunds are paid to the original payment method within 5 working days after we receive the parcel. Returns are free with the prepaid label in the parcel.',
  },
  {
    title: 'Payment methods',
    content: 'We accept Visa, Mastercard, PayPal and bank transfer. Payment by invoice is available for business customers. Cash on delivery is not available.',
  },
  {
    title: 'Order tracking',
    content: 'Once your order ships you receive an email with a tracking number. Track your parcel on the carrier website with that tracking number; it updates within 24 hours.',
  },
];

/** Questions the knowledge base above answers (the built-in agent replies, never hands off). */
export const QUESTIONS = [
  'What are your opening hours?',
  'How long does delivery take?',
  'Can I return an item for a refund?',
  'Which payment methods do you accept?',
  'How do I track my order?',
  'Is delivery free?',
  'When are you open on Sunday?',
  'Do you accept PayPal?',
];

/**
 * Every question of the held-out sets (bench/knowledge/), each made different by an order
 * number: what a drain of realistic, varied customer messages asks (no answer cache helps).
 */
export function variedQuestions(): string[] {
  const texts = [
    ...TINY_BASES_EN.flatMap((b) => b.questions.map((q) => q.text)),
    ...TINY_BASES_RU.flatMap((b) => b.questions.map((q) => q.text)),
    ...HELD_OUT_QUESTIONS.map((q) => q.question),
    ...TELECOM_QUESTIONS.map((q) => q.question),
    ...HELD_OUT_UNANSWERABLE.map((q) => q.question),
  ];
  return Array.from({ length: 20_000 }, (_, i) => `${texts[i % texts.length]!} (#${10_000 + i})`);
}

export const signBody = (secret: string, body: string | Buffer): string => `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

/** A realistic Chat2Desk inbox payload (with the client object Chat2Desk sends), about 600 bytes. */
export function inboxBody(messageId: string, clientId: string | number, text: string, n: number): string {
  return JSON.stringify({
    hook_type: 'inbox',
    message_id: messageId,
    type: 'from_client',
    text,
    transport: 'telegram',
    client_id: clientId,
    channel_id: 17,
    operator_id: null,
    dialog_id: 900_000 + (n % 100_000),
    request_id: 500_000 + (n % 100_000),
    attachments: [],
    event_time: new Date().toISOString(),
    is_new_client: false,
    client: {
      id: clientId,
      phone: `+4915${String(n % 1e8).padStart(8, '0')}`,
      client_phone: `+4915${String(n % 1e8).padStart(8, '0')}`,
      name: `Customer ${clientId}`,
      assigned_name: null,
      external_id: null,
      extra_comment_1: null,
      comment: null,
      region_id: null,
      country_id: 276,
      tags: [],
    },
  });
}

/** The envelope the gateway publishes for a webhook body (its own normaliser, so the worker sees exactly what it would). */
export function envelopeOf(integration: { id: number; companyId: number }, body: string): InboundEnvelope {
  const receivedAt = new Date().toISOString();
  const raw = Buffer.from(body);
  const inbound = normaliseHelpdesk(JSON.parse(body), raw, receivedAt);
  if (inbound.kind !== 'message') throw new Error(`not a message webhook: ${inbound.kind}`);
  return {
    v: 1, kind: 'message', idempotencyKey: inbound.idempotencyKey, companyId: integration.companyId, integrationId: integration.id,
    channel: 'helpdesk', receivedAt, message: inbound.message,
  };
}

export function closeDialogEnvelope(integration: { id: number; companyId: number }, clientId: string, requestId: number): InboundEnvelope {
  return {
    v: 1,
    kind: 'status',
    idempotencyKey: `s:close_dialog:${requestId}:`,
    companyId: integration.companyId,
    integrationId: integration.id,
    channel: 'helpdesk',
    receivedAt: new Date().toISOString(),
    status: { hookType: 'close_dialog', requestId, dialogId: null, clientId },
  };
}

// ---- the direct channels (contract.md § Direct channels) -----------------------------------

/** The channels a webhook of the bench can come through. */
export type BenchChannel = 'helpdesk' | 'whatsapp' | 'telegram';
export const BENCH_CHANNELS: readonly BenchChannel[] = ['helpdesk', 'whatsapp', 'telegram'];

/** What makes the bench's wamids unique per run (a random tag of the process). */
const RUN_TAG = Math.floor(Math.random() * 2 ** 32).toString(36);

/**
 * A wamid shaped like Meta's (`wamid.` and base64, ~60 characters), unique per run and `n`:
 * `HBgL` + the sender's number, then the run's tag and the sequence, padded.
 */
export function wamidOf(from: string, n: number): string {
  const tail = Buffer.from(`${RUN_TAG}:${n}`).toString('base64').replace(/=+$/, '');
  return `wamid.HBgL${from}${tail}`.padEnd(62, 'A');
}

/** A WhatsApp customer's number for a client number (E.164 digits, as `wa_id` / `from`). */
export const whatsappFrom = (clientNo: number): string => `4915${String(clientNo % 1e8).padStart(8, '0')}`;

/**
 * Meta's webhook for one customer text message (`whatsapp_business_account`, one entry, one
 * change of field "messages", the contact's profile name), about 500 bytes; built by the
 * sandbox's own builder (scripts/sandbox/whatsapp-webhooks.ts).
 */
export function whatsappBody(account: WhatsAppAccount, wamid: string, clientNo: number, text: string): string {
  const from = whatsappFrom(clientNo);
  return JSON.stringify(inboundTextPayload(account, { from, name: `Customer ${clientNo}`, text, wamid, timestamp: Math.floor(Date.now() / 1000) }));
}

/** `X-Hub-Signature-256` of a WhatsApp body (HMAC-SHA256 with the app secret). */
export const whatsappSignature = (appSecret: string, body: string | Buffer): string => hubSignature(appSecret, body);

/** A Telegram chat id (private chat: the user's id) for a client number. */
export const telegramChatId = (clientNo: number): number => 700_000_000 + (clientNo % 100_000_000);

/**
 * A Telegram Update for one private text message, as the Bot API posts it to a webhook
 * (`update_id`, the message with `from`, `chat`, `date`, `text`), about 300 bytes.
 */
export function telegramBody(updateId: number, clientNo: number, text: string, messageId: number): string {
  const id = telegramChatId(clientNo);
  return JSON.stringify({
    update_id: updateId,
    message: {
      message_id: messageId,
      from: { id, is_bot: false, first_name: 'Customer', last_name: String(clientNo), language_code: 'en' },
      chat: { id, first_name: 'Customer', last_name: String(clientNo), type: 'private' },
      date: Math.floor(Date.now() / 1000),
      text,
    },
  });
}

/** Telegram's webhook proof: the integration's secret in this header (no signature). */
export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

const NORMALISERS: Record<Exclude<BenchChannel, 'helpdesk'>, (payload: unknown, raw: Uint8Array, receivedAt: string) => Normalised> = {
  whatsapp: normaliseWhatsApp,
  telegram: normaliseTelegram,
};

/**
 * The envelope the gateway publishes for a webhook body of any channel (the channel's own
 * normaliser, so the worker sees exactly what it would); the body must hold one message.
 */
export function channelEnvelopeOf(channel: BenchChannel, integration: { id: number; companyId: number }, body: string): InboundEnvelope {
  if (channel === 'helpdesk') return envelopeOf(integration, body);
  const receivedAt = new Date().toISOString();
  const { items } = NORMALISERS[channel](JSON.parse(body), Buffer.from(body), receivedAt);
  const item = items[0];
  if (items.length !== 1 || item?.kind !== 'message') throw new Error(`not one ${channel} message: ${items.length} items`);
  return {
    v: 1, kind: 'message', idempotencyKey: item.idempotencyKey, companyId: integration.companyId, integrationId: integration.id,
    channel, receivedAt, message: item.message,
  };
}

function keyOf(env: InboundEnvelope): string {
  if (env.kind === 'message') return env.message.clientId;
  if (env.kind === 'operator') return env.clientId;
  if (env.kind === 'delivery') return env.delivery.clientId;
  return env.status.clientId ?? `request:${env.status.requestId}`;
}

/**
 * Publishes envelopes the way the gateway does (partition subject, Nats-Msg-Id), with up to
 * `window` publishes awaiting their ack at once. `make(i)` builds the i-th envelope.
 */
export async function publishEnvelopes(
  nc: NatsConnection,
  prefix: string,
  partitions: number,
  count: number,
  make: (i: number) => InboundEnvelope,
  onProgress?: (done: number) => void,
  window = 512,
): Promise<void> {
  const js = jetstream(nc);
  const names = streamNames(prefix);
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < count) {
      const env = make(next++);
      const subject = names.inboundSubject(partitionOf(env.integrationId, keyOf(env), partitions), env.companyId);
      await js.publish(subject, JSON.stringify(env), { msgID: `${env.integrationId}:${env.idempotencyKey}`, timeout: 30_000 });
      if (++done % 1000 === 0) onProgress?.(done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(window, count) }, lane));
  onProgress?.(done);
}
