// The dashboard in a real browser (Debian chromium driven by playwright-core), against the
// real service: signed up, logged in and used like a person would, by labels and roles.
import { mkdirSync } from 'node:fs';
import t, { type Test } from 'tap';
import type { Page } from 'playwright-core';
import { DASHBOARD_CSP } from '../../gateway/routes/dashboard.js';
import { launchBrowser, watchedPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startRepeatingModel } from '../support/repeating-model.js';
import { signUp, startTestService, uniqueEmail } from '../support/service.js';

const SHOTS = process.env.DASHBOARD_SCREENSHOTS; // a directory (e.g. /tmp/dashboard-shots) to save screenshots into
if (SHOTS) mkdirSync(SHOTS, { recursive: true });

// The helpdesk's two instances: the global one accepts the token, the Europe one refuses it,
// so creating an integration without apiUrl finds the global instance by probing.
const helpdesk = await startChat2DeskStub(t);
const europe = await startChat2DeskStub(t, 'some-other-account');
// The clock the service runs on: moved forward to let access tokens expire for real.
let clockOffsetMs = 0;
const svc = await startTestService(t, 'dashboard', {
  env: { HELPDESK_GLOBAL_URL: helpdesk.url, HELPDESK_EUROPE_URL: europe.url },
  now: () => Date.now() + clockOffsetMs,
  webhookActivity: { flushMs: 100 },
});
const { api } = svc;

const browser = await launchBrowser(t);

interface Browsing {
  page: Page;
  /** Console errors and page errors seen so far (CSP violations show up here). */
  problems: string[];
  shot: (name: string) => Promise<void>;
}

async function openDashboard(t: Test): Promise<Browsing> {
  const { page, problems } = await watchedPage(t, browser, { width: 1280, height: 900 });
  await page.goto(svc.url + '/');
  return {
    page,
    problems,
    shot: async (name) => {
      if (SHOTS) await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
    },
  };
}

async function logIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/** A company made through the API, then logged into through the form. */
async function loggedIn(t: Test, company: string): Promise<Browsing & { email: string; password: string; token: string }> {
  const email = uniqueEmail('web');
  const password = 'correct horse battery';
  const reg = await api('POST', '/api/auth/register', { body: { email, password, companyName: company } });
  t.equal(reg.status, 201);
  const b = await openDashboard(t);
  await logIn(b.page, email, password);
  const token = (await api('POST', '/api/auth/login', { body: { email, password } })).body.session.access_token as string;
  return { ...b, email, password, token };
}

const go = async (page: Page, link: string) => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link }).click();
  await page.getByRole('heading', { level: 1, name: link }).waitFor();
};

t.test('serving: the document, its assets, its CSP; the API is not shadowed', async (t) => {
  const res = await fetch(svc.url + '/');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /text\/html/);
  t.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
  t.match(DASHBOARD_CSP, /script-src 'self'/);
  t.match(DASHBOARD_CSP, /connect-src 'self'/);
  t.notMatch(DASHBOARD_CSP, /unsafe-inline|unsafe-eval/);
  t.equal(res.headers.get('cache-control'), 'no-cache');
  const html = await res.text();
  t.notMatch(html, /\{\{ASSETS\}\}/);
  t.notMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.notMatch(html, /\sstyle=/, 'no inline style');
  const src = /<script type="module" src="([^"]+)"/.exec(html)![1]!;
  t.match(src, /^\/app\/[0-9a-f]{12}\/app\.js$/);
  const js = await fetch(svc.url + src);
  t.equal(js.status, 200);
  t.match(js.headers.get('content-type'), /javascript/);
  t.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  const stale = await fetch(svc.url + src.replace(/\/app\/[0-9a-f]+\//, '/app/000000000000/'));
  t.equal(stale.headers.get('cache-control'), 'no-cache', 'an old version path is served but not cached for long');
  const missing = await fetch(svc.url + src.replace('app.js', 'nope.js'));
  t.equal(missing.status, 404);
  t.equal((await missing.json()).error.code, 'NOT_FOUND');
  t.same(await (await fetch(svc.url + '/healthz')).json(), { ok: true });
  t.equal((await fetch(svc.url + '/api/agents')).status, 401);
  t.equal((await fetch(svc.url + '/nope')).status, 404);
});

