// The Leads board and the Outcomes page in Chromium against the real service: leads made by
// the worker from customers' first messages, moved by dragging a card (and with the
// keyboard's list), persisted across a reload; the figures and charts of a constructed history.
import t from 'tap';
import type { Page } from 'playwright-core';
import { openSqlPool } from '../../lib/db.js';
import { goTo, launchBrowser, shot, signedInPage } from '../support/browser.js';
import { startChat2DeskStub } from '../support/chat2desk-stub.js';
import { EXPECTED_OUTCOMES, OUTCOMES_FROM, OUTCOMES_TO, seedOutcomes } from '../support/outcomes.js';
import { startTestService } from '../support/service.js';
import { createHelpdeskIntegration, messageEnvelope, publishEnvelope, startTestWorker, untilIdle, waitForPartitions } from '../support/worker.js';

const svc = await startTestService(t, 'web_leads', { env: { PARTITIONS: '2' } });
const stub = await startChat2DeskStub(t);
const worker = await startTestWorker(t, svc, { workerId: 'web-leads' });
await waitForPartitions([worker], 2);
const browser = await launchBrowser(t);

const column = (page: Page, stage: string) => page.getByRole('region', { name: stage, exact: true });
const card = (page: Page, stage: string, clientId: string) => column(page, stage).getByRole('listitem', { name: new RegExp(`^Lead ${clientId},`) });

t.test('the board: drag a card to another stage, the move persists; the keyboard list too; a lead links to its conversations', async (t) => {
  const { page, problems, token, companyId } = await signedInPage(t, browser, svc, 'Board Co');
  const integration = await createHelpdeskIntegration(svc, { token, companyId }, stub);
  for (const clientId of ['anna', 'boris']) await publishEnvelope(svc.nc, svc.config, messageEnvelope(integration, clientId, `hello from ${clientId}`, { transport: 'whatsapp' }));
  await untilIdle(svc);
  const stages = (await svc.api('GET', '/api/pipelines', { token })).body.pipelines[0].stages as { id: number; name: string }[];
  const stageOf = async (clientId: string) => {
    const { leads } = (await svc.api('GET', '/api/leads', { token })).body;
    return stages.find((s) => s.id === leads.find((l: { clientId: string }) => l.clientId === clientId).stageId)?.name;
  };

  await goTo(page, 'Leads');
  await page.getByRole('heading', { level: 2, name: /Sales/ }).waitFor();
  for (const stage of ['New lead', 'Contacted', 'Qualified', 'Proposal', 'Won', 'Lost']) t.equal(await column(page, stage).count(), 1, `a column for ${stage}`);
  await card(page, 'New lead', 'anna').waitFor();
  t.match(await card(page, 'New lead', 'anna').textContent(), /Helpdesk · whatsapp.*Last activity.*1 conversation/s, 'the card: customer, channel, last activity');

  await card(page, 'New lead', 'anna').dragTo(column(page, 'Qualified'));
  await page.getByText('Moved anna to Qualified.').waitFor();
  await card(page, 'Qualified', 'anna').waitFor();
  t.equal(await stageOf('anna'), 'Qualified', 'the move reached the API');
  await page.reload();
  await card(page, 'Qualified', 'anna').waitFor();
  t.equal(await card(page, 'New lead', 'anna').count(), 0, 'after a reload it is still in Qualified');

  // Without a mouse: the card's "Move to" list.
  await card(page, 'New lead', 'boris').getByLabel('Move boris to').selectOption({ label: 'Proposal' });
  await page.getByText('Moved boris to Proposal.').waitFor();
  await card(page, 'Proposal', 'boris').waitFor();
  t.equal(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), 'Move boris to', 'the focus stays on the card, in its new column');
  await page.reload();
  await card(page, 'Proposal', 'boris').waitFor();
  await shot(page, 'leads-board');
  t.equal(await stageOf('boris'), 'Proposal');

  // The lead's page: its conversations (to the conversation page) and its history.
  await card(page, 'Qualified', 'anna').getByRole('link', { name: 'anna' }).click();
  await page.getByRole('heading', { level: 1, name: 'Lead anna' }).waitFor();
  const history = page.getByRole('table', { name: 'Stage history' });
  t.match(await history.textContent(), /New lead.*Qualified.*an operator/s);
  await shot(page, 'leads-lead');
  await page.getByLabel('Move to stage').selectOption({ label: 'Won' });
  await page.getByRole('button', { name: 'Move' }).click();
  await page.getByText('Moved to Won.').waitFor();
  t.equal(await stageOf('anna'), 'Won');
  await page.getByRole('table', { name: 'Conversations of this lead' }).getByRole('link', { name: /^Conversation \d+$/ }).click();
  await page.getByRole('heading', { level: 1, name: 'Conversation with anna' }).waitFor();
  t.same(problems, [], 'no console errors (CSP violations included)');
});

