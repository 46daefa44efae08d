// Replay and version history in Chromium against the real service: a built-in agent answered
// three customers on a helpdesk (a real worker), then the owner tries another knowledge base
// and greeting on those conversations through the Replay form, follows its progress to the
// end, reads the answers side by side (a handoff as a handoff, with its reason in words),
// publishes the changes as a new version and sees it in the version history, where an older
// version is restored. API errors show next to the field they name.
import t from 'tap';
import { launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startTestService } from '../support/service.js';
import { customerWrites } from '../support/webhooks.js';
import { createHelpdeskIntegration, eventually, sql, startTestWorker, untilIdle } from '../support/worker.js';

const svc = await startTestService(t, 'web_replay');
const { api } = svc;
const helpdesk = await startChat2DeskStub(t);
await startTestWorker(t, svc);
const browser = await launchBrowser(t);

t.test('a replay through the form: progress to the end, the answers side by side, publish, the version history, restore', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Replay Co');
  const shop = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Shop', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, shop.id, { title: 'Opening hours', content: '## Opening hours\n\nWe are open from 9 am to 6 pm, Monday to Saturday.' });
  const kitchen = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Kitchen', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, kitchen.id, { title: 'Toasters', content: '## Toasters\n\nWe sell toasters: the two-slot toaster costs 39 euros and the four-slot toaster 59 euros.' });
  const created = await api('POST', '/api/agents', { token, body: { name: 'Shop bot', knowledgeBaseId: shop.id } });
  t.equal(created.status, 201);
  const agent = created.body.agent;
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, helpdesk, 'Desk', agent.id);

  // Three customers: a greeting, a question the shop's help centre answers, one it does not.
  await customerWrites(api, integration, 'anna', 'hi');
  await customerWrites(api, integration, 'ben', 'When are you open?');
  await customerWrites(api, integration, 'carla', 'Do you sell toasters?');
  await untilIdle(svc);
  const answered = await eventually(async () => {
    const rows = await sql(svc.orm, `select count(*)::int as n from conversation_messages m join conversations c on c.id = m.conversation_id where c.company_id = ? and m.role = 'agent'`, [companyId]);
    return rows[0].n >= 3 ? rows[0].n : null;
  }, 20_000, 'the agent answered the three customers');
  t.ok(answered >= 3);

  await page.goto(`${svc.url}/#/agents/${agent.id}`);
  await page.getByRole('heading', { level: 1, name: 'Actions and tools of Shop bot' }).waitFor();
  await shot(page, 'agent-links');
  await page.getByRole('navigation', { name: 'Agent' }).getByRole('link', { name: 'Replay changes' }).click();
  await page.getByRole('heading', { level: 1, name: 'Replay changes for Shop bot' }).waitFor();
  t.equal(await page.getByLabel('Knowledge base').inputValue(), String(shop.id), 'the form holds the current settings');
  t.equal(await page.getByRole('table', { name: 'Past replays' }).count(), 0);
  await page.getByText('No replays yet. Try a change above.').waitFor();

  // Nothing changed: said so, nothing started.
  await page.getByRole('button', { name: 'Start replay' }).click();
  await page.getByRole('alert').getByText('Change at least one setting to try', { exact: false }).waitFor();

  // An error of the API shows under the field it names.
  await page.getByLabel('Confidence threshold').fill('1.5');
  await page.getByRole('button', { name: 'Start replay' }).click();
  const thresholdError = page.locator('.field', { has: page.getByLabel('Confidence threshold') }).locator('.field-error');
  await thresholdError.waitFor();
  t.match(await thresholdError.textContent(), /1/, 'the threshold’s error is under the threshold');
  t.equal(await page.getByLabel('Confidence threshold').getAttribute('aria-invalid'), 'true');
  await page.getByRole('button', { name: 'Reset to the current settings' }).click();
  t.equal(await page.getByLabel('Confidence threshold').getAttribute('aria-invalid'), null, 'reset clears the error');

  // Conversation numbers that are not numbers: under that field, before anything is sent.
  await page.getByLabel('These conversations').check();
  await page.getByLabel('Conversation numbers').fill('12, twelve');
  await page.getByLabel('Greeting').fill('Hello from the shop! Ask me anything.');
  await page.getByRole('button', { name: 'Start replay' }).click();
  await page.locator('.field', { has: page.getByLabel('Conversation numbers') }).getByText('Must be conversation numbers separated by commas.').waitFor();

  // The replay: another knowledge base and a greeting, on the agent's latest conversations.
  await page.getByLabel('The agent’s latest conversations').check();
  await page.getByLabel('Knowledge base').selectOption({ label: 'Kitchen' });
  await page.getByRole('button', { name: 'Start replay' }).click();
  await page.getByRole('status').getByText('Replay started: 3 messages to answer again.').waitFor();
  const result = page.getByRole('region', { name: /^Replay \d+$/ });
  await result.getByText('3 of 3 answered', { exact: true }).waitFor({ timeout: 30_000 });
  await result.getByText('Replay finished: 3 answers of 3 changed.').waitFor();
  t.match(page.url(), new RegExp(`#/agents/${agent.id}/replay/\\d+$`), 'the address names the replay');
  const figure = async (key: string) => (await result.locator(`[data-figure="${key}"] dd`).textContent())?.trim();
  t.equal(await figure('same'), '0');
  t.equal(await figure('changed'), '3');
  t.equal(await figure('newHandoffs'), '1', 'the opening hours are not in the kitchen’s knowledge');
  t.equal(await figure('resolvedHandoffs'), '1', 'the toasters are');
  t.equal(await figure('cost'), '0.00 USD', 'a built-in agent costs nothing');

  // Changed (the default filter): the three answers, before and after side by side.
  t.equal(await result.getByRole('button', { name: 'Changed (3)' }).getAttribute('aria-pressed'), 'true');
  const items = result.getByRole('list', { name: 'Answers' }).getByRole('listitem');
  t.equal(await items.count(), 3);
  const hours = result.getByRole('article', { name: 'Customer: When are you open?' });
  t.match(await hours.getByRole('region', { name: 'Before' }).innerText(), /We are open from 9 am to 6 pm, Monday to Saturday\.\s+Sources: Opening hours/);
  t.match(await hours.getByRole('region', { name: 'After' }).innerText(), /^After, with the changes\s+Handed to a person: agent had no answer/i, 'a handoff reads as one, with its reason in words');
  t.match(await hours.innerText(), /New handoff/);
  const toasters = result.getByRole('article', { name: 'Customer: Do you sell toasters?' });
  t.match(await toasters.getByRole('region', { name: 'Before' }).innerText(), /^Before\s+Handed to a person/i);
  t.match(await toasters.getByRole('region', { name: 'After' }).innerText(), /two-slot toaster costs 39 euros/);
  t.match(await toasters.innerText(), /Resolved handoff/);
  const greeting = result.getByRole('article', { name: 'Customer: hi' });
  t.match(await greeting.getByRole('region', { name: 'After' }).innerText(), /Hello from the shop! Ask me anything\./);
  await shot(page, 'replay-done');

  await result.getByRole('button', { name: 'New handoffs (1)' }).click();
  await eventually(async () => (await items.count()) === 1 && (await items.first().innerText()).includes('When are you open?'), 5000, 'the new handoffs only');
  await result.getByRole('button', { name: 'Resolved handoffs (1)' }).click();
  await eventually(async () => (await items.count()) === 1 && (await items.first().innerText()).includes('Do you sell toasters?'), 5000, 'the resolved handoffs only');
  await result.getByRole('button', { name: 'All (3)' }).click();
  await eventually(async () => (await items.count()) === 3, 5000, 'all the answers');

  // Nothing of it reached a customer, and the agent still answers as before.
  t.equal((await api('GET', `/api/agents/${agent.id}`, { token })).body.agent.knowledgeBaseId, shop.id);

  // The past replays list it.
  const past = page.getByRole('table', { name: 'Past replays' });
  await past.locator('tbody tr').first().getByRole('cell', { name: 'Done 3 of 3' }).waitFor();
  t.match((await past.locator('tbody tr').first().locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim()), [/^Replay \d+$/, /./, 'Knowledge base, Greeting', 'Done 3 of 3', '3 changed · 1 new handoff · 1 resolved handoff · 0.00 USD', '—']);

  // Publish: confirmed, then the new version.
  const version = (await api('GET', `/api/agents/${agent.id}`, { token })).body.agent.version as number;
  page.once('dialog', (d) => d.accept());
  await result.getByRole('button', { name: 'Publish these changes' }).click();
  await result.getByText(`Published: Shop bot is now at version ${version + 1}.`).waitFor();
  await result.getByText(`Published as version ${version + 1}`).waitFor();
  t.equal(await result.getByRole('button', { name: 'Publish these changes' }).count(), 0, 'published once');
  const now = (await api('GET', `/api/agents/${agent.id}`, { token })).body.agent;
  t.match(now, { version: version + 1, knowledgeBaseId: kitchen.id, greeting: 'Hello from the shop! Ask me anything.' });
  await past.locator('tbody tr').first().getByRole('cell', { name: `Version ${version + 1}` }).waitFor();

  // The version history: the new one current, in words, by whom; restore the one before.
  await result.getByRole('link', { name: 'Version history' }).click();
  await page.getByRole('heading', { level: 1, name: 'Version history of Shop bot' }).waitFor();
  const rows = page.getByRole('table', { name: 'Versions' }).locator('tbody tr');
  await rows.nth(1).waitFor();
  const cells = async (i: number) => (await rows.nth(i).locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
  const newest = await cells(0);
  t.equal(newest[0], `Version ${version + 1} Current`);
  t.equal(newest[2], 'You');
  t.match(newest[3], /^Knowledge base, Greeting · published from replay \d+$/);
  t.equal(newest[4], 'Answers customers now');
  const first = await cells(1);
  t.equal(first[0], `Version ${version}`);
  t.equal(first[3], 'Created');
  await shot(page, 'versions');

  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Restore version ${version}` }).click();
  await page.getByRole('status').getByText(`Version ${version} restored as version ${version + 2}.`).waitFor();
  await eventually(async () => (await cells(0))[0] === `Version ${version + 2} Current`, 5000, 'the restore is the current version');
  t.match((await cells(0))[3], `Restored version ${version} (Knowledge base, Greeting)`);
  t.equal((await cells(1))[0], `Version ${version + 1}`, 'the published version is no longer current');
  t.equal(await page.getByRole('button', { name: `Restore version ${version + 1}` }).count(), 1, 'an older version can be restored');
  t.match((await api('GET', `/api/agents/${agent.id}`, { token })).body.agent, { version: version + 2, knowledgeBaseId: shop.id, greeting: null });

  // Restoring the settings it has already changes nothing.
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: `Restore version ${version}` }).click();
  await page.getByRole('status').getByText(`Version ${version} has the current settings already: nothing changed.`).waitFor();
  t.equal((await cells(0))[0], `Version ${version + 2} Current`);

  // Opening the replay's own address shows it again, published.
  await page.goto(`${svc.url}/#/agents/${agent.id}`);
  await page.getByRole('navigation', { name: 'Agent' }).getByRole('link', { name: 'Replay changes' }).click();
  await page.getByRole('table', { name: 'Past replays' }).getByRole('link', { name: /^Open replay \d+$/ }).click();
  await page.getByRole('region', { name: /^Replay \d+$/ }).getByText(`Published as version ${version + 1}`).waitFor();
  t.same(problems, []);
});