t.test('sign up, log out, log in; a wrong password shows the error', async (t) => {
  const { page, problems, shot } = await openDashboard(t);
  await shot('01-login');
  const email = uniqueEmail('signup');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct horse battery');
  await page.getByRole('button', { name: 'Sign up' }).click();
  t.match(await page.getByRole('alert').textContent(), /Company name/, 'sign up needs a company name');
  await page.getByLabel('Company name').fill('Initech');
  await page.getByRole('button', { name: 'Sign up' }).click();
  const nav = page.getByRole('navigation', { name: 'Main' });
  await nav.waitFor();
  for (const name of ['Get started', 'Integrations', 'Agents', 'Knowledge', 'Inbox', 'Settings']) t.equal(await nav.getByRole('link', { name }).count(), 1, `${name} link`);
  await page.getByText(`Initech · ${email}`).waitFor();
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem('mas.session') ?? 'null'));
  t.match(stored, { access_token: String, refresh_token: /^rt_/, expires_at: Number });
  t.notMatch(page.url(), /token|rt_/, 'no token in the URL');

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('button', { name: 'Log in' }).waitFor();
  t.equal(await page.evaluate(() => localStorage.getItem('mas.session')), null);
  const revoked = await api('POST', '/api/auth/refresh', { body: { refresh_token: stored.refresh_token } });
  t.equal(revoked.status, 401, 'logging out revoked the session');

  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('wrong password!');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').getByText('Wrong email or password.').waitFor();
  await logIn(page, email, 'correct horse battery');
  await page.getByRole('heading', { level: 1, name: 'Get started' }).waitFor();
  t.same(problems, []);
});

t.test('agents: create, edit, the model key is write-only', async (t) => {
  const { page, problems, token, shot } = await loggedIn(t, 'Agents Inc');
  await go(page, 'Agents');
  await page.getByLabel('Name', { exact: true }).fill('Support bot');
  await page.getByLabel('System prompt').fill('Answer briefly.');
  t.equal(await page.getByText('The reply to a greeting such as “hi”. Empty: a default in the customer’s language. A thanks gets “You’re welcome!” in the customer’s language.').count(), 1, 'the greeting explained');
  await page.getByLabel('Greeting').fill('  Hi! Ask me about your order.  ');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page.getByRole('status').getByText('Agent “Support bot” created.').waitFor();
  await page.getByRole('cell', { name: 'Support bot', exact: true }).waitFor();

  await page.getByRole('button', { name: 'Edit Support bot' }).click();
  t.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'Support bot');
  await page.getByLabel('Name', { exact: true }).fill('Sales bot');
  await page.getByLabel('Model provider').selectOption('openai');
  await page.getByLabel('Model name').fill('gpt-4o-mini');
  await page.getByLabel('Base URL').fill('https://llm.example.com/v1');
  await page.getByLabel('API key').fill('sk-dashboard-secret');
  await page.getByRole('button', { name: 'Save agent' }).click();
  await page.getByRole('status').getByText('Agent “Sales bot” saved.').waitFor();
  await shot('02-agents');

  const agents = (await api('GET', '/api/agents', { token })).body.agents;
  t.match(agents, [{ name: 'Sales bot', systemPrompt: 'Answer briefly.', greeting: 'Hi! Ask me about your order.', model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'https://llm.example.com/v1', hasApiKey: true } }]);
  await page.getByRole('button', { name: 'Edit Sales bot' }).click();
  t.equal(await page.getByLabel('Greeting').inputValue(), 'Hi! Ask me about your order.');
  await page.getByLabel('Greeting').fill('');
  await page.getByRole('button', { name: 'Save agent' }).click();
  await page.getByRole('status').getByText('Agent “Sales bot” saved.').waitFor();
  t.equal((await api('GET', '/api/agents', { token })).body.agents[0].greeting, null, 'emptied: back to the default');
  await page.getByRole('button', { name: 'Edit Sales bot' }).click();
  t.equal(await page.getByLabel('API key').inputValue(), '', 'a stored key is never shown back');
  t.notMatch(await page.content(), /sk-dashboard-secret/);
  await page.getByLabel('Model name').fill('');
  await page.getByLabel('Base URL').fill('');
  await page.getByRole('button', { name: 'Save agent' }).click();
  t.match(await page.getByRole('alert').filter({ hasText: /\S/ }).textContent(), /Model name: is required for provider openai/, 'the API error is shown, by the field’s label');
  t.same(problems, []);
});

