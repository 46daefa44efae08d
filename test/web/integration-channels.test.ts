// The dashboard's WhatsApp and Telegram forms: created in Chromium, the write-only secrets
// never shown back (password inputs saying a value is stored), WhatsApp's webhook URL and
// verify token copyable with where to paste them, Telegram's registration state and its
// "Register webhook" button, the health badge for both. Then a WhatsApp conversation as a
// teammate sees it: how far each reply got (✓ sent, ✓✓ delivered, ✓✓ read) as Meta's status
// webhooks arrive, and why one was not delivered.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startTelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { insertChannelIntegration, waCustomerWrites, webhookUrl } from '../support/channel-integrations.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { startWhatsAppStub } from '../support/whatsapp-stub.js';
import { listedConversationId, startTestWorker } from '../support/worker.js';

const BOT = `${3_000_000 + Math.floor(Math.random() * 1e6)}:${randomBytes(24).toString('base64url')}`;
const tg = await startTelegramSandbox({ tokens: [BOT], latencyMs: [0, 5] });
t.teardown(() => tg.close());
const graph = await startWhatsAppStub(t);
const svc = await startTestService(t, 'web_integration_channels', { env: { TELEGRAM_API_URL: tg.url, WHATSAPP_GRAPH_URL: graph.url } });
const { api } = svc;
const browser = await launchBrowser(t);
const ACCESS_TOKEN = `EAAG${randomBytes(30).toString('base64url')}`;
const APP_SECRET = randomBytes(16).toString('hex');

t.test('WhatsApp and Telegram: create, see what to paste where, edit, register', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Channels Web Co');
  await api('POST', '/api/agents', { token, body: { name: 'Shop bot' } });
  await goTo(page, 'Integrations');
  const create = page.getByRole('form', { name: 'New integration' });

  await create.getByLabel('Type').selectOption('whatsapp');
  t.equal(await create.getByLabel('API token').isVisible(), false, 'no helpdesk fields for WhatsApp');
  t.equal(await create.getByLabel('Bot token').isVisible(), false, 'no Telegram fields for WhatsApp');
  t.equal(await create.getByLabel('Access token').getAttribute('type'), 'password');
  t.equal(await create.getByLabel('App secret').getAttribute('type'), 'password');
  await create.getByLabel('Name', { exact: true }).fill('WA shop');
  await create.getByLabel('Agent', { exact: true }).selectOption({ label: 'Shop bot' });
  await create.getByLabel('Phone number ID').fill('not digits');
  await create.getByLabel('Access token').fill(ACCESS_TOKEN);
  await create.getByLabel('App secret').fill(APP_SECRET);
  await create.getByRole('button', { name: 'Create integration' }).click();
  await create.getByLabel('Phone number ID').and(page.locator('[aria-invalid="true"]')).waitFor();
  t.equal(await create.getByLabel('Access token').inputValue(), '', 'a refused create does not keep the secret in the page');
  await create.getByLabel('Phone number ID').fill('106540352242922');
  await create.getByLabel('Access token').fill(ACCESS_TOKEN);
  await create.getByLabel('App secret').fill(APP_SECRET);
  await create.getByRole('button', { name: 'Create integration' }).click();
  const wa = page.getByRole('article', { name: 'WA shop' });
  await wa.waitFor();
  const [created] = (await api('GET', '/api/integrations', { token })).body.integrations;
  t.match(created, { type: 'whatsapp', phoneNumberId: '106540352242922', hasApiToken: true, hasAppSecret: true });
  t.equal(await wa.getByLabel('Verify token').inputValue(), created.verifyToken, 'the verify token, copyable');
  t.equal(await wa.getByLabel('Webhook URL').inputValue(), created.webhookUrl);
  t.ok(await wa.getByRole('button', { name: 'Copy verify token' }).isVisible());
  t.match(await wa.getByText('Meta App Dashboard').first().textContent(), /Callback URL.*Verify token/);
  await wa.getByText('Webhook pending').waitFor();
  t.equal(await wa.getByRole('button', { name: 'Rotate secret' }).count(), 0, "WhatsApp's secret is Meta's: nothing to rotate");
  t.equal(await wa.getByRole('button', { name: /Register webhook/ }).count(), 0, 'set in Meta’s dashboard');

  await wa.getByRole('button', { name: 'Edit settings' }).click();
  const settings = wa.getByRole('form', { name: 'Settings of WA shop' });
  t.equal(await settings.getByLabel('Access token').inputValue(), '', 'write-only: empty');
  t.equal(await settings.getByLabel('Access token').getAttribute('placeholder'), 'stored — enter a new one to replace');
  t.equal(await settings.getByLabel('App secret').getAttribute('placeholder'), 'stored — enter a new one to replace');
  await settings.getByLabel('Phone number ID').fill('2222');
  await settings.getByRole('button', { name: 'Save settings' }).click();
  await wa.getByText('Settings saved.').waitFor();
  t.match((await api('GET', `/api/integrations/${created.id}`, { token })).body.integration, { phoneNumberId: '2222', hasApiToken: true, hasAppSecret: true });

  await create.getByLabel('Type').selectOption('telegram');
  t.equal(await create.getByLabel('Bot token').getAttribute('type'), 'password');
  await create.getByLabel('Name', { exact: true }).fill('TG bot');
  await create.getByLabel('Agent', { exact: true }).selectOption({ label: 'Shop bot' });
  await create.getByLabel('Bot token').fill(BOT);
  await create.getByRole('button', { name: 'Create integration' }).click();
  const bot = page.getByRole('article', { name: 'TG bot' });
  await bot.getByText('The webhook is registered at Telegram.').waitFor();
  await bot.getByText('Webhook OK').waitFor();
  t.equal(tg.webhooks.length, 1, 'setWebhook called by the create');
  await bot.getByRole('button', { name: 'Re-register webhook' }).click();
  await bot.getByText('Webhook registered at Telegram.').waitFor();
  t.equal(tg.webhooks.length, 2);
  await bot.getByRole('button', { name: 'Edit settings' }).click();
  t.equal(await bot.getByRole('form', { name: 'Settings of TG bot' }).getByLabel('Bot token').getAttribute('placeholder'), 'stored — enter a new one to replace');

  const html = await page.content();
  for (const secret of [ACCESS_TOKEN, APP_SECRET, BOT]) t.notOk(html.includes(secret), 'no write-only secret in the page');
  await shot(page, 'integration-channels');
  t.same(problems, [], 'no console errors');
});

