// The "Test agent" page keeps its cases per agent (contract.md § The first hour), in Chromium
// against the real service: cases typed and saved are there after a reload, "Run all" runs
// them, and after the help centre changes the next run says which case changed.
import t from 'tap';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { addDocument } from '../support/knowledge.js';
import { startTestService } from '../support/service.js';

const svc = await startTestService(t, 'web_test_agent_cases');
const { api } = svc;
const browser = await launchBrowser(t);

t.test('saved cases survive a reload; Run all; the second run shows the case that flipped', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Cases Co');
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Help centre', language: 'english' } })).body.knowledgeBase;
  await addDocument(api, token, kb.id, { title: 'Delivery', content: '## Delivery\n\nDelivery takes 2–4 working days within Germany.' });
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Case bot', knowledgeBaseId: kb.id } })).body.agent;

  await goTo(page, 'Test agent');
  await page.getByLabel('Agent').selectOption({ label: 'Case bot' });
  await page.getByLabel('Question 1').fill('How long does delivery take?');
  // Typed with a hyphen; the help centre writes an en dash.
  await page.getByLabel('Expected phrases 1').fill('2-4 working days');
  await page.getByRole('button', { name: 'Add case' }).click();
  await page.getByLabel('Question 2').fill('Do you gift wrap items?');
  await page.getByLabel('Expected phrases 2').fill('gift wrap');
  await page.getByText('Unsaved changes').waitFor();
  await page.getByRole('button', { name: 'Save cases' }).click();
  await page.getByText('2 cases saved').waitFor();

  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Test agent' }).waitFor();
  await page.getByText('2 saved cases').waitFor();
  t.equal(await page.getByLabel('Question 1').inputValue(), 'How long does delivery take?', 'case 1 is there after a reload');
  t.equal(await page.getByLabel('Expected phrases 1').inputValue(), '2-4 working days');
  t.equal(await page.getByLabel('Question 2').inputValue(), 'Do you gift wrap items?', 'case 2 too');
  t.equal(await page.getByLabel('Expected phrases 2').inputValue(), 'gift wrap');

  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 1 passed, 1 failed.').waitFor();
  t.equal(await page.locator('.changes-summary').textContent(), 'First run: nothing to compare with yet.');
  const rows = page.getByRole('table', { name: 'Test results' }).locator('tbody tr');
  const cells = async (i: number) => (await rows.nth(i).locator('td').allInnerTexts()).map((c) => c.replace(/\s+/g, ' ').trim());
  const [delivery, giftWrap] = [await cells(0), await cells(1)];
  t.match(delivery[2], /2–4 working days/, 'the answer has an en dash');
  t.equal(delivery[4], 'Pass The answer has every expected phrase.', '"2-4" passes against "2–4"');
  t.match(giftWrap[4], /^Fail /, 'the help centre does not say yet');

  // The help centre learns about gift wrapping: the second case flips.
  await addDocument(api, token, kb.id, { title: 'Gift wrap', content: '## Gift wrap\n\nWe gift wrap items for free: ask for gift wrap at checkout.' });
  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 2 passed, 0 failed.').waitFor();
  t.match(await page.locator('.changes-summary').textContent(), /^Since the run of .+: 1 newly passing/, 'the summary says what changed');
  const flipped = await cells(1);
  t.equal(flipped[4], 'Pass The answer has every expected phrase.');
  t.equal(flipped[5], 'Newly passing', 'the case that flipped is marked');
  t.equal(await rows.nth(1).locator('[data-change="passing"]').count(), 1);
  t.not((await cells(0))[5], 'Newly passing', 'the case that passed before is not');
  await shot(page, 'test-agent-cases');

  // Reloaded: the latest run is shown against the one before it (both from the API).
  await page.reload();
  await page.getByRole('table', { name: 'Test results' }).waitFor();
  t.equal((await cells(1))[5], 'Newly passing', 'still marked after a reload');
  t.equal((await api('GET', `/api/agents/${agent.id}/evaluation-cases`, { token })).body.cases.length, 2, 'the run did not change the saved cases');
  t.same(problems, []);
});

t.test('a run saves the cases it runs', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Run Saves Co');
  const agent = (await api('POST', '/api/agents', { token, body: { name: 'Plain bot' } })).body.agent;
  await goTo(page, 'Test agent');
  await page.getByLabel('Agent').selectOption({ label: 'Plain bot' });
  await page.getByLabel('Question 1').fill('Can I talk to a person?');
  await page.getByLabel('Must hand off (case 1)').check();
  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 1 passed, 0 failed.').waitFor();
  t.same((await api('GET', `/api/agents/${agent.id}/evaluation-cases`, { token })).body.cases, [{ question: 'Can I talk to a person?', expect: 'handoff' }]);
  await page.reload();
  await page.getByText('1 saved case').waitFor();
  t.equal(await page.getByLabel('Question 1').inputValue(), 'Can I talk to a person?');
  t.ok(await page.getByLabel('Must hand off (case 1)').isChecked(), 'kept as a must-hand-off case');
  t.same(problems, []);
});
