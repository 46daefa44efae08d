import { readdir } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { Page } from 'playwright-core';
import t from 'tap';
import { launchBrowser, shot, signedInPage, watchedPage } from '../support/browser.js';
import { listenLocal } from '../support/local-server.js';
import { dropNatsPrefixAtEnd, startTestService, uniqueEmail } from '../support/service.js';
import { startTestWorker, waitForPartitions } from '../support/worker.js';

// The first hour as a new user meets it (contract.md § The first hour): sign up through the
// form, land on Get started, take the sample help centre, the built-in agent, the website chat,
// and ask the agent in the Try-it chat, through a real gateway, worker, NATS and database.
const svc = await startTestService(t, 'get-started', { env: { PARTITIONS: '2' } });
dropNatsPrefixAtEnd(t, svc);
const worker = await startTestWorker(t, svc, { workerId: 'get-started-1' });
await waitForPartitions([worker], 2);
const browser = await launchBrowser(t);

const NAV_ORDER = ['Get started', 'Knowledge', 'Agents', 'Integrations', 'Test agent', 'Inbox', 'Leads', 'Outcomes', 'Team', 'Settings'];

t.test('the sample help centre offers every article of its folder (the demo loads the same folder)', async (t) => {
  // A plain ES module of the dashboard (no types): imported by its URL.
  const { SAMPLE_FILES } = await import(new URL('../../web/dashboard/sample-help-centre.js', import.meta.url).href);
  const files = (await readdir(new URL('../../web/dashboard/sample-help-centre/', import.meta.url))).filter((f) => f.endsWith('.md')).sort();
  t.same([...SAMPLE_FILES].sort(), files);
  t.ok(files.length >= 4, `${files.length} articles`);
});

/** The step's region and whether it says it is done. */
const stepDone = (page: Page, name: string) => page.getByRole('region', { name }).locator('.step-badge').textContent();

