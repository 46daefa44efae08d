import type { Test } from 'tap';
import { startWhatsAppSandbox, type WhatsAppSandbox, type WhatsAppSandboxOptions } from '../../scripts/sandbox/whatsapp.js';

export type WhatsAppStub = WhatsAppSandbox;
export type { WhatsAppFault, WhatsAppRecordedRequest, WhatsAppSentMessage } from '../../scripts/sandbox/whatsapp.js';

/**
 * The WhatsApp Cloud API sandbox that `npm run demo` ships (scripts/sandbox/whatsapp.ts), for
 * one test: the token the tests send, answers after 5–20 ms instead of Meta's 100–300 ms,
 * refused webhooks retried after 20 ms, closed at the test's end.
 */
export async function startWhatsAppStub(t: Test | null, options: WhatsAppSandboxOptions = {}): Promise<WhatsAppStub> {
  const sandbox = await startWhatsAppSandbox({ token: 'wa-test-token', phoneNumberId: '100200300400500', latencyMs: [5, 20], webhookRetryDelaysMs: [20, 20, 20], ...options });
  t?.teardown(sandbox.close);
  return sandbox;
}
