import { chromium } from 'playwright-core';
import t from 'tap';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService } from '../support/service.js';
import { startSite } from '../support/site.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, sql, startTestWorker, waitForPartitions } from '../support/worker.js';
import { createWebchatIntegration, startWebchatGateway } from '../support/webchat.js';
import { bubbleTexts, DEFAULT_GREETING_BUBBLE as GREETING } from '../support/widget.js';

/** The embeddable widget in headless Chromium, on a page of another origin than the gateway. */
const svc = await startTestService(t, 'widget', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const worker = await startTestWorker(t, svc, { workerId: 'widget-1' });
await waitForPartitions([worker], 2);
const user = await signUp(svc.api, 'Shop Co');

// The customer's site: a page that embeds the script.
let integrationId = 0;
const siteUrl = await startSite(t, svc.url, () => integrationId);
const model = await startRepeatingModel(t);
integrationId = (await createWebchatIntegration(svc.api, user.token, { allowedOrigins: [siteUrl], agentId: await model.createAgent(svc.api, user.token) })).id;

const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-quic'],
});
t.teardown(() => browser.close());

t.test('open the launcher, write, see the reply; a reload restores the history', async (t) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(siteUrl);

  const launcher = page.getByRole('button', { name: 'Open chat' });
  await launcher.click();
  const dialog = page.getByRole('dialog', { name: 'Chat with us' });
  await dialog.waitFor();
  t.equal(await page.getByRole('button', { name: 'Hide chat' }).getAttribute('aria-expanded'), 'true');

  const input = page.getByLabel('Message');
  await input.fill('Do you ship to Norway?');
  await page.getByRole('button', { name: 'Send' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.getByText('echo: Do you ship to Norway?').waitFor({ timeout: 10_000 });

  // Data is text, never markup.
  await input.fill('<img src=x onerror="window.pwned=1"><b>bold</b>');
  await input.press('Enter');
  await log.getByText('echo: <img src=x onerror="window.pwned=1"><b>bold</b>').waitFor({ timeout: 10_000 });
  t.equal(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned), undefined, 'no script ran');
  t.equal(await page.locator('[data-mas-webchat] img, [data-mas-webchat] b').count(), 0, 'no element was made from data');

  const stored = await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('mas-webchat:'))?.[1] ?? null);
  t.match(JSON.parse(stored!), { visitorToken: String, conversationId: Number }, 'the visitor token is kept in localStorage');
  await page.screenshot({ path: '/tmp/widget-conversation.png' });

  const texts = () => bubbleTexts(log);
  const before = await texts();
  t.equal(before.length, 5);
  t.equal(before[0], GREETING, 'the greeting first');

  // Reload: the same visitor, the history replayed from the server.
  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => (await texts()).length === 5 || null, 10_000, 'history restored');
  t.same(await texts(), before, 'the same messages, in the same order, once');

  // While the page is open, an operator writes: it arrives live.
  const { conversationId } = JSON.parse(stored!);
  const [conv] = await sql(svc.orm, 'select client_id from conversations where id = ?', [conversationId]);
  t.ok(conv, 'the session exists');
  const res = await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: user.token, body: { text: 'Hi, Maria here from the shop.' } });
  t.equal(res.status, 200);
  await log.getByText('Hi, Maria here from the shop.').waitFor({ timeout: 10_000 });
  t.match((await texts()).at(-1), /^Support/, 'an operator without a display name');
  await page.screenshot({ path: '/tmp/widget-after-reload.png' });

  // Escape closes the panel and gives focus back to the launcher.
  await input.focus();
  await page.keyboard.press('Escape');
  t.equal(await dialog.isVisible(), false);
  t.same(errors, [], 'no page errors');
  await context.close();
});

