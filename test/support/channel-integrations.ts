import { randomBytes } from 'node:crypto';
import type { Config } from '../../lib/config.js';
import type { Orm } from '../../lib/db.js';
import { SecretBox } from '../../lib/secrets.js';
import { hubSignature } from '../../scripts/sandbox/whatsapp-webhooks.js';
import type { ApiClient, ApiResponse } from './service.js';
import { sql } from './worker.js';

/**
 * Direct-channel integrations (WhatsApp Cloud API, Telegram) for the tests, written straight
 * into the database as the API's create route would (secrets sealed with the service's
 * SecretBox), so a test does not depend on that route; and signed inbound webhooks.
 */

export interface ChannelIntegration {
  id: number;
  companyId: number;
  type: 'whatsapp' | 'telegram';
  /** WhatsApp: the app secret (X-Hub-Signature-256 key); Telegram: the webhook's secret_token. */
  webhookSecret: string;
  /** WhatsApp: the access token; Telegram: the bot token. */
  apiToken: string;
  phoneNumberId: string | null;
}

export interface ChannelIntegrationInput {
  companyId: number;
  agentId: number;
  type: 'whatsapp' | 'telegram';
  /** The access token / bot token the worker sends with. */
  apiToken: string;
  /** WhatsApp: the phone number id sends go to. */
  phoneNumberId?: string;
  /** The webhook secret (random unless given: `wa-app-…` / a Telegram-valid secret_token). */
  webhookSecret?: string;
  name?: string;
}

/** A Telegram `secret_token` (1–256 of A-Z a-z 0-9 _ -). */
export const telegramSecret = (): string => `tg_${randomBytes(18).toString('hex')}`;

export async function insertChannelIntegration(svc: { orm: Orm; config: Config }, input: ChannelIntegrationInput): Promise<ChannelIntegration> {
  const box = new SecretBox(svc.config.secretsKeys);
  const webhookSecret = input.webhookSecret ?? (input.type === 'whatsapp' ? `wa-app-${randomBytes(16).toString('hex')}` : telegramSecret());
  const verifyToken = input.type === 'whatsapp' ? `vt-${randomBytes(8).toString('hex')}` : null;
  const [row] = await sql<{ id: number }>(
    svc.orm,
    `insert into integrations (company_id, type, name, agent_id, active, webhook_secret_sealed, phone_number_id, verify_token, api_token_sealed)
     values (?, ?, ?, ?, true, ?, ?, ?, ?) returning id`,
    [
      input.companyId,
      input.type,
      input.name ?? `${input.type} ${randomBytes(3).toString('hex')}`,
      input.agentId,
      box.seal(webhookSecret),
      input.phoneNumberId ?? null,
      verifyToken,
      box.seal(input.apiToken),
    ],
  );
  return { id: row!.id, companyId: input.companyId, type: input.type, webhookSecret, apiToken: input.apiToken, phoneNumberId: input.phoneNumberId ?? null };
}

/** The gateway's webhook address of an integration. */
export const webhookUrl = (gatewayUrl: string, integration: { id: number; type: string }): string => `${gatewayUrl}/api/webhook/${integration.type}/${integration.id}`;

// ---------------------------------------------------------------- WhatsApp

let wamidNo = 0;
/** A fresh, readable wamid (unique in the test process). */
export const testWamid = (): string => `wamid.T${Date.now().toString(36)}${(++wamidNo).toString(36)}${randomBytes(4).toString('hex')}`;

export interface WaInboundMessage {
  from: string;
  /** A text message's body; omitted with `type` for another type (image, audio, ...). */
  text?: string;
  type?: string;
  wamid?: string;
  /** Unix seconds. */
  timestamp?: number | string;
}

/** A WhatsApp webhook body of customer messages (one change, all messages in it), with the senders' profile names. */
export function waMessagesBody(phoneNumberId: string, messages: WaInboundMessage[], names: Record<string, string> = {}): Record<string, unknown> {
  const senders = [...new Set(messages.map((m) => m.from))];
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '102290129340398',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '15550001234', phone_number_id: phoneNumberId },
              contacts: senders.map((s) => ({ profile: { name: names[s] ?? `Customer ${s}` }, wa_id: s })),
              messages: messages.map((m) => {
                const type = m.type ?? 'text';
                const base = { from: m.from, id: m.wamid ?? testWamid(), timestamp: String(m.timestamp ?? Math.floor(Date.now() / 1000)), type };
                if (type === 'text') return { ...base, text: { body: m.text ?? '' } };
                if (type === 'image') return { ...base, image: { caption: m.text, mime_type: 'image/jpeg', sha256: 'a'.repeat(44), id: '1479537139650973' } };
                return { ...base, [type]: {} };
              }),
            },
          },
        ],
      },
    ],
  };
}