/** Waits until the gateway has written the integration's webhook activity (every 100 ms here). */
async function waitForActivity(id: number, token: string, check: (i: any) => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check((await api('GET', `/api/integrations/${id}`, { token })).body.integration)) {
    if (Date.now() > deadline) throw new Error('webhook activity not written within 5 s');
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('integrations: helpdesk webhook registration, failure, secret, active switch, webchat snippet', async (t) => {
  const { page, problems, token, shot } = await loggedIn(t, 'Hooks Ltd');
  t.equal((await api('POST', '/api/agents', { token, body: { name: 'Front desk' } })).status, 201);
  await go(page, 'Integrations');

  await page.getByLabel('Type').selectOption('helpdesk');
  await page.getByLabel('Name', { exact: true }).fill('Chat2Desk main');
  await page.getByLabel('Agent').selectOption({ label: 'Front desk' });
  await page.getByLabel('API token').fill(helpdesk.token);
  await page.getByRole('button', { name: 'Create integration' }).click();
  const card = page.getByRole('article', { name: 'Chat2Desk main' });
  await card.waitFor();
  // A token given at creation registers the webhook at once (contract § The first hour).
  await card.getByText('Webhook OK').waitFor();
  t.match(await card.textContent(), /The webhook is registered at the helpdesk\./, 'the card says the webhook was registered');
  const registerButton = card.getByRole('button', { name: 'Re-register webhook', exact: true });
  await registerButton.waitFor();
  const secret = await card.getByLabel('Webhook secret').inputValue();
  t.match(secret, /^[0-9a-f]{64,}$/, 'the new secret is shown once');
  const webhookUrl = await card.getByLabel('Webhook URL').inputValue();
  const [created] = (await api('GET', '/api/integrations', { token })).body.integrations;
  t.equal(webhookUrl, created.webhookUrl);
  t.equal(created.apiUrl, helpdesk.url, 'region probing chose the instance that accepts the token');
  t.equal(await card.getByRole('checkbox', { name: 'Active' }).isChecked(), true);
  t.match(helpdesk.webhooks, [{ url: webhookUrl, events: ['inbox', 'close_dialog', 'close_request', 'dialog_transferred'] }], 'the helpdesk got our webhook at creation');
  await card.getByRole('button', { name: 'Copy webhook URL' }).click();
  await card.getByText('Copied').first().waitFor();
  await shot('03-integration-registered');

  await registerButton.click();
  await card.getByText('Webhook registered at the helpdesk.').waitFor();
  t.equal(await card.getByText('Webhook pending').count(), 0);
  t.equal(helpdesk.webhooks.length, 1, 're-registering replaces, never adds a second webhook');
  await shot('04-integration-ok');
  t.match(await card.locator('[data-fact="last-webhook"]').textContent(), /none received yet/);

  // The helpdesk signs with a secret of its own: its webhooks are refused, and the badge says so.
  const hookUrl = `${svc.url}/api/webhook/helpdesk/${created.id}`;
  const inbox = (n: number) => ({ hook_type: 'inbox', type: 'from_client', message_id: 880_000 + n, text: 'hello', client_id: 31, channel_id: 4, transport: 'telegram' });
  t.equal((await helpdesk.sendWebhook(hookUrl, inbox(1))).delivered, false);
  await waitForActivity(created.id, token, (i) => i.signatureFailuresLastHour === 4);
  await page.reload();
  await card.getByText('Webhook failing').waitFor();
  t.equal(await card.getByText('Webhook OK').count(), 0, 'not OK while deliveries are refused');
  t.match(await card.locator('[data-fact="refused"]').textContent(), /4 for a bad signature.*does not match the integration's webhook secret/);
  await shot('04b-integration-failing');

  await card.getByLabel('Secret issued by the helpdesk').fill(helpdesk.signingSecret);
  await card.getByRole('button', { name: 'Use this secret' }).click();
  await card.getByText(/The helpdesk’s secret is set/).waitFor();
  t.equal(await card.getByLabel('Secret issued by the helpdesk').inputValue(), '', 'not kept in the page');
  t.equal((await helpdesk.sendWebhook(hookUrl, inbox(2))).statuses.join(), '200', 'now taken at once');
  await waitForActivity(created.id, token, (i) => i.lastWebhookAt !== null);
  await page.reload();
  await card.getByText('Webhook OK').waitFor();
  t.notMatch(await card.locator('[data-fact="last-webhook"]').textContent(), /none received yet/, 'the last webhook is shown');

  helpdesk.handle((r) => (r.path.startsWith('/v1/webhooks') ? { status: 500, body: { status: 'error', message: 'Service temporarily unavailable' } } : undefined));
  t.teardown(() => helpdesk.handle(null));
  await card.getByRole('button', { name: 'Re-register webhook' }).click();
  const alert = card.getByRole('alert');
  await alert.getByText(/HTTP 500/).waitFor();
  t.match(await alert.textContent(), /helpdesk/i, 'what the helpdesk answered is shown');
  t.notMatch(await alert.textContent(), /Service temporarily unavailable/, "never the helpdesk's own words");
  await shot('05-integration-error');

  // Created while the helpdesk refuses: created all the same, pending, and the card says why.
  await page.getByLabel('Type').selectOption('helpdesk');
  await page.getByLabel('Name', { exact: true }).fill('Chat2Desk second');
  await page.getByLabel('Agent').selectOption({ label: 'Front desk' });
  await page.getByLabel('API token').fill(helpdesk.token);
  await page.getByRole('button', { name: 'Create integration' }).click();
  const second = page.getByRole('article', { name: 'Chat2Desk second' });
  await second.getByText('Webhook pending').waitFor();
  t.match(await second.textContent(), /The webhook is not registered yet: The helpdesk did not register the webhook: .*HTTP 500.*Fix it, then use Register webhook\./, 'the reason, in the register button’s words');
  await second.getByRole('button', { name: 'Register webhook', exact: true }).waitFor();
  helpdesk.handle(null);

  await card.getByRole('button', { name: 'Rotate secret' }).click();
  await card.getByText(/New secret created/).waitFor();
  const rotated = await card.getByLabel('Webhook secret').inputValue();
  t.match(rotated, /^[0-9a-f]{64,}$/);
  t.not(rotated, secret);

  await card.getByRole('checkbox', { name: 'Active' }).uncheck();
  await card.getByText(/Inactive: webhooks are refused/).waitFor();
  t.equal((await api('GET', `/api/integrations/${created.id}`, { token })).body.integration.active, false);
  t.equal(await card.getByRole('checkbox', { name: 'Active' }).isChecked(), false);

  await page.getByLabel('Type').selectOption('webchat');
  t.equal(await page.getByLabel('API token').isVisible(), false, 'helpdesk fields hidden for webchat');
  await page.getByLabel('Name', { exact: true }).fill('Site chat');
  await page.getByLabel('Agent').selectOption({ label: 'Front desk' });
  await page.getByRole('button', { name: 'Create integration' }).click();
  const chat = page.getByRole('article', { name: 'Site chat' });
  await chat.waitFor();
  const id = await chat.getAttribute('data-integration-id');
  t.equal(await chat.getByLabel('Embed snippet').inputValue(), `<script src="${svc.url}/widget.js" data-integration-id="${id}"></script>`);
  t.equal(await chat.getByText(/Webhook (OK|pending)/).count(), 0, 'no webhook badge for webchat');
  t.equal(await chat.getByRole('button', { name: /register webhook/i }).count(), 0);

  // After a reload the secrets are gone (shown once) but the state is kept.
  await page.reload();
  await card.getByText('Webhook OK').waitFor();
  t.equal(await card.getByLabel('Webhook secret').count(), 0);
  await shot('06-integrations');
  t.same(problems, []);
});

t.test('knowledge: create a base, add and delete documents, search', async (t) => {
  const { page, problems, token, shot } = await loggedIn(t, 'Know Co');
  await go(page, 'Knowledge');
  await page.getByLabel('Name', { exact: true }).fill('Help centre');
  await page.getByRole('button', { name: 'Create knowledge base' }).click();
  await page.getByRole('heading', { level: 2, name: 'Help centre' }).waitFor();
  await page.getByLabel('Title').fill('Opening hours');
  await page.getByLabel('Content').fill('Our shop is open from 9 to 18 on weekdays. Deliveries arrive within two days.');
  await page.getByRole('button', { name: 'Add document' }).click();
  await page.getByText('Document “Opening hours” added.').waitFor();
  await page.getByLabel('Title').fill('Returns');
  await page.getByLabel('Content').fill('Returns are free within 30 days.');
  await page.getByRole('button', { name: 'Add document' }).click();
  await page.getByText('Document “Returns” added.').waitFor();
  // Read in the background: the list follows both to Ready before they are searched.
  const documents = page.getByRole('table', { name: 'Documents' });
  for (const title of ['Opening hours', 'Returns']) await documents.locator('tr', { hasText: title }).getByText('Ready').waitFor();

  await page.getByLabel('Search', { exact: true }).fill('deliveries');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const results = page.getByRole('list', { name: 'Search results' });
  await results.waitFor();
  t.match(await results.textContent(), /Opening hours/);
  t.notMatch(await results.textContent(), /Returns/);
  await shot('07-knowledge');

  await page.getByRole('button', { name: 'Delete Returns' }).click();
  await page.getByText('Document “Returns” deleted.').waitFor();
  const kb = (await api('GET', '/api/knowledge-bases', { token })).body.knowledgeBases[0];
  const docs = (await api('GET', `/api/knowledge-bases/${kb.id}/documents`, { token })).body.documents;
  t.same(docs.map((d: { title: string }) => d.title), ['Opening hours']);

  // The agent form offers the knowledge base.
  await go(page, 'Agents');
  await page.getByLabel('Knowledge base').selectOption({ label: 'Help centre' });
  await page.getByLabel('Name', { exact: true }).fill('Helper');
  await page.getByRole('button', { name: 'Create agent' }).click();
  await page.getByRole('cell', { name: 'Help centre', exact: true }).waitFor();
  t.same(problems, []);
});

t.test('settings: an API token shown once, revoked; balance 5.00 and the Sales pipeline', async (t) => {
  const { page, problems, shot } = await loggedIn(t, 'Settings plc');
  await go(page, 'Settings');
  await page.getByText('5.00 USD').waitFor();
  t.equal(await page.getByRole('cell', { name: 'Sign-up bonus', exact: true }).count(), 1, 'the ledger lists the sign-up bonus');
  const stages = page.getByRole('list', { name: 'Sales stages' });
  await stages.waitFor();
  t.same((await stages.getByRole('listitem').allTextContents()).map((s) => s.replace(/ \((won|lost)\)$/, '')), ['New lead', 'Contacted', 'Qualified', 'Proposal', 'Won', 'Lost']);

  await page.getByLabel('Token name').fill('CRM sync');
  await page.getByRole('button', { name: 'Create token' }).click();
  const tokenValue = await page.getByLabel('New API token').inputValue();
  t.match(tokenValue, /^mas_/);
  await page.getByRole('cell', { name: 'CRM sync', exact: true }).waitFor();
  await shot('08-settings');
  const withKey = await api('GET', '/api/agents', { token: tokenValue });
  t.equal(withKey.status, 200, 'the shown token works');

  await page.reload();
  await page.getByRole('cell', { name: 'CRM sync', exact: true }).waitFor();
  t.equal(await page.getByLabel('New API token').count(), 0, 'shown only once');
  t.notMatch(await page.content(), new RegExp(tokenValue));
  const prefix = tokenValue.slice(0, 8);
  t.match(await page.getByRole('table', { name: 'API tokens' }).textContent(), prefix.slice(0, 4));

  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Revoke CRM sync' }).click();
  await page.getByText('Token “CRM sync” revoked.').waitFor();
  t.equal((await api('GET', '/api/agents', { token: tokenValue })).status, 401, 'revoked');
  t.same(problems, []);
});

t.test('an expired or refused access token is refreshed silently', async (t) => {
  const { page, problems } = await loggedIn(t, 'Refresh AG');
  await go(page, 'Settings');
  await page.getByText('5.00 USD').waitFor();
  const before = await page.evaluate(() => JSON.parse(localStorage.getItem('mas.session')!));

  // 1. A refused token (tampered): the call gets 401, the page refreshes and retries once.
  await page.evaluate(() => {
    const s = JSON.parse(localStorage.getItem('mas.session')!);
    s.access_token = s.access_token.slice(0, -4) + 'AAAA';
    localStorage.setItem('mas.session', JSON.stringify(s));
  });
  const refreshes: string[] = [];
  const urls: string[] = [];
  page.on('request', (r) => {
    urls.push(r.url());
    if (r.url().endsWith('/api/auth/refresh')) refreshes.push(r.url());
  });
  await page.reload();
  await page.getByText('5.00 USD').waitFor();
  await page.getByRole('list', { name: 'Sales stages' }).waitFor();
  const after = await page.evaluate(() => JSON.parse(localStorage.getItem('mas.session')!));
  t.not(after.refresh_token, before.refresh_token, 'the session was refreshed');
  t.equal(refreshes.length, 1, 'several failed calls share one refresh');

  // 2. Really expired: the service's clock moves past the access token's lifetime.
  clockOffsetMs = (svc.config.accessTokenTtlSeconds + 60) * 1000;
  t.teardown(() => {
    clockOffsetMs = 0;
  });
  t.equal((await api('GET', '/api/billing', { token: after.access_token })).status, 401, 'the old access token is expired');
  await go(page, 'Integrations');
  await go(page, 'Settings');
  await page.getByText('5.00 USD').waitFor();
  t.equal(refreshes.length, 2);
  await page.getByRole('navigation', { name: 'Main' }).waitFor();

  // 3. A refresh that fails (session revoked elsewhere) ends at the login form with a message.
  const s = await page.evaluate(() => JSON.parse(localStorage.getItem('mas.session')!));
  t.equal((await api('POST', '/api/auth/logout', { token: s.access_token })).status, 204);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Agents' }).click();
  await page.getByRole('button', { name: 'Log in' }).waitFor();
  await page.getByText('Your session has ended. Please log in again.').waitFor();
  t.same(urls.filter((u) => /eyJ|rt_|mas_/.test(u)), [], 'no token in any URL');
  t.same(problems, []);
});

t.test('conversations: live list, diagram with the current state, pause, live update', async (t) => {
  const { page, problems, token, shot } = await loggedIn(t, 'Convo GmbH');
  const { startTestWorker, createHelpdeskIntegration, messageEnvelope, publishEnvelope, eventually } = await import('../support/worker.js');
  await startTestWorker(t, svc);
  const me = (await api('GET', '/api/auth/me', { token })).body;
  const model = await startRepeatingModel(t);
  const integration = await createHelpdeskIntegration(svc, { token, companyId: me.company.id }, helpdesk, 'Live desk', await model.createAgent(api, token));
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'client-42', 'Hello there'));
  const conv = await eventually(async () => {
    const list = (await api('GET', '/api/conversations', { token })).body.conversations;
    const c = list?.find((x: { clientId: string }) => x.clientId === 'client-42');
    return c && JSON.stringify(c.state) === JSON.stringify({ active: 'idle' }) ? c : null;
  }, 20_000, 'conversation answered');

  await go(page, 'Inbox');
  const row = page.locator(`[data-conversation-id="${conv.id}"]`);
  await row.waitFor();
  t.match(await row.textContent(), /client-42.*Bot on.*Agent: echo: Hello there.*Helpdesk/, 'who, the last message, where from');
  await shot('09-conversations');
  // Searched by the words of its messages.
  await page.getByLabel('Search').fill('someone-else');
  await page.getByLabel('Search').press('Enter');
  await page.getByText('No conversations mention “someone-else”.').waitFor();
  await page.getByLabel('Search').fill('hello');
  await page.getByLabel('Search').press('Enter');
  await row.waitFor();

  await row.getByRole('link', { name: 'client-42' }).click();
  await page.getByRole('heading', { level: 1, name: 'Conversation with client-42' }).waitFor();
  const current = page.locator('[data-state][aria-current="true"]');
  await page.locator('[data-state="active.idle"][aria-current="true"]').waitFor();
  t.equal(await current.count(), 1, 'one highlighted state');
  await page.getByText('echo: Hello there', { exact: true }).waitFor();
  await page.locator('.conversation-view').getByText('Live', { exact: true }).waitFor(); // the conversation's stream (the Inbox list beside has its own)
  await shot('10-conversation-active');

  // Pause in the page: the highlight moves without a reload.
  const marker = await page.evaluate(() => ((window as unknown as { __noReload: number }).__noReload = Math.random()));
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.locator('[data-state="paused.operator"][aria-current="true"]').waitFor();
  t.equal(await page.locator('[data-state="active.idle"][aria-current="true"]').count(), 0);
  t.equal(await page.getByRole('button', { name: 'Pause' }).isDisabled(), true);
  await page.getByRole('cell', { name: 'Paused by you' }).first().waitFor();

  // Someone else resumes it (the API, not this page): the inspect stream brings the change.
  t.equal((await api('POST', `/api/conversations/${conv.id}/resume`, { token })).status, 200);
  await page.locator('[data-state="active.idle"][aria-current="true"]').waitFor();

  // An operator reply from the box.
  await page.getByLabel('Reply').fill('A human here, hello!');
  await page.getByRole('button', { name: 'Send reply' }).click();
  await page.getByText('A human here, hello!', { exact: true }).waitFor();
  await helpdesk.waitFor((reqs) => reqs.some((r) => r.path === '/v1/messages' && r.body?.text === 'A human here, hello!'));
  await shot('11-conversation');

  await page.getByRole('button', { name: 'Close' }).click();
  await page.locator('[data-state="closed"][aria-current="true"]').waitFor();
  t.equal(await page.evaluate(() => (window as unknown as { __noReload: number }).__noReload), marker, 'the page never reloaded');
  t.same(problems, []);
});
