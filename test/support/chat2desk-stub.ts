import type { Test } from 'tap';
import { startChat2DeskSandbox, type Chat2DeskSandbox } from '../../scripts/sandbox/chat2desk.js';

export type { RecordedRequest } from '../../scripts/sandbox/chat2desk.js';
export type Chat2DeskStub = Chat2DeskSandbox;

/**
 * The Chat2Desk sandbox that `npm run demo` ships (scripts/sandbox/chat2desk.ts), for one test:
 * the token the tests send, refused webhooks retried after 20 ms instead of Chat2Desk's 10 s,
 * 5 min and 2 h, and closed at the test's end.
 */
export async function startChat2DeskStub(t: Test | null, token = 'c2d-test-token'): Promise<Chat2DeskStub> {
  const sandbox = await startChat2DeskSandbox({ token, webhookRetryDelaysMs: [20, 20, 20] });
  t?.teardown(sandbox.close);
  return sandbox;
}
