import { guardForUrl } from '../address-guard.js';
import type { Config } from '../config.js';
import { helpdeskSending, type HelpdeskSending } from './helpdesk/sending.js';
import { helpdeskWebhook } from './helpdesk/webhook.js';
import { telegramSending } from './telegram/sending.js';
import { telegramWebhook } from './telegram/webhook.js';
import type { SendingChannel, WebhookChannel, WebhookChannelType } from './types.js';
import { whatsappSending } from './whatsapp/sending.js';
import { whatsappWebhook } from './whatsapp/webhook.js';

/**
 * The channels, registered: what the message path knows them by (lib/channels/types.ts).
 * Adding a channel adds its folder and its two lines here (its webhook half, its sending half).
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

/** The sending halves of the channels (the worker's), built from the service's configuration. */
export type SendingChannels = Readonly<Record<Exclude<WebhookChannelType, 'helpdesk'>, SendingChannel>> & { readonly helpdesk: HelpdeskSending };

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
