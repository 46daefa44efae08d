// The knowledge gaps view in Chromium against the real service: customers ask the built-in
// agent questions its knowledge base cannot answer (through the helpdesk webhook and the real
// worker); the knowledge page links to its gaps, which list them grouped with the closest
// article and the conversations; "Write an article" opens the add-document form filled in,
// and once the article is added the agent answers the question.
import { mkdirSync } from 'node:fs';
import t from 'tap';
import type { Page } from 'playwright-core';
import { goTo, launchBrowser, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { addDocument } from '../support/knowledge.js';
import { startTestService } from '../support/service.js';
import { deliver } from '../support/webhooks.js';
import { createHelpdeskIntegration, sql, startTestWorker, waitForPartitions } from '../support/worker.js';

const svc = await startTestService(t, 'web_knowledge_gaps', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'web-gaps' });
await waitForPartitions([worker], 2);
const browser = await launchBrowser(t);

const SHOTS = process.env.DASHBOARD_SCREENSHOTS ?? '/tmp/dashboard-shots'; // where the screenshots go, to be looked at
mkdirSync(SHOTS, { recursive: true });
const shot = (page: Page, name: string) => page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });

t.test('knowledge gaps: listed grouped from the knowledge page; "Write an article" opens the form filled in', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Tea Shop');
  page.setDefaultTimeout(15_000);
  const kb = (await svc.api('POST', '/api/knowledge-bases', { token, body: { name: 'Shop help', language: 'english' } })).body.knowledgeBase;
  const shop = await addDocument(svc.api, token, kb.id, { title: 'Opening hours', content: '# Opening hours\n\nOur shop is open from 9 am to 6 pm, Monday to Saturday.' });
  // A strict threshold: the Sunday question, a near miss, is a gap whatever the default threshold is tuned to.
  const agent = (await svc.api('POST', '/api/agents', { token, body: { name: 'Shop bot', knowledgeBaseId: kb.id, onNoAnswer: 'fallback', relevanceThreshold: 0.9 } })).body.agent;
  const desk = await createHelpdeskIntegration(svc, { token, companyId }, stub, 'Desk', agent.id);
  let messageId = 1;
  const ask = async (client: string, text: string) => {
    const before = stub.sent().filter((b) => b.client_id === client).length;
    const res = await deliver(svc.api, desk.id, { message_id: ++messageId, type: 'from_client', text, client_id: client, channel_id: 'ch-1', transport: 'telegram' }, { secret: desk.webhookSecret });
    t.equal(res.status, 200);
    await stub.waitFor(() => stub.sent().filter((b) => b.client_id === client).length > before);
    return stub.sent().filter((b) => b.client_id === client).at(-1)!.text as string;
  };
  await ask('anna', 'Do you sell green tea?');
  await ask('boris', 'do you sell green tea');
  await ask('clara', 'Do you sell GREEN tea??');
  await ask('dmitri', 'Is the shop open on Sunday?');
  const [anna] = await sql(svc.orm, 'select id from conversations where client_id = ?', ['anna']);

  // From the knowledge page to the base's gaps.
  await goTo(page, 'Knowledge');
  await page.getByRole('heading', { level: 2, name: 'Shop help' }).waitFor();
  await page.getByRole('link', { name: 'Knowledge gaps' }).click();
  await page.getByRole('heading', { level: 1, name: 'Knowledge gaps · Shop help' }).waitFor();
  t.match(page.url(), new RegExp(`#/knowledge/${kb.id}/gaps$`));
  t.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Knowledge', exact: true }).getAttribute('aria-current'), 'page', 'still under Knowledge in the navigation');
  const gaps = page.getByRole('table', { name: 'Unanswered questions' });
  await gaps.waitFor();
  const rows = gaps.locator('tbody tr');
  t.equal(await rows.count(), 2, 'two different questions');
  const tea = rows.nth(0);
  t.match(await tea.textContent(), /^Do you sell GREEN tea\?\?3/, 'the three phrasings of tea in one row, most asked first, as last typed');
  t.match(await rows.nth(1).textContent(), /^Is the shop open on Sunday\?1/);
  t.match(await rows.nth(1).textContent(), /Opening hours\d+% confidence/, 'the closest article and how confident the agent was');
  t.match(await tea.textContent(), /nothing found/, 'no article comes close for tea');
  t.equal(await tea.getByRole('link', { name: /^Conversation \d+$/ }).count(), 3, 'a link to each conversation');
  t.equal(await tea.getByRole('link', { name: `Conversation ${anna.id}` }).getAttribute('href'), `#/conversations/${anna.id}`);
  t.match(await page.getByRole('status').filter({ hasText: 'different' }).textContent(), /^2 different questions went unanswered from \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\.$/);
  await shot(page, 'knowledge-gaps');

  // A period without any: said in words.
  await page.getByLabel('From', { exact: true }).fill('2020-01-01');
  await page.getByLabel('To', { exact: true }).fill('2020-01-31');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByText('No unanswered questions from 2020-01-01 to 2020-01-31. When a customer asks something this knowledge base cannot answer, the question shows up here.').waitFor();
  await shot(page, 'knowledge-gaps-empty');
  await page.getByLabel('From', { exact: true }).fill('2020-02-01');
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByRole('alert').getByText(/Invalid from/).waitFor();
  await page.reload();
  await gaps.waitFor();

  // "Write an article": the base's add-document form, the question filled in.
  await tea.getByRole('button', { name: 'Write an article: Do you sell GREEN tea??' }).click();
  await page.getByRole('heading', { level: 1, name: 'Knowledge' }).waitFor();
  await page.getByRole('heading', { level: 2, name: 'Shop help' }).waitFor();
  const title = page.getByLabel('Title');
  await page.waitForFunction(() => (document.querySelector('input[name="title"]') as HTMLInputElement | null)?.value !== '');
  t.equal(await title.inputValue(), 'Do you sell GREEN tea??');
  t.equal(await page.getByLabel('Content').inputValue(), '# Do you sell GREEN tea??\n\n', 'the content starts with the question as its heading');
  t.ok(await page.getByLabel('Content').evaluate((el) => el === document.activeElement), 'the cursor is in the content, under the question');
  await page.getByText('Write the answer under the question').waitFor();
  t.match(page.url(), new RegExp(`#/knowledge/${kb.id}$`), 'a reload does not fill the form again');
  await shot(page, 'knowledge-gaps-write');
  await page.getByLabel('Content').pressSequentially('Yes: we sell green tea and black tea, loose or in bags.');
  await page.getByRole('button', { name: 'Add document' }).click();
  await page.getByRole('table', { name: 'Documents' }).locator('tr', { hasText: 'Do you sell GREEN tea??' }).getByText('Ready').waitFor();
  t.equal(await title.inputValue(), '', 'the form is cleared once added');

  // The gap is closed: the agent answers the question from the new article (once the worker's
  // cache of the agent's config, and with it the base's content version, has expired: 5 s).
  await new Promise((r) => setTimeout(r, 5200));
  t.match(await ask('erik', 'do you sell green tea?'), /green tea and black tea/);
  t.same(problems, []);
  t.ok(shop.id);
});

