import type { Test } from 'tap';
import { startTelegramSandbox, type TelegramSandbox } from '../../scripts/sandbox/telegram.js';

export type { TelegramRecordedRequest, TelegramSentMessage, TelegramWebhookCall } from '../../scripts/sandbox/telegram.js';
export type TelegramStub = TelegramSandbox;

/** The bot token the tests configure (the shape of a real one: `<bot id>:<secret>`). */
export const TEST_BOT_TOKEN = '123456789:AAH-test_token-ZZZ';

/**
 * The Telegram Bot API sandbox that `npm run demo` ships (scripts/sandbox/telegram.ts), for
 * one test: the tests' bot token, answers 5–20 ms after each request instead of Telegram's
 * 100–300 ms (a test sets more with `setLatency`), closed at the test's end.
 */
export async function startTelegramStub(t: Test | null, options: { tokens?: string[]; latencyMs?: [number, number] } = {}): Promise<TelegramStub> {
  const sandbox = await startTelegramSandbox({ tokens: options.tokens ?? [TEST_BOT_TOKEN], latencyMs: options.latencyMs ?? [5, 20] });
  t?.teardown(sandbox.close);
  return sandbox;
}