t.test('a WhatsApp conversation: each reply shows how far it got as the statuses arrive, and why one was not delivered', async (t) => {
  await startTestWorker(t, svc);
  const model = await startRepeatingModel(t);
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Ticks Co');
  const integration = await insertChannelIntegration(svc, { companyId, agentId: await model.createAgent(api, token), type: 'whatsapp', apiToken: graph.token, phoneNumberId: graph.account.phoneNumberId });
  // Meta's statuses a while apart, as a phone reports them: the page must follow each one.
  graph.connect(webhookUrl(svc.url, integration), integration.webhookSecret, { read: true, statusDelayMs: 700 });
  const wa = `1555${String(Date.now()).slice(-7)}`;
  await waCustomerWrites(api, integration, wa, 'Where is my parcel?', { name: 'Nora Diaz' });
  const id = await listedConversationId(api, token, wa);
  await page.goto(`${svc.url}/#/conversations/${id}`);
  const first = page.locator('.msg.from-agent').filter({ hasText: 'echo: Where is my parcel?' });
  await first.locator('[data-delivery-status="read"]').waitFor({ timeout: 15_000 });

  // With the conversation open, the next reply's mark follows Meta's statuses one by one.
  const marksSeen: string[] = [];
  await page.exposeFunction('markSeen', (m: string) => marksSeen.push(m));
  await page.evaluate(() => {
    const log = document.querySelector('[role="log"]')!;
    new MutationObserver(() => {
      for (const el of Array.from(log.querySelectorAll<HTMLElement>('.msg.from-agent .msg-delivery'))) {
        const text = (el.textContent ?? '').replace(/\s+/g, ' ').trim();
        if (el.closest('.msg')?.textContent?.includes('echo: Are you there?')) (window as any).markSeen(text);
      }
    }).observe(log, { subtree: true, childList: true, characterData: true });
  });
  await waCustomerWrites(api, integration, wa, 'Are you there?');
  const reply = page.locator('.msg.from-agent').filter({ hasText: 'echo: Are you there?' });
  await reply.locator('[data-delivery-status="read"]').waitFor({ timeout: 15_000 });
  const mark = reply.locator('.msg-delivery');
  t.equal((await mark.textContent())?.replace(/\s+/g, ' ').trim(), '✓✓ Read', 'read: two ticks and the word');
  t.equal(await mark.getAttribute('title'), 'Read');
  const order = [...new Set(marksSeen)];
  t.ok(order.includes('✓ Sent') && order.includes('✓✓ Delivered'), `sent and delivered were each shown on the way (${order.join(' → ')})`);
  t.same(order.filter((m) => m.startsWith('✓')), ['✓ Sent', '✓✓ Delivered', '✓✓ Read'], 'in the order they came, never back');
  t.equal(await reply.locator('.msg-error').count(), 0, 'a read reply has no failure line');

  graph.failNext(1, 'fails_later');
  await waCustomerWrites(api, integration, wa, 'Hello?');
  const failed = page.locator('.msg.from-agent').filter({ hasText: 'echo: Hello?' });
  await failed.locator('[data-delivery-status="failed"]').waitFor({ timeout: 15_000 });
  t.equal((await failed.locator('.msg-delivery').textContent())?.replace(/\s+/g, ' ').trim(), '! Not delivered');
  t.match(await failed.locator('.msg-error').textContent(), /^Not delivered: .+ \(131026\)$/, "why, in Meta's words, with its code");
  t.equal(await mark.getAttribute('title'), 'Read', 'the earlier reply keeps its own mark');
  await shot(page, 'whatsapp-delivery-marks');
  t.same(problems, [], 'no console errors');
});