t.test('more gaps than a page: Previous and Next', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Repair Shop');
  page.setDefaultTimeout(15_000);
  const kb = (await svc.api('POST', '/api/knowledge-bases', { token, body: { name: 'Repairs', language: 'english' } })).body.knowledgeBase;
  await addDocument(svc.api, token, kb.id, { title: 'Opening hours', content: '# Opening hours\n\nOur workshop is open from 9 am to 6 pm.' });
  const agent = (await svc.api('POST', '/api/agents', { token, body: { name: 'Repair bot', knowledgeBaseId: kb.id, onNoAnswer: 'fallback' } })).body.agent;
  const desk = await createHelpdeskIntegration(svc, { token, companyId }, stub, 'Repair desk', agent.id);
  // 51 different questions (each names its own model), asked by 51 customers at once.
  await Promise.all(
    Array.from({ length: 51 }, (_, i) =>
      deliver(svc.api, desk.id, { message_id: 5000 + i, type: 'from_client', text: `Do you repair model r${i}?`, client_id: `repair-${i}`, channel_id: 'ch-1', transport: 'telegram' }, { secret: desk.webhookSecret }),
    ),
  );
  await stub.waitFor(() => stub.sent().filter((b) => String(b.client_id).startsWith('repair-')).length === 51, 30_000);

  await page.goto(`${svc.url}/#/knowledge/${kb.id}/gaps`);
  const rows = page.getByRole('table', { name: 'Unanswered questions' }).locator('tbody tr');
  await rows.first().waitFor();
  const pages = page.getByRole('group', { name: 'Pages' });
  t.equal(await rows.count(), 50, 'a page of 50');
  const firstPage = await rows.locator('td:first-child').allTextContents();
  t.equal(await pages.getByText('1–50 of 51').count(), 1);
  t.ok(await pages.getByRole('button', { name: 'Previous' }).isDisabled());
  await pages.getByRole('button', { name: 'Next' }).click();
  await pages.getByText('51–51 of 51').waitFor();
  t.equal(await rows.count(), 1, 'the last one on the second page');
  const last = await rows.locator('td:first-child').textContent();
  t.match(last, /^Do you repair model r\d+\?$/);
  t.notOk(firstPage.includes(last!), 'not one of the first page');
  t.equal(new Set([...firstPage, last]).size, 51, 'each question once');
  t.ok(await pages.getByRole('button', { name: 'Next' }).isDisabled());
  await pages.getByRole('button', { name: 'Previous' }).click();
  await pages.getByText('1–50 of 51').waitFor();
  t.same(problems, []);
});