/** Posts a WhatsApp webhook body signed with the integration's app secret (X-Hub-Signature-256), as Meta does. */
export function postWhatsApp(api: ApiClient, integration: { id: number; webhookSecret: string }, payload: unknown): Promise<ApiResponse> {
  const raw = typeof payload === 'string' ? payload : JSON.stringify(payload);
  return api('POST', `/api/webhook/whatsapp/${integration.id}`, {
    rawBody: raw,
    headers: { 'content-type': 'application/json', 'x-hub-signature-256': hubSignature(integration.webhookSecret, raw) },
  });
}

/** Posts one customer's text (a fresh wamid unless given); throws unless the gateway answers 200. Returns the wamid. */
export async function waCustomerWrites(
  api: ApiClient,
  integration: { id: number; webhookSecret: string; phoneNumberId: string | null },
  from: string,
  text: string,
  extra: { name?: string; wamid?: string; timestamp?: number } = {},
): Promise<string> {
  const wamid = extra.wamid ?? testWamid();
  const res = await postWhatsApp(api, integration, waMessagesBody(integration.phoneNumberId ?? '0', [{ from, text, wamid, timestamp: extra.timestamp }], extra.name ? { [from]: extra.name } : {}));
  if (res.status !== 200) throw new Error(`whatsapp webhook: ${res.status} ${JSON.stringify(res.body)}`);
  return wamid;
}

// ---------------------------------------------------------------- Telegram

let updateNo = 700_000_000 + Math.floor(Math.random() * 1_000_000);
/** A fresh update_id (increasing, unique in the test process). */
export const nextUpdateId = (): number => ++updateNo;

/** Posts a Telegram update with the integration's secret in X-Telegram-Bot-Api-Secret-Token, as Telegram does. */
export function postTelegram(api: ApiClient, integration: { id: number; webhookSecret: string }, update: unknown): Promise<ApiResponse> {
  return api('POST', `/api/webhook/telegram/${integration.id}`, {
    rawBody: JSON.stringify(update),
    headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': integration.webhookSecret },
  });
}

/** A private-chat text update as Telegram posts it. */
export function telegramTextUpdate(f: { updateId?: number; chatId: number; text: string; firstName?: string; lastName?: string; username?: string; chatType?: 'private' | 'group' | 'supergroup' | 'channel'; messageId?: number }): {
  update_id: number;
  message: Record<string, unknown>;
} {
  const type = f.chatType ?? 'private';
  const person = JSON.parse(JSON.stringify({ first_name: f.firstName, last_name: f.lastName, username: f.username })) as Record<string, string>;
  const updateId = f.updateId ?? nextUpdateId();
  const chat = type === 'private' ? { id: f.chatId, type, ...person } : { id: f.chatId, type, title: 'A group' };
  const from = type === 'channel' ? undefined : { id: type === 'private' ? f.chatId : 5_000_000 + (updateId % 1000), is_bot: false, ...person, language_code: 'en' };
  return { update_id: updateId, message: JSON.parse(JSON.stringify({ message_id: f.messageId ?? updateId % 1_000_000, from, chat, date: Math.floor(Date.now() / 1000), text: f.text })) };
}

/** Posts one customer's private text; throws unless the gateway answers 200. Returns the update_id. */
export async function tgCustomerWrites(api: ApiClient, integration: { id: number; webhookSecret: string }, chatId: number, text: string, extra: { firstName?: string; lastName?: string; updateId?: number } = {}): Promise<number> {
  const update = telegramTextUpdate({ chatId, text, firstName: extra.firstName ?? 'Cust', lastName: extra.lastName, updateId: extra.updateId });
  const res = await postTelegram(api, integration, update);
  if (res.status !== 200) throw new Error(`telegram webhook: ${res.status} ${JSON.stringify(res.body)}`);
  return update.update_id;
}
