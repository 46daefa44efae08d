// Every agent, integration, knowledge base and billing setting has a form field (issue #29):
// filled in Chromium, saved, read back from the API and into the form after a reload; a
// value the API refuses is shown next to its field.
import t from 'tap';
import type { Locator, Page } from 'playwright-core';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { startEmbeddingsStub } from '../support/embeddings-stub.js';
import { startTestService } from '../support/service.js';

const helpdesk = await startChat2DeskStub(t);
const europe = await startChat2DeskStub(t, 'some-other-account');
const svc = await startTestService(t, 'web_settings_forms', { env: { HELPDESK_GLOBAL_URL: helpdesk.url, HELPDESK_EUROPE_URL: europe.url } });
const { api } = svc;
const browser = await launchBrowser(t);

/** The message shown under a control for the API's complaint about it. */
async function fieldError(control: Locator): Promise<string> {
  await control.and(control.page().locator('[aria-invalid="true"]')).waitFor();
  const ids = (await control.getAttribute('aria-describedby'))!.split(' ');
  return (await control.page().locator(`#${ids.at(-1)}`).textContent()) ?? '';
}

const saved = (page: Page, text: string) => page.getByRole('status').getByText(text).waitFor();

t.test('agent: business hours, debounce, handoff, fallback and out-of-scope texts, model, its passages and spend cap', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Hours Co');
  await goTo(page, 'Agents');
  const form = page.getByRole('form', { name: 'New agent' });
  await form.getByLabel('Name', { exact: true }).fill('Night shift');
  await form.getByLabel('When nothing relevant is found').selectOption('fallback');
  await form.getByLabel('Fallback text').fill('I do not know that one yet.');
  await form.getByLabel('Confidence threshold').fill('0.5');
  await form.getByLabel('Handoff text').fill('A colleague takes over now.');
  await form.getByLabel('Out-of-scope reply').fill('I can help with night-shift questions only.');
  await form.getByLabel('Debounce (milliseconds)').fill('1500');
  await form.getByLabel('Model provider').selectOption('openai');
  await form.getByLabel('Model name').fill('gpt-4o-mini');
  await form.getByLabel('Base URL').fill('https://llm.example.com/v1');
  await form.getByLabel('API key').fill('sk-hours-secret');
  await form.getByLabel('Input price (USD per million tokens)').fill('0.15');
  await form.getByLabel('Output price (USD per million tokens)').fill('0.6');
  await form.getByLabel('Concurrent model calls at most').fill('4');
  t.equal(await form.getByLabel('Passages given to the model').inputValue(), '5', 'the default to start from');
  await form.getByLabel('Passages given to the model').fill('8');
  await form.getByLabel('Spend cap per day (USD)').fill('2.5');

  t.equal(await form.getByLabel('Time zone').isVisible(), false, 'no hours until asked for');
  await form.getByLabel('Set business hours').check();
  t.equal(await form.getByLabel('Friday range 1 closes').inputValue(), '18:00', 'a working week to start from');
  t.equal(await form.getByLabel('Saturday range 1 opens').count(), 0, 'the weekend closed');
  await form.getByLabel('Time zone').fill('Europe/Berlin');
  await form.getByLabel('Monday range 1 opens').fill('8:30');
  await form.getByLabel('Monday range 1 closes').fill('12:00');
  await form.getByRole('button', { name: 'Add opening hours on Monday' }).click();
  await form.getByLabel('Monday range 2 opens').fill('13:00');
  await form.getByLabel('Monday range 2 closes').fill('17:00');
  await form.getByRole('button', { name: 'Copy Monday to Tuesday–Friday' }).click();
  t.equal(await form.getByLabel('Thursday range 2 closes').inputValue(), '17:00');
  await form.getByRole('button', { name: 'Remove Friday range 2' }).click();
  await form.getByRole('button', { name: 'Add opening hours on Saturday' }).click();
  await form.getByLabel('Saturday range 1 opens').fill('22:00');
  await form.getByLabel('Saturday range 1 closes').fill('02:00');
  await form.getByLabel('Holidays').fill('2026-12-25\n2026-12-26');
  await form.getByLabel('Outside business hours').selectOption('handoff');
  await form.getByLabel('Message when closed').fill('We are closed; a person answers in the morning.');
  await shot(page, 'agent-form');
  await form.getByRole('button', { name: 'Create agent' }).click();
  await saved(page, 'Agent “Night shift” created.');

  const workday = [['08:30', '12:00'], ['13:00', '17:00']];
  const expected = {
    name: 'Night shift',
    onNoAnswer: 'fallback',
    fallbackMessage: 'I do not know that one yet.',
    relevanceThreshold: 0.5,
    handoffMessage: 'A colleague takes over now.',
    outOfScopeText: 'I can help with night-shift questions only.',
    knowledgePassages: 8,
    debounceMs: 1500,
    spendCapUsdPerDay: '2.50',
    model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: 'https://llm.example.com/v1', hasApiKey: true, pricing: { inputUsdPerMTok: '0.15', outputUsdPerMTok: '0.6' }, maxConcurrency: 4 },
    hours: {
      timezone: 'Europe/Berlin',
      weekly: { mon: workday, tue: workday, wed: workday, thu: workday, fri: [['08:30', '12:00']], sat: [['22:00', '02:00']] },
      holidays: ['2026-12-25', '2026-12-26'],
      outside: 'handoff',
      outsideMessage: 'We are closed; a person answers in the morning.',
    },
  };
  let [agent] = (await api('GET', '/api/agents', { token })).body.agents;
  t.match(agent, expected, 'every field as the form said');
  t.same(agent.hours, expected.hours);

  // After a reload the form shows what is stored (never the key).
  await page.reload();
  await page.getByRole('button', { name: 'Edit Night shift' }).click();
  const edit = page.getByRole('form', { name: 'Edit agent “Night shift”' });
  const values = async (labels: string[]) => Promise.all(labels.map((l) => edit.getByLabel(l, { exact: true }).inputValue()));
  t.same(
    await values(['Time zone', 'Monday range 2 opens', 'Friday range 1 closes', 'Saturday range 1 closes', 'Holidays', 'Outside business hours', 'Message when closed']),
    ['Europe/Berlin', '13:00', '12:00', '02:00', '2026-12-25\n2026-12-26', 'handoff', 'We are closed; a person answers in the morning.'],
  );
  t.same(
    await values(['Debounce (milliseconds)', 'Handoff text', 'Fallback text', 'When nothing relevant is found', 'Confidence threshold', 'Spend cap per day (USD)', 'Input price (USD per million tokens)', 'Output price (USD per million tokens)', 'Concurrent model calls at most', 'API key']),
    ['1500', 'A colleague takes over now.', 'I do not know that one yet.', 'fallback', '0.5', '2.50', '0.15', '0.6', '4', ''],
  );
  t.same(
    await values(['Out-of-scope reply', 'Passages given to the model']),
    ['I can help with night-shift questions only.', '8'],
  );
  t.equal(await edit.getByLabel('Set business hours').isChecked(), true);

  // What the API refuses is said next to its field.
  await edit.getByLabel('Time zone').fill('Mars/Olympus_Mons');
  await edit.getByLabel('Tuesday range 1 opens').fill('25:00');
  await edit.getByLabel('Debounce (milliseconds)').fill('90000');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  t.match(await fieldError(edit.getByLabel('Debounce (milliseconds)')), /60000/);
  await edit.getByLabel('Debounce (milliseconds)').fill('800');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  t.equal(await fieldError(edit.getByLabel('Tuesday range 1 opens')), 'Must be a time HH:MM, from 00:00 to 24:00.', 'a bad time, at its range, in words');
  await edit.getByLabel('Tuesday range 1 opens').fill('09:00');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  t.match(await fieldError(edit.getByLabel('Time zone')), /IANA time zone/);
  t.match(await edit.getByRole('alert').textContent(), /^Please check Time zone: must be an IANA time zone/, 'the summary names the field by its label');
  t.equal(await edit.getByLabel('Debounce (milliseconds)').getAttribute('aria-invalid'), null, 'an earlier complaint is gone');
  await shot(page, 'agent-form-errors');
  await edit.getByLabel('Time zone').fill('America/New_York');
  await edit.getByLabel('Passages given to the model').fill('21');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  t.match(await fieldError(edit.getByLabel('Passages given to the model')), /20/, 'more passages than 20: at the field');
  await edit.getByLabel('Passages given to the model').fill('3');
  // Emptied texts go back to the defaults; business hours switched off: always open.
  await edit.getByLabel('Handoff text').fill('');
  await edit.getByLabel('Out-of-scope reply').fill('');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  await saved(page, 'Agent “Night shift” saved.');
  [agent] = (await api('GET', '/api/agents', { token })).body.agents;
  t.equal(agent.hours.timezone, 'America/New_York');
  t.same(agent.hours.weekly.tue, [['09:00', '12:00'], ['13:00', '17:00']]);
  t.equal(agent.debounceMs, 800);
  t.match(agent, { knowledgePassages: 3, outOfScopeText: null }, 'the passages saved; the emptied out-of-scope reply is the default again');
  t.not(agent.handoffMessage, 'A colleague takes over now.', 'the default handoff text again');
  t.equal(agent.model.hasApiKey, true, 'the key kept');

  await page.getByRole('button', { name: 'Edit Night shift' }).click();
  await edit.getByLabel('Set business hours').uncheck();
  await edit.getByLabel('Remove the stored key').check();
  await edit.getByLabel('Spend cap per day (USD)').fill('');
  await edit.getByRole('button', { name: 'Save agent' }).click();
  await saved(page, 'Agent “Night shift” saved.');
  [agent] = (await api('GET', '/api/agents', { token })).body.agents;
  t.match(agent, { hours: null, spendCapUsdPerDay: null, model: { hasApiKey: false } });
  t.same(problems, []);
});

