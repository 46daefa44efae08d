// The dashboard with more items than one page of a list (lists answer 50 by default, 200 at
// most; issue #26): the Agents page shows every agent and offers every knowledge base, the
// Integrations page offers every agent, fetched page by page (web/dashboard/api.js apiAll).
import t from 'tap';
import { goTo, launchBrowser, signedInPage } from '../support/browser.js';
import { startTestService } from '../support/service.js';
import { sql } from '../support/worker.js';

const AGENTS = 230;
const BASES = 75;
// A company holding more agents than the quota lets the API create (written before there was one).
const svc = await startTestService(t, 'long-lists');
const browser = await launchBrowser(t);

t.test('every agent and every knowledge base, beyond one page', async (t) => {
  const { page, problems, companyId } = await signedInPage(t, browser, svc, 'Long Lists Co');
  await sql(svc.orm, `insert into agents (company_id, name) select ?, 'Agent ' || lpad(g::text, 3, '0') from generate_series(1, ?) g`, [companyId, AGENTS]);
  await sql(svc.orm, `insert into knowledge_bases (company_id, name) select ?, 'Base ' || lpad(g::text, 3, '0') from generate_series(1, ?) g`, [companyId, BASES]);

  await goTo(page, 'Agents');
  await page.getByRole('cell', { name: `Agent ${AGENTS}`, exact: true }).waitFor();
  t.equal(await page.getByRole('button', { name: /^Edit Agent \d+$/ }).count(), AGENTS, 'every agent is listed (more than the largest page, 200)');
  t.equal(await page.getByLabel('Knowledge base').locator('option').count(), BASES + 1, 'every knowledge base is offered (and None)');

  await goTo(page, 'Integrations');
  const agentPicker = page.getByLabel('Agent', { exact: true });
  await agentPicker.locator('option', { hasText: `Agent ${AGENTS}` }).waitFor({ state: 'attached' });
  t.equal(await agentPicker.locator('option').filter({ hasText: /^Agent \d+$/ }).count(), AGENTS, 'every agent is offered for a new integration');
  t.same(problems, []);
});
