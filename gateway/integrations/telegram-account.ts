import type { Config } from '../../lib/config.js';
import { setWebhook, TelegramApiError } from '../../lib/channels/telegram/bot-api.js';
import { OutboundError } from '../../lib/outbound-errors.js';

/**
 * What the integration routes ask the Telegram Bot API on the company's behalf: the webhook
 * registration (`setWebhook {url, secret_token, allowed_updates:["message"]}`, contract.md
 * § Direct channels). Failures are told in our words (Telegram's error code, or which failure),
 * never with Telegram's own text nor the request's URL (it holds the bot token).
 */

/** How long one registration may take (all of it). */
export const TELEGRAM_REGISTER_TIMEOUT_MS = 10_000;

/** Registers our webhook URL with the secret Telegram must send in X-Telegram-Bot-Api-Secret-Token. */
export async function registerTelegramWebhook(config: Config, botToken: string, url: string, secret: string): Promise<void> {
  await setWebhook(config.telegramApiUrl, botToken, { url, secretToken: secret }, { timeoutMs: TELEGRAM_REGISTER_TIMEOUT_MS });
}

/** Why a registration failed, for the user: "Telegram refused the bot token (error 401)", "Telegram could not be reached". */
export function telegramFailureText(err: unknown): string {
  // Telegram's own `description` is not repeated (somebody else's text does not reach a tenant).
  if (err instanceof TelegramApiError && err.errorCode !== null) {
    if (err.errorCode === 401 || err.errorCode === 404) return `Telegram refused the bot token (error ${err.errorCode})`;
    if (err.errorCode >= 500) return `Telegram answered with error ${err.errorCode}`;
    return `Telegram refused the request (error ${err.errorCode})`;
  }
  if (err instanceof OutboundError) {
    if (err.code === 'TIMEOUT') return `Telegram did not answer within ${TELEGRAM_REGISTER_TIMEOUT_MS / 1000} s`;
    if (err.code === 'HTTP_STATUS' && err.status !== null) return `Telegram answered HTTP ${err.status}`;
    if (err.code === 'BAD_ANSWER') return 'Telegram answered something else than a Bot API answer';
    if (err.code === 'BAD_URL') return 'the bot token cannot be sent';
  }
  return 'Telegram could not be reached';
}