t.test('integrations: allowed origins of a webchat, the handoff group of a helpdesk, every setting after create', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Origins Co');
  const agentId = (await api('POST', '/api/agents', { token, body: { name: 'Desk bot' } })).body.agent.id;
  const otherId = (await api('POST', '/api/agents', { token, body: { name: 'Other bot' } })).body.agent.id;
  // Logged in on Get started, before those agents existed.
  await goTo(page, 'Integrations');
  const create = page.getByRole('form', { name: 'New integration' });

  await create.getByLabel('Type').selectOption('webchat');
  t.equal(await create.getByLabel('Handoff group ID (optional)').isVisible(), false, 'no helpdesk fields for webchat');
  await create.getByLabel('Name', { exact: true }).fill('Shop chat');
  await create.getByLabel('Agent', { exact: true }).selectOption({ label: 'Desk bot' });
  await create.getByLabel('Allowed origins').fill('shop.example.com');
  await create.getByRole('button', { name: 'Create integration' }).click();
  t.match(await fieldError(create.getByLabel('Allowed origins')), /^Must be web addresses such as https:\/\/shop\.example\.com/, 'an origin without its scheme is refused, at the field, in words');
  await create.getByLabel('Allowed origins').fill('https://shop.example.com\nhttps://www.example.com/');
  await create.getByRole('button', { name: 'Create integration' }).click();
  const chat = page.getByRole('article', { name: 'Shop chat' });
  await chat.waitFor();
  let [webchat] = (await api('GET', '/api/integrations', { token })).body.integrations;
  t.same(webchat.allowedOrigins, ['https://shop.example.com', 'https://www.example.com']);

  await chat.getByRole('button', { name: 'Edit settings' }).click();
  const chatSettings = chat.getByRole('form', { name: 'Settings of Shop chat' });
  t.equal(await chatSettings.getByLabel('Allowed origins').inputValue(), 'https://shop.example.com\nhttps://www.example.com');
  await chatSettings.getByLabel('Allowed origins').fill('https://shop.example.com\nhttps://m.example.com');
  await chatSettings.getByLabel('Agent', { exact: true }).selectOption({ label: 'Other bot' });
  await chatSettings.getByRole('button', { name: 'Save settings' }).click();
  await chat.getByText('Settings saved.').waitFor();
  [webchat] = (await api('GET', '/api/integrations', { token })).body.integrations;
  t.match(webchat, { allowedOrigins: ['https://shop.example.com', 'https://m.example.com'], agentId: otherId });

  await create.getByLabel('Type').selectOption('helpdesk');
  await create.getByLabel('Name', { exact: true }).fill('Desk');
  await create.getByLabel('Agent', { exact: true }).selectOption({ label: 'Desk bot' });
  await create.getByLabel('API token').fill(helpdesk.token);
  await create.getByLabel('Handoff group ID (optional)').fill('7');
  await create.getByRole('button', { name: 'Create integration' }).click();
  const desk = page.getByRole('article', { name: 'Desk' });
  await desk.waitFor();
  const byName = async (name: string) => (await api('GET', '/api/integrations', { token })).body.integrations.find((i: { name: string }) => i.name === name);
  t.match(await byName('Desk'), { handoffGroupId: 7, agentId, apiUrl: helpdesk.url, hasApiToken: true });

  await page.reload();
  await desk.getByRole('button', { name: 'Edit settings' }).click();
  const deskSettings = desk.getByRole('form', { name: 'Settings of Desk' });
  t.same(
    await Promise.all(['Name', 'API URL', 'Region', 'Handoff group ID', 'API token'].map((l) => deskSettings.getByLabel(l, { exact: true }).inputValue())),
    ['Desk', helpdesk.url, 'global', '7', ''],
    'the stored settings, never the token',
  );
  await shot(page, 'integration-settings');
  await deskSettings.getByLabel('Handoff group ID').fill('0');
  await deskSettings.getByRole('button', { name: 'Save settings' }).click();
  t.match(await fieldError(deskSettings.getByLabel('Handoff group ID')), /1/);
  await deskSettings.getByLabel('Handoff group ID').fill('12');
  await deskSettings.getByLabel('Name', { exact: true }).fill('Desk EU');
  await deskSettings.getByRole('button', { name: 'Save settings' }).click();
  await page.getByRole('article', { name: 'Desk EU' }).getByText('Settings saved.').waitFor();
  t.match(await byName('Desk EU'), { handoffGroupId: 12, apiUrl: helpdesk.url });

  const renamed = page.getByRole('article', { name: 'Desk EU' });
  await renamed.getByRole('button', { name: 'Edit settings' }).click();
  await renamed.getByLabel('Handoff group ID').fill('');
  await renamed.getByRole('button', { name: 'Save settings' }).click();
  await renamed.getByRole('form', { name: 'Settings of Desk EU' }).waitFor({ state: 'detached' });
  await renamed.getByText('Settings saved.').waitFor();
  t.equal((await byName('Desk EU')).handoffGroupId, null, 'emptied: no transfer');
  t.same(problems, []);
});

