import { randomBytes, randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { startTelegramSandbox, type TelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { startWhatsAppSandbox, type WhatsAppSandbox } from '../../scripts/sandbox/whatsapp.js';
import type { WhatsAppAccount } from '../../scripts/sandbox/whatsapp-webhooks.js';
import { onCleanup } from './env.js';
import {
  BENCH_CHANNELS, inboxBody, signBody, telegramBody, TELEGRAM_SECRET_HEADER, wamidOf, whatsappBody, whatsappFrom, whatsappSignature, type BenchChannel,
} from './payloads.js';
import type { StandIn } from './stand-in.js';

/**
 * The direct channels in the bench (contract.md § Direct channels: WhatsApp Cloud API and
 * Telegram): their sandboxes (scripts/sandbox/) as the APIs the worker replies through, the
 * replies they received seen like the Chat2Desk stand-in's (count, arrival times), and the
 * webhook requests of each channel (path, unique body, proof header) the ingress and the drain
 * send.
 *
 * Which channels run: `BENCH_INGRESS_CHANNELS` / `BENCH_DRAIN_CHANNELS` (comma-separated of
 * helpdesk, whatsapp, telegram; default all three). The helpdesk always runs in the ingress
 * (the others' figures are ratios to it) and in the drain (its figures are the section's).
 */

/** The channels named in an environment variable (default all); the helpdesk always among them. */
export function channelsFromEnv(name: string): BenchChannel[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return [...BENCH_CHANNELS];
  const out = new Set<BenchChannel>(['helpdesk']);
  for (const c of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(BENCH_CHANNELS as readonly string[]).includes(c)) throw new Error(`${name}: unknown channel "${c}" (${BENCH_CHANNELS.join(', ')})`);
    out.add(c as BenchChannel);
  }
  return BENCH_CHANNELS.filter((c) => out.has(c));
}

/** The replies a stand-in or sandbox received, as the drain reads them. */
export interface ReplySink {
  count: () => number;
  /** Arrival times (performance.now() ms), in arrival order. */
  arrivals: () => Float64Array;
  /** Resolves when `n` replies have arrived, or with false after `stallMs` without progress. */
  waitForCount: (n: number, options: { stallMs: number; tick?: (count: number) => void }) => Promise<boolean>;
  reset: () => void;
}

export const standInSink = (s: StandIn): ReplySink => ({ count: s.count, arrivals: s.arrivals, waitForCount: s.waitForCount, reset: s.reset });

/** A sink over a sandbox's delivered messages (`sent`, each with its Date.now() `at`) and its recorded requests. */
function sandboxSink(sent: { at: number }[], requests: unknown[]): ReplySink {
  const count = () => sent.length;
  return {
    count,
    // The sandboxes stamp deliveries with Date.now() when the request's body arrived.
    arrivals: () => Float64Array.from(sent, (m) => m.at - performance.timeOrigin),
    waitForCount: async (target, { stallMs, tick }) => {
      let last = count();
      let lastChange = performance.now();
      while (count() < target) {
        await new Promise((r) => setTimeout(r, 100));
        tick?.(count());
        if (count() !== last) {
          last = count();
          lastChange = performance.now();
        } else if (performance.now() - lastChange > stallMs) return false;
      }
      tick?.(count());
      return true;
    },
    reset: () => {
      sent.length = 0;
      requests.length = 0;
    },
  };
}

/** The WhatsApp and Telegram sandboxes of one scenario, and the environment that points the roles at them. */
export interface ChannelSandboxes {
  whatsapp: WhatsAppSandbox;
  telegram: TelegramSandbox;
  /** The Telegram bot token the sandbox knows (the integration's `botToken`). */
  botToken: string;
  /** WHATSAPP_GRAPH_URL and TELEGRAM_API_URL for the gateway (setWebhook) and the workers (replies). */
  env: Record<string, string>;
  sinks: { whatsapp: ReplySink; telegram: ReplySink };
  close: () => Promise<void>;
}

/**
 * Both sandboxes in the bench process, answering after `latencyMs` ([min, max], default at
 * once: what the Chat2Desk stand-in does in the ingress and the drain).
 */
export async function startChannelSandboxes(latencyMs: [number, number] = [0, 0]): Promise<ChannelSandboxes> {
  const botToken = `${randomInt(100_000_000, 999_999_999)}:AAH-bench_${randomBytes(12).toString('hex')}`;
  const whatsapp = await startWhatsAppSandbox({ latencyMs, token: `EAAbench${randomBytes(24).toString('hex')}` });
  const telegram = await startTelegramSandbox({ tokens: [botToken], latencyMs });
  const dispose = onCleanup('channel sandboxes', async () => {
    await Promise.all([whatsapp.close(), telegram.close()]);
  });
  return {
    whatsapp,
    telegram,
    botToken,
    env: { WHATSAPP_GRAPH_URL: whatsapp.url, TELEGRAM_API_URL: telegram.url },
    sinks: { whatsapp: sandboxSink(whatsapp.sent, whatsapp.requests), telegram: sandboxSink(telegram.sent, telegram.requests) },
    close: dispose,
  };
}

/** One channel's webhooks to one integration: the path, the i-th unique body and its proof header. */
export interface ChannelWebhooks {
  channel: BenchChannel;
  integrationId: number;
  path: string;
  /** The i-th body (unique message id) from customer `clientNo`, asking `text`. */
  body: (i: number, clientNo: number | string, text: string) => string;
  headers: (body: string) => Record<string, string>;
}

/** Helpdesk (Chat2Desk `inbox`, signed X-Webhook-Signature); `idPrefix` makes the message ids unique. */
export function helpdeskWebhooks(integrationId: number, secret: string, idPrefix: string): ChannelWebhooks {
  return {
    channel: 'helpdesk',
    integrationId,
    path: `/api/webhook/helpdesk/${integrationId}`,
    body: (i, clientNo, text) => inboxBody(`${idPrefix}-${i}`, clientNo, text, i),
    headers: (body) => ({ 'content-type': 'application/json', 'x-webhook-signature': signBody(secret, body) }),
  };
}

/** A customer's number for the direct channels' senders, from the helpdesk's client id (a number, or digits in a string). */
const clientNumber = (clientNo: number | string) => (typeof clientNo === 'number' ? clientNo : Number(String(clientNo).replace(/\D/g, '')) || 0);

/** WhatsApp Cloud API (Meta's body, X-Hub-Signature-256 with the app secret); a unique wamid per `i`. */
export function whatsappWebhooks(integrationId: number, appSecret: string, account: WhatsAppAccount): ChannelWebhooks {
  return {
    channel: 'whatsapp',
    integrationId,
    path: `/api/webhook/whatsapp/${integrationId}`,
    body: (i, clientNo, text) => {
      const n = clientNumber(clientNo);
      return whatsappBody(account, wamidOf(whatsappFrom(n), i), n, text);
    },
    headers: (body) => ({ 'content-type': 'application/json', 'x-hub-signature-256': whatsappSignature(appSecret, body), 'user-agent': 'facebookexternalua' }),
  };
}

/** Telegram (an Update, the secret in X-Telegram-Bot-Api-Secret-Token); `update_id` = `firstUpdateId` + i. */
export function telegramWebhooks(integrationId: number, secret: string, firstUpdateId = 100_000_000): ChannelWebhooks {
  const headers = { 'content-type': 'application/json', [TELEGRAM_SECRET_HEADER]: secret };
  return {
    channel: 'telegram',
    integrationId,
    path: `/api/webhook/telegram/${integrationId}`,
    body: (i, clientNo, text) => telegramBody(firstUpdateId + i, clientNumber(clientNo), text, i + 1),
    headers: () => headers,
  };
}