t.test('the gateway restarts: the widget reconnects and resumes without duplicates', async (t) => {
  const first = await startWebchatGateway(t, svc);
  const port = first.gateway.port;
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${siteUrl}/?gw=${encodeURIComponent(first.url)}`);
  await page.getByRole('button', { name: 'Open chat' }).click();
  await page.getByLabel('Message').fill('first');
  await page.getByRole('button', { name: 'Send' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  await log.getByText('echo: first').waitFor({ timeout: 10_000 });
  const { conversationId } = JSON.parse((await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('mas-webchat:'))?.[1] ?? 'null'))!);

  // The widget's gateway goes away; an operator writes meanwhile (on another gateway); it comes back.
  await first.close();
  const res = await svc.api('POST', `/api/conversations/${conversationId}/messages`, { token: user.token, body: { text: 'written while offline' } });
  t.equal(res.status, 200);
  await page.getByText('Reconnecting…').or(page.getByText('Connecting…')).first().waitFor({ timeout: 5_000 });
  await startWebchatGateway(t, svc, {}, port);
  await log.getByText('written while offline').waitFor({ timeout: 20_000 });
  const texts = await bubbleTexts(log);
  t.equal(texts.filter((x) => x.endsWith('written while offline')).length, 1, 'once');
  t.equal(texts.length, 4);
  t.equal(texts.filter((x) => x === GREETING).length, 1, 'one greeting');
  await context.close();
});

const storedVisitor = async (page: import('playwright-core').Page) =>
  JSON.parse((await page.evaluate(() => Object.entries(localStorage).find(([k]) => k.startsWith('mas-webchat:'))?.[1] ?? 'null'))!) as { visitorToken: string; conversationId: number | null } | null;

t.test('a closed conversation: the next message opens a new one below a "New conversation" line', async (t) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(siteUrl);
  await page.getByRole('button', { name: 'Open chat' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  const texts = () => bubbleTexts(log);
  const input = page.getByLabel('Message');

  await eventually(async () => (await storedVisitor(page))?.visitorToken ?? null, 10_000, 'welcomed');
  t.equal((await storedVisitor(page))!.conversationId, null, 'no session before the first message');
  await input.fill('first question');
  await input.press('Enter');
  await log.getByText('echo: first question').waitFor({ timeout: 10_000 });
  const first = (await storedVisitor(page))!.conversationId;
  t.type(first, 'number', 'the session the first message opened');

  t.equal((await svc.api('POST', `/api/conversations/${first}/close`, { token: user.token })).status, 200);
  await page.getByText('This conversation was closed. Write to start a new one.').waitFor({ timeout: 10_000 });
  await input.fill('second question');
  await input.press('Enter');
  await log.getByText('echo: second question').waitFor({ timeout: 10_000 });
  t.same(await texts(), [GREETING, 'Youfirst question', 'Assistantecho: first question', 'New conversation', 'Yousecond question', 'Assistantecho: second question'], 'the new session below the line, in order');
  const second = (await storedVisitor(page))!.conversationId;
  t.not(second, first, 'the new session is remembered');
  const stored = await sql(svc.orm, `select conversation_id, external_id from conversation_messages where role = 'customer' and conversation_id in (?, ?) order by id`, [first, second]);
  t.same(stored.map((r) => r.conversation_id), [first, second], 'each message stored once, in its own session');

  await page.reload();
  await page.getByRole('button', { name: 'Open chat' }).click();
  await eventually(async () => (await texts()).length === 3 || null, 10_000, 'the open session replayed');
  t.same(await texts(), [GREETING, 'Yousecond question', 'Assistantecho: second question']);
  t.same(errors, [], 'no page errors');
  await context.close();
});

t.test('over the message rate: the message waits and goes once the rate allows', async (t) => {
  let offset = 0;
  const gw = await startWebchatGateway(t, svc, {}, 0, { webchat: { messagesPerMinutePerVisitor: 1 } }, () => Date.now() + offset);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${siteUrl}/?gw=${encodeURIComponent(gw.url)}`);
  await page.getByRole('button', { name: 'Open chat' }).click();
  const log = page.getByRole('log', { name: 'Conversation' });
  const input = page.getByLabel('Message');
  await input.fill('one');
  await input.press('Enter');
  await log.getByText('echo: one').waitFor({ timeout: 10_000 });
  await input.fill('two');
  await input.press('Enter');
  await page.getByText(/writing faster than we can take/).waitFor({ timeout: 5_000 });
  t.equal(await log.locator('li.sending').count(), 1, 'the refused message waits, not failed');
  offset += 60_000;
  await log.getByText('echo: two').waitFor({ timeout: 15_000 });
  t.equal(await log.locator('li.sending, li.failed').count(), 0);
  t.equal(await page.getByText(/writing faster than we can take/).count(), 0, 'the notice is gone');
  await context.close();
});
