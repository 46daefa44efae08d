// The knowledge page's Retry button on a failed document, in Chromium against the real service.
import { createServer } from 'node:http';
import t from 'tap';
import { goTo, launchBrowser, signedInPage } from '../support/browser.js';
import { addDocument, waitForDocument } from '../support/knowledge.js';
import { listenLocal } from '../support/local-server.js';
import { startTestService } from '../support/service.js';

const svc = await startTestService(t, 'web_knowledge_retry', { knowledge: { sweepMs: 200 } });
const { api } = svc;

// A help page that answers 404 until it is mended.
let mended = false;
const site = createServer((_req, res) => {
  if (!mended) res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not found</h1>');
  else res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Store pickup</h1><p>Orders can be picked up at the store after two hours.</p>');
});
const { url: siteUrl } = await listenLocal(site, t);

const browser = await launchBrowser(t);

t.test('knowledge: a failed document is retried from the list and becomes ready; a refused retry says why', async (t) => {
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Pickup Co');
  page.setDefaultTimeout(15_000);
  const kb = (await api('POST', '/api/knowledge-bases', { token, body: { name: 'Store help', language: 'english' } })).body.knowledgeBase;
  const addPage = async (path: string) => {
    const doc = (await api('POST', `/api/knowledge-bases/${kb.id}/documents`, { token, body: { url: `${siteUrl}${path}` } })).body.document;
    return waitForDocument(api, token, kb.id, doc.id);
  };
  const pickup = await addPage('/pickup');
  const gone = await addPage('/gone');
  t.equal(pickup.status, 'failed');
  const ready = await addDocument(api, token, kb.id, { title: 'Opening hours', content: 'We open at nine.' });
  t.equal(ready.status, 'ready');

  await goTo(page, 'Knowledge');
  const documents = page.getByRole('table', { name: 'Documents' });
  const failedRow = documents.locator('tr', { hasText: `${siteUrl}/pickup` });
  await failedRow.getByText('Failed').waitFor();
  t.match(await failedRow.textContent(), /the page answered HTTP 404/, 'the reason is shown');
  t.equal(await page.getByRole('button', { name: 'Retry Opening hours' }).count(), 0, 'no Retry on a ready document');

  // The page is mended: Retry makes the document ready (the list follows it by itself).
  mended = true;
  await failedRow.getByRole('button', { name: `Retry ${siteUrl}/pickup` }).click();
  const pickupRow = documents.locator(`tr[data-document-id="${pickup.id}"]`);
  await pickupRow.getByText('Ready').waitFor();
  t.match(await pickupRow.textContent(), /Store pickup.*Ready.*1/, 'named by the page, ready, one chunk');
  t.equal(await pickupRow.getByRole('button', { name: /^Retry/ }).count(), 0, 'no Retry once ready');
  await page.getByRole('button', { name: 'Chunks of Store pickup' }).click();
  const chunks = page.getByRole('list', { name: 'Chunks of Store pickup' }).getByRole('listitem');
  await chunks.first().waitFor();
  t.same(await chunks.allTextContents(), ['Store pickupOrders can be picked up at the store after two hours.']);

  // Deleted meanwhile (another tab): the Retry button's error is shown.
  t.equal((await api('DELETE', `/api/knowledge-bases/${kb.id}/documents/${gone.id}`, { token })).status, 204);
  await documents.getByRole('button', { name: `Retry ${siteUrl}/gone` }).click();
  await page.getByRole('alert').getByText('Document not found.').waitFor();
  t.same(problems, []);
});
