import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import t from 'tap';
import { goTo, launchBrowser, signedInPage, watchedPage } from '../support/browser.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { startTestService } from '../support/service.js';
import { listenLocal } from '../support/local-server.js';
import { dropNatsPrefixAtEnd } from '../support/webhooks.js';
import { eventually, sql, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

/**
 * Customers have names, in Chromium: a shop's page calls `MAS.identify` before the widget's
 * script (served by the real gateway) has loaded; the visitor writes; the team sees the name in
 * the inbox and on the Leads page. Then the team turns the pre-chat form on in the
 * integration's settings, and a visitor the page does not identify is asked their name first.
 */
const svc = await startTestService(t, 'widget_identity', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const worker = await startTestWorker(t, svc, { workerId: 'widget-identity-1' });
await waitForPartitions([worker], 2);
const browser = await launchBrowser(t);
const team = await signedInPage(t, browser, svc, 'Named Shop');
const model = await startRepeatingModel(t);
const created = await svc.api('POST', '/api/integrations', { token: team.token, body: { type: 'webchat', name: 'Shop chat', agentId: await model.createAgent(svc.api, team.token) } });
const chat = created.body.integration as { id: number; webhookSecret: string };

// The shop's own server (another origin than the gateway), serving the page the test sets.
let shopHtml = '';
const shop = await listenLocal(createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(shopHtml)), t);
/** The shop's page: its server computed the hash; the identity is queued before the widget's script tag. */
function shopPage(identify: Record<string, string> | null): string {
  const snippet = identify
    ? `<script>window.MAS = window.MAS || { q: [], identify: function (u) { this.q.push(['identify', u]); } };
MAS.identify(${JSON.stringify(identify)});</script>`
    : '';
  return `<!doctype html><title>Shop</title><h1>Shop</h1>${snippet}<script src="${svc.url}/widget.js" data-integration-id="${chat.id}" async></script>`;
}

async function visitorPage(tt: Parameters<typeof watchedPage>[0], html: string) {
  const { page, problems } = await watchedPage(tt, browser, { width: 1200, height: 800 });
  shopHtml = html;
  await page.goto(`${shop.url}/`);
  await page.getByRole('button', { name: 'Open chat' }).click();
  return { page, problems, log: page.getByRole('log', { name: 'Conversation' }) };
}

t.test('MAS.identify before the widget loads: the inbox and the leads show the name', async (t) => {
  const hash = createHmac('sha256', chat.webhookSecret).update('cust-901').digest('hex');
  const { page, problems, log } = await visitorPage(t, shopPage({ id: 'cust-901', name: 'Erin Identified', email: 'erin@shop.test', hash }));
  await page.getByLabel('Message').fill('Is my order on its way?');
  await page.getByRole('button', { name: 'Send' }).click();
  await log.getByText('echo: Is my order on its way?').waitFor({ timeout: 15_000 });
  t.same(problems, [], 'no errors on the shop page');
  await untilIdle(svc);
  const [lead] = await sql(svc.orm, 'select name, email, verified_id from leads where integration_id = ?', [chat.id]);
  t.same(lead, { name: 'Erin Identified', email: 'erin@shop.test', verified_id: 'cust-901' }, 'the lead is named, verified');

  await goTo(team.page, 'Inbox');
  await team.page.getByRole('link', { name: 'Erin Identified' }).first().waitFor();
  t.pass('the inbox shows the name');
  await goTo(team.page, 'Leads');
  await team.page.getByRole('link', { name: 'Erin Identified' }).first().waitFor();
  t.equal(await team.page.getByText(/^Visitor [0-9a-f]{4}/).count(), 0, 'no visitor id instead of the name');
});

t.test('the pre-chat form, turned on in the settings, names a visitor the page did not identify', async (t) => {
  await goTo(team.page, 'Integrations');
  const card = team.page.locator('article', { has: team.page.getByRole('heading', { name: 'Shop chat' }) });
  await card.getByRole('button', { name: 'Edit settings' }).click();
  await card.getByLabel('Pre-chat form').selectOption('name');
  await card.getByRole('button', { name: 'Save settings' }).click();
  await card.getByText('Settings saved.').waitFor();
  await eventually(async () => (await sql(svc.orm, 'select prechat_form from integrations where id = ?', [chat.id]))[0]?.prechat_form === 'name', 5_000, 'the setting stored');

  const { page, problems, log } = await eventually(async () => {
    const v = await visitorPage(t, shopPage(null));
    // The gateway's cache learns of the change within a moment: a page opened before that asks nothing.
    return (await v.page.getByLabel('Your name').waitFor({ timeout: 2_000 }).then(() => true, () => false)) ? v : (await v.page.close(), null);
  }, 15_000, 'the pre-chat form');
  t.notOk(await page.getByLabel('Message').isVisible(), 'the message box waits until the form is sent');
  await page.getByLabel('Your name').fill('Frank Form');
  await page.getByRole('button', { name: 'Start chat' }).click();
  await page.getByLabel('Message').fill('Hello, Frank here');
  await page.getByRole('button', { name: 'Send' }).click();
  await log.getByText('echo: Hello, Frank here').waitFor({ timeout: 15_000 });
  t.same(problems, [], 'no errors on the shop page');
  await untilIdle(svc);

  await goTo(team.page, 'Leads');
  await team.page.getByRole('link', { name: 'Frank Form' }).first().waitFor();
  t.pass('the Leads page shows the typed name');
  const [lead] = await sql(svc.orm, "select name_source, verified_id from leads where integration_id = ? and name = 'Frank Form'", [chat.id]);
  t.same(lead, { name_source: 'customer', verified_id: null }, 'kept as the customer typed it, unverified');
});