t.test('knowledge base: language and embedding model (key write-only); company spend cap', async (t) => {
  const embeddings = await startEmbeddingsStub(t);
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Embed Co');
  const kbId = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Manuals' } })).body.knowledgeBase.id;
  await goTo(page, 'Knowledge');
  await page.getByRole('heading', { level: 2, name: 'Manuals' }).waitFor();
  const settings = page.getByRole('form', { name: 'Settings of this base' });
  t.equal(await settings.getByLabel('Base name').inputValue(), 'Manuals');
  t.equal(await settings.getByLabel('Search language').inputValue(), 'auto', 'a new base detects the language per document');
  const offered = await settings.getByLabel('Search language').locator('option').allTextContents();
  t.equal(offered[0], 'Detect per document (recommended)', 'offered first');
  t.ok(offered.includes('english') && offered.includes('russian'), 'a configuration can still be chosen');
  const createLanguage = page.getByRole('form', { name: 'New knowledge base' }).getByLabel('Language', { exact: true });
  t.equal(await createLanguage.inputValue(), 'auto', 'and a base to create starts with it');
  await settings.getByLabel('Search language').selectOption('english');
  await settings.getByLabel('Use your own embedding model (instead of the built-in English one)').check();
  await settings.getByLabel('Embedding server URL').fill(embeddings.baseUrl);
  await settings.getByLabel('Embedding model name').fill('text-embedding-3-small');
  await settings.getByLabel('Embedding API key').fill('sk-embed-secret');
  await settings.getByRole('button', { name: 'Save settings' }).click();
  await settings.getByText(/Settings saved/).waitFor();
  let kb = (await api('GET', `/api/knowledge-bases/${kbId}`, { token })).body.knowledgeBase;
  t.match(kb, { language: 'english', embedding: { baseUrl: embeddings.baseUrl, name: 'text-embedding-3-small', hasApiKey: true } });

  await page.reload();
  await page.getByRole('heading', { level: 2, name: 'Manuals' }).waitFor();
  await shot(page, 'knowledge-settings');
  t.same(
    await Promise.all(['Search language', 'Embedding server URL', 'Embedding model name', 'Embedding API key'].map((l) => settings.getByLabel(l).inputValue())),
    ['english', embeddings.baseUrl, 'text-embedding-3-small', ''],
  );
  t.notMatch(await page.content(), /sk-embed-secret/);
  // A new server without the key again: the stored key is never sent to a new address.
  await settings.getByLabel('Embedding server URL').fill('https://embeddings.example.com/v1');
  await settings.getByRole('button', { name: 'Save settings' }).click();
  t.match(await fieldError(settings.getByLabel('Embedding API key')), /required when embedding\.baseUrl changes/);
  await settings.getByLabel('Embedding server URL').fill(embeddings.baseUrl);
  await settings.getByLabel('Base name').fill('Product manuals');
  await settings.getByRole('button', { name: 'Save settings' }).click();
  await settings.getByText('Settings saved.').waitFor();
  await page.getByRole('heading', { level: 2, name: 'Product manuals' }).waitFor();
  kb = (await api('GET', `/api/knowledge-bases/${kbId}`, { token })).body.knowledgeBase;
  t.match(kb, { name: 'Product manuals', embedding: { baseUrl: embeddings.baseUrl, hasApiKey: true } });

  await goTo(page, 'Settings');
  await page.getByText('5.00 USD').waitFor();
  const cap = page.getByLabel('Spend cap per day (USD)');
  t.equal(await cap.inputValue(), '', 'no cap at first');
  await cap.fill('12,50');
  await page.getByRole('button', { name: 'Save spend cap' }).click();
  t.match(await fieldError(cap), /such as 12\.50/, 'a comma is refused, at the field');
  await cap.fill('12.5');
  await page.getByRole('button', { name: 'Save spend cap' }).click();
  await saved(page, 'Spend cap set to 12.50 USD per day.');
  t.equal((await api('GET', '/api/billing', { token })).body.billing.spendCapUsdPerDay, '12.50');
  await page.reload();
  await page.getByText('5.00 USD').waitFor();
  t.equal(await cap.inputValue(), '12.50');
  await cap.fill('');
  await page.getByRole('button', { name: 'Save spend cap' }).click();
  await saved(page, 'No spend cap now.');
  t.equal((await api('GET', '/api/billing', { token })).body.billing.spendCapUsdPerDay, null);
  t.same(problems, []);
});
