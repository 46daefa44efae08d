import t from 'tap';
import { launchBrowser } from '../support/browser.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { startSite } from '../support/site.js';
import { eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration } from '../support/webchat.js';
import { bubbleTexts, DEFAULT_GREETING_BUBBLE } from '../support/widget.js';

/**
 * The widget in headless Chromium when a streamed model reply is withheld (it promised what no
 * tool did, lib/agents/promises.ts): the visitor sees the reply being written, then the handoff
 * notice in its place; the promise stays on screen nowhere, also after a reload.
 */
const svc = await startTestService(t, 'widget_withheld', { env: { PARTITIONS: '2' } });
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'widget-withheld', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Promising Shop');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'Shop LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-withheld' } },
});
let integrationId = 0;
const siteUrl = await startSite(t, svc.url, () => integrationId);
integrationId = (await createWebchatIntegration(svc.api, user.token, { agentId: agent.body.agent.id, allowedOrigins: [siteUrl] })).id;
const browser = await launchBrowser(t);

const PROMISE = "Thanks for your patience! I'm transferring you to a colleague who will sort out your refund today.";
const NOTICE = 'A human colleague will take over shortly.';
llm.respond(() => ({ delayMs: 300, content: PROMISE, chunkDelayMs: 120 }));

t.test('a withheld reply: the preview gives way to the handoff notice', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const received: any[] = [];
  page.on('websocket', (ws) => ws.on('framereceived', (f) => received.push(JSON.parse(String(f.payload)))));
  await page.goto(siteUrl);
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => received.some((f) => f.type === 'welcome') || null, 10_000, 'welcomed');

  const input = page.getByLabel('Message');
  await input.fill('I want my money back for the broken tent');
  await input.press('Enter');
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.locator('li.streaming').waitFor({ timeout: 10_000 });
  const preview = await log.locator('li.streaming').evaluate((li) => li.lastChild?.textContent ?? '');
  t.ok(PROMISE.startsWith(preview), 'the reply showed as the model wrote it');

  await log.locator('li.msg.agent:not(.streaming):not(.greeting)').waitFor({ timeout: 10_000 });
  await page.getByText('A colleague will answer you here shortly.').waitFor({ timeout: 10_000 });
  await page.waitForTimeout(300);
  await page.screenshot({ path: '/tmp/widget-withheld.png' });

  t.same(await bubbleTexts(log), [DEFAULT_GREETING_BUBBLE, 'YouI want my money back for the broken tent', `Assistant${NOTICE}`], 'the notice where the preview was');
  t.equal(await log.locator('li.streaming').count(), 0, 'no preview bubble left');
  t.ok(await page.getByText('A colleague will answer you here shortly.').isVisible(), 'the status says a colleague will answer');
  t.notOk((await page.locator('[data-mas-webchat]').evaluate((host) => host.shadowRoot!.textContent)).includes('transferring'), 'the promise is nowhere in the widget');
  t.ok(received.some((f) => f.type === 'delta'), 'it had come as delta frames');

  const [conv] = await sql(svc.orm, 'select id, status from conversations where integration_id = ?', [integrationId]);
  t.equal(conv.status, 'paused', 'a human has it');

  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => (await log.locator('li').count()) === 3 || null, 10_000, 'history restored');
  t.same(await bubbleTexts(log), [DEFAULT_GREETING_BUBBLE, 'YouI want my money back for the broken tent', `Assistant${NOTICE}`], 'after a reload: the notice, never the promise');
  t.same(errors, [], 'no page errors');
});
