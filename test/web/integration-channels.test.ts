// The dashboard's WhatsApp and Telegram forms: created in Chromium, the write-only secrets
// never shown back (password inputs saying a value is stored), WhatsApp's webhook URL and
// verify token copyable with where to paste them, Telegram's registration state and its
// "Register webhook" button, the health badge for both.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { startTelegramSandbox } from '../../scripts/sandbox/telegram.js';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startTestService } from '../support/service.js';

const BOT = `${3_000_000 + Math.floor(Math.random() * 1e6)}:${randomBytes(24).toString('base64url')}`;
const tg = await startTelegramSandbox({ tokens: [BOT], latencyMs: [0, 5] });
t.teardown(() => tg.close());
const svc = await startTestService(t, 'web_integration_channels', { env: { TELEGRAM_API_URL: tg.url } });
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