t.test('outcomes: the figures and charts of a constructed history; one agent at a time', async (t) => {
  const { page, problems, companyId } = await signedInPage(t, browser, svc, 'Outcomes Co');
  const pool = openSqlPool({ url: svc.config.databaseUrl, poolMax: 1 });
  t.teardown(() => pool.end());
  await seedOutcomes(pool, companyId);

  await goTo(page, 'Outcomes');
  await page.getByLabel('From').fill(OUTCOMES_FROM);
  await page.getByLabel('To').fill(OUTCOMES_TO);
  await page.getByRole('button', { name: 'Show' }).click();
  const figure = (label: string) => page.locator('.figure', { has: page.getByRole('term').filter({ hasText: new RegExp(`^${label}$`) }) }).getByRole('definition');
  await page.getByText('UTC days from 2026-03-01 to 2026-03-03.').waitFor();
  const all = EXPECTED_OUTCOMES.all;
  t.same(
    {
      conversations: await figure('Conversations').textContent(), autoResolved: await figure('Auto-resolved').textContent(), handedOff: await figure('Handed off').textContent(),
      reopened: await figure('Reopened').textContent(), replies: await figure('Replies').textContent(), modelCost: await figure('Model cost').textContent(),
      costPerResolution: await figure('Cost per resolution').textContent(),
    },
    {
      conversations: String(all.conversations), autoResolved: String(all.autoResolved), handedOff: String(all.handedOff), reopened: String(all.reopened), replies: String(all.replies),
      modelCost: `$${all.modelCostUsd}`, costPerResolution: `$${all.costPerResolutionUsd}`,
    },
  );
  const sessions = page.getByRole('img', { name: /^Sessions by day/ });
  const bars = async (series: string) => sessions.locator(`rect.bar[data-series="${series}"]`).evaluateAll((rects) => rects.map((r) => [r.getAttribute('data-date'), r.getAttribute('data-value')]));
  t.same(await bars('conversations'), all.byDay.map((d) => [d.date, String(d.conversations)]), 'a bar per day: conversations');
  t.same(await bars('autoResolved'), all.byDay.map((d) => [d.date, String(d.autoResolved)]), 'auto-resolved');
  t.same(await bars('handedOff'), all.byDay.map((d) => [d.date, String(d.handedOff)]), 'handed off');
  const heights = await sessions.locator('rect.bar[data-series="conversations"]').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))));
  t.ok(heights[1]! > heights[0]! && heights[0]! > 0, 'taller bars for bigger values');
  await shot(page, 'outcomes');
  const cost = page.getByRole('img', { name: /^Model cost by day/ });
  t.same(await cost.locator('rect.bar').evaluateAll((rects) => rects.map((r) => r.getAttribute('data-value'))), all.byDay.map((d) => d.modelCostUsd));

  await page.getByLabel('Agent').selectOption({ label: 'Outcomes A2' });
  await page.getByRole('button', { name: 'Show' }).click();
  await page.getByText('Outcomes A2 only').waitFor();
  t.equal(await figure('Conversations').textContent(), String(EXPECTED_OUTCOMES.agent2.conversations));
  t.equal(await figure('Model cost').textContent(), `$${EXPECTED_OUTCOMES.agent2.modelCostUsd}`);

  await page.getByLabel('From').fill('2026-03-05');
  await page.getByLabel('To').fill('2026-03-01');
  await page.getByRole('button', { name: 'Show' }).click();
  t.match(await page.getByRole('alert').filter({ hasText: /./ }).textContent(), /to: must be after from/, 'a bad period says why');
  t.same(problems, [], 'no console errors (CSP violations included)');
});
