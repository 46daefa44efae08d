// GET /api/docs in headless Chromium: Swagger UI, served by the gateway from the swagger-ui-dist
// package, renders the service's own document under the page's CSP, and nothing is requested
// from any other host.
import t from 'tap';
import { launchBrowser } from '../support/browser.js';
import { startTestService } from '../support/service.js';

const svc = await startTestService(t, 'web_api_docs');
const browser = await launchBrowser(t);

t.test('the docs page renders every operation, from local files only', async (t) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  t.teardown(() => context.close());
  const local = new URL(svc.url).host;
  const elsewhere: string[] = [];
  // Every request the page makes passes here: anything not for the gateway is recorded and refused.
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.host === local || url.protocol === 'data:') return route.continue();
    elsewhere.push(url.href);
    return route.abort();
  });
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));

  await page.goto(`${svc.url}/api/docs`);
  await page.getByText('Messaging automation API').first().waitFor();
  await page.locator('.opblock-summary-path', { hasText: /^\/api\/agents$/ }).first().waitFor();
  const operations = Object.values((await svc.api('GET', '/api/openapi.json')).body.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
  t.equal(await page.locator('.opblock').count(), operations, `all ${operations} operations are listed`);

  // One operation opened: its parameters, its answers and the error codes it lists.
  await page.locator('.opblock-summary', { hasText: 'One agent' }).click();
  const opened = page.locator('.opblock.is-open');
  await opened.getByText('NOT_FOUND').first().waitFor();
  t.ok(await opened.getByText('Agent', { exact: false }).count(), 'the answer shows its schema');

  t.same(elsewhere, [], 'no request left for another host');
  t.same(problems, [], 'no console error, no CSP violation');
});
