import t from 'tap';
import { launchBrowser } from '../support/browser.js';
import { startOpenAiStub } from '../support/openai-stub.js';
import { signUp, startTestService } from '../support/service.js';
import { startSite } from '../support/site.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration } from '../support/webchat.js';
import { bubbleTexts, DEFAULT_GREETING_BUBBLE } from '../support/widget.js';

/** The widget in headless Chromium showing a model reply as it is written (delta frames) and the agent typing. */
const svc = await startTestService(t, 'widget_stream', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const llm = await startOpenAiStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'widget-stream', options: { agentRunner: { cacheTtlMs: 0 } } });
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Streaming Shop');
const agent = await svc.api('POST', '/api/agents', {
  token: user.token,
  body: { name: 'Shop LLM', model: { provider: 'openai', name: 'gpt-4o', baseUrl: llm.baseUrl, apiKey: 'sk-widget' } },
});
let integrationId = 0;
const siteUrl = await startSite(t, svc.url, () => integrationId);
integrationId = (await createWebchatIntegration(svc.api, user.token, { agentId: agent.body.agent.id, allowedOrigins: [siteUrl] })).id;
const browser = await launchBrowser(t);

// Markup in the model's text stays text.
const REPLY = 'We are open from <b>nine</b> to six, Monday to Saturday, and on Sundays from ten to four. <img src=x onerror=window.pwned=1> See you soon!';
// The agent thinks for 0.8 s (typing), then writes for about 1.5 s.
llm.respond(() => ({ delayMs: 800, content: REPLY, chunkDelayMs: 150 }));

interface Snapshot {
  typing: boolean;
  /** The text of the reply being written, null when there is no such bubble. */
  draft: string | null;
  /** Agent messages shown whole. */
  replies: string[];
}

t.test('the widget shows the agent typing, the reply growing, then the reply once', async (t) => {
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const sent: any[] = [];
  const received: any[] = [];
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => sent.push(JSON.parse(String(f.payload))));
    ws.on('framereceived', (f) => received.push(JSON.parse(String(f.payload))));
  });
  await page.goto(siteUrl);
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => received.some((f) => f.type === 'welcome') || null, 10_000, 'welcomed');

  // What the visitor sees, at every change of the widget's DOM.
  await page.evaluate(() => {
    const root = document.querySelector('[data-mas-webchat]')!.shadowRoot!;
    const snaps: Snapshot[] = [];
    (window as unknown as { snaps: Snapshot[] }).snaps = snaps;
    new MutationObserver(() => {
      const draft = root.querySelector('li.streaming');
      snaps.push({
        typing: !(root.querySelector('.typing') as HTMLElement).hidden,
        draft: draft ? (draft.lastChild as Text).data : null,
        replies: Array.from(root.querySelectorAll('li.msg.agent:not(.streaming):not(.greeting)'), (li) => li.lastChild!.textContent!),
      });
    }).observe(root, { subtree: true, childList: true, characterData: true, attributes: true });
  });

  const input = page.getByLabel('Message');
  await input.pressSequentially('When are you open?', { delay: 40 });
  const typingSent = sent.filter((f) => f.type === 'typing');
  t.same(typingSent, [{ type: 'typing', role: 'customer' }], 'the visitor typing: one typing frame for 18 keys (throttled)');
  await input.press('Enter');

  const log = page.getByRole('log', { name: 'Conversation' });
  await page.getByText('Assistant is typing…').waitFor({ timeout: 10_000 });
  const midway = log.locator('li.streaming');
  await midway.waitFor({ timeout: 10_000 });
  await page.screenshot({ path: '/tmp/widget-streaming.png' });
  await log.locator('li.msg.agent:not(.streaming):not(.greeting)').waitFor({ timeout: 10_000 });
  await page.waitForTimeout(300);

  const snaps = await page.evaluate(() => (window as unknown as { snaps: Snapshot[] }).snaps);
  const drafts = [...new Set(snaps.map((s) => s.draft).filter((d): d is string => d !== null && d !== ''))];
  t.ok(drafts.length >= 5, `the reply grew in the page (${drafts.length} lengths)`);
  t.ok(drafts.every((d, i) => REPLY.startsWith(d) && (i === 0 || d.length > drafts[i - 1]!.length)), 'each step the start of the reply, longer than the one before');
  const firstDraft = snaps.findIndex((s) => s.draft);
  t.ok(snaps.slice(0, firstDraft).some((s) => s.typing && s.replies.length === 0), 'the typing indicator showed before the text');
  t.notOk(snaps[firstDraft]!.typing, 'and went away when the text began');
  t.ok(snaps.every((s) => s.replies.length === 0 || s.draft === null), 'the growing bubble is gone when the reply is shown');
  const last = snaps.at(-1)!;
  t.same(last.replies, [REPLY], 'the reply, whole, once');
  t.equal(last.draft, null);
  t.equal(last.typing, false);
  t.ok(received.filter((f) => f.type === 'delta').length >= 5, 'it came as delta frames');

  t.same(await bubbleTexts(log), [DEFAULT_GREETING_BUBBLE, 'YouWhen are you open?', `Assistant${REPLY}`]);
  t.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'no script ran');
  t.equal(await page.locator('[data-mas-webchat] img, [data-mas-webchat] b').count(), 0, 'no element was made from data');
  const [conv] = await sql(svc.orm, `select c.id from conversations c where c.integration_id = ?`, [integrationId]);
  const rows = await sql(svc.orm, `select role, text from conversation_messages where conversation_id = ? order by seq`, [conv.id]);
  t.same(rows, [{ role: 'customer', text: 'When are you open?' }, { role: 'agent', text: REPLY }], 'stored once, whole');

  // A reload shows the stored reply, not a bubble being written.
  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => (await log.locator('li').count()) === 3 || null, 10_000, 'history restored');
  t.equal(await log.locator('li.streaming').count(), 0);
  t.same(errors, [], 'no page errors');
});
