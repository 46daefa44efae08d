import { guardForUrl } from '../address-guard.js';
import type { Config } from '../config.js';
import { helpdeskSending } from './helpdesk/sending.js';
import { helpdeskWebhook } from './helpdesk/webhook.js';
import { telegramSending } from './telegram/sending.js';
import { telegramWebhook } from './telegram/webhook.js';
import type { SendingChannel, WebhookChannel, WebhookChannelType } from './types.js';
import { whatsappSending } from './whatsapp/sending.js';
import { whatsappWebhook } from './whatsapp/webhook.js';

/**
 * The channels, registered: what the message path knows them by (lib/channels/types.ts).
 * Adding a channel adds its folder and its lines here (its webhook half, its sending half,
 * its traits).
 */

/** The gateway's halves, by connector type: `POST|GET /api/webhook/<type>/:id` (gateway/webhook/ingress.ts). */
export const WEBHOOK_CHANNELS: Readonly<Record<WebhookChannelType, WebhookChannel>> = Object.freeze({
  helpdesk: helpdeskWebhook,
  whatsapp: whatsappWebhook,
  telegram: telegramWebhook,
});

/** Whether a connector type (a path segment, an integration's type) is a channel that takes webhooks. */
export function isWebhookChannel(type: string): type is WebhookChannelType {
  return Object.hasOwn(WEBHOOK_CHANNELS, type);
}

/**
 * What the message path plans and queries by before any sending half exists (a step's plan,
 * the outbox's SQL), as each channel's sending half has it (test/lib/channel-registry.test.ts
 * holds the two to agree):
 * - `transfersDialogs`: a handoff also moves the platform's dialog to the integration's
 *   operator group (the sending half's `transfer`: actors/plan.ts plans it);
 * - `reportsDelivery`: the platform reports the fate of every message it took, naming our
 *   outbox id (the sending half's `reportWithinMs`: actors/tables/outbox.ts looks for reports
 *   of these channels' uncertain sends).
 */
export interface ChannelTraits {
  transfersDialogs: boolean;
  reportsDelivery: boolean;
}

export const CHANNEL_TRAITS: Readonly<Record<WebhookChannelType, Readonly<ChannelTraits>>> = Object.freeze({
  helpdesk: { transfersDialogs: true, reportsDelivery: false },
  whatsapp: { transfersDialogs: false, reportsDelivery: true },
  telegram: { transfersDialogs: false, reportsDelivery: false },
});

/** Whether a conversation's channel (webchat included: it has no folder) transfers dialogs. */
export function transfersDialogs(channel: string): boolean {
  return isWebhookChannel(channel) && CHANNEL_TRAITS[channel].transfersDialogs;
}

/** The channels that report what they took (ChannelTraits.reportsDelivery). */
export const REPORTING_CHANNELS: readonly WebhookChannelType[] = Object.freeze(
  (Object.keys(CHANNEL_TRAITS) as WebhookChannelType[]).filter((type) => CHANNEL_TRAITS[type].reportsDelivery),
);

/** The sending halves of the channels (the worker's), built from the service's configuration. */
export type SendingChannels = Readonly<Record<WebhookChannelType, SendingChannel>>;

export interface SendingOptions {
  timeoutMs: number;
  historyPages: number;
}

export function sendingChannels(
  config: Pick<Config, 'allowPrivateUrls' | 'helpdeskGlobalUrl' | 'helpdeskEuropeUrl' | 'whatsappGraphUrl' | 'whatsappGraphVersion' | 'whatsappStatusWaitMs' | 'telegramApiUrl'>,
  options: SendingOptions,
): SendingChannels {
  return Object.freeze({
    helpdesk: helpdeskSending({ timeoutMs: options.timeoutMs, historyPages: options.historyPages, guardFor: (apiUrl) => guardForUrl(config, apiUrl) }),
    whatsapp: whatsappSending({ graphUrl: config.whatsappGraphUrl, graphVersion: config.whatsappGraphVersion, timeoutMs: options.timeoutMs, statusWithinMs: config.whatsappStatusWaitMs }),
    telegram: telegramSending({ apiUrl: config.telegramApiUrl, timeoutMs: options.timeoutMs }),
  });
}
