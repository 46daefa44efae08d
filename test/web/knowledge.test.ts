// The knowledge page (upload by drag and drop and by file, a page by URL, status and progress,
// chunk preview, the base's synonyms) and the "Test agent" page, in Chromium against the real service.
import { createServer } from 'node:http';
import t from 'tap';
import { goTo, launchBrowser, signedInPage } from '../support/browser.js';
import { listenLocal } from '../support/local-server.js';
import { makePdf } from '../support/pdf.js';
import { startTestService } from '../support/service.js';

const svc = await startTestService(t, 'web_knowledge');
const { api } = svc;

// A page that takes a moment to answer, so its document is seen processing.
let release: (() => void) | null = null;
const site = createServer((_req, res) => {
  release = () => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Store pickup</h1><p>Orders can be picked up at the store after two hours.</p>');
});
const { url: siteUrl } = await listenLocal(site, t);

const browser = await launchBrowser(t);

t.test('knowledge: drop and choose files, a page, status and progress, chunks; then test the agent', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Kettle Co');
  page.setDefaultTimeout(15_000);
  await goTo(page, 'Knowledge');
  await page.getByLabel('Name', { exact: true }).fill('Kettle help');
  await page.getByLabel('Language', { exact: true }).selectOption('english');
  await page.getByRole('button', { name: 'Create knowledge base' }).click();
  await page.getByRole('heading', { level: 2, name: 'Kettle help' }).waitFor();
  const documents = page.getByRole('table', { name: 'Documents' });

  // Drag and drop a markdown file onto the drop zone.
  await page.evaluate(() => {
    const zone = document.querySelector('.dropzone')!;
    const data = new DataTransfer();
    data.items.add(new File(['# Kettle care\n\n## Descaling\n\nDescale the kettle every month with citric acid.\n\n## Warranty\n\nThe warranty lasts two years.'], 'care.md', { type: 'text/markdown' }));
    for (const type of ['dragenter', 'dragover', 'drop']) zone.dispatchEvent(new DragEvent(type, { dataTransfer: data, bubbles: true, cancelable: true }));
  });
  await page.getByText('“care.md” uploaded.').waitFor();
  const care = documents.locator('tr', { hasText: 'care' });
  await care.getByText('Ready').waitFor();
  t.match(await care.textContent(), /care\.md.*Ready.*2/, 'title, source, status and chunk count');

  // Choose a PDF with the file input.
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'manual.pdf', mimeType: 'application/pdf', buffer: makePdf([[{ text: 'Kettle manual', size: 18 }, { text: 'Fill the kettle up to the MAX mark.' }]]) });
  await documents.locator('tr', { hasText: 'manual.pdf' }).getByText('Ready').waitFor();

  // A page that answers slowly: processing with a progress bar, then ready.
  await page.getByLabel('Page URL').fill(`${siteUrl}/pickup`);
  await page.getByRole('button', { name: 'Add page' }).click();
  const pending = documents.locator('tr', { hasText: `${siteUrl}/pickup` });
  await pending.getByText('Processing').waitFor();
  t.equal(await pending.getByRole('progressbar').count(), 1, 'a progress bar while it is processed');
  while (!release) await new Promise((r) => setTimeout(r, 20));
  release();
  await documents.locator('tr', { hasText: 'Store pickup' }).getByText('Ready').waitFor();
  t.equal(await documents.getByRole('progressbar').count(), 0, 'no progress bar once ready (the list refreshed itself)');

  // A file the service cannot read: failed, with the reason.
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'scan.pdf', mimeType: 'application/pdf', buffer: makePdf([[]]) });
  const scan = documents.locator('tr', { hasText: 'scan.pdf' });
  await scan.getByText('Failed').waitFor();
  t.match(await scan.textContent(), /no text layer/);
  await page.getByLabel('File', { exact: true }).setInputFiles({ name: 'notes.docx', mimeType: 'application/octet-stream', buffer: Buffer.from('PK') });
  await page.getByRole('alert').getByText(/Unsupported file type \.docx/).waitFor();

  // Chunk preview.
  await page.getByRole('button', { name: 'Chunks of care' }).click();
  const chunks = page.getByRole('list', { name: 'Chunks of care' });
  await chunks.waitFor();
  t.same(await chunks.getByRole('listitem').allTextContents(), ['Kettle care › DescalingDescale the kettle every month with citric acid.', 'Kettle care › WarrantyThe warranty lasts two years.']);

  // Search shows how each result was found.
  await page.getByLabel('Search', { exact: true }).fill('how often to descale');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const results = page.getByRole('list', { name: 'Search results' });
  await results.waitFor();
  t.match(await results.textContent(), /care › Kettle care › Descaling.*fulltext/);

  // The base's own synonyms: a word of the company's customers finds the help centre's.
  await page.getByLabel('Search', { exact: true }).fill('furring');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByText('No results for “furring”.').waitFor();
  const synonyms = page.getByLabel('Words your customers use for the same thing');
  await synonyms.fill('furring');
  await page.getByRole('button', { name: 'Save synonyms' }).click();
  await page.getByRole('alert').getByText('“furring” needs at least one other word on its line.').waitFor();
  await synonyms.fill('furring,  descale\n\nkettle, jug');
  await page.getByRole('button', { name: 'Save synonyms' }).click();
  await page.getByText('2 synonym groups saved; searches use them now.').waitFor();
  t.equal(await synonyms.inputValue(), 'furring, descale\nkettle, jug', 'the groups as stored');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await results.waitFor();
  t.match(await results.textContent(), /care › Kettle care › Descaling.*fulltext/, 'found through the synonym');

  // Test agent.
  const kb = (await api('GET', '/api/knowledge-bases', { token })).body.knowledgeBases[0];
  t.equal((await api('POST', '/api/agents', { token, body: { name: 'Kettle bot', knowledgeBaseId: kb.id } })).status, 201);
  await goTo(page, 'Test agent');
  await page.getByLabel('Agent').selectOption({ label: 'Kettle bot' });
  await page.getByLabel('Question 1').fill('How long is the warranty?');
  await page.getByLabel('Expected phrases 1').fill('two years');
  await page.getByRole('button', { name: 'Add case' }).click();
  await page.getByLabel('Question 2').fill('Do you sell toasters?');
  await page.getByLabel('Expected phrases 2').fill('toaster');
  await page.getByRole('button', { name: 'Run all' }).click();
  await page.getByText('Test finished: 1 passed, 1 failed.').waitFor();
  const table = page.getByRole('table', { name: 'Test results' });
  const rows = table.locator('tbody tr');
  t.equal(await rows.count(), 2);
  t.match(await rows.nth(0).textContent(), /How long is the warranty\?.*Answered from the knowledge base.*The warranty lasts two years\..*care.*Pass/);
  t.match(await rows.nth(1).textContent(), /Do you sell toasters\?.*Not answered: handed to a person.*Sorry, I don't have an answer to that\..*Fail.*It found no answer/);
  await page.reload();
  await page.getByRole('table', { name: 'Test results' }).waitFor();
  t.equal(await page.getByRole('table', { name: 'Test results' }).locator('tbody tr').count(), 2, 'the latest run is shown again');

  // A customer's question answered by the built-in agent: the reply's source in the conversation view.
  const { startTestWorker, createHelpdeskIntegration, messageEnvelope, publishEnvelope, eventually } = await import('../support/worker.js');
  const { startChat2DeskStub } = await import('../support/chat2desk-stub.js');
  const helpdesk = await startChat2DeskStub(t);
  await startTestWorker(t, svc);
  const me = (await api('GET', '/api/auth/me', { token })).body;
  const agentId = (await api('GET', '/api/agents', { token })).body.agents[0].id;
  const integration = await createHelpdeskIntegration(svc, { token, companyId: me.company.id }, helpdesk, 'Desk', agentId);
  await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, 'client-7', 'How long is the warranty?'));
  const conv = await eventually(async () => (await api('GET', '/api/conversations', { token })).body.conversations?.find((c: { clientId: string }) => c.clientId === 'client-7'), 20_000, 'conversation');
  await page.goto(`${svc.url}/#/conversations/${conv.id}`);
  const reply = page.locator('.msg.from-agent', { hasText: 'The warranty lasts two years.' });
  await reply.waitFor();
  t.equal(await reply.locator('.msg-sources').textContent(), 'Sources: care', 'operators see where the answer came from');
  t.same(problems, []);
});