for (const viewport of [
  { width: 1280, height: 720 },
  { width: 1366, height: 768 },
]) {
  t.test(`${viewport.width}×${viewport.height}: sign up → Get started → sample help centre → agent → website chat → Try it answers`, async (t) => {
    const { page, problems } = await watchedPage(t, browser, viewport);
    let clicks = 0;
    // The Try-it socket's frames, printed should the answer not come.
    const frames: string[] = [];
    page.on('websocket', (ws) => {
      ws.on('framesent', (f) => frames.push(`> ${f.payload}`));
      ws.on('framereceived', (f) => frames.push(`< ${f.payload}`));
      ws.on('close', () => frames.push('closed'));
    });
    const click = async (locator: ReturnType<Page['getByRole']>) => {
      clicks += 1;
      await locator.click();
    };
    await page.goto(svc.url + '/');
    const email = uniqueEmail('first-hour');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByLabel('Company name').fill('Northwind Kitchen');
    const started = Date.now();
    await click(page.getByRole('button', { name: 'Sign up' }));

    await page.getByRole('heading', { level: 1, name: 'Get started' }).waitFor();
    t.match(page.url(), /#\/get-started$/, 'sign-up lands on Get started');
    const nav = page.getByRole('navigation', { name: 'Main' });
    t.same(await nav.getByRole('link').allTextContents(), NAV_ORDER, 'the navigation follows the setup order');
    t.equal(await nav.getByRole('link', { name: 'Get started' }).getAttribute('aria-current'), 'page');
    // The steps are drawn before the company's state has loaded: the summary says when it has.
    await page.getByText('0 of 4 steps done.').waitFor();
    for (const name of ['1. Help centre', '2. Agent', '3. Channel', '4. Try it']) t.equal(await stepDone(page, name), 'Not done yet', `${name}: not done yet`);
    t.equal(await page.getByRole('button', { name: 'Create the agent' }).isDisabled(), true, 'no agent before a help centre');

    // The top bar stays one row: the brand, every link and the account on the same line.
    const rows = await page.evaluate(() => {
      const parts = [document.querySelector('.topbar .brand'), ...Array.from(document.querySelectorAll('.topbar nav li:not([hidden])')), document.querySelector('.topbar .who')];
      return new Set(parts.map((el) => Math.round(el!.getBoundingClientRect().top / 12))).size;
    });
    const overlap = await page.evaluate(() => Math.round(document.querySelector('.topbar nav li:not([hidden]):last-child')!.getBoundingClientRect().right - document.querySelector('.topbar .who')!.getBoundingClientRect().left));
    t.comment(`${viewport.width} px: the top bar's items sit on ${rows} row(s); the last link ${overlap > 0 ? `overlaps the account by ${overlap} px` : 'clears the account'}`);
    t.equal(rows, 1, `the top bar does not wrap at ${viewport.width} px`);
    t.ok(overlap <= 0, `the last link does not run into the account line (${overlap} px)`);

    // 1. The sample help centre in one click; its articles are read in the background.
    await click(page.getByRole('button', { name: 'Use the sample help centre' }));
    await page.getByRole('region', { name: '1. Help centre' }).getByText('“Sample help centre”: 5 documents ready.').waitFor({ timeout: 60_000 });
    const sampleReady = Date.now() - started;
    t.equal(await stepDone(page, '1. Help centre'), 'Done');
    t.equal(await page.getByRole('button', { name: 'Use the sample help centre' }).isVisible(), false, 'offered once');

    // 2. The built-in agent, its name prefilled, linked to that base.
    t.equal(await page.getByLabel('Agent name').inputValue(), 'Northwind Kitchen assistant');
    await click(page.getByRole('button', { name: 'Create the agent' }));
    await page.getByText('“Northwind Kitchen assistant” answers from “Sample help centre”.').waitFor();
    t.equal(await stepDone(page, '2. Agent'), 'Done');

    // 3. The website chat, with its snippet.
    await click(page.getByRole('button', { name: 'Create the website chat' }));
    const snippet = page.getByLabel('Website chat snippet');
    await snippet.waitFor();
    t.match(await snippet.inputValue(), new RegExp(`^<script src="${svc.url}/widget\\.js" data-integration-id="\\d+"></script>$`));
    t.equal(await stepDone(page, '3. Channel'), 'Done');

    // 4. Try it: the agent answers from the sample's returns article, over the real webchat socket.
    const chat = page.getByRole('log', { name: 'Try-it conversation' });
    await chat.getByText('Hi! How can we help you today?').waitFor();
    await page.getByLabel('Message to the agent').fill('How do I return an item?');
    await click(page.getByRole('button', { name: 'Send' }));
    const answer = chat.locator('.try-agent').filter({ hasText: 'within 30 days' });
    await answer.waitFor({ timeout: 30_000 }).catch(async (err) => {
      t.comment(`the Try-it chat shows: ${await page.getByRole('region', { name: '4. Try it' }).innerText()}`);
      t.comment(frames.join('\n'));
      throw err;
    });
    const elapsed = Date.now() - started;
    t.match(await answer.textContent(), /You can return any item within 30 days of delivery/, 'the returns article answers');
    await answer.getByText(/^answered from Returns and refunds/).waitFor();
    await page.getByText('All four steps done: your agent answers customers. Their conversations show in the Inbox.').waitFor();
    for (const name of ['1. Help centre', '2. Agent', '3. Channel', '4. Try it']) t.equal(await stepDone(page, name), 'Done', `${name}: done`);
    t.comment(`${viewport.width}×${viewport.height}: ${elapsed} ms from clicking Sign up to the agent's answer (the sample's articles read after ${sampleReady} ms), ${clicks} clicks`);
    await shot(page, `get-started-${viewport.width}`);

    // Done, from the API's state: a reload shows the same, and the bare address now opens the inbox.
    await page.reload();
    await page.getByText('All four steps done: your agent answers customers. Their conversations show in the Inbox.').waitFor();
    await page.getByRole('log', { name: 'Try-it conversation' }).locator('.try-agent').filter({ hasText: 'within 30 days' }).waitFor();
    await page.goto(svc.url + '/#/');
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
    t.same(problems, [], 'no console errors');
  });
}

t.test("a company's own help centre in step 1: a document uploaded and a page by its address; a page that cannot be read says why", async (t) => {
  // The company's help site (a stand-in on this machine: the test service allows private addresses).
  const site = await listenLocal(
    createServer((req, res) => {
      if (req.url === '/delivery') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<html><head><title>Delivery</title></head><body><h1>Delivery</h1><p>We deliver within 3 working days across Portugal.</p></body></html>');
      } else {
        res.writeHead(404).end();
      }
    }),
    t,
  );
  // Signed in before step 1 is done: the dashboard opens on Get started.
  const { page, problems, token } = await signedInPage(t, browser, svc, 'Own Docs Co');
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.getByRole('heading', { level: 1, name: 'Get started' }).waitFor();
  const step = page.getByRole('region', { name: '1. Help centre' });
  // The steps are drawn before the company's state has loaded: the summary says when it has.
  await page.getByText('0 of 4 steps done.').waitFor();
  t.equal(await stepDone(page, '1. Help centre'), 'Not done yet');

  await page.getByLabel('Upload a document').setInputFiles({ name: 'returns.md', mimeType: 'text/markdown', buffer: Buffer.from('# Returns\n\nWe take returns within 14 days with the receipt.\n') });
  await step.getByText('“Help centre”: 1 document ready.').waitFor({ timeout: 30_000 });
  t.equal(await stepDone(page, '1. Help centre'), 'Done', 'an uploaded document makes the help centre');

  await page.getByLabel('Page URL').fill(`${site.url}/delivery`);
  await page.getByRole('button', { name: 'Add page' }).click();
  await step.getByText('“Help centre”: 2 documents ready.').waitFor({ timeout: 30_000 });
  const listed = await svc.api('GET', '/api/knowledge-bases', { token });
  t.same(listed.body.knowledgeBases.map((k: { name: string }) => k.name), ['Help centre'], 'both in one base');
  const docs = await svc.api('GET', `/api/knowledge-bases/${listed.body.knowledgeBases[0].id}/documents`, { token });
  t.same(docs.body.documents.map((d: { status: string }) => d.status), ['ready', 'ready'], 'the file and the page, read');

  // A page the site does not have: the step says which and why, and stays done.
  await page.getByLabel('Page URL').fill(`${site.url}/missing`);
  await page.getByRole('button', { name: 'Add page' }).click();
  const why = step.getByText(/^1 document could not be read \(/);
  await why.waitFor({ timeout: 30_000 });
  t.match(await why.textContent(), `(${site.url}/missing: `, 'it names the page, then why');
  t.equal(await stepDone(page, '1. Help centre'), 'Done');
  t.equal(await page.getByRole('button', { name: 'Create the agent' }).isDisabled(), false, 'the agent can be created from it');
  t.same(problems, [], 'no console errors');
});
