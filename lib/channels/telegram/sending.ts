import { outboundErrorIn } from '../../outbound-errors.js';
import type { SendFailure, SendingChannel, SendOptions, SendTarget } from '../types.js';
import { callBotApi, TelegramApiError } from './bot-api.js';

/**
 * The worker's half of the Telegram channel: `sendMessage {chat_id, text}` as the
 * integration's bot (`target.token`) at the service-wide Bot API base (TELEGRAM_API_URL).
 * Telegram keeps no history we can read back, so there is no reconcile: an uncertain send is
 * resumed after the parts whose requests had left (outbox.written_parts, from onWritten).
 */

/** The longest text of one message (Telegram counts UTF-16 code units; so do we). */
export const TELEGRAM_MAX_TEXT = 4096;
/** A part ends at a newline or space found in the last fifth of its window, else at the window's end. */
const SOFT_BREAK_SHARE = 0.2;

/** `text` as parts of at most `max` UTF-16 code units, never splitting a surrogate pair; at least one part. */
export function splitTelegramText(text: string, max = TELEGRAM_MAX_TEXT): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > max) {
    const floor = Math.floor(max * (1 - SOFT_BREAK_SHARE));
    const window = rest.slice(0, max);
    let cut = -1;
    const newline = window.lastIndexOf('\n');
    if (newline >= floor) cut = newline + 1;
    else {
      const space = window.lastIndexOf(' ');
      if (space >= floor) cut = space + 1;
    }
    if (cut === -1) {
      cut = max;
      const last = rest.charCodeAt(cut - 1);
      if (last >= 0xd800 && last <= 0xdbff) cut -= 1; // a high surrogate: its pair goes with the next part
    }
    parts.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  // A remainder of whitespace only would be refused ("text is empty"): it is not a part of its own.
  if (parts.length === 0 || rest.trim() !== '') parts.push(rest);
  return parts;
}

/** A chat id Telegram takes as an integer goes out as a JSON number (`@channel` names stay text). */
export function telegramChatId(clientId: string): number | string {
  if (!/^-?\d{1,16}$/.test(clientId)) return clientId;
  const n = Number(clientId);
  return Number.isSafeInteger(n) ? n : clientId;
}

/** Telegram's texts we know, in our words. */
const KNOWN_REFUSALS: [RegExp, string][] = [
  [/blocked by the user/i, 'the customer blocked the bot'],
  [/user is deactivated/i, "the customer's Telegram account is deactivated"],
  [/kicked/i, 'the bot was removed from the chat'],
  [/chat not found/i, 'the chat was not found'],
  [/message is too long/i, 'the message is too long'],
  [/text is empty/i, 'the message is empty'],
  [/can't initiate conversation/i, 'the customer has not started a chat with the bot'],
];
const knownRefusal = (description: string | null): string | null => KNOWN_REFUSALS.find(([re]) => description !== null && re.test(description))?.[1] ?? null;

const failure = (retry: SendFailure['retry'], code: string, message: string, retryAfterMs: number | null = null, effect: SendFailure['effect'] = null): SendFailure => ({
  retry,
  code,
  message,
  retryAfterMs,
  effect,
});

/** How a failed sendMessage is judged (SendingChannel.classify). */
export function classifyTelegramFailure(err: unknown): SendFailure {
  const out = outboundErrorIn(err);
  if (!out) return failure('unknown', 'internal', 'the message could not be sent (internal error); it may have been delivered');
  const tg = out instanceof TelegramApiError ? out : null;
  const errorCode = tg?.errorCode ?? out.status;
  if (errorCode !== null && out.code !== 'BAD_ANSWER') {
    const known = knownRefusal(tg?.description ?? null);
    if (errorCode === 429) {
      const wait = out.retryAfterMs;
      return failure('later', '429', `Telegram asked to slow down (429)${wait !== null ? `; retrying in ${Math.ceil(wait / 1000)} s` : ''}`, wait);
    }
    if (errorCode === 403) return failure('never', '403', `Telegram refused the message (403): ${known ?? 'the bot may not write to this chat'}`, null, 'blocked');
    if (errorCode >= 500) return failure('later', String(errorCode), `Telegram failed (${errorCode}); retrying later`, out.retryAfterMs);
    if (errorCode === 401 || errorCode === 404) return failure('never', String(errorCode), `Telegram refused the bot token (${errorCode}); check the integration's token`);
    return failure('never', String(errorCode), `Telegram refused the message (${errorCode})${known ? `: ${known}` : ''}`);
  }
  if (out.maybeDelivered || out.code === 'BAD_ANSWER') {
    if (out.code === 'TIMEOUT') return failure('unknown', 'timeout', 'Telegram did not answer in time; the message may have been delivered');
    if (out.code === 'BAD_ANSWER') return failure('unknown', 'bad_answer', 'Telegram answered something unreadable; the message may have been delivered');
    if (out.code === 'NETWORK') return failure('unknown', 'network', 'the connection to Telegram was cut; the message may have been delivered');
    return failure('unknown', out.code.toLowerCase(), "Telegram's answer could not be read; the message may have been delivered");
  }
  if (out.permanent) return failure('never', out.code.toLowerCase(), `the message cannot be sent to Telegram (${out.code.toLowerCase().replace(/_/g, ' ')}); check the Bot API address and token`);
  return failure('later', 'network', 'Telegram is unreachable; retrying later');
}

export interface TelegramSendingOptions {
  /** The Bot API base (TELEGRAM_API_URL, `https://api.telegram.org`). */
  apiUrl: string;
  timeoutMs?: number;
}

export function telegramSending(options: TelegramSendingOptions): SendingChannel {
  return {
    type: 'telegram',
    split: (text) => splitTelegramText(text),
    async send(target: SendTarget, text: string, sendOptions: SendOptions) {
      const result = await callBotApi<{ message_id?: unknown } | null>(
        options.apiUrl,
        target.token,
        'sendMessage',
        { chat_id: telegramChatId(target.clientId), text },
        { timeoutMs: options.timeoutMs, onWritten: sendOptions.onWritten },
      );
      const id = result !== null && typeof result === 'object' ? result.message_id : undefined;
      return { externalId: typeof id === 'number' || typeof id === 'string' ? String(id) : null };
    },
    classify: classifyTelegramFailure,
  };
}
